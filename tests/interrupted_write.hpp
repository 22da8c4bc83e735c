// Shared by the tests that interrupt a file write (the library's writers and the
// command): finding the writer's temporary and sending SIGINT while it exists.
#pragma once

#include <signal.h>
#include <sys/types.h>
#include <sys/wait.h>

#include <chrono>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

namespace datest {

/// Names in `dir` that look like a writer's temporary (".NAME.tmp-XXXXXX").
inline std::vector<std::string> temporariesIn(const std::filesystem::path& dir) {
  std::vector<std::string> names;
  for (const auto& e : std::filesystem::directory_iterator(dir)) {
    const std::string n = e.path().filename().string();
    if (n.size() > 11 && n[0] == '.' && n.find(".tmp-") != std::string::npos) names.push_back(n);
  }
  return names;
}

/// What interruptOnceWriting saw.
struct Interruption {
  bool sent = false;          ///< SIGINT went to the child while its temporary existed
  bool endedFirst = false;    ///< the child ended before any temporary appeared
  int status = 0;             ///< the child's wait status
};

/// Sends SIGINT to child `pid` as soon as a writer temporary appears in `dir` (the
/// write is then under way), within `timeout`; kills it otherwise. Reaps the child.
inline Interruption interruptOnceWriting(pid_t pid, const std::filesystem::path& dir,
                                         std::chrono::seconds timeout) {
  Interruption out;
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (!out.sent && std::chrono::steady_clock::now() < deadline) {
    if (!temporariesIn(dir).empty()) {
      ::kill(pid, SIGINT);
      out.sent = true;
    } else if (::waitpid(pid, &out.status, WNOHANG) == pid) {
      out.endedFirst = true;
      return out;
    } else {
      std::this_thread::sleep_for(std::chrono::microseconds(200));
    }
  }
  if (!out.sent) ::kill(pid, SIGKILL);
  ::waitpid(pid, &out.status, 0);
  return out;
}

}  // namespace datest
