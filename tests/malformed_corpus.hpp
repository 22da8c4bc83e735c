// The readers' malformed-file corpora (tests/data/<format>/): listing them as test
// parameters, and the one check every file must pass — a single InvalidArgument that
// names the file in one printable line.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <string>
#include <vector>

#include "devicearray/error.hpp"

namespace datest {

/// tests/data/<format>/.
inline std::filesystem::path corpusDir(const char* format) {
  return std::filesystem::path(__FILE__).parent_path() / "data" / format;
}

/// The names of the files in tests/data/<format>/ ending in `extension`, sorted.
inline std::vector<std::string> corpusFiles(const char* format, const char* extension) {
  std::vector<std::string> names;
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(corpusDir(format), ec))
    if (entry.path().extension() == extension) names.push_back(entry.path().filename().string());
  std::sort(names.begin(), names.end());
  return names;
}

/// A test name from a corpus file name: its stem, non-alphanumerics as '_'.
inline std::string corpusTestName(const testing::TestParamInfo<std::string>& info) {
  std::string s = info.param.substr(0, info.param.find_last_of('.'));
  for (char& ch : s)
    if (!std::isalnum(static_cast<unsigned char>(ch))) ch = '_';
  return s;
}

/// read(path) must throw one InvalidArgument naming `path` in a single printable line
/// (bytes of the file appear escaped as \xNN) and, when `place` is given, containing
/// one of its words (": line ", ": byte ", ...). Returns the message.
template <class Read>
std::string expectRejected(const std::string& path, Read&& read, const std::vector<std::string>& place = {}) {
  try {
    const auto cloud = read(path);
    ADD_FAILURE() << "the reader accepted " << path << " (" << cloud.size() << " points)";
    return {};
  } catch (const devicearray::Error& e) {
    EXPECT_EQ(e.code(), devicearray::ErrorCode::InvalidArgument) << e.what();
    const std::string msg = e.what();
    EXPECT_NE(msg.find(path), std::string::npos) << msg;
    EXPECT_EQ(msg.find('\n'), std::string::npos) << "one line: " << msg;
    EXPECT_LT(msg.size(), 600u) << msg;
    for (char ch : msg) EXPECT_FALSE(static_cast<unsigned char>(ch) < 0x20 || ch == 0x7f) << msg;
    if (!place.empty())
      EXPECT_TRUE(std::any_of(place.begin(), place.end(), [&](const std::string& w) { return msg.find(w) != std::string::npos; }))
          << "names a place: " << msg;
    return msg;
  }
}

}  // namespace datest
