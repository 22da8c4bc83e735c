// End-to-end tests of `devicearray synth --rotate/--translate` and `devicearray stitch`:
// run the built binary (DEVICEARRAY_CLI_PATH, from tools/CMakeLists.txt) on small
// synthetic views taken from known poses.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

#include "cli_support.hpp"
#include "devicearray/device.hpp"
#include "devicearray/io.hpp"

namespace {

TEST(StitchCommand, MergesViewsFromKnownPoses) {
  REQUIRE_CLI_AND_DEVICE();
  const fs::path a = tempDir() / "a.ply", b = tempDir() / "b.ply", out = tempDir() / "stitched.ply";
  ASSERT_EQ(run("synth -H 150 -W 240 --no-snr -o " + q(a)).status, 0);
  const Result synth = run("synth -H 150 -W 240 --no-snr --rotate 0,-6,0 --translate 40,0,10 -o " + q(b));
  ASSERT_EQ(synth.status, 0) << synth.err;
  ASSERT_NE(synth.out.find("camera pose: [["), std::string::npos) << synth.out;
  const std::string pose = synth.out.substr(synth.out.find("[["), synth.out.rfind("]]") + 2 - synth.out.find("[["));
  const fs::path poses = tempDir() / "poses.json";
  std::ofstream(poses) << "[[[1,0,0,0],[0,1,0,0],[0,0,1,0],[0,0,0,1]],\n " << pose << "]\n";
  const Result r = run("stitch " + q(a) + " " + q(b) + " --poses " + q(poses) + " --voxel 2 -o " + q(out));
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("reference"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("registered"), std::string::npos) << r.out;
  const devicearray::HostPointCloud merged = devicearray::readPly(out.string());
  EXPECT_FALSE(merged.isOrganized());
  EXPECT_GT(merged.size(), 1000u);
  EXPECT_TRUE(merged.hasNormals());
  EXPECT_TRUE(merged.hasColors());
}

TEST(StitchCommand, BadArgumentsFailWithOneLine) {
  REQUIRE_CLI_AND_DEVICE();
  const fs::path a = tempDir() / "only.ply";
  ASSERT_EQ(run("synth -H 30 -W 40 -o " + q(a)).status, 0);
  const fs::path poses = tempDir() / "bad.json";
  std::ofstream(poses) << "[[1, 2, 3]]";
  expectOneLineFailure(run("stitch " + q(a) + " --poses " + q(poses) + " -o " + q(tempDir() / "x.ply")), "--poses");
  const fs::path text = tempDir() / "view.txt";
  std::ofstream(text) << "1 2 3\n";
  expectOneLineFailure(run("stitch " + q(text) + " -o " + q(tempDir() / "x.ply")), ".ply");
  expectOneLineFailure(run("synth --rotate 1,2 -o " + q(tempDir() / "y.ply")), "--rotate");
}

/// Two small views of the synthetic scene, the second from a pose 4 degrees and 20 mm
/// off the first, made once; `pose` is the second view's pose as synth prints it.
struct TwoViews {
  fs::path a, b;
  std::string pose;
};

const TwoViews& twoViews() {
  static const TwoViews views = [] {
    TwoViews v{tempDir() / "small_a.ply", tempDir() / "small_b.ply", {}};
    EXPECT_EQ(run("synth -H 60 -W 96 --no-snr -o " + q(v.a)).status, 0);
    const Result b = run("synth -H 60 -W 96 --no-snr --rotate 0,-4,0 --translate 20,0,0 -o " + q(v.b));
    EXPECT_EQ(b.status, 0) << b.err;
    v.pose = b.out.substr(b.out.find("[["), b.out.rfind("]]") + 2 - b.out.find("[["));
    return v;
  }();
  return views;
}

/// `devicearray ARGS` as run() runs it, killed after `seconds` (status 124), with `before`
/// (shell commands) run first in the same shell.
Result runWithin(int seconds, const std::string& before, const std::string& args) {
  return runLine(before + "; timeout " + std::to_string(seconds) + " '" + kCli + "' " + args);
}

TEST(StitchCommand, PosesFromAnEndlessStreamAreRefusedAfterOneMiB) {
  REQUIRE_CLI_AND_DEVICE();
  const TwoViews& v = twoViews();
  const fs::path out = tempDir() / "endless.ply";
  const std::string stitch = "stitch " + q(v.a) + " " + q(v.b) + " -o " + q(out) + " --poses ";
  // A FIFO that gives 1 MiB + 1 bytes and then neither more nor an end: the poses were read
  // to the end, so the command waited as long as the writer lived (and /dev/zero, which has
  // no end, grew it to GBs).
  const fs::path fifo = tempDir() / "poses.fifo";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0) << std::strerror(errno);
  const Result fromFifo =
      runWithin(60, "(head -c 1048577 /dev/zero; exec sleep 600) >" + q(fifo) + " & writer=$!; trap 'kill $writer' EXIT",
                stitch + q(fifo));
  ASSERT_NE(fromFifo.status, 124) << "the command was still reading the FIFO after 60 s";
  expectOneLineFailure(fromFifo, "--poses: '" + fifo.string() + "' is larger than 1 MiB");
  EXPECT_EQ(fromFifo.status, 2);
  for (const std::string device : {"/dev/zero", "/dev/urandom"}) {
    if (!fs::is_character_file(device)) continue;
    const Result r = runWithin(60, "true", stitch + device);
    expectOneLineFailure(r, "--poses: '" + device + "' is larger than 1 MiB");
    EXPECT_EQ(r.status, 2);
  }
  EXPECT_FALSE(fs::exists(out));
}

/// `--device NAME` of each device the library sees.
std::vector<std::string> deviceOptions() {
  std::vector<std::string> names;
  for (const devicearray::ComputeDevice& d : devicearray::ComputeDevice::all())
    names.push_back(std::string(d.backend() == devicearray::ComputeBackend::cuda ? "cuda:" : "opencl:") +
                    std::to_string(d.ordinal()));
  return names;
}

fs::path writePoses(const std::string& name, const std::string& json) {
  const fs::path path = tempDir() / name;
  std::ofstream(path) << json;
  return path;
}

TEST(StitchCommand, PosesThatAreNotRigidAreRefusedByIndex) {
  REQUIRE_CLI_AND_DEVICE();
  const TwoViews& v = twoViews();
  const std::string identity = "[[1,0,0,0],[0,1,0,0],[0,0,1,0],[0,0,0,1]]";
  struct Case {
    std::string poses;
    std::string mentions;
  };
  const Case cases[] = {
      {"[" + identity + ", [[0,0,0,20],[0,0,0,0],[0,0,0,0],[0,0,0,1]]]",
       "matrix 1 of '%' is not a rigid transform: its 3x3 part is no rotation (R^T R is 1 off the identity"},
      {"[" + identity + ", [[2,0,0,20],[0,2,0,0],[0,0,2,0],[0,0,0,1]]]",
       "matrix 1 of '%' is not a rigid transform: its 3x3 part is no rotation (R^T R is 3 off the identity"},
      {"[[[1,0,0,0],[0,1,0.01,0],[0,0,1,0],[0,0,0,1]], " + identity + "]",
       "matrix 0 of '%' is not a rigid transform: its 3x3 part is no rotation"},
      {"[" + identity + ", [[1,0,0,0],[0,1,0,0],[0,0,-1,0],[0,0,0,1]]]",
       "matrix 1 of '%' is not a rigid transform: its 3x3 part is a reflection (determinant -1)"},
      {"[" + identity + ", [[1,0,0,1e39],[0,1,0,0],[0,0,1,0],[0,0,0,1]]]",
       "matrix 1 of '%': element 3 does not fit a float"},
  };
  int n = 0;
  for (const Case& c : cases) {
    const fs::path poses = writePoses("nonrigid" + std::to_string(n++) + ".json", c.poses);
    std::string mentions = c.mentions;
    mentions.replace(mentions.find('%'), 1, poses.string());
    const fs::path out = tempDir() / "nonrigid.ply";
    const Result r = run("stitch " + q(v.a) + " " + q(v.b) + " --poses " + q(poses) + " -o " + q(out));
    expectOneLineFailure(r, mentions);
    EXPECT_EQ(r.status, 2) << c.poses;
    EXPECT_FALSE(fs::exists(out)) << c.poses;
  }
}

TEST(StitchCommand, PosesWrittenWithFourDecimalsAreRigidEnough) {
  REQUIRE_CLI_AND_DEVICE();
  const TwoViews& v = twoViews();
  // cos 4 deg = 0.99756405, sin 4 deg = 0.06975647, rounded: R^T R is 6e-5 off the identity.
  const fs::path poses = writePoses(
      "rounded.json", "[[[1,0,0,0],[0,1,0,0],[0,0,1,0],[0,0,0,1]], "
                      "[[0.9976,0,-0.0698,20],[0,1,0,0],[0.0698,0,0.9976,0],[0,0,0,1]]]");
  for (const std::string& device : deviceOptions()) {
    const fs::path out = tempDir() / "rounded.ply";
    const Result r =
        run("stitch " + q(v.a) + " " + q(v.b) + " --poses " + q(poses) + " --device " + device + " -o " + q(out));
    ASSERT_EQ(r.status, 0) << device << ": " << r.err;
    EXPECT_NE(r.out.find("registered"), std::string::npos) << device << ": " << r.out;
    EXPECT_GT(devicearray::readPly(out.string()).size(), 1000u) << device;
  }
}

/// Equal values, NaN (a normal that could not be estimated) equal to NaN.
bool sameValues(const std::vector<float>& a, const std::vector<float>& b) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i)
    if (!(a[i] == b[i] || (std::isnan(a[i]) && std::isnan(b[i])))) return false;
  return true;
}

TEST(StitchCommand, OutputFormatFollowsTheExtension) {
  REQUIRE_CLI_AND_DEVICE();
  const TwoViews& v = twoViews();
  const fs::path poses = writePoses("small.json", "[[[1,0,0,0],[0,1,0,0],[0,0,1,0],[0,0,0,1]],\n " + v.pose + "]\n");
  for (const std::string& device : deviceOptions()) {
    SCOPED_TRACE(device);
    const std::string args = "stitch " + q(v.a) + " " + q(v.b) + " --poses " + q(poses) + " --device " + device;
    const fs::path ply = tempDir() / "stitched.ply", pcd = tempDir() / "stitched.pcd",
                   xyz = tempDir() / "stitched.XYZ", other = tempDir() / "stitched.cloud";
    for (const fs::path& out : {ply, pcd, xyz, other}) {
      const Result r = run(args + " -o " + q(out));
      ASSERT_EQ(r.status, 0) << out << ": " << r.err;
    }
    // PLY bytes in a .pcd file were refused by every PCD reader ("it begins with 'ply'").
    EXPECT_EQ(slurp(pcd).rfind("# .PCD", 0), 0u) << slurp(pcd).substr(0, 40);
    EXPECT_EQ(slurp(other).rfind("ply\n", 0), 0u);
    EXPECT_EQ(slurp(other), slurp(ply));
    const devicearray::HostPointCloud fromPly = devicearray::readPly(ply.string());
    const devicearray::HostPointCloud fromPcd = devicearray::readPcd(pcd.string());
    const devicearray::HostPointCloud fromXyz = devicearray::readXyz(xyz.string());
    ASSERT_GT(fromPly.size(), 1000u);
    EXPECT_FALSE(fromPcd.isOrganized());
    EXPECT_EQ(fromPcd.xyz, fromPly.xyz);
    EXPECT_EQ(fromPcd.rgba, fromPly.rgba);
    EXPECT_TRUE(sameValues(fromPcd.normals, fromPly.normals));
    EXPECT_EQ(fromXyz.xyz, fromPly.xyz);
    EXPECT_TRUE(sameValues(fromXyz.normals, fromPly.normals));
  }
}

TEST(StitchCommand, MaxIterationsMustBeAtLeastOne) {
  REQUIRE_CLI_AND_DEVICE();
  const TwoViews& v = twoViews();
  const fs::path out = tempDir() / "no_steps.ply";
  // With no ICP step no view converged: every view after the first was skipped, status 0.
  for (const char* steps : {"0", "-1", "1.5"}) {
    const Result r = run("stitch " + q(v.a) + " " + q(v.b) + " --max-iterations " + steps + " -o " + q(out));
    expectOneLineFailure(r, "--max-iterations");
    EXPECT_NE(r.err.find("'" + std::string(steps) + "' must be an integer in 1..100000"), std::string::npos) << r.err;
    EXPECT_EQ(r.status, 2);
  }
  EXPECT_FALSE(fs::exists(out));
}

TEST(StitchCommand, AViewWithoutASinglePairShowsNoRms) {
  REQUIRE_CLI_AND_DEVICE();
  // One point each, a metre apart: no pair within the correspondence distance, so the
  // view has no RMS (the library's NaN), printed as '-' like the reference view's.
  const fs::path a = tempDir() / "point_a.ply", b = tempDir() / "point_b.ply", out = tempDir() / "points.ply";
  const std::string header =
      "ply\nformat ascii 1.0\nelement vertex 1\nproperty float x\nproperty float y\nproperty float z\nend_header\n";
  std::ofstream(a) << header << "0 0 1000\n";
  std::ofstream(b) << header << "1000 0 1000\n";
  const Result r = run("stitch " + q(a) + " " + q(b) + " -o " + q(out));
  ASSERT_EQ(r.status, 0) << r.err;
  const std::size_t row = r.out.find("\n1 ");
  ASSERT_NE(row, std::string::npos) << r.out;
  const std::string line = r.out.substr(row + 1, r.out.find('\n', row + 1) - row - 1);
  EXPECT_EQ(line.find("nan"), std::string::npos) << line;
  EXPECT_NE(line.find(" -  "), std::string::npos) << line;
  EXPECT_NE(line.find("not converged: skipped"), std::string::npos) << line;
}

}  // namespace
