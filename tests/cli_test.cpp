// End-to-end tests of the `devicearray` command: runs the built binary (its path comes
// from tools/CMakeLists.txt as DEVICEARRAY_CLI_PATH) and checks its output and files.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "cli_support.hpp"
#include "devicearray/io.hpp"

namespace {

TEST(Cli, HelpListsTheSubcommands) {
  REQUIRE_CLI();
  const Result r = run("--help");
  EXPECT_EQ(r.status, 0);
  for (const char* sub : {"info", "layout", "synth", "render"}) EXPECT_NE(r.out.find(sub), std::string::npos) << sub;
  const Result s = run("synth --help");
  EXPECT_EQ(s.status, 0);
  EXPECT_NE(s.out.find("--seed"), std::string::npos) << s.out;
}

TEST(Cli, SynthWritesTheSameCloudAsTheLibraryAndRenderDrawsIt) {
  REQUIRE_CLI();
  const fs::path ply = tempDir() / "scene.ply";
  const Result r = run("synth -H 120 -W 192 --seed 5 -o " + q(ply));
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("organized 120 x 192"), std::string::npos) << r.out;
  const devicearray::HostPointCloud fromCli = devicearray::readPly(ply.string());
  devicearray::SynthOptions o;
  o.camera = devicearray::PinholeCamera::withFieldOfView(192, 120, 60.0);
  o.seed = 5;
  const devicearray::HostPointCloud expected = devicearray::synthesizeScene(o);
  EXPECT_EQ(fromCli.height, 120);
  EXPECT_EQ(fromCli.width, 192);
  ASSERT_EQ(fromCli.xyz.size(), expected.xyz.size());
  EXPECT_EQ(std::memcmp(fromCli.xyz.data(), expected.xyz.data(), expected.xyz.size() * sizeof(float)), 0);
  EXPECT_EQ(fromCli.rgba, expected.rgba);
  EXPECT_EQ(fromCli.snr, expected.snr);

  const fs::path png = tempDir() / "scene.png";
  const Result rr = run("render " + q(ply) + " -o " + q(png) + " --view all");
  ASSERT_EQ(rr.status, 0) << rr.err;
  const devicearray::HostImage im = devicearray::readPng(png.string());
  EXPECT_EQ(im.height, 120);
  EXPECT_EQ(im.width, 3 * 192 + 2 * 8);
  EXPECT_EQ(im.channels, 3);
  const devicearray::RenderOptions all{devicearray::RenderView::all};
  EXPECT_EQ(im.data, devicearray::renderCloud(expected, all).data);
}

TEST(Cli, SynthAsciiFormatIsReadable) {
  REQUIRE_CLI();
  const fs::path ply = tempDir() / "ascii.ply";
  const Result r = run("synth -H 12 -W 16 --format ascii --no-snr --normals -o " + q(ply));
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(slurp(ply).find("format ascii 1.0"), 4u);
  const devicearray::HostPointCloud c = devicearray::readPly(ply.string());
  EXPECT_EQ(c.size(), 192u);
  EXPECT_TRUE(c.snr.empty());
  EXPECT_EQ(c.normals.size(), 3u * 192u);
}

TEST(Cli, LayoutPrintsTheSeedTable) {
  REQUIRE_CLI();
  const Result r = run("layout PointXYZ -H 2 -W 3");
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("[2, 3, 3]"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("[9, 3, 1]"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("[36, 12, 4]"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("|X00|Y00|Z00|X01|Y01|Z01|X02|Y02|Z02|X10|Y10|Z10|"), std::string::npos) << r.out;
  const Result s = run("layout SNR -N 4");
  ASSERT_EQ(s.status, 0) << s.err;
  EXPECT_NE(s.out.find("shape             [4]"), std::string::npos) << s.out;
  EXPECT_NE(s.out.find("strides in bytes  [4]"), std::string::npos) << s.out;
  EXPECT_NE(s.out.find("|S0 |S1 |S2 |S3 |"), std::string::npos) << s.out;
  const Result b = run("layout ColorBGRA -H 1 -W 2");
  ASSERT_EQ(b.status, 0) << b.err;
  EXPECT_NE(b.out.find("|B00|G00|R00|A00|B01|G01|R01|A01|"), std::string::npos) << b.out;
}

TEST(Cli, FailuresAreOneLineAndNonZero) {
  REQUIRE_CLI();
  expectOneLineFailure(run("render " + q(tempDir() / "missing.ply") + " -o " + q(tempDir() / "x.png")), "missing.ply");
  expectOneLineFailure(run("synth -H 10 -W 10"), "--output");
  expectOneLineFailure(run("layout NoSuchFormat -H 2 -W 2"), "NoSuchFormat");
  expectOneLineFailure(run("layout PointXYZ -H 2"), "-W");
  expectOneLineFailure(run("layout PointXYZ -H 2 -W 2 -N 3"), "--count");
  expectOneLineFailure(run("frobnicate"), "frobnicate");
  expectOneLineFailure(run(""), "subcommand");
  expectOneLineFailure(run("render " + q(tempDir() / "scene.ply") + " -o x.png --view sideways"), "sideways");
  // A malformed PLY from the corpus: the library's message, on one line.
  const fs::path bad = fs::path(__FILE__).parent_path() / "data" / "ply" / "absurd_vertex_count.ply";
  const Result r = run("render " + q(bad) + " -o " + q(tempDir() / "y.png"));
  expectOneLineFailure(r, "absurd_vertex_count.ply");
  EXPECT_EQ(r.status, 1);
  EXPECT_FALSE(fs::exists(tempDir() / "y.png"));
}

TEST(Cli, InfoListsDevicesOrSaysWhyNot) {
  REQUIRE_CLI();
  const Result r = run("info");
  if (r.status == 0) {
    EXPECT_NE(r.out.find("backend"), std::string::npos) << r.out;
    EXPECT_TRUE(r.out.find("cuda:") != std::string::npos || r.out.find("opencl:") != std::string::npos) << r.out;
  } else {
    expectOneLineFailure(r, "no usable compute device");
  }
}

}  // namespace
