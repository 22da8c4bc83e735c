// End-to-end tests of `devicearray process` and `devicearray bench`: run the built
// binary (DEVICEARRAY_CLI_PATH, from tools/CMakeLists.txt) on small synthetic PLY files
// and check the files it writes against the host reference of tests/point_cloud_reference.hpp.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "cli_support.hpp"
#include "devicearray/device.hpp"
#include "devicearray/io.hpp"
#include "point_cloud_reference.hpp"

using devicearray::HostPointCloud;
using devicearray::NormalXYZ;
using devicearray::PointXYZ;

namespace {

std::vector<PointXYZ> pointsOf(const HostPointCloud& c) {
  std::vector<PointXYZ> p(c.size());
  for (std::size_t i = 0; i < p.size(); ++i) p[i] = {c.xyz[3 * i], c.xyz[3 * i + 1], c.xyz[3 * i + 2]};
  return p;
}

pcref::Cloud referenceCloud(const HostPointCloud& c) {
  pcref::Cloud r;
  r.height = c.height;
  r.width = c.width;
  r.xyz = pointsOf(c);
  for (float s : c.snr) r.snr.push_back({s});
  return r;
}

std::array<double, 3> centroid(const std::vector<PointXYZ>& pts) {
  std::array<double, 3> s{0, 0, 0};
  std::size_t n = 0;
  for (const PointXYZ& p : pts)
    if (pcref::valid(p)) {
      s[0] += p.x;
      s[1] += p.y;
      s[2] += p.z;
      ++n;
    }
  for (double& v : s) v /= static_cast<double>(n);
  return s;
}

std::string joined(const std::array<float, 16>& m) {
  std::ostringstream s;
  s.precision(9);
  for (std::size_t i = 0; i < 16; ++i) s << (i ? "," : "") << m[i];
  return s.str();
}

// Rotation by 30 degrees about z and a translation: a rigid map whose effect on the
// centroid and on normals is easy to compute on the host.
const std::array<float, 16> kRigid = {0.8660254f, -0.5f, 0, 10, 0.5f, 0.8660254f, 0, -20, 0, 0, 1, 30, 0, 0, 0, 1};

class ProcessCommand : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    devicearray::SynthOptions o;
    o.camera = devicearray::PinholeCamera::withFieldOfView(64, 48, 60.0);
    o.seed = 3;
    scene_ = devicearray::synthesizeScene(o);
    devicearray::writePly(scenePath().string(), scene_);
    o.camera = devicearray::PinholeCamera::withFieldOfView(63, 47, 60.0);
    devicearray::writePly((tempDir() / "odd.ply").string(), devicearray::synthesizeScene(o));
    HostPointCloud flat;  // the valid points of the scene, unorganized
    for (std::size_t i = 0; i < scene_.size(); ++i)
      if (scene_.isValid(i)) flat.xyz.insert(flat.xyz.end(), &scene_.xyz[3 * i], &scene_.xyz[3 * i + 3]);
    devicearray::writePly((tempDir() / "flat.ply").string(), flat);
  }
  static fs::path scenePath() { return tempDir() / "scene.ply"; }
  /// Runs `process scene.ply ARGS -o NAME` and reads the result back.
  static HostPointCloud process(const std::string& args, const std::string& name, Result* result = nullptr) {
    const fs::path out = tempDir() / name;
    const Result r = run("process " + q(scenePath()) + " " + args + " -o " + q(out));
    if (result) *result = r;
    EXPECT_EQ(r.status, 0) << r.err;
    if (r.status != 0) return {};
    return devicearray::readPly(out.string());
  }
  static HostPointCloud scene_;
};
HostPointCloud ProcessCommand::scene_;

TEST_F(ProcessCommand, WithoutStagesKeepsTheGridAndThePoints) {
  REQUIRE_CLI_AND_DEVICE();
  Result r;
  const HostPointCloud out = process("", "plain.ply", &r);
  ASSERT_EQ(out.height, 48);
  ASSERT_EQ(out.width, 64);
  EXPECT_FALSE(out.hasNormals());
  EXPECT_TRUE(out.hasColors());
  EXPECT_TRUE(out.hasSNR());
  for (std::size_t i = 0; i < out.xyz.size(); ++i) {
    if (std::isnan(scene_.xyz[i])) {
      EXPECT_TRUE(std::isnan(out.xyz[i])) << i;
    } else {
      EXPECT_EQ(out.xyz[i], scene_.xyz[i]) << i;
    }
  }
  for (const char* s : {"stage", "GPU ms", "upload", "download", "total"})
    EXPECT_NE(r.out.find(s), std::string::npos) << s;
}

TEST_F(ProcessCommand, WithoutStagesKeepsEverySrgbCodeOnEveryDevice) {
  REQUIRE_CLI_AND_DEVICE();
  // 16 x 16 points whose colours hold each of the 256 sRGB codes in every channel.
  HostPointCloud codes = HostPointCloud::organized(16, 16, true, false);
  for (int i = 0; i < 256; ++i) {
    codes.xyz[3 * i] = static_cast<float>(i % 16);
    codes.xyz[3 * i + 1] = static_cast<float>(i / 16);
    codes.xyz[3 * i + 2] = 500;
    codes.rgba[4 * i] = static_cast<std::uint8_t>(i);
    codes.rgba[4 * i + 1] = static_cast<std::uint8_t>(255 - i);
    codes.rgba[4 * i + 2] = static_cast<std::uint8_t>((i * 7) % 256);
    codes.rgba[4 * i + 3] = static_cast<std::uint8_t>((i * 3 + 1) % 256);
  }
  const fs::path in = tempDir() / "codes.ply";
  devicearray::writePly(in.string(), codes);
  const std::vector<devicearray::ComputeDevice> devices = devicearray::ComputeDevice::all();
  for (const devicearray::ComputeDevice& d : devices) {
    const bool cuda = d.backend() == devicearray::ComputeBackend::cuda;
    const std::string name = std::string(cuda ? "cuda:" : "opencl:") + std::to_string(d.ordinal());
    const fs::path out = tempDir() / ("codes_" + std::string(cuda ? "cuda" : "opencl") + std::to_string(d.ordinal()) +
                                      ".ply");
    const Result r = run("process " + q(in) + " --device " + name + " -o " + q(out));
    ASSERT_EQ(r.status, 0) << name << ": " << r.err;
    EXPECT_EQ(devicearray::readPly(out.string()).rgba, codes.rgba) << name;
  }
}

TEST_F(ProcessCommand, DownsampleHalvesHeightAndWidthAndAveragesBlocks) {
  REQUIRE_CLI_AND_DEVICE();
  Result r;
  const HostPointCloud out = process("--downsample 2x2", "down.ply", &r);
  ASSERT_EQ(out.height, 24);
  ASSERT_EQ(out.width, 32);
  EXPECT_NE(r.out.find("downsample 2x2"), std::string::npos) << r.out;
  const pcref::Cloud ref = pcref::downsample(referenceCloud(scene_), 2);
  const std::vector<PointXYZ> got = pointsOf(out);
  ASSERT_EQ(got.size(), ref.xyz.size());
  for (std::size_t i = 0; i < got.size(); ++i) {
    ASSERT_EQ(pcref::valid(got[i]), pcref::valid(ref.xyz[i])) << i;
    if (!pcref::valid(got[i])) continue;
    EXPECT_NEAR(got[i].x, ref.xyz[i].x, 1e-2 + 1e-5 * std::fabs(ref.xyz[i].x)) << i;
    EXPECT_NEAR(got[i].y, ref.xyz[i].y, 1e-2 + 1e-5 * std::fabs(ref.xyz[i].y)) << i;
    EXPECT_NEAR(got[i].z, ref.xyz[i].z, 1e-2 + 1e-5 * std::fabs(ref.xyz[i].z)) << i;
  }
  // Odd sizes round down; 3x3 and 4x4 divide likewise.
  const Result odd =
      run("process " + q(tempDir() / "odd.ply") + " --downsample 2x2 -o " + q(tempDir() / "odd_down.ply"));
  ASSERT_EQ(odd.status, 0) << odd.err;
  const HostPointCloud o = devicearray::readPly((tempDir() / "odd_down.ply").string());
  EXPECT_EQ(o.height, 23);
  EXPECT_EQ(o.width, 31);
  const HostPointCloud four = process("--downsample 4x4", "down4.ply");
  EXPECT_EQ(four.height, 12);
  EXPECT_EQ(four.width, 16);
}

TEST_F(ProcessCommand, NormalsAreWrittenAndMatchTheHostEstimate) {
  REQUIRE_CLI_AND_DEVICE();
  const HostPointCloud out = process("--normals", "normals.ply");
  ASSERT_TRUE(out.hasNormals());
  ASSERT_EQ(out.normals.size(), scene_.xyz.size());
  const std::vector<NormalXYZ> ref = pcref::normals(48, 64, pointsOf(scene_), {0, 0, 0});
  std::size_t compared = 0, close = 0;
  for (std::size_t i = 0; i < ref.size(); ++i) {
    const float* n = &out.normals[3 * i];
    const bool refOk = std::isfinite(ref[i].x);
    ASSERT_EQ(std::isfinite(n[0]), refOk) << "normal " << i;
    if (!refOk) continue;
    EXPECT_NEAR(std::sqrt(n[0] * n[0] + n[1] * n[1] + n[2] * n[2]), 1.0, 1e-5) << i;
    ++compared;
    if (n[0] * ref[i].x + n[1] * ref[i].y + n[2] * ref[i].z > 0.9999) ++close;
  }
  ASSERT_GT(compared, 1000u);
  // Float central differences of nearly equal neighbours may tip a few normals.
  EXPECT_GE(close, compared - compared / 100) << close << " of " << compared;
}

TEST_F(ProcessCommand, TransformMovesTheCentroidAndRotatesTheNormals) {
  REQUIRE_CLI_AND_DEVICE();
  const HostPointCloud out = process("--normals --transform " + joined(kRigid), "moved.ply");
  ASSERT_EQ(out.height, 48);
  const std::array<double, 3> c = centroid(pointsOf(scene_));
  const std::array<double, 3> got = centroid(pointsOf(out));
  for (int r = 0; r < 3; ++r) {
    const double expected =
        kRigid[4 * r] * c[0] + kRigid[4 * r + 1] * c[1] + kRigid[4 * r + 2] * c[2] + kRigid[4 * r + 3];
    EXPECT_NEAR(got[static_cast<std::size_t>(r)], expected, 1e-2) << "axis " << r;
  }
  const std::vector<PointXYZ> moved = pcref::transform(pointsOf(scene_), kRigid);
  const std::vector<PointXYZ> pts = pointsOf(out);
  for (std::size_t i = 0; i < pts.size(); ++i) {
    if (!pcref::valid(moved[i])) continue;
    EXPECT_NEAR(pts[i].x, moved[i].x, 1e-2) << i;
    EXPECT_NEAR(pts[i].z, moved[i].z, 1e-2) << i;
  }
  // Normals of a rigidly moved surface are the rotated normals.
  const std::vector<NormalXYZ> ref = pcref::normals(48, 64, pointsOf(scene_), {0, 0, 0});
  std::size_t compared = 0, close = 0;
  for (std::size_t i = 0; i < ref.size(); ++i) {
    if (!std::isfinite(ref[i].x)) continue;
    const double rn[3] = {kRigid[0] * ref[i].x + kRigid[1] * ref[i].y, kRigid[4] * ref[i].x + kRigid[5] * ref[i].y,
                          static_cast<double>(ref[i].z)};
    const float* n = &out.normals[3 * i];
    ++compared;
    if (n[0] * rn[0] + n[1] * rn[1] + n[2] * rn[2] > 0.9999) ++close;
  }
  ASSERT_GT(compared, 1000u);
  EXPECT_GE(close, compared - compared / 100) << close << " of " << compared;
}

TEST_F(ProcessCommand, TransformFromAFileEqualsTheInlineMatrix) {
  REQUIRE_CLI_AND_DEVICE();
  const fs::path file = tempDir() / "rigid.txt";
  {
    std::ofstream f(file);
    f.precision(9);
    f << "# rotation about z by 30 degrees, then a shift\n";
    for (int r = 0; r < 4; ++r)
      f << kRigid[4 * r] << ' ' << kRigid[4 * r + 1] << ' ' << kRigid[4 * r + 2] << ' ' << kRigid[4 * r + 3] << '\n';
  }
  const HostPointCloud a = process("--transform " + joined(kRigid), "inline.ply");
  const HostPointCloud b = process("--transform " + q(file), "fromfile.ply");
  ASSERT_EQ(a.xyz.size(), b.xyz.size());
  for (std::size_t i = 0; i < a.xyz.size(); ++i)
    if (!std::isnan(a.xyz[i])) EXPECT_FLOAT_EQ(a.xyz[i], b.xyz[i]) << i;
}

TEST_F(ProcessCommand, RoiKeepsExactlyThePointsInsideTheBox) {
  REQUIRE_CLI_AND_DEVICE();
  // An axis-aligned box: base spanned along x and y, extent 1000..1600 mm along +z.
  const HostPointCloud out = process("--roi=-200,-200,0,200,-200,0,-200,200,0,1000,1600", "roi.ply");
  ASSERT_EQ(out.height, 48);
  const std::vector<PointXYZ> in = pointsOf(scene_), got = pointsOf(out);
  std::size_t kept = 0;
  for (std::size_t i = 0; i < in.size(); ++i) {
    const pcref::RoiDecision d = pcref::roi(in[i], {-200, -200, 0}, {200, -200, 0}, {-200, 200, 0}, 1000, 1600);
    if (d.margin < 1e-3) continue;  // on a face: either answer is right in float
    EXPECT_EQ(pcref::valid(got[i]), d.inside) << i;
    kept += d.inside ? 1 : 0;
  }
  EXPECT_GT(kept, 50u);
  EXPECT_LT(kept, scene_.validCount());
}

TEST_F(ProcessCommand, UnorganizeKeepsTheValidPointsInOrder) {
  REQUIRE_CLI_AND_DEVICE();
  Result r;
  const HostPointCloud out = process("--unorganize --normals", "flat_out.ply", &r);
  EXPECT_FALSE(out.isOrganized());
  ASSERT_EQ(out.size(), scene_.validCount());
  ASSERT_TRUE(out.hasNormals());
  const pcref::Cloud ref = pcref::compact(referenceCloud(scene_));
  const std::vector<NormalXYZ> refNormals = pcref::normals(48, 64, pointsOf(scene_), {0, 0, 0});
  std::vector<NormalXYZ> compactNormals;
  for (std::size_t i = 0; i < scene_.size(); ++i)
    if (scene_.isValid(i)) compactNormals.push_back(refNormals[i]);
  std::size_t close = 0, compared = 0;
  for (std::size_t i = 0; i < out.size(); ++i) {
    EXPECT_EQ(out.xyz[3 * i], ref.xyz[i].x) << i;
    EXPECT_EQ(out.xyz[3 * i + 2], ref.xyz[i].z) << i;
    if (!std::isfinite(compactNormals[i].x)) continue;
    ++compared;
    const float* n = &out.normals[3 * i];
    if (n[0] * compactNormals[i].x + n[1] * compactNormals[i].y + n[2] * compactNormals[i].z > 0.9999) ++close;
  }
  EXPECT_GE(close, compared - compared / 100);
  EXPECT_NE(r.out.find("unorganize"), std::string::npos);
}

TEST_F(ProcessCommand, VoxelGridMatchesTheHostReference) {
  REQUIRE_CLI_AND_DEVICE();
  Result r;
  const HostPointCloud out = process("--voxel 25 --min-points 2", "voxel.ply", &r);  // --voxel implies --unorganize
  EXPECT_FALSE(out.isOrganized());
  const pcref::Cloud ref = pcref::voxel(pcref::compact(referenceCloud(scene_)), 25.0f, 2);
  ASSERT_EQ(out.size(), ref.xyz.size());
  ASSERT_GT(out.size(), 10u);
  ASSERT_LT(out.size(), scene_.validCount() / 2);
  for (std::size_t i = 0; i < out.size(); ++i) {
    EXPECT_NEAR(out.xyz[3 * i], ref.xyz[i].x, 1e-2) << i;
    EXPECT_NEAR(out.xyz[3 * i + 1], ref.xyz[i].y, 1e-2) << i;
    EXPECT_NEAR(out.xyz[3 * i + 2], ref.xyz[i].z, 1e-2) << i;
  }
  EXPECT_NE(r.out.find("voxel 25 mm, min 2"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("unorganize"), std::string::npos) << r.out;
}

TEST_F(ProcessCommand, FramesRunTheLoopAgainAndReportThroughput) {
  REQUIRE_CLI_AND_DEVICE();
  Result r;
  const HostPointCloud looped = process("--voxel 25 --frames 3 --in-flight 2", "voxel_frames.ply", &r);
  const HostPointCloud once = process("--voxel 25", "voxel_once.ply");
  EXPECT_EQ(looped.xyz, once.xyz) << "the file is the first frame's, as without --frames";
  EXPECT_NE(r.out.find("frames: 3 in "), std::string::npos) << r.out;
  // Every frame's result has the written file's point count (the command checks it).
  const std::string expected = "frames/s (2 in flight, pageable frames; upload and stages each, " +
                               std::to_string(once.validCount()) + " points)";
  EXPECT_NE(r.out.find(expected), std::string::npos) << r.out;
  Result pinned;
  (void)process("--voxel 25 --frames 4 --pinned-frames", "voxel_pinned.ply", &pinned);
  EXPECT_NE(pinned.out.find("frames: 4 in "), std::string::npos) << pinned.out;
  EXPECT_NE(pinned.out.find("(3 in flight, page-locked frames; upload and stages each, " +
                            std::to_string(once.validCount()) + " points)"),
            std::string::npos)
      << pinned.out;
  const Result lone = run("process " + q(scenePath()) + " --in-flight 2 -o " + q(tempDir() / "lone.ply"));
  EXPECT_EQ(lone.status, 2) << "--in-flight needs --frames";
  const Result lonePinned = run("process " + q(scenePath()) + " --pinned-frames -o " + q(tempDir() / "lone.ply"));
  EXPECT_EQ(lonePinned.status, 2) << "--pinned-frames needs --frames";
  // The loop takes camera frames: an unorganized input is refused before anything runs.
  const fs::path notWritten = tempDir() / "flat_frames.ply";
  const Result flat = run("process " + q(tempDir() / "flat.ply") + " --voxel 5 --frames 3 -o " + q(notWritten));
  EXPECT_EQ(flat.status, 2) << flat.err;
  EXPECT_NE(flat.err.find("--frames runs the stages on camera frames"), std::string::npos) << flat.err;
  EXPECT_FALSE(fs::exists(notWritten));
}

TEST_F(ProcessCommand, VoxelNormalsAreTheMeanNormalsOfTheirVoxels) {
  REQUIRE_CLI_AND_DEVICE();
  constexpr float kVoxel = 40.0f;
  const HostPointCloud out = process("--normals --voxel 40", "voxel_normals.ply");
  ASSERT_TRUE(out.hasNormals());
  // Host reference: the voxels of pcref::voxel (same keys, ascending), each with the
  // normalized sum of the host-estimated normals of its points.
  const pcref::Cloud flat = pcref::compact(referenceCloud(scene_));
  const std::vector<NormalXYZ> all = pcref::normals(48, 64, pointsOf(scene_), {0, 0, 0});
  std::vector<NormalXYZ> normals;
  for (std::size_t i = 0; i < scene_.size(); ++i)
    if (scene_.isValid(i)) normals.push_back(all[i]);
  float mn[3] = {INFINITY, INFINITY, INFINITY};
  for (const PointXYZ& p : flat.xyz) {
    mn[0] = std::min(mn[0], p.x);
    mn[1] = std::min(mn[1], p.y);
    mn[2] = std::min(mn[2], p.z);
  }
  std::map<std::uint64_t, std::array<double, 3>> sums;
  for (std::size_t i = 0; i < flat.xyz.size(); ++i) {
    const PointXYZ& p = flat.xyz[i];
    const auto ix = std::uint64_t(std::floor((p.x - mn[0]) / kVoxel));
    const auto iy = std::uint64_t(std::floor((p.y - mn[1]) / kVoxel));
    const auto iz = std::uint64_t(std::floor((p.z - mn[2]) / kVoxel));
    auto& s = sums[(ix << 42) | (iy << 21) | iz];
    if (!std::isfinite(normals[i].x)) continue;
    s[0] += normals[i].x;
    s[1] += normals[i].y;
    s[2] += normals[i].z;
  }
  ASSERT_EQ(out.size(), sums.size());
  std::size_t i = 0, finite = 0, close = 0;
  for (const auto& [key, s] : sums) {
    const float* n = &out.normals[3 * i++];
    const double len = std::sqrt(s[0] * s[0] + s[1] * s[1] + s[2] * s[2]);
    ASSERT_EQ(std::isfinite(n[0]), len > 0) << "voxel " << i - 1;
    if (!(len > 0)) continue;
    ++finite;
    EXPECT_NEAR(std::sqrt(n[0] * n[0] + n[1] * n[1] + n[2] * n[2]), 1.0, 1e-5);
    if ((n[0] * s[0] + n[1] * s[1] + n[2] * s[2]) / len > 0.999) ++close;
  }
  ASSERT_GT(finite, out.size() / 2);
  EXPECT_GE(close, finite - finite / 100) << close << " of " << finite;
}

TEST_F(ProcessCommand, FullPipelineReportsEveryStage) {
  REQUIRE_CLI_AND_DEVICE();
  Result r;
  const HostPointCloud out =
      process("--downsample 2x2 --normals --transform " + joined(kRigid) +
                  " --roi -2000,-2000,0,2000,-2000,0,-2000,2000,0,0,5000 --unorganize --voxel 10 --device 0",
              "pipeline.ply", &r);
  EXPECT_FALSE(out.isOrganized());
  EXPECT_TRUE(out.hasNormals());
  EXPECT_GT(out.size(), 10u);
  std::size_t at = 0;
  for (const char* s : {"read PLY", "upload", "downsample 2x2", "normals", "transform", "roi", "unorganize",
                        "voxel 10 mm", "download", "write PLY", "total"}) {
    const std::size_t p = r.out.find(s, at);
    EXPECT_NE(p, std::string::npos) << s << " missing or out of order in:\n" << r.out;
    if (p != std::string::npos) at = p;
  }
}

TEST_F(ProcessCommand, OutputFormatFollowsTheExtensionOnEveryDevice) {
  REQUIRE_CLI_AND_DEVICE();
  for (const devicearray::ComputeDevice& d : devicearray::ComputeDevice::all()) {
    const bool cuda = d.backend() == devicearray::ComputeBackend::cuda;
    const std::string name = std::string(cuda ? "cuda_" : "opencl_") + std::to_string(d.ordinal());
    const std::string args = "--normals --device " + std::string(cuda ? "cuda:" : "opencl:") + std::to_string(d.ordinal());
    SCOPED_TRACE(name);
    const HostPointCloud ply = process(args, name + ".ply");
    ASSERT_EQ(ply.height, 48);
    ASSERT_TRUE(ply.hasNormals());
    // What the library's writers make of the same cloud, byte for byte.
    const fs::path binaryPcd = tempDir() / (name + "_expected.pcd"), asciiPcd = tempDir() / (name + "_expected_ascii.pcd"),
                   xyz = tempDir() / (name + "_expected.xyz");
    devicearray::writePcd(binaryPcd.string(), ply, devicearray::PcdFormat::binary);
    devicearray::writePcd(asciiPcd.string(), ply, devicearray::PcdFormat::ascii);
    devicearray::writeXyz(xyz.string(), ply);
    struct Case {
      std::string options, output;
      fs::path expected;
      const char* stage;
    };
    const Case cases[] = {
        {"", name + ".pcd", binaryPcd, "write PCD"},
        {"--format ascii", name + "_ascii.PCD", asciiPcd, "write PCD"},
        {"--format ascii", name + ".xyz", xyz, "write XYZ"},
        {"", name + "_binary.xyz", xyz, "write XYZ"},
        {"", name + ".cloud", tempDir() / (name + ".ply"), "write PLY"},
    };
    for (const Case& c : cases) {
      const Result r = run("process " + q(scenePath()) + " " + args + " " + c.options + " -o " + q(tempDir() / c.output));
      ASSERT_EQ(r.status, 0) << c.output << ": " << r.err;
      // PLY bytes in a .pcd file were refused by every PCD reader ("it begins with 'ply'").
      EXPECT_EQ(slurp(tempDir() / c.output), slurp(c.expected)) << c.output;
      EXPECT_NE(r.out.find(c.stage), std::string::npos) << c.output << ":\n" << r.out;
    }
    const HostPointCloud pcd = devicearray::readPcd((tempDir() / (name + ".pcd")).string());
    EXPECT_EQ(pcd.height, 48);
    EXPECT_EQ(pcd.rgba, ply.rgba);
    EXPECT_EQ(pcd.snr, ply.snr);
  }
}

TEST_F(ProcessCommand, BigEndianIsRefusedForPcdAndXyzOutputs) {
  REQUIRE_CLI_AND_DEVICE();
  for (const char* output : {"big.pcd", "big.xyz"}) {
    const fs::path out = tempDir() / output;
    const Result r = run("process " + q(scenePath()) + " --format binary_big_endian -o " + q(out));
    expectOneLineFailure(r, "format binary_big_endian: '" + out.string() + "' is written as " +
                                (out.extension() == ".pcd" ? "PCD" : "XYZ") +
                                " (by its extension), which has no big-endian form; use binary or ascii");
    EXPECT_EQ(r.status, 2);
    EXPECT_FALSE(fs::exists(out));
  }
  // Every other output is PLY, big-endian as asked.
  Result r;
  const HostPointCloud big = process("--format binary_big_endian", "big.cloud", &r);
  EXPECT_EQ(slurp(tempDir() / "big.cloud").rfind("ply\nformat binary_big_endian 1.0\n", 0), 0u);
  EXPECT_EQ(big.height, 48);
}

TEST_F(ProcessCommand, NormalsInTheInputFileSurvive) {
  REQUIRE_CLI_AND_DEVICE();
  HostPointCloud withNormals = scene_;
  withNormals.normals.assign(3 * scene_.size(), 0.0f);
  for (std::size_t i = 0; i < scene_.size(); ++i) withNormals.normals[3 * i + 2] = -1.0f;  // facing the camera
  const fs::path in = tempDir() / "with_normals.ply";
  devicearray::writePly(in.string(), withNormals);
  const fs::path out = tempDir() / "with_normals_out.ply";
  const Result r = run("process " + q(in) + " --downsample 2x2 --unorganize --voxel 20 -o " + q(out));
  ASSERT_EQ(r.status, 0) << r.err;
  const HostPointCloud result = devicearray::readPly(out.string());
  ASSERT_TRUE(result.hasNormals());
  for (std::size_t i = 0; i < result.size(); ++i) EXPECT_NEAR(result.normals[3 * i + 2], -1.0f, 1e-6f) << i;
}

TEST_F(ProcessCommand, UnorganizedInputAllowsTransformAndVoxelOnly) {
  REQUIRE_CLI_AND_DEVICE();
  const fs::path in = tempDir() / "flat.ply";
  const Result ok =
      run("process " + q(in) + " --transform " + joined(kRigid) + " -o " + q(tempDir() / "flat_moved.ply"));
  ASSERT_EQ(ok.status, 0) << ok.err;
  const HostPointCloud out = devicearray::readPly((tempDir() / "flat_moved.ply").string());
  EXPECT_EQ(out.size(), scene_.validCount());
  expectOneLineFailure(run("process " + q(in) + " --normals -o " + q(tempDir() / "x.ply")), "unorganized");
}

TEST_F(ProcessCommand, BadArgumentsFailWithOneLine) {
  REQUIRE_CLI_AND_DEVICE();
  const std::string in = q(scenePath()), out = " -o " + q(tempDir() / "bad.ply");
  expectOneLineFailure(run("process " + in + " --transform 1,0,0,0,0,1,0,0,0,0,1,0,0,0,0" + out),
                       "expected 16 numbers, got 15");
  expectOneLineFailure(run("process " + in + " --transform 1,0,0,0,0,1,0,0,0,0,1,0,0,0,1,1" + out), "0 0 0 1");
  expectOneLineFailure(run("process " + in + " --transform 1,0,0,0,0,1,0,0,0,0,1,0,0,0,0,x1" + out), "'x1'");
  expectOneLineFailure(run("process " + in + " --transform no_such_matrix.txt" + out), "neither a readable file");
  expectOneLineFailure(run("process " + in + " --normals --transform 1,0,0,0,0,0,0,0,0,0,1,0,0,0,0,1" + out),
                       "singular");
  expectOneLineFailure(run("process " + in + " --roi=0,0,0,1,0,0,2,0,0,0,10" + out), "collinear");
  expectOneLineFailure(run("process " + in + " --roi=0,0,0,1,0,0,0,1,0,10,0" + out), "greater than max");
  expectOneLineFailure(run("process " + in + " --roi=1,2,3" + out), "expected 11 numbers, got 3");
  expectOneLineFailure(run("process " + in + " --downsample 5x5" + out), "downsample");
  expectOneLineFailure(run("process " + in + " --voxel 0" + out), "--voxel");
  expectOneLineFailure(run("process " + in + " --voxel -3" + out), "--voxel");
  expectOneLineFailure(run("process " + in + " --min-points 3" + out), "--voxel");
  expectOneLineFailure(run("process " + in + " --voxel 5 --min-points 0" + out), "min-points");
  expectOneLineFailure(run("process " + in + " --device gpu7" + out), "--device 'gpu7'");
  expectOneLineFailure(run("process " + in + " --device 99" + out), "out of range");
  expectOneLineFailure(run("process " + q(tempDir() / "missing.ply") + out), "missing.ply");
  expectOneLineFailure(run("process " + in + " -o " + q(tempDir() / "no_dir" / "x.ply")), "does not exist");
  expectOneLineFailure(run("process " + in + " --roi=-10,-10,0,10,-10,0,-10,10,0,0,1" + out + " --unorganize"),
                       "no valid point is left");
  expectOneLineFailure(run("process" + out), "input");
  EXPECT_FALSE(fs::exists(tempDir() / "bad.ply"));
}

/// True when every point of `c` is finite or missing (NaN in x, y and z), never inf.
bool finiteOrMissing(const HostPointCloud& c) {
  for (std::size_t i = 0; i < c.size(); ++i) {
    const float* p = &c.xyz[3 * i];
    if (!c.isValid(i) && !(std::isnan(p[0]) && std::isnan(p[1]) && std::isnan(p[2]))) return false;
  }
  return true;
}

TEST_F(ProcessCommand, OverflowingTransformMakesMissingPointsNotInfinities) {
  REQUIRE_CLI_AND_DEVICE();
  // x * 1e37 overflows a float for |x| > 34 mm: those points become missing, the rest move.
  const std::string scaleX = " --transform 1e37,0,0,0,0,1,0,0,0,0,1,0,0,0,0,1";
  for (const char* format : {"binary", "ascii"}) {
    Result r;
    const std::string name = std::string("overflow_") + format + ".ply";
    const HostPointCloud out = process(scaleX + " --format " + format, name, &r);
    ASSERT_EQ(out.size(), scene_.size());
    EXPECT_TRUE(finiteOrMissing(out)) << format;
    EXPECT_GT(out.validCount(), 0u);
    EXPECT_LT(out.validCount(), scene_.validCount());
    EXPECT_NE(r.out.find("became missing"), std::string::npos) << r.out;
    // What process writes, process reads.
    const Result again = run("process " + q(tempDir() / name) + " -o " + q(tempDir() / "again.ply"));
    EXPECT_EQ(again.status, 0) << again.err;
  }
  // The unorganized path drops such points, as its device stages do.
  const fs::path flatOut = tempDir() / "flat_overflow.ply";
  const Result u = run("process " + q(tempDir() / "flat.ply") + scaleX + " --format ascii -o " + q(flatOut));
  ASSERT_EQ(u.status, 0) << u.err;
  const HostPointCloud flat = devicearray::readPly(flatOut.string());
  EXPECT_TRUE(finiteOrMissing(flat));
  EXPECT_EQ(flat.validCount(), flat.size());
  EXPECT_LT(flat.size(), scene_.validCount());
  // Nothing left at all: one line, no file.
  const fs::path none = tempDir() / "all_overflow.ply";
  expectOneLineFailure(run("process " + q(scenePath()) + " --transform 1e37,0,0,0,0,1e37,0,0,0,0,1e37,0,0,0,0,1 -o " +
                           q(none)),
                       "no valid point is left after --transform");
  EXPECT_FALSE(fs::exists(none));
}

TEST_F(ProcessCommand, SmallMistakesGetOneClearLine) {
  REQUIRE_CLI_AND_DEVICE();
  const std::string in = q(scenePath()), out = " -o " + q(tempDir() / "small_mistakes.ply");
  // A tiny voxel is named as given, not as 0.000000.
  const Result voxel = run("process " + in + " --voxel 1e-9" + out);
  expectOneLineFailure(voxel, "1e-09");
  EXPECT_EQ(voxel.err.find("0.000000"), std::string::npos) << voxel.err;
  expectOneLineFailure(run("process " + in + " --voxel 1e-50" + out), "--voxel 1e-50");
  // An empty --transform was silently ignored.
  expectOneLineFailure(run("process " + in + " --transform ''" + out), "--transform is empty");
  // A binary matrix file: named as such, its bytes escaped, never copied raw.
  const fs::path binary = tempDir() / "matrix.bin";
  {
    std::ofstream f(binary, std::ios::binary);
    f.write("1,0\0\x01\x1b[2J", 9);
  }
  const Result b = run("process " + in + " --transform " + q(binary) + out);
  expectOneLineFailure(b, "is not a text file (byte 3 is \\x00)");
  EXPECT_EQ(b.err.find('\x1b'), std::string::npos) << b.err;
  // Reading /dev/zero stops at its first bytes (it grew by 600 MB/s before).
  if (fs::is_character_file("/dev/zero")) {
    const Result z = run("process /dev/zero" + out);
    expectOneLineFailure(z, "not a PLY file");
  }
  EXPECT_FALSE(fs::exists(tempDir() / "small_mistakes.ply"));
}

TEST(BenchCommand, SmokeRunPrintsEveryOperation) {
  REQUIRE_CLI_AND_DEVICE();
  const Result r = run("bench --size 48x64 --repeat 2");
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("median ms"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("GB/s"), std::string::npos) << r.out;
  // Each operation has a row: name (30 columns), data (12), then median and minimum.
  for (const std::string name :
       {"clone XYZ", "upload XYZ (pinned host)", "download XYZ (pinned host)", "convert XYZ -> XYZW", "downsample 2x2",
        "normals", "transform", "roi", "unorganize", "voxel 5 mm", "pipeline (all 6 stages)"}) {
    const std::size_t at = r.out.find("\n" + name + " ");
    ASSERT_NE(at, std::string::npos) << name << " missing in:\n" << r.out;
    const std::string line = r.out.substr(at + 1, r.out.find('\n', at + 1) - at - 1);
    ASSERT_GT(line.size(), 43u) << line;
    std::istringstream fields(line.substr(43));
    double median = -1, minimum = -1;
    fields >> median >> minimum;
    ASSERT_FALSE(fields.fail()) << line;
    EXPECT_GE(minimum, 0.0) << line;
    EXPECT_LE(minimum, median) << line;
  }
}

TEST(BenchCommand, BadArgumentsFailWithOneLine) {
  REQUIRE_CLI_AND_DEVICE();
  expectOneLineFailure(run("bench --size 0x5"), "--size '0x5'");
  expectOneLineFailure(run("bench --size 48"), "HxW");
  expectOneLineFailure(run("bench --repeat 0"), "repeat");
}

TEST(ProcessHelp, ListsTheStagesInOrder) {
  REQUIRE_CLI();
  const Result top = run("--help");
  EXPECT_EQ(top.status, 0);
  EXPECT_NE(top.out.find("process"), std::string::npos);
  EXPECT_NE(top.out.find("bench"), std::string::npos);
  const Result r = run("process --help");
  EXPECT_EQ(r.status, 0);
  for (const char* s :
       {"--downsample", "--normals", "--transform", "--roi", "--unorganize", "--voxel", "--min-points", "--device"})
    EXPECT_NE(r.out.find(s), std::string::npos) << s;
}

}  // namespace
