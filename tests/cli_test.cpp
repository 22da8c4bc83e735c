// End-to-end tests of the `devicearray` command: runs the built binary (its path comes
// from tools/CMakeLists.txt as DEVICEARRAY_CLI_PATH) and checks its output and files.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "cli_support.hpp"
#include "devicearray/io.hpp"
#include "interrupted_write.hpp"

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

TEST(Cli, SynthWritesPcdAndXyzByTheOutputsExtension) {
  REQUIRE_CLI();
  devicearray::SynthOptions o;
  o.camera = devicearray::PinholeCamera::withFieldOfView(16, 12, 60.0);
  o.seed = 3;
  const devicearray::HostPointCloud expected = devicearray::synthesizeScene(o);
  const fs::path pcd = tempDir() / "scene.pcd", xyz = tempDir() / "scene.xyz";
  ASSERT_EQ(run("synth -H 12 -W 16 --seed 3 -o " + q(pcd)).status, 0);
  const devicearray::HostPointCloud fromPcd = devicearray::readPcd(pcd.string());
  EXPECT_EQ(fromPcd.height, 12);
  ASSERT_EQ(fromPcd.xyz.size(), expected.xyz.size());
  EXPECT_EQ(std::memcmp(fromPcd.xyz.data(), expected.xyz.data(), expected.xyz.size() * sizeof(float)), 0);
  ASSERT_EQ(run("synth -H 12 -W 16 --seed 3 --format ascii -o " + q(xyz)).status, 0);
  EXPECT_EQ(devicearray::readXyz(xyz.string()).validCount(), expected.validCount());
  // PCD and XYZ have no big-endian form: refused before anything is written.
  const fs::path bigEndian = tempDir() / "big.pcd";
  const Result refused = run("synth -H 4 -W 4 --format binary_big_endian -o " + q(bigEndian));
  expectOneLineFailure(refused, "no big-endian form");
  EXPECT_EQ(refused.status, 2);  // a usage error, as process gives it
  EXPECT_FALSE(fs::exists(bigEndian));
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
  // A well-formed file with nothing to show is a usage error (status 2) naming the file.
  const std::string header = "ply\nformat ascii 1.0\nelement vertex %d\nproperty float x\nproperty float y\n"
                             "property float z\nend_header\n";
  const std::pair<std::string, std::string> nothing[] = {{"0", "has no points (it is empty)"},
                                                         {"2", "has no valid point"}};
  for (const auto& [count, message] : nothing) {
    const fs::path ply = tempDir() / ("nothing_" + count + ".ply");
    std::string text = header;
    text.replace(text.find("%d"), 2, count);
    std::ofstream(ply) << text << (count == "0" ? "" : "nan 1 2\n0 inf 3\n");
    const Result empty = run("render " + q(ply) + " -o " + q(tempDir() / "nothing.png"));
    expectOneLineFailure(empty, ply.filename().string() + " " + message);
    EXPECT_EQ(empty.status, 2);
    EXPECT_FALSE(fs::exists(tempDir() / "nothing.png"));
  }
}

TEST(Cli, SmallMistakesGetOneClearLine) {
  REQUIRE_CLI();
  // CLI11's own range check printed its bounds, DBL_MAX written out in full.
  for (const char* args : {"layout PointXYZ -N 0", "layout PointXYZ -N -3", "layout PointXYZ -H 0 -W 2"}) {
    const Result r = run(args);
    expectOneLineFailure(r, "must be an integer in 1..");
    EXPECT_EQ(r.err.find("1797693134862315"), std::string::npos) << r.err;
  }
  // Seeds are 64-bit unsigned: no wrap-around of -1, no silent truncation of 2^64.
  const fs::path ply = tempDir() / "seeded.ply";
  expectOneLineFailure(run("synth -H 4 -W 4 --seed -1 -o " + q(ply)), "'-1' must be an integer in 0..18446744073709551615");
  expectOneLineFailure(run("synth -H 4 -W 4 --seed 18446744073709551616 -o " + q(ply)),
                       "'18446744073709551616' must be an integer in 0..18446744073709551615");
  expectOneLineFailure(run("synth -H 4 -W 4 --seed 1e3 -o " + q(ply)), "'1e3'");
  EXPECT_FALSE(fs::exists(ply));
  const Result maxSeed = run("synth -H 4 -W 4 --seed 18446744073709551615 -o " + q(ply));
  EXPECT_EQ(maxSeed.status, 0) << maxSeed.err;
  // NUL and other control bytes of a PLY header are escaped, not printed raw.
  const fs::path nul = fs::path(__FILE__).parent_path() / "data" / "ply" / "header_nul_byte.ply";
  const Result r = run("render " + q(nul) + " -o " + q(tempDir() / "nul.png"));
  expectOneLineFailure(r, "'flo\\x00at'");
  EXPECT_EQ(r.err.find('\0'), std::string::npos);
}

TEST(Cli, NonPlyInputIsRefusedAtOnce) {
  REQUIRE_CLI();
  if (!fs::is_character_file("/dev/zero")) GTEST_SKIP() << "no /dev/zero";
  // Bounded in time and (outside sanitizer builds) in memory: reading /dev/zero to its
  // end grew by 600 MB/s until the machine ran out.
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
  const std::string limit = "timeout 20 ";
#else
  const std::string limit = "ulimit -v 4000000; timeout 20 ";
#endif
  const Result r = run("render /dev/zero -o " + q(tempDir() / "zero.png"));
  expectOneLineFailure(r, "not a PLY file");
  EXPECT_NE(r.err.find("begins with '\\x00\\x00\\x00\\x00'"), std::string::npos) << r.err;
  // std::system runs a shell: the limits apply to it and to the command only.
  const std::string cmd = limit + "'" + kCli + "' render /dev/urandom -o /dev/null 2>/dev/null";
  const int raw = std::system(cmd.c_str());
  ASSERT_TRUE(WIFEXITED(raw));
  EXPECT_EQ(WEXITSTATUS(raw), 1) << "124: timed out";
}

TEST(Cli, RenderRefusesPicturesAboveTheMemoryCap) {
  REQUIRE_CLI();
  const Result help = run("render --help");
  EXPECT_NE(help.out.find("--max-memory"), std::string::npos) << help.out;
  EXPECT_NE(help.out.find("2048 MiB"), std::string::npos) << help.out;
  const fs::path ply = tempDir() / "small.ply";
  ASSERT_EQ(run("synth -H 12 -W 16 -o " + q(ply)).status, 0);
  // 16384 x 16384 took 94 s and 8 GB: now refused before rendering, in one line.
  const auto t0 = std::chrono::steady_clock::now();
  const Result r = run("render " + q(ply) + " --width 16384 --height 16384 -o " + q(tempDir() / "huge.png"));
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(), 10.0);
  expectOneLineFailure(r, "16384 x 16384");
  EXPECT_NE(r.err.find("--max-memory"), std::string::npos) << r.err;
  EXPECT_EQ(r.status, 1);
  EXPECT_FALSE(fs::exists(tempDir() / "huge.png"));
  expectOneLineFailure(run("render " + q(ply) + " --width 640 --max-memory 1 -o " + q(tempDir() / "tight.png")),
                       "more than the limit of 1.0 MiB");
  const Result ok = run("render " + q(ply) + " --width 640 --max-memory 64 -o " + q(tempDir() / "fits.png"));
  EXPECT_EQ(ok.status, 0) << ok.err;
}

TEST(Cli, InterruptedWriteKeepsTheOldFileAndLeavesNoTemporary) {
  REQUIRE_CLI();
  const fs::path dir = tempDir() / "interrupt";
  fs::create_directories(dir);
  const fs::path ply = dir / "scene.ply";
  { std::ofstream(ply) << "the old scene"; }
  const pid_t pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    ::signal(SIGINT, SIG_DFL);  // a background test run may have it ignored
    const int null = ::open("/dev/null", O_WRONLY);
    ::dup2(null, 1);
    ::dup2(null, 2);
    ::execl(kCli, "devicearray", "synth", "-H", "1000", "-W", "1500", "--format", "ascii", "-o", ply.c_str(),
            static_cast<char*>(nullptr));
    ::_exit(127);
  }
  // SIGINT as soon as the temporary exists: the ~75 MB ascii write is then under way.
  const datest::Interruption run = datest::interruptOnceWriting(pid, dir, std::chrono::seconds(60));
  ASSERT_FALSE(run.endedFirst) << "synth ended (status " << run.status << ") before its temporary was seen";
  ASSERT_TRUE(run.sent) << "no temporary appeared within 60 s";
  const int status = run.status;
  EXPECT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGINT) << "status " << status;
  EXPECT_EQ(slurp(ply), "the old scene");
  EXPECT_TRUE(datest::temporariesIn(dir).empty()) << datest::temporariesIn(dir)[0];
}

TEST(Cli, FailedWriteToADeviceNodeKeepsTheNode) {
  REQUIRE_CLI();
  const fs::path node = tempDir() / "full";
  fs::remove(node);
  if (::mknod(node.c_str(), S_IFCHR | 0666, makedev(1, 7)) != 0)  // a copy of /dev/full
    GTEST_SKIP() << "mknod needs privileges: " << std::strerror(errno);
  const int fd = ::open(node.c_str(), O_WRONLY);
  const bool isFull = fd >= 0 && ::write(fd, "x", 1) < 0 && errno == ENOSPC;
  if (fd >= 0) ::close(fd);
  if (!isFull) GTEST_SKIP() << "char 1:7 is not /dev/full here (nodev mount?)";
  expectOneLineFailure(run("synth -H 64 -W 64 -o " + q(node)), "No space left");
  EXPECT_TRUE(fs::is_character_file(node)) << "synth removed or replaced the device node";
  fs::remove(node);
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
