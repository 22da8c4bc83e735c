// Helpers of the tests that write and read files: raw bytes in and out of a file, and
// float arrays compared bit for bit.
#pragma once

#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

namespace datest {

/// Replaces the file `p` with `bytes`.
inline void writeFile(const std::filesystem::path& p, const std::string& bytes) {
  std::ofstream f(p, std::ios::binary);
  f.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

/// The bytes of the file `p` (empty when it cannot be read).
inline std::string readFile(const std::filesystem::path& p) {
  std::ifstream f(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>()};
}

/// Same bits, except that NaN matches NaN (the sign and payload of a NaN carry no
/// meaning in a cloud).
inline void expectSameFloats(const std::vector<float>& a, const std::vector<float>& b, const char* what) {
  ASSERT_EQ(a.size(), b.size()) << what;
  for (std::size_t i = 0; i < a.size(); ++i) {
    if (std::isnan(a[i]))
      EXPECT_TRUE(std::isnan(b[i])) << what << "[" << i << "]";
    else
      EXPECT_EQ(std::bit_cast<std::uint32_t>(a[i]), std::bit_cast<std::uint32_t>(b[i]))
          << what << "[" << i << "]: " << a[i] << " vs " << b[i];
  }
}

}  // namespace datest
