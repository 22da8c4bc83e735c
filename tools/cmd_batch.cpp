// `devicearray batch INPUTS... -o OUTDIR [stages] [--scheduler local|ADDRESS] [--workers N]`:
// the frame pipeline on a recorded dataset, one Dask task per frame. Dask lives in
// Python, so this command is the Python package's batch runner (devicearray.batch)
// under the command's name: it replaces itself with
//
//   $DEVICEARRAY_PYTHON (default python3) -c <run devicearray.batch> ARGS...
//
// and every argument, --help included, goes to that runner. Run from a build tree, the
// package staged there (<build>/python) comes first on PYTHONPATH, so the command and
// the package it runs are the same build. Without the package, or without Dask, the
// runner says what to install and exits with status 1.
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "commands.hpp"

namespace devicearray::cli {
namespace {

// Imports the runner; an interpreter without the devicearray package gets the hint
// instead of a traceback.
constexpr const char* kBootstrap = R"PY(import sys
try:
    from devicearray.batch import main
except ImportError as e:
    if not (e.name or "").startswith("devicearray"):
        raise
    sys.exit("devicearray batch: error: the batch command runs in Python, and %s has no devicearray package "
             "(%s): pip install 'devicearray[dask]', or set DEVICEARRAY_PYTHON to the interpreter that has it"
             % (sys.executable, e))
sys.exit(main(sys.argv[1:]))
)PY";

/// <build>/python when this executable runs from a build tree that staged the package.
std::string stagedPackageDir() {
  std::error_code ec;
  const std::filesystem::path exe = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (ec) return {};
  const std::filesystem::path python = exe.parent_path().parent_path() / "python";
  return std::filesystem::is_regular_file(python / "devicearray" / "batch.py", ec) ? python.string() : std::string();
}

[[noreturn]] void runPythonBatch(const std::vector<std::string>& args) {
  const char* configured = std::getenv("DEVICEARRAY_PYTHON");
  const std::string python = configured != nullptr && *configured != '\0' ? configured : "python3";
  if (const std::string staged = stagedPackageDir(); !staged.empty()) {
    const char* current = std::getenv("PYTHONPATH");
    const std::string path = current != nullptr && *current != '\0' ? staged + ":" + current : staged;
    ::setenv("PYTHONPATH", path.c_str(), 1);
  }
  std::vector<std::string> words = {python, "-c", kBootstrap};
  words.insert(words.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (std::string& w : words) argv.push_back(w.data());
  argv.push_back(nullptr);
  ::execvp(argv[0], argv.data());
  const int error = errno;
  throw CommandError("batch runs on Dask in Python, and '" + python + "' could not be started (" +
                     std::strerror(error) +
                     "): install Python 3 with pip install 'devicearray[dask]', or set DEVICEARRAY_PYTHON to its "
                     "interpreter");
}

}  // namespace

void addBatchCommand(CLI::App& app) {
  CLI::App* cmd = app.add_subcommand(
      "batch",
      "Run the pipeline of 'process' on many frames on Dask (files, globs or manifests; -o OUTDIR; "
      "--scheduler local|ADDRESS; --workers N). Runs the Python package's devicearray.batch: "
      "'devicearray batch --help' lists its options.");
  // Everything after `batch`, --help included, is the Python runner's to read.
  cmd->prefix_command();
  cmd->set_help_flag();
  cmd->allow_extras();
  cmd->callback([cmd] { runPythonBatch(cmd->remaining()); });
}

}  // namespace devicearray::cli
