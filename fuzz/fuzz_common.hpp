// Helpers shared by the libFuzzer targets.
//
// The byte reader is sequential and little-endian (not FuzzedDataProvider, which
// takes integers from the end of the input) so seed inputs in fuzz/corpus/ can be
// written by hand or by fuzz/make_seeds.py and still mean what they say.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "devicearray/devicearray.hpp"

namespace dafuzz {

class ByteReader {
 public:
  ByteReader(const std::uint8_t* data, std::size_t size) : data_(data), size_(size) {}

  /// Next sizeof(T) bytes as T (missing bytes read as zero).
  template <class T>
  T take() {
    unsigned char buf[sizeof(T)] = {};
    const std::size_t n = remaining() < sizeof(T) ? remaining() : sizeof(T);
    if (n > 0) std::memcpy(buf, data_ + pos_, n);
    pos_ += n;
    T v;
    std::memcpy(&v, buf, sizeof(T));
    return v;
  }
  std::uint8_t u8() { return take<std::uint8_t>(); }
  std::int32_t i32() { return take<std::int32_t>(); }
  std::int64_t i64() { return take<std::int64_t>(); }
  std::uint64_t u64() { return take<std::uint64_t>(); }
  bool flag() { return (u8() & 1) != 0; }
  std::size_t remaining() const { return size_ - pos_; }

 private:
  const std::uint8_t* data_;
  std::size_t size_;
  std::size_t pos_ = 0;
};

/// Reports a broken invariant as a crash libFuzzer records (with the input).
[[noreturn]] inline void invariantBroken(const char* what) {
  std::fprintf(stderr, "fuzz invariant broken: %s\n", what);
  std::abort();
}
#define DAFUZZ_CHECK(cond)                          \
  do {                                              \
    if (!(cond)) ::dafuzz::invariantBroken(#cond);  \
  } while (0)

/// The OpenCL device every target uses (PoCL in CI); the targets are built
/// without CUDA (see scripts/fuzz.sh), so CUDA inputs exercise the refusal paths.
inline const devicearray::ComputeDevice& openclDevice() {
  static const devicearray::ComputeDevice device = [] {
    for (const auto& d : devicearray::ComputeDevice::all())
      if (d.backend() == devicearray::ComputeBackend::opencl) return d;
    std::fprintf(stderr, "fuzz: no OpenCL device (install PoCL)\n");
    std::abort();
  }();
  return device;
}

/// Bytes from the first element to one past the last of a validated layout,
/// computed here independently of the library.
inline std::uint64_t spanOf(const std::vector<int>& size, const std::vector<std::size_t>& step, std::size_t elem) {
  std::uint64_t extent = elem;
  for (std::size_t i = 0; i < size.size(); ++i)
    extent += static_cast<std::uint64_t>(step[i]) * static_cast<std::uint64_t>(size[i] - 1);
  return extent;
}

}  // namespace dafuzz
