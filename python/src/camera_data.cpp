// Camera data in and out: the PointCloud camera filters (filter_noise, ... with their
// *_filtered / depth_smoothed / holes_filled forms), PinholeCamera, and RGB-D
// (point_cloud_from_depth_image, project_to_rgbd_image). Methods that take `stream`
// enqueue there and return without blocking; with stream=None they run on the device's
// own queue and block.
#include <nanobind/nanobind.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>

#include <cstdio>
#include <optional>
#include <string>
#include <utility>

#include "common.hpp"

namespace devicearray::python {

namespace {

/// Adds `fn` to the PointCloud class bound by point_clouds.cpp as method `name`.
template <class Fn, class... Extra>
void defPointCloudMethod(nb::handle cls, const char* name, Fn&& fn, const Extra&... extra) {
  nb::cpp_function_def(std::forward<Fn>(fn), nb::scope(cls), nb::name(name), nb::is_method(), extra...);
}

/// A depth image as a GpuMatND: a GpuMatND as it is, anything else (a numpy array)
/// uploaded to `device` by da.from_numpy.
GpuMatND depthImageFrom(nb::handle depth, const std::optional<ComputeDevice>& device) {
  if (nb::isinstance<GpuMatND>(depth)) return nb::cast<GpuMatND>(depth);
  nb::object fromNumpy = nb::module_::import_("devicearray._devicearray").attr("from_numpy");
  return nb::cast<GpuMatND>(fromNumpy(depth, nb::none(), deviceOrDefault(device)));
}

/// The cloud of a depth image coloured by an image of any colour format (sRGB images
/// give an sRGB cloud, the others a linear one), on `sq`.
PointCloud colouredCloud(const GpuMatND& depth, float depthScale, const PinholeCamera& camera,
                         const AnyDeviceArray& colors, StreamOrQueue sq) {
  return colors.visit([&]<class F>(const DeviceArray<F>& a) -> PointCloud {
    if constexpr (isColorFormat<F>)
      return pointCloudFromDepthImage(depth, depthScale, camera, a, sq);
    else
      throw Error(ErrorCode::InvalidArgument, "point_cloud_from_depth_image: colors must be a DeviceArray of a colour "
                                              "format, not " + std::string(formatInfo<F>().name));
  });
}

}  // namespace

void bindCameraData(nb::module_& m) {
  // ------------------------------------------------------ camera filters --
  const nb::handle pointCloud = m.attr("PointCloud");
  defPointCloudMethod(
      pointCloud, "filter_noise",
      [](PointCloud& pc, float snrThreshold, const Stream* s) {
        updateReleased(pc, [&](PointCloud& c) {
          if (s != nullptr) c.filterNoise(snrThreshold, s->handle());
          else c.filterNoise(snrThreshold);
        });
      },
      nb::arg("snr_threshold"), nb::arg("stream") = nb::none(),
      "Points whose SNR is below snr_threshold (or NaN) become missing (new arrays; see docs/filters.md).");
  defPointCloudMethod(
      pointCloud, "noise_filtered",
      [](PointCloud pc, float snrThreshold, const Stream* s) {
        nb::gil_scoped_release release;
        return s != nullptr ? pc.noiseFiltered(snrThreshold, s->handle()) : pc.noiseFiltered(snrThreshold);
      },
      nb::arg("snr_threshold"), nb::arg("stream") = nb::none());
  defPointCloudMethod(
      pointCloud, "filter_outliers",
      [](PointCloud& pc, float maxDistance, const Stream* s) {
        updateReleased(pc, [&](PointCloud& c) {
          if (s != nullptr) c.filterOutliers(maxDistance, s->handle());
          else c.filterOutliers(maxDistance);
        });
      },
      nb::arg("max_distance"), nb::arg("stream") = nb::none(),
      "Points farther than max_distance (mm) from every valid one of their 8 grid neighbours become missing (new "
      "arrays; see docs/filters.md).");
  defPointCloudMethod(
      pointCloud, "outliers_filtered",
      [](PointCloud pc, float maxDistance, const Stream* s) {
        nb::gil_scoped_release release;
        return s != nullptr ? pc.outliersFiltered(maxDistance, s->handle()) : pc.outliersFiltered(maxDistance);
      },
      nb::arg("max_distance"), nb::arg("stream") = nb::none());
  defPointCloudMethod(
      pointCloud, "smooth_depth",
      [](PointCloud& pc, float sigma, float maxDepthDifference, int radius, const Stream* s) {
        updateReleased(pc, [&](PointCloud& c) {
          if (s != nullptr) c.smoothDepth(sigma, maxDepthDifference, radius, s->handle());
          else c.smoothDepth(sigma, maxDepthDifference, radius);
        });
      },
      nb::arg("sigma"), nb::arg("max_depth_difference") = 10.0f, nb::arg("radius") = 0, nb::arg("stream") = nb::none(),
      "Gaussian smoothing of depth (sigma in pixels, window radius 0: ceil(2 sigma)) along the camera rays, without "
      "mixing points whose depth differs by more than max_depth_difference (mm) (new arrays; see docs/filters.md).");
  defPointCloudMethod(
      pointCloud, "depth_smoothed",
      [](PointCloud pc, float sigma, float maxDepthDifference, int radius, const Stream* s) {
        nb::gil_scoped_release release;
        return s != nullptr ? pc.depthSmoothed(sigma, maxDepthDifference, radius, s->handle())
                            : pc.depthSmoothed(sigma, maxDepthDifference, radius);
      },
      nb::arg("sigma"), nb::arg("max_depth_difference") = 10.0f, nb::arg("radius") = 0, nb::arg("stream") = nb::none());
  defPointCloudMethod(
      pointCloud, "fill_holes",
      [](PointCloud& pc, int maxHoleSize, float maxDepthDifference, const Stream* s) {
        updateReleased(pc, [&](PointCloud& c) {
          if (s != nullptr) c.fillHoles(maxHoleSize, maxDepthDifference, s->handle());
          else c.fillHoles(maxHoleSize, maxDepthDifference);
        });
      },
      nb::arg("max_hole_size"), nb::arg("max_depth_difference") = 10.0f, nb::arg("stream") = nb::none(),
      "Fills row and column gaps of at most max_hole_size missing points whose ends differ in depth by at most "
      "max_depth_difference (mm), interpolating depth, ray, colour and SNR (new arrays; see docs/filters.md).");
  defPointCloudMethod(
      pointCloud, "holes_filled",
      [](PointCloud pc, int maxHoleSize, float maxDepthDifference, const Stream* s) {
        nb::gil_scoped_release release;
        return s != nullptr ? pc.holesFilled(maxHoleSize, maxDepthDifference, s->handle())
                            : pc.holesFilled(maxHoleSize, maxDepthDifference);
      },
      nb::arg("max_hole_size"), nb::arg("max_depth_difference") = 10.0f, nb::arg("stream") = nb::none());

  // ------------------------------------------------------- PinholeCamera --
  nb::class_<PinholeCamera>(m, "PinholeCamera",
                            "Pinhole intrinsics: pixel (u, v) = (fx x / z + cx, fy y / z + cy); column c's centre is "
                            "at u = c.")
      .def(
          "__init__",
          [](PinholeCamera* self, int width, int height, double fx, double fy, double cx, double cy) {
            PinholeCamera c{width, height, fx, fy, cx, cy};
            c.validate();
            new (self) PinholeCamera(c);
          },
          nb::arg("width"), nb::arg("height"), nb::arg("fx"), nb::arg("fy"), nb::arg("cx"), nb::arg("cy"))
      .def_static("with_field_of_view", &PinholeCamera::withFieldOfView, nb::arg("width"), nb::arg("height"),
                  nb::arg("horizontal_fov_degrees"), "Square pixels, centred principal point.")
      .def_rw("width", &PinholeCamera::width)
      .def_rw("height", &PinholeCamera::height)
      .def_rw("fx", &PinholeCamera::fx)
      .def_rw("fy", &PinholeCamera::fy)
      .def_rw("cx", &PinholeCamera::cx)
      .def_rw("cy", &PinholeCamera::cy)
      .def("__repr__", [](const PinholeCamera& c) {
        char text[200];
        std::snprintf(text, sizeof text, "PinholeCamera(width=%d, height=%d, fx=%.9g, fy=%.9g, cx=%.9g, cy=%.9g)",
                      c.width, c.height, c.fx, c.fy, c.cx, c.cy);
        return std::string(text);
      });

  // ---------------------------------------------------------------- RGB-D --
  nb::class_<RGBDImage>(m, "RGBDImage", "A depth image (GpuMatND) and the colour image registered to it.")
      .def_ro("depth", &RGBDImage::depth, "(H, W) uint16 or float32 GpuMatND")
      .def_prop_ro(
          "colors",
          [](const RGBDImage& r) -> std::optional<AnyDeviceArray> {
            if (r.colors.isEmpty()) return std::nullopt;
            return AnyDeviceArray{r.colors};
          },
          "(H, W) ColorRGBA DeviceArray (0 0 0 0 where no point landed), or None without colours");

  m.def(
      "point_cloud_from_depth_image",
      [](nb::handle depth, float depthScale, const PinholeCamera& camera, std::optional<AnyDeviceArray> colors,
          std::optional<ComputeDevice> device, const Stream* s) {
        const GpuMatND image = depthImageFrom(depth, device);
        return onStreamOrBlocking(image.device(), s, [&](StreamOrQueue sq) {
          if (!colors) return pointCloudFromDepthImage(image, depthScale, camera, sq);
          return colouredCloud(image, depthScale, camera, *colors, sq);
        });
      },
      nb::arg("depth"), nb::arg("depth_scale"), nb::arg("camera"), nb::arg("colors") = nb::none(),
      nb::arg("device") = nb::none(), nb::arg("stream") = nb::none(),
      "The organized cloud of a depth image: an (H, W) uint16 or float32 GpuMatND or numpy array (numpy arrays are "
      "uploaded to `device`), z = value * depth_scale mm, 0 / NaN = no measurement. `colors`: a DeviceArray of any "
      "colour format registered to it (sRGB camera images as a *_SRGB format).");
  m.def(
      "project_to_rgbd_image",
      [](nb::handle cloud, const PinholeCamera& camera, nb::handle dtype, float depthScale, nb::handle cameraFromCloud,
         const Stream* s) {
        const Depth depth = depthFromDtype(dtype, "project_to_rgbd_image");
        const Matrix4x4 m =
            cameraFromCloud.is_none() ? identityMatrix4x4() : matrixFrom(cameraFromCloud, "project_to_rgbd_image");
        if (nb::isinstance<PointCloud>(cloud)) {
          const auto pc = nb::cast<PointCloud>(cloud);
          return onStreamOrBlocking(pc.device(), s, [&](StreamOrQueue sq) {
            return projectToRGBDImage(pc, camera, depth, depthScale, m, sq);
          });
        }
        if (!nb::isinstance<UnorganizedPointCloud>(cloud))
          throw nb::type_error("project_to_rgbd_image: cloud must be a PointCloud or an UnorganizedPointCloud");
        const auto pc = nb::cast<UnorganizedPointCloud>(cloud);
        return onStreamOrBlocking(pc.device(), s, [&](StreamOrQueue sq) {
          return projectToRGBDImage(pc, camera, depth, depthScale, m, sq);
        });
      },
      nb::arg("cloud"), nb::arg("camera"), nb::arg("dtype") = "uint16", nb::arg("depth_scale") = 1.0f,
      nb::arg("camera_from_cloud") = nb::none(), nb::arg("stream") = nb::none(),
      "Z-buffered projection of a PointCloud or UnorganizedPointCloud into an RGBDImage of `camera`: the nearest "
      "point wins a pixel (ties: the lowest point index). dtype uint16: round(z / depth_scale), 0 = empty; "
      "float32: z / depth_scale, NaN = empty. camera_from_cloud: optional 4x4 affine map into the camera frame.");
}

}  // namespace devicearray::python
