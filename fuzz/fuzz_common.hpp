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
#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include <unistd.h>

#include "devicearray/devicearray.hpp"
#include "devicearray/io.hpp"

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

/// A per-process file on tmpfs (/dev/shm, or $DAFUZZ_TMPDIR) for the file-reader
/// targets: the readers take paths, so each input is written to a file first.
inline std::string tempPath(const char* tag, const char* extension) {
  const char* dir = std::getenv("DAFUZZ_TMPDIR");
  return std::string(dir != nullptr ? dir : "/dev/shm") + "/devicearray-fuzz-" + tag + "-" +
         std::to_string(static_cast<long>(getpid())) + extension;
}

/// Writes the fuzz input to `path`.
inline void writeInput(const std::string& path, const std::uint8_t* data, std::size_t size) {
  std::FILE* f = std::fopen(path.c_str(), "wb");
  if (f == nullptr) invariantBroken("cannot create the temporary input file (set DAFUZZ_TMPDIR)");
  if (size > 0 && std::fwrite(data, 1, size, f) != size) invariantBroken("short write to tmpfs");
  std::fclose(f);
}

template <class T>
bool sameBits(const std::vector<T>& a, const std::vector<T>& b) {
  return a.size() == b.size() && (a.empty() || std::memcmp(a.data(), b.data(), a.size() * sizeof(T)) == 0);
}

/// Same bits, except that any NaN matches any NaN (text formats write every NaN as
/// "nan": its sign and payload carry no meaning in a cloud).
inline bool sameFloats(const std::vector<float>& a, const std::vector<float>& b) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i)
    if (std::isnan(a[i]) ? !std::isnan(b[i]) : std::memcmp(&a[i], &b[i], sizeof(float)) != 0) return false;
  return true;
}

/// What every accepted cloud must be: valid, and each point finite or missing (NaN in
/// x, y and z; never inf).
inline void checkReadCloud(const devicearray::HostPointCloud& cloud) {
  cloud.validate();  // throws (uncaught: a finding) if the reader produced an invalid cloud
  for (std::size_t i = 0; i < cloud.size(); ++i)
    DAFUZZ_CHECK(cloud.isValid(i) || (std::isnan(cloud.xyz[3 * i]) && std::isnan(cloud.xyz[3 * i + 1]) &&
                                      std::isnan(cloud.xyz[3 * i + 2])));
}

/// Read options that keep the narrowing warning off stderr.
inline devicearray::PointCloudReadOptions quietReadOptions() {
  devicearray::PointCloudReadOptions options;
  options.warning = [](const std::string&) {};
  return options;
}

/// `back` (a written and re-read `cloud`) holds the same cloud bit for bit (NaN as NaN).
inline void checkSameCloud(const devicearray::HostPointCloud& cloud, const devicearray::HostPointCloud& back) {
  DAFUZZ_CHECK(back.height == cloud.height && back.width == cloud.width);
  DAFUZZ_CHECK(sameFloats(back.xyz, cloud.xyz));
  DAFUZZ_CHECK(sameBits(back.rgba, cloud.rgba));
  DAFUZZ_CHECK(sameFloats(back.snr, cloud.snr));
  DAFUZZ_CHECK(sameFloats(back.normals, cloud.normals));
}

/// The body of a file-reader target: the input is written to the file `in` and read
/// with `read` (an Error is a fine answer); an accepted cloud must pass
/// checkReadCloud() and, when it has points, `roundTrip(cloud)`.
template <class Read, class RoundTrip>
int fuzzFileReader(const std::uint8_t* data, std::size_t size, const std::string& in, Read&& read,
                   RoundTrip&& roundTrip) {
  writeInput(in, data, size);
  devicearray::HostPointCloud cloud;
  try {
    cloud = read(in);
  } catch (const devicearray::Error&) {
    return 0;
  }
  checkReadCloud(cloud);
  if (cloud.size() > 0) roundTrip(cloud);
  return 0;
}

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
