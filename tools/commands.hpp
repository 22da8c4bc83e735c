// The `devicearray` command's subcommands. Each lives in its own cmd_*.cpp and is
// registered from main.cpp; a subcommand reports failure by throwing (a
// devicearray::Error, a CommandError or a CLI11 error), and main turns that into one
// "devicearray: error: ..." line on stderr and a non-zero exit status.
#pragma once

#include <stdexcept>
#include <string>

#include "devicearray/error.hpp"

namespace CLI {
class App;
}

namespace devicearray::cli {

/// A failure of a subcommand that is not a library error (e.g. a bad combination of
/// options that CLI11 cannot express). Exits with status 2, like usage errors.
class CommandError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// Runs `work`, reporting a library InvalidArgument as a usage error (exit status 2):
/// options and the input's fitness for them are the user's to fix.
template <class Work>
void asUsageError(Work&& work) {
  try {
    work();
  } catch (const Error& e) {
    if (e.code() == ErrorCode::InvalidArgument) throw CommandError(e.what());
    throw;
  }
}

void addInfoCommand(CLI::App& app);
void addLayoutCommand(CLI::App& app);
void addSynthCommand(CLI::App& app);
void addRenderCommand(CLI::App& app);
void addProcessCommand(CLI::App& app);
void addBenchCommand(CLI::App& app);
void addStitchCommand(CLI::App& app);
void addBatchCommand(CLI::App& app);

}  // namespace devicearray::cli
