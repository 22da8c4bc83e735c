// devicearray — the frame pipeline: the point-cloud stages of `devicearray process`
// as one value (PipelineStages) and one function that runs them (runPipeline), so every
// caller (the command, Python, a batch runner) produces the same cloud, byte for byte once
// written.
//
// The stages always run in one order — the camera filters (SNR noise removal, outlier
// removal, depth smoothing, hole repair), downsample, normals, transform, ROI,
// unorganize, statistical and radius outlier removal, voxel — because each later stage
// needs what the earlier ones keep: the camera filters work on the camera's
// full-resolution grid (so they come first, noise and outliers removed before smoothing
// and repair can spread them), normals need the organized grid (so they come before
// unorganize), the ROI is given in the frame the transform produces (so it comes after),
// and the outlier removal of the unorganized cloud judges the measured points, before
// voxels average outliers into their neighbours.
//
// Normals are computed on the device, or brought by the input (a file with normals).
// The device's clouds carry no normals, so the pipeline carries them along the stages
// itself: rotated on the
// device with the transform (by the inverse transpose of its linear part, which keeps
// them perpendicular to the surface for any invertible affine map), then compacted and
// voxel-averaged on the host after the download.
#pragma once

#include <cstddef>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "devicearray/device.hpp"
#include "devicearray/io.hpp"
#include "devicearray/point_cloud.hpp"

namespace devicearray {

/// Statistical outlier removal of the unorganized cloud: --statistical-outliers K,RATIO
/// (UnorganizedPointCloud::statisticalOutliersRemoved).
struct StatisticalOutlierStage {
  int neighbours = 20;    ///< k nearest points, the point itself included (1..32)
  float stdRatio = 2.0f;  ///< kept: mean distance <= mean + stdRatio * standard deviation
  friend bool operator==(const StatisticalOutlierStage&, const StatisticalOutlierStage&) = default;
};

/// Radius outlier removal of the unorganized cloud: --radius-outliers MM,N
/// (UnorganizedPointCloud::radiusOutliersRemoved).
struct RadiusOutlierStage {
  float radius = 1.0f;  ///< mm (> 0)
  int minPoints = 1;    ///< kept: at least this many other points closer than radius (>= 1)
  friend bool operator==(const RadiusOutlierStage&, const RadiusOutlierStage&) = default;
};

/// Which stages of the frame pipeline run, with their parameters. A default-constructed
/// value runs none (the cloud goes up and comes back down unchanged).
///
/// parse() reads the stage options of `devicearray process`; toArguments() writes them
/// back, so `PipelineStages::parse(s.toArguments()) == s` for every valid `s` (floats
/// are written with 9 significant digits, which read back bit-exactly).
struct PipelineStages {
  std::optional<float> snrThreshold;       ///< --snr-threshold SNR: PointCloud::filterNoise
  std::optional<float> outlierDistance;    ///< --remove-outliers MM: PointCloud::filterOutliers
  std::optional<float> smoothingSigma;     ///< --smooth SIGMA (pixels): PointCloud::smoothDepth
  int smoothingRadius = 0;                 ///< --smooth-radius N: its window radius (0: ceil(2 sigma); needs --smooth)
  std::optional<int> maxHoleSize;          ///< --fill-holes N: PointCloud::fillHoles
  float maxDepthStep = 10.0f;              ///< --max-depth-step MM: depth discontinuity of --smooth and --fill-holes
  std::optional<Downsampling> downsample;  ///< --downsample 2x2|3x3|4x4: k x k block reduction
  bool normals = false;                    ///< --normals: estimate normals on the grid and keep them
  /// --normal-window N: the normals are the plane fit over an N x N window
  /// (PointCloud::deviceNormalsXYZ(N, sq); odd, 3..15; needs --normals); 0: central
  /// differences, cheaper and far noisier (docs/frame-pipeline.md compares them).
  int normalWindow = 0;
  std::optional<Matrix4x4> transform;      ///< --transform: affine row-major 4x4 applied to the points
  std::optional<RegionOfInterestBox> roi;  ///< --roi: points outside the box become missing
  bool unorganize = false;                 ///< --unorganize: keep only the valid points, unorganized
  std::optional<StatisticalOutlierStage> statisticalOutliers;  ///< --statistical-outliers K,RATIO (implies unorganize)
  std::optional<RadiusOutlierStage> radiusOutliers;            ///< --radius-outliers MM,N (implies unorganize)
  std::optional<float> voxelSize;          ///< --voxel MM: one point per occupied voxel (implies unorganize)
  int minPointsPerVoxel = 1;               ///< --min-points N: drop voxels with fewer points (needs voxelSize)

  /// Parses the stage options of `devicearray process`, each as "--name value" (two
  /// items) or "--name=value" (one item):
  ///   --downsample 2x2|3x3|4x4    --normals    --normal-window N    --unorganize
  ///   --transform M   16 numbers separated by commas and/or whitespace (row-major, last
  ///                   row 0 0 0 1), or the path of a text file holding them ('#' starts a
  ///                   comment; at most 64 KiB)
  ///   --roi ox,oy,oz,ax,ay,az,bx,by,bz,min,max    --voxel MM    --min-points N
  ///   --snr-threshold SNR    --remove-outliers MM    --smooth SIGMA    --smooth-radius N
  ///   --fill-holes N    --max-depth-step MM
  ///   --statistical-outliers K,RATIO    --radius-outliers MM,N
  /// then validate()s the result. Throws InvalidArgument naming the option and the
  /// offending value for an unknown, repeated or incomplete option, a malformed number,
  /// an unreadable or binary matrix file, and everything validate() refuses.
  static PipelineStages parse(const std::vector<std::string>& args);

  /// The options that parse() reads back into this value (the transform inline, never
  /// as a file). Throws what validate() throws.
  std::vector<std::string> toArguments() const;

  /// Checks the stages on their own, before any cloud is read. Throws InvalidArgument
  /// for a downsample value outside the enum, a transform with a non-finite element or
  /// a last row other than 0 0 0 1, normals with a transform whose 3x3 part is singular
  /// (normals cannot follow it), an ROI with non-finite values, min > max or coincident
  /// or collinear origin, A and B, a voxel size not finite and > 0, minPointsPerVoxel
  /// < 1, or minPointsPerVoxel != 1 without a voxel size; a non-finite SNR threshold, an
  /// outlier distance or maxDepthStep not finite and >= 0, a smoothing sigma not finite
  /// and > 0, a smoothing radius outside [0, 15] or other than 0 without --smooth, a hole
  /// size outside [1, 1024], or maxDepthStep other than 10 without --smooth or
  /// --fill-holes; statistical outlier neighbours outside [1, 32] or a ratio not finite
  /// and >= 0; an outlier radius not finite and > 0 or a minimum point count < 1.
  void validate() const;

  /// Checks that `input` suits the stages: it has a valid point; it is organized when
  /// a camera filter, downsample, normals or ROI is asked for; it has SNR values for
  /// --snr-threshold; it has at least k rows and columns for a
  /// k x k downsample. `inputName` names the cloud in the message. Throws
  /// InvalidArgument.
  void checkInput(const HostPointCloud& input, const std::string& inputName) const;

  /// True when a camera filter stage runs.
  bool filters() const noexcept { return snrThreshold || outlierDistance || smoothingSigma || maxHoleSize; }
  /// True when a stage needs the organized grid (camera filters, downsample, normals, ROI).
  bool needsOrganizedInput() const noexcept { return filters() || downsample || normals || roi; }
  /// True when the result is unorganized: unorganize, an outlier removal of the
  /// unorganized cloud or a voxel size was asked for.
  bool unorganizes() const noexcept {
    return unorganize || statisticalOutliers.has_value() || radiusOutliers.has_value() || voxelSize.has_value();
  }
  /// The number of stages that run (unorganize counted once, also when only implied by
  /// an unorganized-cloud stage): the rows between "upload" and "download" of the stage
  /// table.
  int stageCount() const noexcept;

  /// Equal stages with equal parameters (matrices and boxes compared element by element).
  friend bool operator==(const PipelineStages& a, const PipelineStages& b) noexcept;
};

/// One row of the stage table: what ran, what came out, and how long it took.
struct PipelineStageResult {
  std::string stage;    ///< e.g. "upload", "downsample 2x2", "voxel 5 mm, min 1", "download"
  std::string result;   ///< e.g. "24 x 32" (organized), "1234 points", "24 x 32 normals"
  double deviceMs = 0;  ///< device time between events around the stage; NaN for host-only stages
  double wallMs = 0;    ///< host wall time of the stage
};

/// What runPipeline() and processPlyFile() return.
struct PipelineResult {
  HostPointCloud cloud;                     ///< the processed cloud, as `devicearray process` writes it
  std::vector<PipelineStageResult> stages;  ///< one row per stage, in the order they ran
  /// Points that became missing because their transformed coordinates do not fit a
  /// float (an overflowing --transform).
  std::size_t nonFinitePoints = 0;
};

/// Options of runPipeline() and processPlyFile() that do not change the result.
struct PipelineRunOptions {
  std::string inputName = "the input cloud";  ///< names the input in messages (a file name)
  std::string outputName = "the output";      ///< names the output in "nothing to write to ..." messages
  /// Called after each row of the stage table is complete (for a progress display), and
  /// once more for an unorganize stage that has nothing to do because the input is
  /// unorganized already. May be empty.
  std::function<void()> stageDone;
};

/// "H x W" for an organized cloud, "N points" otherwise: the result column of the
/// stage table for a whole cloud.
std::string pipelineCloudText(const HostPointCloud& cloud);

/// Runs `stages` on `input` on `device`: upload, the stages in their fixed order,
/// download. The result is organized unless stages.unorganizes(); it has normals
/// exactly when stages.normals or the input has normals (unit length, NaN where they
/// cannot be computed or are missing; in a downsampled block or a voxel the normalized
/// mean of its points' normals). stages.normals replaces the input's normals with
/// computed ones; otherwise the input's are carried through every stage (rotated by
/// the transform like computed ones; dropped when a singular transform flattens the
/// cloud). Points whose coordinates become
/// non-finite are made missing (NaN in an organized cloud, left out of an unorganized
/// one) and counted in nonFinitePoints. Colours and SNR are kept as the device stages
/// keep them. Device times are measured with events on a stream of its own.
///
/// Blocking. Throws what validate() and checkInput() throw, InvalidArgument when no
/// valid point is left (after the ROI, the transform or the voxel stage, whose
/// --min-points drops every voxel), and the device operations' errors.
PipelineResult runPipeline(const HostPointCloud& input, const PipelineStages& stages, const ComputeDevice& device,
                           const PipelineRunOptions& options = {});

/// The input of `devicearray process`: readPcd() or readXyz() for a .pcd or .xyz path
/// (any letter case), readPly() for every other path (pipes and devices included).
/// Blocking; throws what that reader throws.
HostPointCloud readPipelineInput(const std::string& inputPath);
/// The stage-table row of reading `inputPath` as readPipelineInput() reads it: "read PLY",
/// "read PCD" or "read XYZ".
std::string readStageName(const std::string& inputPath);

/// The output of `devicearray process` and `devicearray stitch`: writePcd() for a .pcd
/// path (PcdFormat::ascii for PlyFormat::ascii, binary otherwise), writeXyz() for a .xyz
/// path (text either way), writePly() in `format` for every other path. Blocking; throws
/// what checkPipelineOutput() and that writer throw.
void writePipelineOutput(const std::string& outputPath, const HostPointCloud& cloud,
                         PlyFormat format = PlyFormat::binaryLittleEndian);
/// Throws InvalidArgument, naming the format and the path, when writePipelineOutput() has
/// no `format` for `outputPath`: PlyFormat::binaryBigEndian for a .pcd or .xyz path
/// (neither has a big-endian form). Touches no file: for checking before any work.
void checkPipelineOutput(const std::string& outputPath, PlyFormat format);
/// The stage-table row of writing `outputPath` as writePipelineOutput() writes it:
/// "write PLY", "write PCD" or "write XYZ".
std::string writeStageName(const std::string& outputPath);

/// `devicearray process INPUT [stages] -o OUTPUT`: reads `inputPath` with
/// readPipelineInput() (PLY, or PCD / XYZ by extension), runs runPipeline() on it and
/// writes the result to `outputPath` with writePipelineOutput() in `format` (PCD / XYZ
/// by extension, PLY otherwise). The stage table starts with readStageName(inputPath)
/// ("read PLY", "read PCD" or "read XYZ") and ends with writeStageName(outputPath).
/// `options.inputName` / `outputName` default to the paths when left at their defaults.
///
/// Blocking. Throws what the reader, runPipeline() and the writer throw, and
/// InvalidArgument when the directory of `outputPath` does not exist or
/// checkPipelineOutput() refuses `format` (both checked before anything is read).
/// Nothing is written when it throws.
PipelineResult processPlyFile(const std::string& inputPath, const std::string& outputPath,
                              const PipelineStages& stages, const ComputeDevice& device,
                              PlyFormat format = PlyFormat::binaryLittleEndian,
                              const PipelineRunOptions& options = {});

}  // namespace devicearray
