// PipelineStages: the stage options of `devicearray process` read into one value,
// checked once, and written back.
#include <algorithm>
#include <cctype>
#include <cerrno>
#include <climits>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string_view>
#include <utility>

#include "core/roi_base.hpp"
#include "devicearray/error.hpp"
#include "devicearray/frame_pipeline.hpp"
#include "io/frame_pipeline_internal.hpp"
#include "io/io_detail.hpp"

namespace devicearray {

using io_detail::invalid;
using io_detail::printable;
using pipeline_detail::numberText;

namespace pipeline_detail {

int downsampleFactor(const std::optional<Downsampling>& downsample) {
  if (!downsample) return 1;
  return *downsample == Downsampling::by2x2 ? 2 : *downsample == Downsampling::by3x3 ? 3 : 4;
}

std::string numberText(double value) {
  char text[32];
  std::snprintf(text, sizeof text, "%.9g", value);
  return text;
}

DeviceArray<NormalXYZ> gridNormals(const PointCloud& cloud, const PipelineStages& stages, bool onlyWhereKept,
                                   StreamOrQueue sq) {
  if (stages.normalWindow == 0) return cloud.deviceNormalsXYZ(sq);
  if (onlyWhereKept && stages.roi)
    return cloud.deviceNormalsXYZ(stages.normalWindow, *stages.roi, stages.transform.value_or(identityMatrix4x4()),
                                  sq);
  return cloud.deviceNormalsXYZ(stages.normalWindow, sq);
}

Matrix4x4 normalMatrixOf(const Matrix4x4& m) {
  const auto a = [&](int r, int c) { return static_cast<double>(m[static_cast<std::size_t>(4 * r + c)]); };
  // Cofactor matrix C; A^-T = C / det(A).
  double cof[3][3];
  for (int r = 0; r < 3; ++r)
    for (int c = 0; c < 3; ++c) {
      const int r1 = (r + 1) % 3, r2 = (r + 2) % 3, c1 = (c + 1) % 3, c2 = (c + 2) % 3;
      cof[r][c] = a(r1, c1) * a(r2, c2) - a(r1, c2) * a(r2, c1);
    }
  const double det = a(0, 0) * cof[0][0] + a(0, 1) * cof[0][1] + a(0, 2) * cof[0][2];
  double scale = 0;
  for (int r = 0; r < 3; ++r)
    for (int c = 0; c < 3; ++c) scale = std::max(scale, std::abs(a(r, c)));
  if (!(std::abs(det) > 1e-9 * scale * scale * scale))
    invalid("--transform: its 3x3 part is singular (determinant " + numberText(det) +
            "), so normals cannot follow it; leave out --normals or use an invertible transform");
  Matrix4x4 n = identityMatrix4x4();
  for (int r = 0; r < 3; ++r)
    for (int c = 0; c < 3; ++c) n[static_cast<std::size_t>(4 * r + c)] = static_cast<float>(cof[r][c] / det);
  return n;
}

}  // namespace pipeline_detail

namespace {

constexpr const char* kStageOptions =
    "--snr-threshold, --remove-outliers, --smooth, --smooth-radius, --fill-holes, --max-depth-step, "
    "--downsample, --normals, --normal-window, --transform, --roi, --unorganize, --statistical-outliers, "
    "--radius-outliers, --voxel, --min-points";

constexpr float kDefaultMaxDepthStep = 10.0f;
constexpr int kLargestSmoothingRadius = 15;
constexpr int kLargestNormalWindow = 15;  // PointCloud::deviceNormalsXYZ's largest window
constexpr int kLargestHole = 1024;
constexpr int kMostStatisticalNeighbours = 32;

/// Exactly `count` finite numbers separated by commas and/or whitespace; `what` names
/// the option in the message.
std::vector<double> parseNumberList(const std::string& text, std::size_t count, const std::string& what) {
  std::vector<double> values;
  std::size_t i = 0;
  const auto isSeparator = [](char c) { return c == ',' || std::isspace(static_cast<unsigned char>(c)); };
  while (i < text.size()) {
    if (isSeparator(text[i])) {
      ++i;
      continue;
    }
    std::size_t end = i;
    while (end < text.size() && !isSeparator(text[end])) ++end;
    const std::string token = text.substr(i, end - i);
    errno = 0;
    char* stop = nullptr;
    const double v = std::strtod(token.c_str(), &stop);
    if (stop != token.c_str() + token.size() || errno == ERANGE || !std::isfinite(v))
      invalid(what + ": '" + printable(token, 40) + "' is not a finite number");
    values.push_back(v);
    i = end;
  }
  if (values.size() != count)
    invalid(what + ": expected " + std::to_string(count) + " numbers, got " + std::to_string(values.size()));
  return values;
}

/// The text of a small matrix file. At most kMaxBytes + 1 bytes are read whatever the
/// path is (a device or a FIFO never streams in without end), and only text is taken:
/// a binary file is named as such instead of ending up, byte for byte, in a message.
std::string readSmallTextFile(const std::string& path, const std::string& what) {
  constexpr std::size_t kMaxBytes = 65536;
  std::ifstream f(path, std::ios::binary);
  if (!f) invalid(what + ": cannot open '" + printable(path, 200) + "'");
  std::string bytes(kMaxBytes + 1, '\0');
  f.read(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  bytes.resize(static_cast<std::size_t>(f.gcount()));
  if (bytes.size() > kMaxBytes)
    invalid(what + ": '" + printable(path, 200) + "' is larger than 64 KiB; a matrix file is at most 64 KiB");
  for (std::size_t i = 0; i < bytes.size(); ++i) {
    const auto c = static_cast<unsigned char>(bytes[i]);
    if (c < 0x20 && c != '\n' && c != '\r' && c != '\t' && c != '\f' && c != '\v')
      invalid(what + ": '" + printable(path, 200) + "' is not a text file (byte " + std::to_string(i) + " is " +
              printable(bytes.substr(i, 1)) + "); a matrix file holds 16 numbers as text");
  }
  std::string text;
  std::size_t start = 0;
  // '#' starts a comment, so a matrix file can say where it came from.
  while (start < bytes.size()) {
    const std::size_t end = std::min(bytes.find('\n', start), bytes.size());
    const std::string_view line(bytes.data() + start, end - start);
    text += std::string(line.substr(0, line.find('#'))) + '\n';
    start = end + 1;
  }
  return text;
}

Matrix4x4 parseTransform(const std::string& spec) {
  if (spec.find_first_not_of(" \t\n\r") == std::string::npos)
    invalid("--transform is empty; give 16 comma-separated numbers (row-major 4x4) or a file holding them");
  const bool isFile = spec.find(',') == std::string::npos && std::filesystem::is_regular_file(spec);
  if (spec.find(',') == std::string::npos && !isFile && spec.find_first_of(" \t") == std::string::npos)
    invalid("--transform '" + printable(spec, 200) + "' is neither a readable file nor 16 comma-separated numbers");
  const std::vector<double> v = parseNumberList(isFile ? readSmallTextFile(spec, "--transform") : spec, 16,
                                                isFile ? "--transform file '" + printable(spec, 200) + "'" : "--transform");
  Matrix4x4 m{};
  for (std::size_t i = 0; i < 16; ++i) {
    m[i] = static_cast<float>(v[i]);
    if (!std::isfinite(m[i]))
      invalid("--transform: element " + std::to_string(i) + " (" + numberText(v[i]) + ") does not fit a float");
  }
  return m;
}

/// The ROI's checks on its 11 values (origin, A, B, min, max), as given or as stored.
void checkRoiValues(const double (&v)[11]) {
  if (v[9] > v[10]) invalid("--roi: min " + numberText(v[9]) + " is greater than max " + numberText(v[10]));
  const double u[3] = {v[3] - v[0], v[4] - v[1], v[5] - v[2]}, w[3] = {v[6] - v[0], v[7] - v[1], v[8] - v[2]};
  if (!detail::spansBase(u, w)) invalid("--roi: origin, A and B are coincident or collinear, so they span no base");
}

RegionOfInterestBox parseRoi(const std::string& spec) {
  const std::vector<double> v = parseNumberList(spec, 11, "--roi (ox,oy,oz,ax,ay,az,bx,by,bz,min,max)");
  double given[11];
  std::copy(v.begin(), v.end(), given);
  checkRoiValues(given);
  for (std::size_t i = 0; i < 11; ++i)
    if (!std::isfinite(static_cast<float>(v[i])))
      invalid("--roi: value " + std::to_string(i) + " (" + numberText(v[i]) + ") does not fit a float");
  RegionOfInterestBox box;
  box.origin = {static_cast<float>(v[0]), static_cast<float>(v[1]), static_cast<float>(v[2])};
  box.pointA = {static_cast<float>(v[3]), static_cast<float>(v[4]), static_cast<float>(v[5])};
  box.pointB = {static_cast<float>(v[6]), static_cast<float>(v[7]), static_cast<float>(v[8])};
  box.minExtent = static_cast<float>(v[9]);
  box.maxExtent = static_cast<float>(v[10]);
  return box;
}

void checkVoxelSize(double size) {
  const float s = static_cast<float>(size);
  if (!(std::isfinite(s) && s > 0.0f))
    invalid("--voxel " + numberText(size) + " must be a finite size > 0 (mm) that fits a float");
}

float parseVoxelSize(const std::string& spec) {
  char* stop = nullptr;
  const double size = std::strtod(spec.c_str(), &stop);
  if (spec.empty() || std::isspace(static_cast<unsigned char>(spec[0])) || stop != spec.c_str() + spec.size())
    invalid("--voxel '" + printable(spec, 40) + "' is not a number (a size in mm)");
  checkVoxelSize(size);
  return static_cast<float>(size);
}

int parseMinPoints(const std::string& spec) {
  const bool digits = !spec.empty() && spec.size() <= 10 &&
                      std::all_of(spec.begin(), spec.end(), [](char c) { return c >= '0' && c <= '9'; });
  const long long v = digits ? std::stoll(spec) : 0;
  if (!digits || v < 1 || v > INT_MAX)
    invalid("--min-points '" + printable(spec, 40) + "' must be an integer in 1.." + std::to_string(INT_MAX));
  return static_cast<int>(v);
}

/// A finite number that fits a float; `what` describes it in the message.
float parseFloat(const std::string& name, const std::string& spec, const std::string& what) {
  char* stop = nullptr;
  errno = 0;
  const double v = std::strtod(spec.c_str(), &stop);
  if (spec.empty() || std::isspace(static_cast<unsigned char>(spec[0])) || stop != spec.c_str() + spec.size() ||
      errno == ERANGE || !std::isfinite(static_cast<float>(v)))
    invalid(name + " '" + printable(spec, 40) + "' is not a finite number (" + what + ")");
  return static_cast<float>(v);
}

/// An integer in [lo, hi].
int parseInteger(const std::string& name, const std::string& spec, int lo, int hi) {
  const bool digits = !spec.empty() && spec.size() <= 10 &&
                      std::all_of(spec.begin(), spec.end(), [](char c) { return c >= '0' && c <= '9'; });
  const long long v = digits ? std::stoll(spec) : -1;
  if (!digits || v < lo || v > hi)
    invalid(name + " '" + printable(spec, 40) + "' must be an integer in " + std::to_string(lo) + ".." +
            std::to_string(hi));
  return static_cast<int>(v);
}

void checkFilterValues(const PipelineStages& s) {
  if (s.snrThreshold && !std::isfinite(*s.snrThreshold))
    invalid("--snr-threshold " + numberText(*s.snrThreshold) + " must be finite");
  if (s.outlierDistance && !(std::isfinite(*s.outlierDistance) && *s.outlierDistance >= 0))
    invalid("--remove-outliers " + numberText(*s.outlierDistance) + " must be a finite distance >= 0 (mm)");
  if (s.smoothingSigma && !(std::isfinite(*s.smoothingSigma) && *s.smoothingSigma > 0))
    invalid("--smooth " + numberText(*s.smoothingSigma) + " must be a finite sigma > 0 (pixels)");
  if (s.smoothingRadius < 0 || s.smoothingRadius > kLargestSmoothingRadius)
    invalid("--smooth-radius " + std::to_string(s.smoothingRadius) + " must be in 0.." +
            std::to_string(kLargestSmoothingRadius));
  if (s.smoothingRadius != 0 && !s.smoothingSigma) invalid("--smooth-radius needs --smooth");
  if (s.maxHoleSize && (*s.maxHoleSize < 1 || *s.maxHoleSize > kLargestHole))
    invalid("--fill-holes " + std::to_string(*s.maxHoleSize) + " must be in 1.." + std::to_string(kLargestHole));
  if (!(std::isfinite(s.maxDepthStep) && s.maxDepthStep >= 0))
    invalid("--max-depth-step " + numberText(s.maxDepthStep) + " must be a finite distance >= 0 (mm)");
  if (s.maxDepthStep != kDefaultMaxDepthStep && !s.smoothingSigma && !s.maxHoleSize)
    invalid("--max-depth-step needs --smooth or --fill-holes (the depth step they do not cross)");
}

void checkUnorganizedFilters(const PipelineStages& s) {
  if (const auto& f = s.statisticalOutliers) {
    if (f->neighbours < 1 || f->neighbours > kMostStatisticalNeighbours)
      invalid("--statistical-outliers: " + std::to_string(f->neighbours) + " neighbours; it must be in 1.." +
              std::to_string(kMostStatisticalNeighbours));
    if (!(std::isfinite(f->stdRatio) && f->stdRatio >= 0))
      invalid("--statistical-outliers: ratio " + numberText(f->stdRatio) + " must be finite and >= 0");
  }
  if (const auto& f = s.radiusOutliers) {
    if (!(std::isfinite(f->radius) && f->radius > 0))
      invalid("--radius-outliers: radius " + numberText(f->radius) + " must be a finite distance > 0 (mm)");
    if (f->minPoints < 1)
      invalid("--radius-outliers: " + std::to_string(f->minPoints) + " points; it must be at least 1");
  }
}

/// "A,B": two items separated by one comma; `form` names them in the message.
std::pair<std::string, std::string> splitPair(const std::string& name, const std::string& spec,
                                              const std::string& form) {
  const std::size_t comma = spec.find(',');
  if (comma == std::string::npos || spec.find(',', comma + 1) != std::string::npos)
    invalid(name + " '" + printable(spec, 40) + "' must be " + form);
  return {spec.substr(0, comma), spec.substr(comma + 1)};
}

StatisticalOutlierStage parseStatisticalOutliers(const std::string& spec) {
  const auto [k, ratio] = splitPair("--statistical-outliers", spec, "K,RATIO (e.g. 20,2)");
  return {parseInteger("--statistical-outliers neighbours", k, 1, kMostStatisticalNeighbours),
          parseFloat("--statistical-outliers ratio", ratio, "a multiple of the standard deviation")};
}

RadiusOutlierStage parseRadiusOutliers(const std::string& spec) {
  const auto [radius, points] = splitPair("--radius-outliers", spec, "MM,N (e.g. 5,3)");
  return {parseFloat("--radius-outliers radius", radius, "a distance in mm"),
          parseInteger("--radius-outliers points", points, 1, INT_MAX)};
}

Downsampling parseDownsample(const std::string& spec) {
  if (spec == "2x2") return Downsampling::by2x2;
  if (spec == "3x3") return Downsampling::by3x3;
  if (spec == "4x4") return Downsampling::by4x4;
  invalid("--downsample '" + printable(spec, 40) + "' is not one of 2x2, 3x3, 4x4");
}

std::string downsampleText(Downsampling d) {
  const std::string k = std::to_string(pipeline_detail::downsampleFactor(d));
  return k + "x" + k;
}

std::string joinedNumbers(const float* values, std::size_t count) {
  std::string text;
  for (std::size_t i = 0; i < count; ++i) text += (i ? "," : "") + numberText(values[i]);
  return text;
}

}  // namespace

PipelineStages PipelineStages::parse(const std::vector<std::string>& args) {
  // The text given for each option; a flag's text is "" when given.
  const char* const kFlags[] = {"--normals", "--unorganize"};
  std::optional<std::string> downsample, transform, roi, voxel, minPoints, normals, unorganize;
  std::optional<std::string> snrThreshold, outliers, smooth, smoothRadius, fillHoles, maxDepthStep;
  std::optional<std::string> statisticalOutliers, radiusOutliers, normalWindow;
  const auto slotOf = [&](const std::string& name) -> std::optional<std::string>* {
    if (name == "--snr-threshold") return &snrThreshold;
    if (name == "--remove-outliers") return &outliers;
    if (name == "--smooth") return &smooth;
    if (name == "--smooth-radius") return &smoothRadius;
    if (name == "--fill-holes") return &fillHoles;
    if (name == "--max-depth-step") return &maxDepthStep;
    if (name == "--downsample") return &downsample;
    if (name == "--transform") return &transform;
    if (name == "--roi") return &roi;
    if (name == "--voxel") return &voxel;
    if (name == "--min-points") return &minPoints;
    if (name == "--normals") return &normals;
    if (name == "--normal-window") return &normalWindow;
    if (name == "--unorganize") return &unorganize;
    if (name == "--statistical-outliers") return &statisticalOutliers;
    if (name == "--radius-outliers") return &radiusOutliers;
    return nullptr;
  };
  for (std::size_t i = 0; i < args.size(); ++i) {
    const std::string& arg = args[i];
    const std::size_t eq = arg.rfind("--", 0) == 0 ? arg.find('=') : std::string::npos;
    const std::string name = arg.substr(0, eq);
    std::optional<std::string>* slot = slotOf(name);
    if (slot == nullptr)
      invalid("'" + printable(arg, 40) + "' is not a stage option (the stage options are " + kStageOptions + ")");
    if (slot->has_value()) invalid(name + " is given twice");
    const bool isFlag = std::find(std::begin(kFlags), std::end(kFlags), name) != std::end(kFlags);
    if (isFlag) {
      if (eq != std::string::npos) invalid(name + " takes no value (given '" + printable(arg, 40) + "')");
      *slot = std::string();
      continue;
    }
    if (eq != std::string::npos) {
      *slot = arg.substr(eq + 1);
    } else {
      if (i + 1 == args.size()) invalid(name + " needs a value");
      *slot = args[++i];
    }
  }

  PipelineStages s;
  if (snrThreshold) s.snrThreshold = parseFloat("--snr-threshold", *snrThreshold, "an SNR");
  if (outliers) s.outlierDistance = parseFloat("--remove-outliers", *outliers, "a distance in mm");
  if (smooth) s.smoothingSigma = parseFloat("--smooth", *smooth, "a sigma in pixels");
  if (smoothRadius) {
    if (!smooth) invalid("--smooth-radius needs --smooth");
    s.smoothingRadius = parseInteger("--smooth-radius", *smoothRadius, 0, kLargestSmoothingRadius);
  }
  if (fillHoles) s.maxHoleSize = parseInteger("--fill-holes", *fillHoles, 1, kLargestHole);
  if (maxDepthStep) {
    if (!smooth && !fillHoles) invalid("--max-depth-step needs --smooth or --fill-holes (the depth step they do not cross)");
    s.maxDepthStep = parseFloat("--max-depth-step", *maxDepthStep, "a distance in mm");
  }
  if (downsample) s.downsample = parseDownsample(*downsample);
  s.normals = normals.has_value();
  if (normalWindow) s.normalWindow = parseInteger("--normal-window", *normalWindow, 3, kLargestNormalWindow);
  if (transform) s.transform = parseTransform(*transform);
  if (roi) s.roi = parseRoi(*roi);
  s.unorganize = unorganize.has_value();
  if (statisticalOutliers) s.statisticalOutliers = parseStatisticalOutliers(*statisticalOutliers);
  if (radiusOutliers) s.radiusOutliers = parseRadiusOutliers(*radiusOutliers);
  if (voxel) s.voxelSize = parseVoxelSize(*voxel);
  if (minPoints) {
    if (!voxel) invalid("--min-points needs --voxel (it counts the points of a voxel)");
    s.minPointsPerVoxel = parseMinPoints(*minPoints);
  }
  s.validate();
  return s;
}

void PipelineStages::validate() const {
  checkFilterValues(*this);
  if (normalWindow != 0 && (normalWindow < 3 || normalWindow > kLargestNormalWindow || normalWindow % 2 == 0))
    invalid("--normal-window " + std::to_string(normalWindow) + " must be odd and in 3.." +
            std::to_string(kLargestNormalWindow) + " (or 0: central differences)");
  if (normalWindow != 0 && !normals) invalid("--normal-window needs --normals (it chooses how they are estimated)");
  if (downsample && *downsample != Downsampling::by2x2 && *downsample != Downsampling::by3x3 &&
      *downsample != Downsampling::by4x4)
    invalid("--downsample: " + std::to_string(static_cast<int>(*downsample)) + " is not a Downsampling value");
  if (transform) {
    const Matrix4x4& m = *transform;
    for (std::size_t i = 0; i < 16; ++i)
      if (!std::isfinite(m[i]))
        invalid("--transform: element " + std::to_string(i) + " (" + numberText(m[i]) + ") is not finite");
    if (m[12] != 0.0f || m[13] != 0.0f || m[14] != 0.0f || m[15] != 1.0f) {
      char row[160];
      std::snprintf(row, sizeof row, "%g %g %g %g", m[12], m[13], m[14], m[15]);
      invalid(std::string("--transform: the last row is ") + row +
              "; it must be 0 0 0 1 (an affine transform, row-major)");
    }
    if (normals) (void)pipeline_detail::normalMatrixOf(m);
  }
  if (roi) {
    const RegionOfInterestBox& b = *roi;
    const double v[11] = {b.origin.x, b.origin.y, b.origin.z, b.pointA.x,  b.pointA.y, b.pointA.z,
                          b.pointB.x, b.pointB.y, b.pointB.z, b.minExtent, b.maxExtent};
    for (double x : v)
      if (!std::isfinite(x)) invalid("--roi: every value of the box must be finite (one is " + numberText(x) + ")");
    checkRoiValues(v);
  }
  checkUnorganizedFilters(*this);
  if (voxelSize) checkVoxelSize(*voxelSize);
  if (minPointsPerVoxel < 1)
    invalid("--min-points " + std::to_string(minPointsPerVoxel) + " must be at least 1");
  if (!voxelSize && minPointsPerVoxel != 1)
    invalid("--min-points needs --voxel (it counts the points of a voxel)");
}

std::vector<std::string> PipelineStages::toArguments() const {
  validate();
  std::vector<std::string> args;
  // "=" keeps a leading minus sign from reading as an option in command lines.
  if (snrThreshold) args.push_back("--snr-threshold=" + numberText(*snrThreshold));
  if (outlierDistance) args.insert(args.end(), {"--remove-outliers", numberText(*outlierDistance)});
  if (smoothingSigma) args.insert(args.end(), {"--smooth", numberText(*smoothingSigma)});
  if (smoothingRadius != 0) args.insert(args.end(), {"--smooth-radius", std::to_string(smoothingRadius)});
  if (maxHoleSize) args.insert(args.end(), {"--fill-holes", std::to_string(*maxHoleSize)});
  if (maxDepthStep != kDefaultMaxDepthStep) args.insert(args.end(), {"--max-depth-step", numberText(maxDepthStep)});
  if (downsample) args.insert(args.end(), {"--downsample", downsampleText(*downsample)});
  if (normals) args.emplace_back("--normals");
  if (normalWindow != 0) args.insert(args.end(), {"--normal-window", std::to_string(normalWindow)});
  if (transform) args.insert(args.end(), {"--transform", joinedNumbers(transform->data(), 16)});
  if (roi) {
    const RegionOfInterestBox& b = *roi;
    const float v[11] = {b.origin.x, b.origin.y, b.origin.z, b.pointA.x,  b.pointA.y, b.pointA.z,
                         b.pointB.x, b.pointB.y, b.pointB.z, b.minExtent, b.maxExtent};
    // "=" keeps a leading minus sign from reading as an option in command lines.
    args.push_back("--roi=" + joinedNumbers(v, 11));
  }
  if (unorganize) args.emplace_back("--unorganize");
  if (statisticalOutliers)
    args.insert(args.end(), {"--statistical-outliers", std::to_string(statisticalOutliers->neighbours) + "," +
                                                           numberText(statisticalOutliers->stdRatio)});
  if (radiusOutliers)
    args.insert(args.end(), {"--radius-outliers", numberText(radiusOutliers->radius) + "," +
                                                      std::to_string(radiusOutliers->minPoints)});
  if (voxelSize) args.insert(args.end(), {"--voxel", numberText(*voxelSize)});
  if (minPointsPerVoxel != 1) args.insert(args.end(), {"--min-points", std::to_string(minPointsPerVoxel)});
  return args;
}

namespace pipeline_detail {

void checkFrameFits(const PipelineStages& stages, int height, int width, bool hasSNR, const std::string& name) {
  if (stages.snrThreshold && !hasSNR) invalid("--snr-threshold needs SNR values; " + name + " has none");
  const int block = downsampleFactor(stages.downsample);
  if (stages.downsample && (height < block || width < block))
    invalid("--downsample " + downsampleText(*stages.downsample) + " needs at least " + std::to_string(block) +
            " rows and columns; " + name + " is " + std::to_string(height) + " x " + std::to_string(width));
}

}  // namespace pipeline_detail

void PipelineStages::checkInput(const HostPointCloud& input, const std::string& inputName) const {
  if (input.validCount() == 0) invalid(inputName + " has no valid point (every x, y, z is NaN or it is empty)");
  if (needsOrganizedInput() && !input.isOrganized())
    invalid(inputName +
            " is unorganized (its header declares no grid: obj_info height/width or num_rows/num_cols, or a "
            "camera element); the camera filters, --downsample, --normals and --roi need an organized cloud");
  // A downsample needs an organized input (checked above), so the sizes are its grid's.
  pipeline_detail::checkFrameFits(*this, input.height, input.width, input.hasSNR(), inputName);
}

int PipelineStages::stageCount() const noexcept {
  return (snrThreshold ? 1 : 0) + (outlierDistance ? 1 : 0) + (smoothingSigma ? 1 : 0) + (maxHoleSize ? 1 : 0) +
         (downsample ? 1 : 0) + (normals ? 1 : 0) + (transform ? 1 : 0) + (roi ? 1 : 0) + (unorganizes() ? 1 : 0) +
         (statisticalOutliers ? 1 : 0) + (radiusOutliers ? 1 : 0) + (voxelSize ? 1 : 0);
}

bool operator==(const PipelineStages& a, const PipelineStages& b) noexcept {
  const auto sameBox = [](const RegionOfInterestBox& x, const RegionOfInterestBox& y) {
    const auto samePoint = [](const PointXYZ& p, const PointXYZ& q) { return p.x == q.x && p.y == q.y && p.z == q.z; };
    return samePoint(x.origin, y.origin) && samePoint(x.pointA, y.pointA) && samePoint(x.pointB, y.pointB) &&
           x.minExtent == y.minExtent && x.maxExtent == y.maxExtent;
  };
  return a.snrThreshold == b.snrThreshold && a.outlierDistance == b.outlierDistance &&
         a.smoothingSigma == b.smoothingSigma && a.smoothingRadius == b.smoothingRadius &&
         a.maxHoleSize == b.maxHoleSize && a.maxDepthStep == b.maxDepthStep && a.downsample == b.downsample &&
         a.normals == b.normals && a.normalWindow == b.normalWindow && a.transform == b.transform &&
         a.roi.has_value() == b.roi.has_value() && (!a.roi || sameBox(*a.roi, *b.roi)) &&
         a.unorganize == b.unorganize && a.statisticalOutliers == b.statisticalOutliers &&
         a.radiusOutliers == b.radiusOutliers && a.voxelSize == b.voxelSize && a.minPointsPerVoxel == b.minPointsPerVoxel;
}

}  // namespace devicearray
