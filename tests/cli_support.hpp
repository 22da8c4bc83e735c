// Shared by the end-to-end tests of the `devicearray` command (cli_test.cpp,
// cli_process_test.cpp): runs the built binary (DEVICEARRAY_CLI_PATH, passed by
// tools/CMakeLists.txt) with its output captured, in a per-process scratch folder
// removed after the last test. Each test executable includes it once.
#pragma once

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <system_error>

#include "devicearray/device.hpp"
#include "scratch_dir.hpp"

namespace {

namespace fs = std::filesystem;

#ifdef DEVICEARRAY_CLI_PATH
constexpr const char* kCli = DEVICEARRAY_CLI_PATH;
#else
constexpr const char* kCli = nullptr;
#endif

#define REQUIRE_CLI()                       \
  if (kCli == nullptr || !fs::exists(kCli)) \
  GTEST_SKIP() << "the devicearray command was not built (DEVICEARRAY_BUILD_TOOLS=OFF or no CLI11)"

/// This test process's scratch folder.
fs::path tempDir() { return datest::scratchDir(); }

/// Removes the scratch folder after the last test.
class RemoveTempDir : public ::testing::Environment {
 public:
  void TearDown() override {
    std::error_code ec;
    fs::remove_all(tempDir(), ec);
  }
};
[[maybe_unused]] ::testing::Environment* const kRemoveTempDir = ::testing::AddGlobalTestEnvironment(new RemoveTempDir);

std::string slurp(const fs::path& p) {
  std::ifstream f(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>()};
}

struct Result {
  int status = -1;
  std::string out, err;
};

/// Runs the shell command line `line` with the stdout and stderr of its last command
/// captured to files.
Result runLine(const std::string& line) {
  static int counter = 0;
  const fs::path out = tempDir() / ("out" + std::to_string(counter) + ".txt");
  const fs::path err = tempDir() / ("err" + std::to_string(counter++) + ".txt");
  const std::string cmd = line + " >'" + out.string() + "' 2>'" + err.string() + "'";
  const int raw = std::system(cmd.c_str());
  Result r;
  r.status = WIFEXITED(raw) ? WEXITSTATUS(raw) : -1;
  r.out = slurp(out);
  r.err = slurp(err);
  return r;
}

/// Runs `devicearray ARGS` with stdout and stderr captured to files.
Result run(const std::string& args) { return runLine(std::string("'") + kCli + "' " + args); }

/// Whether the library sees a compute device (the commands that compute need one).
bool haveDevice() {
  try {
    return !devicearray::ComputeDevice::all().empty();
  } catch (...) {
    return false;
  }
}

#define REQUIRE_CLI_AND_DEVICE() \
  REQUIRE_CLI();                 \
  if (!haveDevice()) GTEST_SKIP() << "no compute device: the command needs one"

/// A path quoted for the shell.
std::string q(const fs::path& p) { return "'" + p.string() + "'"; }

/// Failure contract: non-zero status, exactly one stderr line "devicearray: error: ...".
void expectOneLineFailure(const Result& r, const std::string& mentions) {
  EXPECT_NE(r.status, 0);
  EXPECT_EQ(r.err.rfind("devicearray: error: ", 0), 0u) << r.err;
  ASSERT_FALSE(r.err.empty());
  EXPECT_EQ(r.err.find('\n'), r.err.size() - 1) << "more than one line: " << r.err;
  EXPECT_NE(r.err.find(mentions), std::string::npos) << "expected '" << mentions << "' in: " << r.err;
}

}  // namespace
