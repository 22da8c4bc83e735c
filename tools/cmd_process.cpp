// `devicearray process IN.ply [stages] -o OUT.ply`: the PointCloud operations of
// point_cloud.hpp as a pipeline on a PLY file, on one device, with the device time
// of every stage.
//
// Stages always run in one order — downsample, normals, transform, ROI, unorganize,
// voxel — because each later stage needs what the earlier ones keep: normals need the
// organized grid (so they come before unorganize), and the ROI is given in the frame
// the transform produces (so it comes after). Normals are computed on the device;
// the library's unorganized clouds carry no normals, so the CLI carries them along the
// later stages itself: rotated on the device with the transform (by the inverse
// transpose of its linear part, which keeps them perpendicular to the surface for any
// invertible affine map), then compacted and voxel-averaged on the host after download.
#include <CLI/CLI.hpp>
#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "commands.hpp"
#include "device_options.hpp"
#include "devicearray/device_array.hpp"
#include "devicearray/error.hpp"
#include "devicearray/io.hpp"
#include "devicearray/point_cloud.hpp"
#include "devicearray/stream.hpp"
#include "progress.hpp"
#include "text.hpp"

namespace devicearray::cli {
namespace {

constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();

struct ProcessArgs {
  std::string input;
  std::string output;
  std::string downsample;
  std::string transform;
  std::string roi;
  bool normals = false;
  bool unorganize = false;
  double voxel = 0;
  bool voxelGiven = false;
  bool transformGiven = false;
  int minPoints = 1;
  std::string device;
  std::string format = "binary";
};

/// Everything the options ask for, checked before any file is read.
struct Plan {
  std::optional<Downsampling> downsample;
  int downsampleFactor = 1;
  std::optional<Matrix4x4> transform;
  Matrix4x4 normalTransform = identityMatrix4x4();  // inverse transpose of the linear part, no translation
  std::optional<RegionOfInterestBox> roi;
  bool normals = false;
  bool unorganize = false;
  std::optional<float> voxel;
  int minPoints = 1;
  bool needsOrganized() const { return downsample || normals || roi; }
};

/// The text of a small matrix file. At most kMaxBytes + 1 bytes are read whatever the
/// path is (a device or a FIFO never streams in without end), and only text is taken:
/// a binary file is named as such instead of ending up, byte for byte, in a message.
std::string readSmallTextFile(const std::string& path, const std::string& what) {
  constexpr std::size_t kMaxBytes = 65536;
  std::ifstream f(path, std::ios::binary);
  if (!f) throw CommandError(what + ": cannot open '" + printable(path) + "'");
  std::string bytes(kMaxBytes + 1, '\0');
  f.read(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  bytes.resize(static_cast<std::size_t>(f.gcount()));
  if (bytes.size() > kMaxBytes)
    throw CommandError(what + ": '" + printable(path) + "' is larger than 64 KiB; a matrix file is at most 64 KiB");
  for (std::size_t i = 0; i < bytes.size(); ++i) {
    const auto c = static_cast<unsigned char>(bytes[i]);
    if (c < 0x20 && c != '\n' && c != '\r' && c != '\t' && c != '\f' && c != '\v')
      throw CommandError(what + ": '" + printable(path) + "' is not a text file (byte " + std::to_string(i) + " is " +
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
    throw CommandError("--transform is empty; give 16 comma-separated numbers (row-major 4x4) or a file holding them");
  const bool isFile = spec.find(',') == std::string::npos && std::filesystem::is_regular_file(spec);
  if (spec.find(',') == std::string::npos && !isFile && spec.find_first_of(" \t") == std::string::npos)
    throw CommandError("--transform '" + printable(spec) + "' is neither a readable file nor 16 comma-separated numbers");
  const std::vector<double> v = parseNumberList(isFile ? readSmallTextFile(spec, "--transform") : spec, 16,
                                                isFile ? "--transform file '" + printable(spec) + "'" : "--transform");
  Matrix4x4 m{};
  for (std::size_t i = 0; i < 16; ++i) {
    m[i] = static_cast<float>(v[i]);
    if (!std::isfinite(m[i]))
      throw CommandError("--transform: element " + std::to_string(i) + " (" + numberText(v[i]) +
                         ") does not fit a float");
  }
  if (m[12] != 0.0f || m[13] != 0.0f || m[14] != 0.0f || m[15] != 1.0f) {
    char row[160];
    std::snprintf(row, sizeof row, "%g %g %g %g", m[12], m[13], m[14], m[15]);
    throw CommandError(std::string("--transform: the last row is ") + row +
                       "; it must be 0 0 0 1 (an affine transform, row-major)");
  }
  return m;
}

/// Normals follow an affine map x -> A x + t as n -> A^-T n (then renormalized).
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
    throw CommandError("--transform: its 3x3 part is singular (determinant " + numberText(det) +
                       "), so normals cannot follow it; leave out --normals or use an invertible transform");
  Matrix4x4 n = identityMatrix4x4();
  for (int r = 0; r < 3; ++r)
    for (int c = 0; c < 3; ++c) n[static_cast<std::size_t>(4 * r + c)] = static_cast<float>(cof[r][c] / det);
  return n;
}

RegionOfInterestBox parseRoi(const std::string& spec) {
  const std::vector<double> v = parseNumberList(spec, 11, "--roi (ox,oy,oz,ax,ay,az,bx,by,bz,min,max)");
  RegionOfInterestBox box;
  box.origin = {static_cast<float>(v[0]), static_cast<float>(v[1]), static_cast<float>(v[2])};
  box.pointA = {static_cast<float>(v[3]), static_cast<float>(v[4]), static_cast<float>(v[5])};
  box.pointB = {static_cast<float>(v[6]), static_cast<float>(v[7]), static_cast<float>(v[8])};
  box.minExtent = static_cast<float>(v[9]);
  box.maxExtent = static_cast<float>(v[10]);
  if (box.minExtent > box.maxExtent)
    throw CommandError("--roi: min " + numberText(v[9]) + " is greater than max " + numberText(v[10]));
  const double ux = v[3] - v[0], uy = v[4] - v[1], uz = v[5] - v[2];
  const double wx = v[6] - v[0], wy = v[7] - v[1], wz = v[8] - v[2];
  const double cx = uy * wz - uz * wy, cy = uz * wx - ux * wz, cz = ux * wy - uy * wx;
  if (!(cx * cx + cy * cy + cz * cz > 0.0))
    throw CommandError("--roi: origin, A and B are coincident or collinear, so they span no base");
  return box;
}

Plan makePlan(const ProcessArgs& a) {
  Plan p;
  if (!a.downsample.empty()) {
    p.downsampleFactor = a.downsample[0] - '0';
    p.downsample = p.downsampleFactor == 2   ? Downsampling::by2x2
                   : p.downsampleFactor == 3 ? Downsampling::by3x3
                                             : Downsampling::by4x4;
  }
  p.normals = a.normals;
  if (a.transformGiven) {
    p.transform = parseTransform(a.transform);
    if (p.normals) p.normalTransform = normalMatrixOf(*p.transform);
  }
  if (!a.roi.empty()) p.roi = parseRoi(a.roi);
  if (a.voxelGiven) {
    const float s = static_cast<float>(a.voxel);
    if (!(std::isfinite(s) && s > 0.0f))
      throw CommandError("--voxel " + numberText(a.voxel) + " must be a finite size > 0 (mm) that fits a float");
    p.voxel = s;
  }
  p.minPoints = a.minPoints;
  const std::filesystem::path parent = std::filesystem::path(a.output).parent_path();
  if (!parent.empty() && !std::filesystem::is_directory(parent))
    throw CommandError("-o " + a.output + ": the directory '" + parent.string() + "' does not exist");
  // A voxel grid has no rows and columns: --voxel implies --unorganize.
  p.unorganize = a.unorganize || p.voxel.has_value();
  return p;
}

std::string gridText(int h, int w) { return std::to_string(h) + " x " + std::to_string(w); }
std::string pointsText(std::size_t n) { return std::to_string(n) + " points"; }

struct Row {
  std::string stage;
  std::string result;
  StageTime time;
};

void printTable(const std::vector<Row>& rows, const ComputeDevice& device) {
  std::printf("device: %s\n", device.toString().c_str());
  std::printf("%-24s %-26s %10s %10s\n", "stage", "result", "GPU ms", "wall ms");
  double gpu = 0, wall = 0;
  for (const Row& r : rows) {
    char g[32] = "-";
    if (!std::isnan(r.time.gpuMs)) {
      std::snprintf(g, sizeof g, "%.3f", r.time.gpuMs);
      gpu += r.time.gpuMs;
    }
    wall += r.time.wallMs;
    std::printf("%-24s %-26s %10s %10.3f\n", r.stage.c_str(), r.result.c_str(), g, r.time.wallMs);
  }
  std::printf("%-24s %-26s %10.3f %10.3f\n", "total", "", gpu, wall);
  // The GPU time of a stage spans its whole stretch of the stream, so a kernel build
  // on first use (OpenCL compiles programs at run time) shows up in it.
  if (device.backend() == ComputeBackend::opencl)
    std::printf(
        "(OpenCL: the first use of a kernel in a process includes building it; most drivers cache builds across "
        "runs)\n");
}

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

void runProcess(const ProcessArgs& a) {
  const Plan plan = makePlan(a);
  const ComputeDevice device = selectDevice(a.device);
  std::vector<Row> rows;

  // Stage count for the progress bar: read, upload and download, plus the requested
  // stages (unorganize counts when it is asked for, even if the input is unorganized).
  const int stageCount = 3 + (plan.downsample ? 1 : 0) + (plan.normals ? 1 : 0) + (plan.transform ? 1 : 0) +
                         (plan.roi ? 1 : 0) + (plan.unorganize ? 1 : 0) + (plan.voxel ? 1 : 0);
  ProgressBar bar("processing " + a.input);
  int done = 0;
  // The last step ends with bar.finish(), which draws 100 %.
  const auto stageDone = [&] {
    if (++done < stageCount) bar.update(static_cast<double>(done) / stageCount);
  };

  HostPointCloud in;
  rows.push_back({"read PLY", "", timeOnHost([&] { in = readPly(a.input); })});
  stageDone();
  if (in.validCount() == 0) throw CommandError(a.input + " has no valid point (every x, y, z is NaN or it is empty)");
  rows.back().result = in.isOrganized() ? gridText(in.height, in.width) : pointsText(in.size());
  if (plan.needsOrganized() && !in.isOrganized())
    throw CommandError(a.input +
                       " is unorganized (no 'obj_info height/width' in its header); --downsample, "
                       "--normals and --roi need an organized cloud");
  if (plan.downsample && (in.height < plan.downsampleFactor || in.width < plan.downsampleFactor))
    throw CommandError("--downsample " + a.downsample + " needs at least " + std::to_string(plan.downsampleFactor) +
                       " rows and columns; " + a.input + " is " + gridText(in.height, in.width));

  const bool organized = in.isOrganized();
  if (!organized && plan.unorganize) stageDone();  // nothing to do: already unorganized

  Stream stream(device);
  PointCloud cloud;
  UnorganizedPointCloud points;
  UnorganizedPointCloud beforeVoxel;  // kept only to carry normals through the voxel stage
  DeviceArray<NormalXYZ> normals;
  bool isOrganizedNow = organized;

  rows.push_back({"upload", "", timeOnHost([&] {
                    if (organized)
                      cloud = PointCloud::fromHost(in, device);
                    else
                      points = UnorganizedPointCloud::fromHost(in, device);
                  })});
  rows.back().result = organized ? gridText(cloud.height(), cloud.width()) : pointsText(points.size());
  stageDone();

  if (plan.downsample) {
    rows.push_back(
        {"downsample " + a.downsample, "", timeOnStream(stream, [&] { cloud.downsample(*plan.downsample, stream); })});
    rows.back().result = gridText(cloud.height(), cloud.width());
    stageDone();
  }
  if (plan.normals) {
    rows.push_back({"normals", "", timeOnStream(stream, [&] { normals = cloud.deviceNormalsXYZ(stream); })});
    rows.back().result = gridText(cloud.height(), cloud.width()) + " normals";
    stageDone();
  }
  if (plan.transform) {
    rows.push_back({"transform", "", timeOnStream(stream, [&] {
                      if (organized) {
                        cloud.transform(*plan.transform, stream);
                      } else {
                        points.transform(*plan.transform, stream);
                      }
                      if (plan.normals) {
                        // The normals array seen as points (same layout), rotated in place.
                        UnorganizedPointCloud asPoints(DeviceArray<PointXYZ>::fromGpuMatND(normals.toGpuMatND()));
                        asPoints.transform(plan.normalTransform, stream);
                      }
                    })});
    rows.back().result = organized ? gridText(cloud.height(), cloud.width()) : pointsText(points.size());
    stageDone();
  }
  if (plan.roi) {
    rows.push_back({"roi", "", timeOnStream(stream, [&] { cloud.maskByRegionOfInterest(*plan.roi, stream); })});
    rows.back().result = gridText(cloud.height(), cloud.width());
    stageDone();
  }
  if (organized && plan.unorganize) {
    rows.push_back({"unorganize", "", timeOnStream(stream, [&] { points = cloud.toUnorganizedPointCloud(stream); })});
    rows.back().result = pointsText(points.size());
    isOrganizedNow = false;
    stageDone();
    if (points.size() == 0)
      throw Error(ErrorCode::InvalidArgument, "process: no valid point is left after " +
                                                  std::string(plan.roi ? "--roi" : "the earlier stages") +
                                                  "; nothing to write to " + a.output);
  }
  if (plan.voxel) {
    char label[64];
    std::snprintf(label, sizeof label, "voxel %g mm, min %d", static_cast<double>(*plan.voxel), plan.minPoints);
    if (plan.normals) beforeVoxel = points;
    rows.push_back({label, "", timeOnStream(stream, [&] {
                      points = points.voxelDownsampled(*plan.voxel, plan.minPoints, stream);
                    })});
    rows.back().result = pointsText(points.size());
    stageDone();
    if (points.size() == 0)
      throw Error(ErrorCode::InvalidArgument, "process: no voxel has " + std::to_string(plan.minPoints) +
                                                  " or more points (lower --min-points); nothing to write to " +
                                                  a.output);
  }

  HostPointCloud out;
  rows.push_back(
      {"download", "", timeOnHost([&] {
         out = isOrganizedNow ? cloud.toHost() : points.toHost();
         if (!plan.normals) return;
         const std::vector<NormalXYZ> n = normals.toHost();
         if (isOrganizedNow) {
           out.normals.resize(out.xyz.size());
           for (std::size_t i = 0; i < out.size(); ++i) {
             const float v[3] = {n[i].x, n[i].y, n[i].z};
             const auto u = out.isValid(i) ? unit(v) : std::array<float, 3>{kNaN, kNaN, kNaN};
             std::copy(u.begin(), u.end(), out.normals.begin() + static_cast<std::ptrdiff_t>(3 * i));
           }
           return;
         }
         std::vector<float> compact = compactNormals(cloud.storedXYZ().toHost(), n);
         if (plan.voxel) {
           const std::vector<PointXYZ> xyz = beforeVoxel.storedXYZ().toHost();
           if (compact.size() != 3 * xyz.size())
             throw Error(ErrorCode::InvalidState, "process: the unorganized cloud has " + std::to_string(xyz.size()) +
                                                      " points but " + std::to_string(compact.size() / 3) + " normals");
           out.normals = voxelNormals(xyz, compact, out, *plan.voxel);
         } else {
           if (compact.size() != out.xyz.size())
             throw Error(ErrorCode::InvalidState, "process: the unorganized cloud has " + std::to_string(out.size()) +
                                                      " points but " + std::to_string(compact.size() / 3) + " normals");
           out.normals = std::move(compact);
         }
       })});
  const std::size_t overflowed = makeNonFinitePointsMissing(out);
  rows.back().result = out.isOrganized() ? gridText(out.height, out.width) : pointsText(out.size());
  // Writing a cloud without a valid point would only make a file that `process` refuses.
  if (out.validCount() == 0)
    throw Error(ErrorCode::InvalidArgument,
                "process: no valid point is left after " +
                    std::string(overflowed > 0 ? "--transform (its results do not fit a float)"
                                : plan.roi     ? "--roi"
                                               : "the earlier stages") +
                    "; nothing to write to " + a.output);

  const PlyFormat format = a.format == "ascii"               ? PlyFormat::ascii
                           : a.format == "binary_big_endian" ? PlyFormat::binaryBigEndian
                                                             : PlyFormat::binaryLittleEndian;
  rows.push_back({"write PLY", out.isOrganized() ? "organized" : "unorganized",
                  timeOnHost([&] { writePly(a.output, out, format); })});
  bar.finish();

  printTable(rows, device);
  std::printf("wrote %s: %s, %zu valid points%s%s%s\n", a.output.c_str(),
              out.isOrganized() ? ("organized " + gridText(out.height, out.width)).c_str() : "unorganized",
              out.validCount(), out.hasColors() ? ", colours" : "", out.hasSNR() ? ", SNR" : "",
              out.hasNormals() ? ", normals" : "");
  if (overflowed > 0)
    std::printf("%zu points became missing: their transformed coordinates do not fit a float\n", overflowed);
}

}  // namespace

void addProcessCommand(CLI::App& app) {
  auto a = std::make_shared<ProcessArgs>();
  CLI::App* cmd = app.add_subcommand(
      "process",
      "Run the point-cloud pipeline on a PLY file on one device, in this order: downsample, normals, transform, "
      "ROI, unorganize, voxel. Prints the GPU time of every stage.");
  cmd->add_option("input", a->input, "Input PLY file (organized clouds keep their rows and columns)")
      ->required()
      ->check(CLI::ExistingFile);
  cmd->add_option("-o,--output", a->output, "Output PLY file (organized unless --unorganize or --voxel)")->required();
  cmd->add_option("--downsample", a->downsample, "Block-average k x k points (SNR^2-weighted)")
      ->check(CLI::IsMember({"2x2", "3x3", "4x4"}));
  cmd->add_flag(
      "--normals", a->normals,
      "Estimate normals from the grid and write them (nx, ny, nz); normals in the input file are not carried");
  CLI::Option* transform = cmd->add_option(
      "--transform", a->transform,
      "Affine 4x4 matrix: 16 comma-separated numbers, row-major (last row 0,0,0,1), or a file holding them");
  cmd->add_option("--roi", a->roi,
                  "Oriented box ox,oy,oz,ax,ay,az,bx,by,bz,min,max: origin O, A and B span the base, "
                  "[min, max] the extent along the normal (A-O) x (B-O); points outside become missing");
  cmd->add_flag("--unorganize", a->unorganize, "Keep only the valid points, as an unorganized cloud");
  CLI::Option* voxel =
      cmd->add_option("--voxel", a->voxel, "Voxel size in mm: one point per occupied voxel (implies --unorganize)");
  cmd->add_option("--min-points", a->minPoints, "Drop voxels with fewer points than this")
      ->capture_default_str()
      ->check(CLI::Range(1, std::numeric_limits<int>::max()))
      ->needs(voxel);
  cmd->add_option("--device", a->device, kDeviceOptionHelp);
  cmd->add_option("--format", a->format, "PLY encoding")
      ->capture_default_str()
      ->check(CLI::IsMember({"binary", "ascii", "binary_big_endian"}));
  cmd->callback([a, voxel, transform] {
    a->voxelGiven = voxel->count() > 0;
    a->transformGiven = transform->count() > 0;
    runProcess(*a);
  });
}

}  // namespace devicearray::cli
