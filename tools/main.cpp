// The `devicearray` command: devices, layouts, synthetic scenes, the point-cloud
// pipeline, previews and benchmarks.
//
// Subcommands register themselves from their own files (see commands.hpp). Every
// failure — a usage error, a library Error or anything else thrown — ends as exactly
// one "devicearray: error: ..." line on stderr and a non-zero exit status: 2 for usage
// errors, 1 for everything else.
//
// SIGINT and SIGTERM remove the temporary file of a PLY / PNG write in progress before
// the process dies, so an interrupted write leaves the old file as it was.
#include <signal.h>

#include <algorithm>
#include <exception>
#include <iostream>
#include <string>

#include <CLI/CLI.hpp>

#include "commands.hpp"
#include "devicearray/error.hpp"
#include "devicearray/io.hpp"
#include "text.hpp"

namespace {

int reportFailure(const std::string& message, int status) {
  std::string line = message;
  for (char& c : line)
    if (c == '\n' || c == '\r') c = ' ';
  // Messages may quote bytes of a file or an argument: nothing may break the line.
  std::cerr << "devicearray: error: " << devicearray::cli::printable(line, 4000) << '\n';
  return status;
}

extern "C" void removeTemporariesAndDie(int signal) {
  // Async-signal-safe: unlink the temporaries, then die of the same signal so the
  // parent sees how the command ended.
  devicearray::removeUnfinishedOutputFiles();
  ::signal(signal, SIG_DFL);
  ::raise(signal);
}

void installSignalHandlers() {
  struct sigaction action {};
  action.sa_handler = removeTemporariesAndDie;
  sigemptyset(&action.sa_mask);
  for (int s : {SIGINT, SIGTERM}) {
    struct sigaction previous {};
    // A signal the parent told us to ignore (nohup, background jobs) stays ignored.
    if (sigaction(s, nullptr, &previous) == 0 && previous.sa_handler == SIG_IGN) continue;
    sigaction(s, &action, nullptr);
  }
}

}  // namespace

int main(int argc, char** argv) {
  installSignalHandlers();
  CLI::App app{"Safe, fast GPU arrays for 3-D vision: inspect devices and layouts; make, process, stitch and preview point clouds; benchmark.",
               "devicearray"};
  app.set_version_flag("--version", "devicearray 0.1.0");
  app.require_subcommand(1);
  app.fallthrough(false);
  devicearray::cli::addInfoCommand(app);
  devicearray::cli::addLayoutCommand(app);
  devicearray::cli::addSynthCommand(app);
  devicearray::cli::addProcessCommand(app);
  devicearray::cli::addStitchCommand(app);
  devicearray::cli::addBatchCommand(app);
  devicearray::cli::addRenderCommand(app);
  devicearray::cli::addBenchCommand(app);

  // CLI11 reports an unknown first word as "A subcommand is required"; name it instead.
  const auto subcommands = app.get_subcommands([](CLI::App*) { return true; });
  if (argc > 1 && argv[1][0] != '-' &&
      std::none_of(subcommands.begin(), subcommands.end(), [&](CLI::App* sub) { return sub->get_name() == argv[1]; })) {
    std::string names;
    for (const CLI::App* sub : subcommands) names += (names.empty() ? "" : ", ") + sub->get_name();
    return reportFailure("unknown subcommand '" + std::string(argv[1]) + "' (one of: " + names + ")", 2);
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    // --help and --version are "errors" with exit code 0; CLI11 prints them best.
    if (e.get_exit_code() == 0) return app.exit(e);
    return reportFailure(std::string(e.what()) + " (run 'devicearray --help' for usage)", 2);
  } catch (const devicearray::cli::CommandError& e) {
    return reportFailure(e.what(), 2);
  } catch (const devicearray::Error& e) {
    return reportFailure(e.what(), 1);
  } catch (const std::bad_alloc&) {
    return reportFailure("out of host memory", 1);
  } catch (const std::exception& e) {
    return reportFailure(e.what(), 1);
  }
  return 0;
}
