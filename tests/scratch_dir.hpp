// The scratch folder of a test process that writes files.
#pragma once

#include <errno.h>  // program_invocation_short_name
#include <unistd.h>

#include <filesystem>
#include <string>

namespace datest {

/// This test process's scratch folder (named after the test program and its pid),
/// created on first use.
inline std::filesystem::path scratchDir() {
  static const std::filesystem::path dir = [] {
    std::filesystem::path d = std::filesystem::temp_directory_path() /
                              (std::string(program_invocation_short_name) + "_" + std::to_string(::getpid()));
    std::filesystem::create_directories(d);
    return d;
  }();
  return dir;
}

}  // namespace datest
