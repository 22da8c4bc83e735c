// PipelineStages, PipelineStageResult, PipelineResult and process_ply_file: the stages
// of `devicearray process` from Python. They run the library's pipeline and its PLY
// writer, so a file written here is byte for byte the file the command writes.
#include <nanobind/nanobind.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <cstdio>
#include <optional>
#include <string>
#include <vector>

#include "common.hpp"
#include "devicearray/frame_pipeline.hpp"

namespace devicearray::python {

namespace {

/// None, a Downsampling, or the command's spelling "2x2" / "3x3" / "4x4".
std::optional<Downsampling> downsampleFrom(nb::handle value) {
  if (value.is_none()) return std::nullopt;
  Downsampling d;
  if (nb::try_cast(value, d, /*convert=*/false)) return d;
  if (PyUnicode_Check(value.ptr())) return PipelineStages::parse({"--downsample", nb::cast<std::string>(value)}).downsample;
  throw nb::type_error(
      ("PipelineStages: downsample must be None, a Downsampling or '2x2', '3x3', '4x4', not " + typeName(value))
          .c_str());
}

/// The --format names of `devicearray process`.
PlyFormat plyFormatFrom(const std::string& name) {
  if (name == "binary") return PlyFormat::binaryLittleEndian;
  if (name == "ascii") return PlyFormat::ascii;
  if (name == "binary_big_endian") return PlyFormat::binaryBigEndian;
  throw Error(ErrorCode::InvalidArgument,
              "process_ply_file: format '" + name + "' is not one of 'binary', 'ascii', 'binary_big_endian'");
}

std::string argumentsText(const std::vector<std::string>& args) {
  std::string text = "[";
  for (std::size_t i = 0; i < args.size(); ++i) text += (i ? ", " : "") + pyStr(nb::repr(nb::str(args[i].c_str())));
  return text + "]";
}

}  // namespace

void bindFramePipeline(nb::module_& m) {
  nb::class_<PipelineStages>(
      m, "PipelineStages",
      "The stages of `devicearray process`, which always run in the order SNR threshold, outlier removal, "
      "smoothing, hole filling, downsample, normals, transform, ROI, unorganize, statistical outliers, radius "
      "outliers, voxel. Build it from the command's options with PipelineStages.parse([...]) or with keywords. "
      "Immutable; pickles as its options.")
      .def(
          "__init__",
          [](PipelineStages* self, nb::handle downsample, bool normals, nb::handle transform,
             std::optional<RegionOfInterestBox> roi, bool unorganize, std::optional<float> voxelSize,
             int minPointsPerVoxel, std::optional<float> snrThreshold, std::optional<float> outlierDistance,
             std::optional<float> smoothingSigma, int smoothingRadius, std::optional<int> maxHoleSize,
             float maxDepthStep, std::optional<std::pair<int, float>> statisticalOutliers,
             std::optional<std::pair<float, int>> radiusOutliers, int normalWindow) {
            PipelineStages s;
            s.snrThreshold = snrThreshold;
            s.outlierDistance = outlierDistance;
            s.smoothingSigma = smoothingSigma;
            s.smoothingRadius = smoothingRadius;
            s.maxHoleSize = maxHoleSize;
            s.maxDepthStep = maxDepthStep;
            s.downsample = downsampleFrom(downsample);
            s.normals = normals;
            s.normalWindow = normalWindow;
            if (!transform.is_none()) s.transform = matrixFrom(transform, "PipelineStages");
            s.roi = roi;
            s.unorganize = unorganize;
            if (statisticalOutliers)
              s.statisticalOutliers = StatisticalOutlierStage{statisticalOutliers->first, statisticalOutliers->second};
            if (radiusOutliers) s.radiusOutliers = RadiusOutlierStage{radiusOutliers->first, radiusOutliers->second};
            s.voxelSize = voxelSize;
            s.minPointsPerVoxel = minPointsPerVoxel;
            s.validate();
            new (self) PipelineStages(std::move(s));
          },
          nb::kw_only(), nb::arg("downsample") = nb::none(), nb::arg("normals") = false,
          nb::arg("transform") = nb::none(), nb::arg("roi") = nb::none(), nb::arg("unorganize") = false,
          nb::arg("voxel_size") = nb::none(), nb::arg("min_points_per_voxel") = 1,
          nb::arg("snr_threshold") = nb::none(), nb::arg("outlier_distance") = nb::none(),
          nb::arg("smoothing_sigma") = nb::none(), nb::arg("smoothing_radius") = 0,
          nb::arg("max_hole_size") = nb::none(), nb::arg("max_depth_step") = 10.0f,
          nb::arg("statistical_outliers") = nb::none(), nb::arg("radius_outliers") = nb::none(),
          nb::arg("normal_window") = 0,
          "Stages by keyword: the camera filters snr_threshold, outlier_distance (mm), smoothing_sigma (pixels) "
          "with smoothing_radius (0: ceil(2 sigma)), max_hole_size (points) and max_depth_step (mm, for smoothing "
          "and hole filling); downsample (Downsampling or '2x2'/'3x3'/'4x4'), normals with normal_window (odd "
          "3..15: a plane fit over that window; 0: central differences), transform (4x4 affine), roi "
          "(RegionOfInterestBox), unorganize, statistical_outliers ((neighbours, std_ratio); implies unorganize), "
          "radius_outliers ((radius mm, min_points); implies unorganize), voxel_size (mm; implies unorganize), "
          "min_points_per_voxel (needs voxel_size). ValueError for values `devicearray process` would refuse.")
      .def_static("parse", &PipelineStages::parse, nb::arg("args"),
                  "The stages from the options of `devicearray process` (e.g. ['--downsample', '2x2', '--voxel', "
                  "'5']): --snr-threshold SNR, --remove-outliers MM, --smooth SIGMA, --smooth-radius N, "
                  "--fill-holes N, --max-depth-step MM, --downsample 2x2|3x3|4x4, --normals, --normal-window N, "
                  "--transform M (16 numbers or a file holding them), "
                  "--roi ox,oy,oz,ax,ay,az,bx,by,bz,min,max, --unorganize, --statistical-outliers K,RATIO, "
                  "--radius-outliers MM,N, --voxel MM, --min-points N; each as two "
                  "items or as '--name=value'. ValueError with the command's message for anything wrong.")
      .def("to_arguments", &PipelineStages::toArguments,
           "The options that parse() reads back into these stages (the transform inline).")
      .def_prop_ro("snr_threshold", [](const PipelineStages& s) { return s.snrThreshold; },
                   "Points with a lower SNR become missing; or None")
      .def_prop_ro("outlier_distance", [](const PipelineStages& s) { return s.outlierDistance; },
                   "Outlier removal distance in mm, or None")
      .def_prop_ro("smoothing_sigma", [](const PipelineStages& s) { return s.smoothingSigma; },
                   "Depth smoothing sigma in pixels, or None")
      .def_ro("smoothing_radius", &PipelineStages::smoothingRadius, "Smoothing window radius (0: ceil(2 sigma))")
      .def_prop_ro("max_hole_size", [](const PipelineStages& s) { return s.maxHoleSize; },
                   "Largest gap filled, in points, or None")
      .def_ro("max_depth_step", &PipelineStages::maxDepthStep,
              "Depth difference (mm) that smoothing and hole filling treat as an edge")
      .def_prop_ro("downsample", [](const PipelineStages& s) { return s.downsample; },
                   "Downsampling, or None")
      .def_ro("normals", &PipelineStages::normals, "Whether normals are estimated and kept")
      .def_ro("normal_window", &PipelineStages::normalWindow,
              "Window of the plane-fit normals (odd, 3..15), or 0 for central differences")
      .def_prop_ro(
          "transform",
          [](const PipelineStages& s) -> nb::object { return s.transform ? matrixTo(*s.transform) : nb::none(); },
          "The affine transform as a 4x4 float32 array, or None")
      .def_prop_ro("roi", [](const PipelineStages& s) { return s.roi; }, "RegionOfInterestBox, or None")
      .def_ro("unorganize", &PipelineStages::unorganize, "Whether --unorganize was asked for")
      .def_prop_ro(
          "statistical_outliers",
          [](const PipelineStages& s) {
            const auto& f = s.statisticalOutliers;
            return f ? std::optional{std::pair{f->neighbours, f->stdRatio}} : std::nullopt;
          },
          "(neighbours, std_ratio) of the statistical outlier removal, or None")
      .def_prop_ro(
          "radius_outliers",
          [](const PipelineStages& s) {
            return s.radiusOutliers ? std::optional{std::pair{s.radiusOutliers->radius, s.radiusOutliers->minPoints}}
                                    : std::nullopt;
          },
          "(radius mm, min_points) of the radius outlier removal, or None")
      .def_prop_ro("voxel_size", [](const PipelineStages& s) { return s.voxelSize; }, "Voxel edge in mm, or None")
      .def_ro("min_points_per_voxel", &PipelineStages::minPointsPerVoxel, "Voxels with fewer points are dropped")
      .def("stage_count", &PipelineStages::stageCount,
           "How many stages run (unorganize counted once, also when a voxel size implies it)")
      .def("unorganizes", &PipelineStages::unorganizes, "Whether the result is an unorganized cloud")
      .def("needs_organized_input", &PipelineStages::needsOrganizedInput,
           "Whether a stage needs an organized input (camera filters, downsample, normals, roi)")
      .def(
          "__eq__",
          [](const PipelineStages& a, nb::handle b) {
            PipelineStages other;
            return nb::try_cast(b, other) && a == other;
          },
          nb::arg("other").none())
      .def("__repr__",
           [](const PipelineStages& s) { return "PipelineStages.parse(" + argumentsText(s.toArguments()) + ")"; })
      .def("__getstate__", &PipelineStages::toArguments)
      .def("__setstate__", [](PipelineStages* self, const std::vector<std::string>& args) {
        new (self) PipelineStages(PipelineStages::parse(args));
      });

  nb::class_<PipelineStageResult>(m, "PipelineStageResult",
                                  "One row of the stage table of `devicearray process`.")
      .def_ro("stage", &PipelineStageResult::stage, "e.g. 'read PLY', 'downsample 2x2', 'voxel 5 mm, min 1'")
      .def_ro("result", &PipelineStageResult::result, "e.g. '24 x 32', '1234 points'")
      .def_ro("device_ms", &PipelineStageResult::deviceMs, "Device time in ms (NaN for host-only stages)")
      .def_ro("wall_ms", &PipelineStageResult::wallMs, "Host wall time in ms")
      .def("__repr__", [](const PipelineStageResult& r) {
        char times[64];
        std::snprintf(times, sizeof times, "device_ms=%.3f, wall_ms=%.3f", r.deviceMs, r.wallMs);
        return "PipelineStageResult(" + pyStr(nb::repr(nb::str(r.stage.c_str()))) + ", " +
               pyStr(nb::repr(nb::str(r.result.c_str()))) + ", " + times + ")";
      });

  nb::class_<PipelineResult>(m, "PipelineResult", "What process_ply_file did: the stage table and the cloud written.")
      .def_ro("stages", &PipelineResult::stages, "The rows of the stage table (list of PipelineStageResult)")
      .def_ro("non_finite_points", &PipelineResult::nonFinitePoints,
              "Points made missing because their transformed coordinates do not fit a float")
      .def_prop_ro("is_organized", [](const PipelineResult& r) { return r.cloud.isOrganized(); },
                   "Whether the written cloud is organized")
      .def_prop_ro("height", [](const PipelineResult& r) { return r.cloud.height; }, "Rows (0 when unorganized)")
      .def_prop_ro("width", [](const PipelineResult& r) { return r.cloud.width; }, "Columns (0 when unorganized)")
      .def_prop_ro("size", [](const PipelineResult& r) { return r.cloud.size(); }, "Points written (valid or missing)")
      .def_prop_ro("valid_count", [](const PipelineResult& r) { return r.cloud.validCount(); }, "Valid points written");

  m.def(
      "process_ply_file",
      [](nb::handle inputPath, nb::handle outputPath, const PipelineStages& stages,
         std::optional<ComputeDevice> device, const std::string& format) {
        const std::string input = pathFrom(inputPath, "process_ply_file: input_path");
        const std::string output = pathFrom(outputPath, "process_ply_file: output_path");
        const PlyFormat plyFormat = plyFormatFrom(format);
        nb::gil_scoped_release release;
        return processPlyFile(input, output, stages, deviceOrDefault(device), plyFormat);
      },
      nb::arg("input_path"), nb::arg("output_path"), nb::arg("stages"), nb::arg("device") = nb::none(),
      nb::arg("format") = "binary",
      "`devicearray process INPUT [stages] -o OUTPUT --format FORMAT` on `device` (default: the default device): "
      "reads the PLY file, runs the stages, writes the result byte for byte as the command does (PCD for a .pcd "
      "output, XYZ for .xyz, PLY otherwise), and returns a PipelineResult. format: 'binary', 'ascii' or "
      "'binary_big_endian' (PLY only). Blocking.");
}

}  // namespace devicearray::python
