// End-to-end tests of `devicearray synth --rotate/--translate` and `devicearray stitch`:
// run the built binary (DEVICEARRAY_CLI_PATH, from tools/CMakeLists.txt) on small
// synthetic views taken from known poses.
#include <gtest/gtest.h>

#include <fstream>
#include <string>

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

}  // namespace
