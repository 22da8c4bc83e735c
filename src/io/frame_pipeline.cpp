// runPipeline and processPlyFile: the stages of PipelineStages on one device, with the
// normals (computed, or brought by the input file) carried through the stages that the
// device's clouds have no normals for, and the device time of every stage.
#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <limits>
#include <unordered_map>
#include <utility>

#include "devicearray/error.hpp"
#include "devicearray/frame_pipeline.hpp"
#include "devicearray/stream.hpp"
#include "io/frame_pipeline_internal.hpp"
#include "io/io_detail.hpp"
#include "io/point_cloud_file_format.hpp"

namespace devicearray {

namespace {

constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();

using Clock = std::chrono::steady_clock;

double millisecondsSince(Clock::time_point start) {
  return std::chrono::duration<double, std::milli>(Clock::now() - start).count();
}

/// The rows of the stage table as the stages run, each timed on the host and, for
/// device stages, between two events on the pipeline's stream.
class StageTable {
 public:
  explicit StageTable(std::vector<PipelineStageResult>& rows, const std::function<void()>& stageDone)
      : rows_(rows), stageDone_(stageDone) {}

  /// Runs blocking host work (or work on the library's own queue) as row `stage`.
  template <class Work>
  PipelineStageResult& onHost(std::string stage, Work&& work) {
    const Clock::time_point start = Clock::now();
    work();
    return add(std::move(stage), std::numeric_limits<double>::quiet_NaN(), millisecondsSince(start));
  }

  /// Runs `work` (which enqueues on `stream` and may block) as row `stage`, waiting for
  /// the stream at its end so that both times cover the stage's device work.
  template <class Work>
  PipelineStageResult& onStream(std::string stage, Stream& stream, Work&& work) {
    Event begin(stream.device()), end(stream.device());
    const Clock::time_point start = Clock::now();
    begin.record(stream);
    work();
    end.record(stream);
    end.waitForCompletion();
    const double wall = millisecondsSince(start);
    return add(std::move(stage), static_cast<double>(Event::elapsedTime(begin, end)), wall);
  }

  /// Reports a stage that had nothing to do (no row).
  void skipped() const {
    if (stageDone_) stageDone_();
  }

 private:
  PipelineStageResult& add(std::string stage, double deviceMs, double wallMs) {
    rows_.push_back({std::move(stage), "", deviceMs, wallMs});
    return rows_.back();
  }

  std::vector<PipelineStageResult>& rows_;
  const std::function<void()>& stageDone_;
};

/// Reports the row just completed: its result is set now, so the callback sees it whole.
void finishRow(PipelineStageResult& row, std::string result, const std::function<void()>& stageDone) {
  row.result = std::move(result);
  if (stageDone) stageDone();
}

std::string gridText(int height, int width) { return std::to_string(height) + " x " + std::to_string(width); }
std::string pointsText(std::size_t n) { return std::to_string(n) + " points"; }

bool finite3(const float* p) { return std::isfinite(p[0]) && std::isfinite(p[1]) && std::isfinite(p[2]); }

/// Unit normal of `n`, or NaN when it is missing or zero.
std::array<float, 3> unit(const float* n) {
  if (!finite3(n)) return {kNaN, kNaN, kNaN};
  const double len = std::sqrt(double(n[0]) * n[0] + double(n[1]) * n[1] + double(n[2]) * n[2]);
  if (!(len > 0.0) || !std::isfinite(len)) return {kNaN, kNaN, kNaN};
  return {static_cast<float>(n[0] / len), static_cast<float>(n[1] / len), static_cast<float>(n[2] / len)};
}

/// Normals of the valid points of `xyz` (row-major), in the order toUnorganizedPointCloud keeps them.
std::vector<float> compactNormals(const std::vector<PointXYZ>& xyz, const std::vector<NormalXYZ>& normals) {
  std::vector<float> out;
  for (std::size_t i = 0; i < xyz.size(); ++i) {
    const float p[3] = {xyz[i].x, xyz[i].y, xyz[i].z};
    if (!finite3(p)) continue;
    const float n[3] = {normals[i].x, normals[i].y, normals[i].z};
    const auto u = unit(n);
    out.insert(out.end(), u.begin(), u.end());
  }
  return out;
}

/// Every normal at unit length (NaN where it is missing or zero).
std::vector<float> unitNormals(const std::vector<NormalXYZ>& normals) {
  std::vector<float> out;
  out.reserve(3 * normals.size());
  for (const NormalXYZ& v : normals) {
    const float n[3] = {v.x, v.y, v.z};
    const auto u = unit(n);
    out.insert(out.end(), u.begin(), u.end());
  }
  return out;
}

/// Voxel key as UnorganizedPointCloud::voxelDownsampled computes it (integer voxel
/// coordinates from the min corner, 21 bits per axis).
std::uint64_t voxelKey(const float* p, const float* minCorner, float size) {
  std::uint64_t key = 0;
  for (int a = 0; a < 3; ++a) {
    const float f = std::max(std::floor((p[a] - minCorner[a]) / size), 0.0f);
    key = (key << 21) | static_cast<std::uint64_t>(std::min(f, 2097150.0f));
  }
  return key;
}

/// The normals of the voxel points `out`: the normalized mean of the normals of the
/// input points (`xyz`, `normals`: the cloud before voxelDownsampled) in the same voxel.
/// A voxel's mean position lies in the voxel, so its key finds the voxel's sum.
std::vector<float> voxelNormals(const std::vector<PointXYZ>& xyz, const std::vector<float>& normals,
                                const HostPointCloud& out, float size) {
  float minCorner[3] = {INFINITY, INFINITY, INFINITY};
  for (const PointXYZ& p : xyz) {
    minCorner[0] = std::min(minCorner[0], p.x);
    minCorner[1] = std::min(minCorner[1], p.y);
    minCorner[2] = std::min(minCorner[2], p.z);
  }
  std::unordered_map<std::uint64_t, std::array<double, 3>> sums;
  sums.reserve(xyz.size() / 4 + 1);
  for (std::size_t i = 0; i < xyz.size(); ++i) {
    const float* n = &normals[3 * i];
    const float p[3] = {xyz[i].x, xyz[i].y, xyz[i].z};
    auto& s = sums[voxelKey(p, minCorner, size)];
    if (!finite3(n)) continue;
    for (int a = 0; a < 3; ++a) s[static_cast<std::size_t>(a)] += n[a];
  }
  std::vector<float> result(out.xyz.size(), kNaN);
  for (std::size_t i = 0; i < out.size(); ++i) {
    const auto it = sums.find(voxelKey(&out.xyz[3 * i], minCorner, size));
    if (it == sums.end()) continue;
    const float mean[3] = {static_cast<float>(it->second[0]), static_cast<float>(it->second[1]),
                           static_cast<float>(it->second[2])};
    const auto u = unit(mean);
    std::copy(u.begin(), u.end(), result.begin() + static_cast<std::ptrdiff_t>(3 * i));
  }
  return result;
}

/// Makes points with a non-finite coordinate (an overflowing transform gives inf)
/// missing, as the device's unorganize and voxel stages already treat them: NaN in an
/// organized cloud, left out of an unorganized one. Returns how many had an inf.
std::size_t makeNonFinitePointsMissing(HostPointCloud& c) {
  std::size_t overflowed = 0;
  if (c.isOrganized()) {
    for (std::size_t i = 0; i < c.size(); ++i) {
      if (c.isValid(i)) continue;
      float* p = &c.xyz[3 * i];
      overflowed += std::isinf(p[0]) || std::isinf(p[1]) || std::isinf(p[2]) ? 1 : 0;
      std::fill(p, p + 3, kNaN);
      if (c.hasNormals()) std::fill(&c.normals[3 * i], &c.normals[3 * i] + 3, kNaN);
    }
    return overflowed;
  }
  std::size_t kept = 0;
  for (std::size_t i = 0; i < c.size(); ++i) {
    if (!c.isValid(i)) {
      ++overflowed;
      continue;
    }
    std::copy_n(&c.xyz[3 * i], 3, &c.xyz[3 * kept]);
    if (c.hasColors()) std::copy_n(&c.rgba[4 * i], 4, &c.rgba[4 * kept]);
    if (c.hasSNR()) c.snr[kept] = c.snr[i];
    if (c.hasNormals()) std::copy_n(&c.normals[3 * i], 3, &c.normals[3 * kept]);
    ++kept;
  }
  c.xyz.resize(3 * kept);
  if (c.hasColors()) c.rgba.resize(4 * kept);
  if (c.hasSNR()) c.snr.resize(kept);
  if (c.hasNormals()) c.normals.resize(3 * kept);
  return overflowed;
}

/// The downloaded normals of an organized result: unit length at valid points, NaN elsewhere.
std::vector<float> organizedNormals(const HostPointCloud& out, const std::vector<NormalXYZ>& normals) {
  std::vector<float> result(out.xyz.size());
  for (std::size_t i = 0; i < out.size(); ++i) {
    const float v[3] = {normals[i].x, normals[i].y, normals[i].z};
    const auto u = out.isValid(i) ? unit(v) : std::array<float, 3>{kNaN, kNaN, kNaN};
    std::copy(u.begin(), u.end(), result.begin() + static_cast<std::ptrdiff_t>(3 * i));
  }
  return result;
}

/// The normals a file brought with an organized input, reduced as the device reduces the
/// grid (k x k blocks, floor(H/k) x floor(W/k)): the normalized mean of the block's
/// finite normals. Without a downsample, the input's normals.
std::vector<NormalXYZ> inputGridNormals(const HostPointCloud& input, int k) {
  const int h = input.height / k, w = input.width / k;
  std::vector<NormalXYZ> out(static_cast<std::size_t>(h) * static_cast<std::size_t>(w));
  for (int r = 0; r < h; ++r)
    for (int c = 0; c < w; ++c) {
      double sum[3] = {0, 0, 0};
      for (int dr = 0; dr < k; ++dr)
        for (int dc = 0; dc < k; ++dc) {
          const std::size_t i = static_cast<std::size_t>(r * k + dr) * static_cast<std::size_t>(input.width) +
                                static_cast<std::size_t>(c * k + dc);
          const float* n = &input.normals[3 * i];
          if (!finite3(n)) continue;
          for (int a = 0; a < 3; ++a) sum[a] += n[a];
        }
      const float mean[3] = {static_cast<float>(sum[0]), static_cast<float>(sum[1]), static_cast<float>(sum[2])};
      const auto u = k == 1 ? std::array<float, 3>{mean[0], mean[1], mean[2]} : unit(mean);
      out[static_cast<std::size_t>(r) * static_cast<std::size_t>(w) + static_cast<std::size_t>(c)] =
          NormalXYZ{u[0], u[1], u[2]};
    }
  return out;
}

/// The normals of an unorganized input's valid points, in the order
/// UnorganizedPointCloud::fromHost keeps them.
std::vector<NormalXYZ> inputValidNormals(const HostPointCloud& input) {
  std::vector<NormalXYZ> out;
  for (std::size_t i = 0; i < input.size(); ++i)
    if (input.isValid(i)) out.push_back(NormalXYZ{input.normals[3 * i], input.normals[3 * i + 1], input.normals[3 * i + 2]});
  return out;
}

/// Whether normals can follow stages.transform (none, or an invertible one).
bool transformKeepsNormals(const PipelineStages& stages) {
  if (!stages.transform) return true;
  try {
    (void)pipeline_detail::normalMatrixOf(*stages.transform);
    return true;
  } catch (const Error&) {
    return false;
  }
}

void requireNormalCount(std::size_t points, std::size_t normalValues) {
  if (normalValues != 3 * points)
    throw Error(ErrorCode::InvalidState, "process: the unorganized cloud has " + std::to_string(points) +
                                             " points but " + std::to_string(normalValues / 3) + " normals");
}

/// The normals of the points an outlier stage kept: `kept` is an ordered subsequence of
/// `before` (whose normals are `normals`, 3 floats each). Equal points have equal
/// neighbourhoods, so an outlier stage keeps all or none of them, and the first equal
/// point is the right one to match.
std::vector<float> keptNormals(const std::vector<PointXYZ>& before, const std::vector<float>& normals,
                               const std::vector<PointXYZ>& kept) {
  std::vector<float> out;
  out.reserve(3 * kept.size());
  std::size_t i = 0;
  for (const PointXYZ& p : kept) {
    while (i < before.size() && !(before[i].x == p.x && before[i].y == p.y && before[i].z == p.z)) ++i;
    if (i == before.size())
      throw Error(ErrorCode::InvalidState, "process: a point the outlier removal kept is not one of its input");
    out.insert(out.end(), &normals[3 * i], &normals[3 * i] + 3);
    ++i;
  }
  return out;
}

/// Throws when an unorganized-cloud stage (`option`) left no point.
void requirePointsLeft(const UnorganizedPointCloud& points, const char* option, const std::string& outputName) {
  if (points.size() == 0)
    throw Error(ErrorCode::InvalidArgument,
                std::string("process: no point is left after ") + option + "; nothing to write to " + outputName);
}

std::string downsampleLabel(Downsampling d) {
  const std::string k = d == Downsampling::by2x2 ? "2" : d == Downsampling::by3x3 ? "3" : "4";
  return "downsample " + k + "x" + k;
}

}  // namespace

std::string pipelineCloudText(const HostPointCloud& cloud) {
  return cloud.isOrganized() ? gridText(cloud.height, cloud.width) : pointsText(cloud.size());
}

PipelineResult runPipeline(const HostPointCloud& input, const PipelineStages& stages, const ComputeDevice& device,
                           const PipelineRunOptions& options) {
  stages.validate();
  stages.checkInput(input, options.inputName);
  const std::function<void()>& stageDone = options.stageDone;
  PipelineResult result;
  StageTable table(result.stages, stageDone);

  const bool organized = input.isOrganized();
  if (!organized && stages.unorganizes()) table.skipped();  // nothing to do: already unorganized

  Stream stream(device);
  PointCloud cloud;
  UnorganizedPointCloud points;
  UnorganizedPointCloud beforeOutliers;  // kept only to carry normals through the outlier stages
  UnorganizedPointCloud beforeVoxel;     // kept only to carry normals through the voxel stage
  DeviceArray<NormalXYZ> normals;
  bool isOrganizedNow = organized;
  // Normals the input brought (from its file) are carried like computed ones, unless
  // the normals stage computes new ones or a singular transform flattens the cloud
  // (normals cannot follow it: they are dropped).
  const bool carriesInputNormals = input.hasNormals() && !stages.normals && transformKeepsNormals(stages);
  const bool hasNormals = stages.normals || carriesInputNormals;

  PipelineStageResult* row = &table.onHost("upload", [&] {
    if (organized)
      cloud = PointCloud::fromHost(input, device);
    else
      points = UnorganizedPointCloud::fromHost(input, device);
    if (!carriesInputNormals) return;
    if (organized) {
      const int k = pipeline_detail::downsampleFactor(stages.downsample);
      const std::vector<NormalXYZ> n = inputGridNormals(input, k);
      if (!n.empty()) normals = DeviceArray<NormalXYZ>::fromHost(n.data(), input.height / k, input.width / k, device);
    } else {
      const std::vector<NormalXYZ> n = inputValidNormals(input);
      if (!n.empty()) normals = DeviceArray<NormalXYZ>::fromHost(n.data(), n.size(), device);
    }
  });
  finishRow(*row, organized ? gridText(cloud.height(), cloud.width()) : pointsText(points.size()), stageDone);

  if (stages.snrThreshold) {
    row = &table.onStream("snr threshold " + pipeline_detail::numberText(*stages.snrThreshold), stream,
                          [&] { cloud.filterNoise(*stages.snrThreshold, stream); });
    finishRow(*row, gridText(cloud.height(), cloud.width()), stageDone);
  }
  if (stages.outlierDistance) {
    row = &table.onStream("remove outliers " + pipeline_detail::numberText(*stages.outlierDistance) + " mm", stream,
                          [&] { cloud.filterOutliers(*stages.outlierDistance, stream); });
    finishRow(*row, gridText(cloud.height(), cloud.width()), stageDone);
  }
  if (stages.smoothingSigma) {
    row = &table.onStream("smooth sigma " + pipeline_detail::numberText(*stages.smoothingSigma), stream, [&] {
      cloud.smoothDepth(*stages.smoothingSigma, stages.maxDepthStep, stages.smoothingRadius, stream);
    });
    finishRow(*row, gridText(cloud.height(), cloud.width()), stageDone);
  }
  if (stages.maxHoleSize) {
    row = &table.onStream("fill holes " + std::to_string(*stages.maxHoleSize), stream,
                          [&] { cloud.fillHoles(*stages.maxHoleSize, stages.maxDepthStep, stream); });
    finishRow(*row, gridText(cloud.height(), cloud.width()), stageDone);
  }
  if (stages.downsample) {
    row = &table.onStream(downsampleLabel(*stages.downsample), stream,
                          [&] { cloud.downsample(*stages.downsample, stream); });
    finishRow(*row, gridText(cloud.height(), cloud.width()), stageDone);
  }
  if (stages.normals) {
    // The download keeps no normal of a point the ROI removes (NaN on a grid, left out
    // of a compaction): the plane fit may skip them.
    row = &table.onStream("normals", stream,
                          [&] { normals = pipeline_detail::gridNormals(cloud, stages, true, stream); });
    finishRow(*row, gridText(cloud.height(), cloud.width()) + " normals", stageDone);
  }
  if (stages.transform) {
    const Matrix4x4 normalTransform =
        hasNormals ? pipeline_detail::normalMatrixOf(*stages.transform) : identityMatrix4x4();
    row = &table.onStream("transform", stream, [&] {
      if (organized)
        cloud.transform(*stages.transform, stream);
      else
        points.transform(*stages.transform, stream);
      if (hasNormals && !normals.isEmpty()) {
        // The normals array seen as points (same layout), rotated in place.
        UnorganizedPointCloud asPoints(DeviceArray<PointXYZ>::fromGpuMatND(normals.toGpuMatND()));
        asPoints.transform(normalTransform, stream);
      }
    });
    finishRow(*row, organized ? gridText(cloud.height(), cloud.width()) : pointsText(points.size()), stageDone);
  }
  if (stages.roi) {
    row = &table.onStream("roi", stream, [&] { cloud.maskByRegionOfInterest(*stages.roi, stream); });
    finishRow(*row, gridText(cloud.height(), cloud.width()), stageDone);
  }
  if (organized && stages.unorganizes()) {
    row = &table.onStream("unorganize", stream, [&] { points = cloud.toUnorganizedPointCloud(stream); });
    finishRow(*row, pointsText(points.size()), stageDone);
    isOrganizedNow = false;
    if (points.size() == 0)
      throw Error(ErrorCode::InvalidArgument, "process: no valid point is left after " +
                                                  std::string(stages.roi ? "--roi" : "the earlier stages") +
                                                  "; nothing to write to " + options.outputName);
  }
  const bool removesOutliers = pipeline_detail::removesOutliers(stages);
  if (removesOutliers && hasNormals) beforeOutliers = points;
  // An outlier stage of the unorganized cloud: its row, then a clear error when it kept nothing.
  const auto removeOutliers = [&](const std::string& label, const char* option, auto&& filter) {
    row = &table.onStream(label, stream, [&] { points = filter(); });
    finishRow(*row, pointsText(points.size()), stageDone);
    requirePointsLeft(points, option, options.outputName);
  };
  if (const auto& f = stages.statisticalOutliers)
    removeOutliers("statistical outliers " + std::to_string(f->neighbours) + ", ratio " +
                       pipeline_detail::numberText(f->stdRatio),
                   "--statistical-outliers",
                   [&] { return points.statisticalOutliersRemoved(f->neighbours, f->stdRatio, stream); });
  if (const auto& f = stages.radiusOutliers)
    removeOutliers("radius outliers " + pipeline_detail::numberText(f->radius) + " mm, min " +
                       std::to_string(f->minPoints),
                   "--radius-outliers", [&] { return points.radiusOutliersRemoved(f->radius, f->minPoints, stream); });
  if (stages.voxelSize) {
    char label[64];
    std::snprintf(label, sizeof label, "voxel %g mm, min %d", static_cast<double>(*stages.voxelSize),
                  stages.minPointsPerVoxel);
    if (hasNormals) beforeVoxel = points;
    row = &table.onStream(label, stream, [&] {
      points = points.voxelDownsampled(*stages.voxelSize, stages.minPointsPerVoxel, stream);
    });
    finishRow(*row, pointsText(points.size()), stageDone);
    if (points.size() == 0)
      throw Error(ErrorCode::InvalidArgument, "process: no voxel has " + std::to_string(stages.minPointsPerVoxel) +
                                                  " or more points (lower --min-points); nothing to write to " +
                                                  options.outputName);
  }

  HostPointCloud& out = result.cloud;
  row = &table.onHost("download", [&] {
    out = isOrganizedNow ? cloud.toHost() : points.toHost();
    if (!hasNormals) return;
    const std::vector<NormalXYZ> n = normals.isEmpty() ? std::vector<NormalXYZ>() : normals.toHost();
    if (isOrganizedNow) {
      out.normals = organizedNormals(out, n);
      return;
    }
    // An unorganized input's normals are already those of its points, one for one.
    std::vector<float> compact = organized ? compactNormals(cloud.storedXYZ().toHost(), n) : unitNormals(n);
    if (removesOutliers) {
      const std::vector<PointXYZ> before = beforeOutliers.storedXYZ().toHost();
      requireNormalCount(before.size(), compact.size());
      compact = keptNormals(before, compact, (stages.voxelSize ? beforeVoxel : points).storedXYZ().toHost());
    }
    if (stages.voxelSize) {
      const std::vector<PointXYZ> xyz = beforeVoxel.storedXYZ().toHost();
      requireNormalCount(xyz.size(), compact.size());
      out.normals = voxelNormals(xyz, compact, out, *stages.voxelSize);
    } else {
      requireNormalCount(out.size(), compact.size());
      out.normals = std::move(compact);
    }
  });
  result.nonFinitePoints = makeNonFinitePointsMissing(out);
  finishRow(*row, pipelineCloudText(out), stageDone);
  // A cloud without a valid point would only make a file that `process` refuses.
  if (out.validCount() == 0)
    throw Error(ErrorCode::InvalidArgument,
                "process: no valid point is left after " +
                    std::string(result.nonFinitePoints > 0 ? "--transform (its results do not fit a float)"
                                : stages.roi               ? "--roi"
                                                           : "the earlier stages") +
                    "; nothing to write to " + options.outputName);
  return result;
}

namespace {

/// The format `devicearray process` reads or writes `path` as: .pcd and .xyz by their
/// extension, every other path (pipes and devices included) as PLY.
PointCloudFileFormat pipelineFileFormat(const std::string& path) {
  return io_detail::formatOfExtension(path).value_or(PointCloudFileFormat::ply);
}

const char* formatName(PointCloudFileFormat format) {
  switch (format) {
    case PointCloudFileFormat::pcd: return "PCD";
    case PointCloudFileFormat::xyz: return "XYZ";
    case PointCloudFileFormat::ply: break;
  }
  return "PLY";
}

}  // namespace

std::string readStageName(const std::string& inputPath) {
  return std::string("read ") + formatName(pipelineFileFormat(inputPath));
}

HostPointCloud readPipelineInput(const std::string& inputPath) {
  return io_detail::readPointCloudAs(pipelineFileFormat(inputPath), inputPath);
}

std::string writeStageName(const std::string& outputPath) {
  return std::string("write ") + formatName(pipelineFileFormat(outputPath));
}

void checkPipelineOutput(const std::string& outputPath, PlyFormat format) {
  if (format != PlyFormat::ascii && format != PlyFormat::binaryLittleEndian && format != PlyFormat::binaryBigEndian)
    io_detail::invalid("unknown PlyFormat value " + std::to_string(static_cast<int>(format)));
  const PointCloudFileFormat file = pipelineFileFormat(outputPath);
  if (format == PlyFormat::binaryBigEndian && file != PointCloudFileFormat::ply)
    io_detail::invalid(std::string("format binary_big_endian: '") + io_detail::printable(outputPath, 200) +
                       "' is written as " + formatName(file) + " (by its extension), which has no big-endian form; "
                       "use binary or ascii, or a .ply output");
}

void writePipelineOutput(const std::string& outputPath, const HostPointCloud& cloud, PlyFormat format) {
  checkPipelineOutput(outputPath, format);
  switch (pipelineFileFormat(outputPath)) {
    case PointCloudFileFormat::pcd:
      writePcd(outputPath, cloud, format == PlyFormat::ascii ? PcdFormat::ascii : PcdFormat::binary);
      return;
    case PointCloudFileFormat::xyz: writeXyz(outputPath, cloud); return;
    case PointCloudFileFormat::ply: break;
  }
  writePly(outputPath, cloud, format);
}

PipelineResult processPlyFile(const std::string& inputPath, const std::string& outputPath,
                              const PipelineStages& stages, const ComputeDevice& device, PlyFormat format,
                              const PipelineRunOptions& options) {
  stages.validate();
  const std::filesystem::path parent = std::filesystem::path(outputPath).parent_path();
  if (!parent.empty() && !std::filesystem::is_directory(parent))
    io_detail::invalid("processPlyFile: the directory '" + io_detail::printable(parent.string(), 200) + "' of '" +
                       io_detail::printable(outputPath, 200) + "' does not exist");
  checkPipelineOutput(outputPath, format);
  PipelineRunOptions named = options;
  const PipelineRunOptions defaults;
  if (named.inputName == defaults.inputName) named.inputName = inputPath;
  if (named.outputName == defaults.outputName) named.outputName = outputPath;

  std::vector<PipelineStageResult> rows;
  StageTable table(rows, options.stageDone);
  HostPointCloud input;
  PipelineStageResult& read =
      table.onHost(readStageName(inputPath), [&] { input = readPipelineInput(inputPath); });
  finishRow(read, pipelineCloudText(input), options.stageDone);

  PipelineResult result = runPipeline(input, stages, device, named);
  rows.insert(rows.end(), result.stages.begin(), result.stages.end());
  PipelineStageResult& write =
      table.onHost(writeStageName(outputPath), [&] { writePipelineOutput(outputPath, result.cloud, format); });
  finishRow(write, result.cloud.isOrganized() ? "organized" : "unorganized", options.stageDone);
  result.stages = std::move(rows);
  return result;
}

}  // namespace devicearray
