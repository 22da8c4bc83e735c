// Shared test helpers: device parametrization and host-side reference data.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "devicearray/devicearray.hpp"

namespace datest {

/// Every device of every built backend (ComputeDevice::all()), so each
/// parametrized suite runs on CUDA and on every OpenCL platform present.
inline std::vector<devicearray::ComputeDevice> testDevices() {
  static const std::vector<devicearray::ComputeDevice> devices = devicearray::ComputeDevice::all();
  return devices;
}

/// gtest parameter name: "cuda0", "opencl1", ...
struct DeviceName {
  std::string operator()(const testing::TestParamInfo<devicearray::ComputeDevice>& info) const {
    const auto& d = info.param;
    return std::string(d.backend() == devicearray::ComputeBackend::cuda ? "cuda" : "opencl") +
           std::to_string(d.ordinal() < 0 ? 99 : d.ordinal());
  }
};

/// Base fixture of the suites parametrized over devices (DATEST_INSTANTIATE_OVER_DEVICES).
class DeviceTest : public testing::TestWithParam<devicearray::ComputeDevice> {
 protected:
  const devicearray::ComputeDevice& device() const { return GetParam(); }
  bool isCuda() const { return device().backend() == devicearray::ComputeBackend::cuda; }
};

/// The first CUDA device, or skips the test with a reason.
#define DATEST_REQUIRE_CUDA(var)                                                  \
  devicearray::ComputeDevice var;                                                 \
  {                                                                               \
    bool found_ = false;                                                          \
    for (const auto& d_ : datest::testDevices())                                  \
      if (d_.backend() == devicearray::ComputeBackend::cuda) { var = d_; found_ = true; break; } \
    if (!found_) GTEST_SKIP() << "no CUDA device on this machine (CUDA tests run on the GPU machine)"; \
  }

/// Deterministic pseudo-random bytes (never all zeros).
inline std::vector<std::uint8_t> randomBytes(std::size_t n, std::uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<std::uint8_t> v(n);
  for (auto& b : v) b = static_cast<std::uint8_t>(rng() & 0xFF);
  return v;
}

/// Expects `fn()` to throw devicearray::Error with `code`.
template <class Fn>
void expectError(devicearray::ErrorCode code, Fn&& fn, const char* what = "") {
  try {
    fn();
    ADD_FAILURE() << "expected devicearray::Error(" << devicearray::toString(code) << ") " << what;
  } catch (const devicearray::Error& e) {
    EXPECT_EQ(e.code(), code) << "message: " << e.what() << " " << what;
    EXPECT_NE(std::string(e.what()).size(), 0u);
  }
}

// ---- Layout helpers for the Foundation suites (HostMat / GpuMatND / GpuMat) ----

/// Calls fn(idx) for every index of `shape`, row-major (last axis fastest).
template <class Fn>
void forEachIndex(const std::vector<int>& shape, Fn&& fn) {
  std::vector<int> idx(shape.size(), 0);
  for (int s : shape)
    if (s <= 0) return;
  while (true) {
    fn(static_cast<const std::vector<int>&>(idx));
    int axis = static_cast<int>(shape.size()) - 1;
    while (axis >= 0 && ++idx[static_cast<std::size_t>(axis)] == shape[static_cast<std::size_t>(axis)]) {
      idx[static_cast<std::size_t>(axis)] = 0;
      --axis;
    }
    if (axis < 0) return;
  }
}

/// Byte offset of element `idx` under `step`, computed here rather than by the library.
inline std::size_t byteOffset(const std::vector<int>& idx, const std::vector<std::size_t>& step) {
  std::size_t off = 0;
  for (std::size_t i = 0; i < idx.size(); ++i) off += static_cast<std::size_t>(idx[i]) * step[i];
  return off;
}

/// Row-major packed steps of `shape` (computed by hand, independent of the library).
inline std::vector<std::size_t> packedSteps(const std::vector<int>& shape, std::size_t elemSize) {
  std::vector<std::size_t> step(shape.size());
  std::size_t s = elemSize;
  for (std::size_t i = shape.size(); i-- > 0;) {
    step[i] = s;
    s *= static_cast<std::size_t>(shape[i]);
  }
  return step;
}

inline std::size_t product(const std::vector<int>& shape) {
  std::size_t n = 1;
  for (int s : shape) n *= static_cast<std::size_t>(s);
  return n;
}

/// Deterministic pseudo-random bytes, none of them zero (so a missed write to
/// zero-initialised memory is always visible).
inline std::vector<std::uint8_t> nonZeroBytes(std::size_t n, std::uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<std::uint8_t> v(n);
  for (auto& b : v) b = static_cast<std::uint8_t>(1 + rng() % 255);
  return v;
}

/// The elements of a (possibly non-continuous) HostMat, packed row-major.
inline std::vector<std::uint8_t> packedBytes(const devicearray::HostMat& m) {
  if (m.empty()) return {};  // no elements (and no data to read)
  const std::size_t es = m.elemSize();
  std::vector<std::uint8_t> out;
  out.reserve(product(m.size) * es);
  forEachIndex(m.size, [&](const std::vector<int>& idx) {
    const std::uint8_t* p = m.data() + byteOffset(idx, m.step);
    out.insert(out.end(), p, p + es);
  });
  return out;
}

/// Writes packed bytes into the elements of a (possibly non-continuous) HostMat.
inline void writePacked(const devicearray::HostMat& m, const std::vector<std::uint8_t>& packed) {
  if (m.empty()) return;
  const std::size_t es = m.elemSize();
  std::size_t pos = 0;
  forEachIndex(m.size, [&](const std::vector<int>& idx) {
    std::memcpy(m.data() + byteOffset(idx, m.step), packed.data() + pos, es);
    pos += es;
  });
}

/// A continuous HostMat filled with nonZeroBytes(seed).
inline devicearray::HostMat randomHostMat(const std::vector<int>& shape, int type, std::uint32_t seed) {
  devicearray::HostMat m(shape, type);
  writePacked(m, nonZeroBytes(product(shape) * m.elemSize(), seed));
  return m;
}

/// Packed bytes of the sub-array starting at `start` with extents `sub` of a
/// packed array of `shape` (the host reference for views).
inline std::vector<std::uint8_t> subArrayBytes(const std::vector<std::uint8_t>& packed, const std::vector<int>& shape,
                                               std::size_t elemSize, const std::vector<int>& start,
                                               const std::vector<int>& sub) {
  const auto step = packedSteps(shape, elemSize);
  std::vector<std::uint8_t> out;
  out.reserve(product(sub) * elemSize);
  std::vector<int> abs(shape.size());
  forEachIndex(sub, [&](const std::vector<int>& idx) {
    for (std::size_t i = 0; i < idx.size(); ++i) abs[i] = start[i] + idx[i];
    const std::uint8_t* p = packed.data() + byteOffset(abs, step);
    out.insert(out.end(), p, p + elemSize);
  });
  return out;
}

/// Equality of two byte buffers, naming the first differing element on failure.
inline testing::AssertionResult bytesEqual(const std::vector<std::uint8_t>& expected,
                                           const std::vector<std::uint8_t>& actual, std::size_t elemSize = 1) {
  if (expected.size() != actual.size())
    return testing::AssertionFailure() << "size " << actual.size() << " bytes, expected " << expected.size();
  for (std::size_t i = 0; i < expected.size(); ++i)
    if (expected[i] != actual[i])
      return testing::AssertionFailure() << "first difference at byte " << i << " (element " << i / elemSize
                                         << "): got " << int(actual[i]) << ", expected " << int(expected[i]);
  return testing::AssertionSuccess();
}

/// Blocking download of any GpuMatND into packed host bytes.
inline std::vector<std::uint8_t> downloadPacked(const devicearray::GpuMatND& g) {
  devicearray::HostMat h;
  g.download(h);
  return packedBytes(h);
}

/// Identity of an array's first byte on either backend: the CUDA device address,
/// or the cl_mem plus byte offset.
struct DeviceAddress {
  const void* base = nullptr;
  std::size_t offset = 0;
  friend bool operator==(const DeviceAddress& a, const DeviceAddress& b) {
    return a.base == b.base && a.offset == b.offset;
  }
  friend std::ostream& operator<<(std::ostream& os, const DeviceAddress& a) {
    return os << a.base << "+" << a.offset;
  }
};

inline DeviceAddress addressOf(const devicearray::GpuMatND& g) {
  if (g.backend() == devicearray::ComputeBackend::cuda) return {g.getDevicePtr(), 0};
  const auto b = g.getOpenCLBuffer();
  return {b.buffer, b.offset};
}

/// Every depth, for loops over element types.
inline const std::vector<devicearray::Depth>& allDepths() {
  using devicearray::Depth;
  static const std::vector<Depth> depths = {Depth::U8,  Depth::S8,  Depth::U16, Depth::S16,
                                            Depth::S32, Depth::F32, Depth::F64, Depth::F16};
  return depths;
}

}  // namespace datest

/// Instantiates a value-parametrized suite over every device; a machine with no
/// device at all reports the suite as skipped rather than failing to instantiate.
#define DATEST_INSTANTIATE_OVER_DEVICES(Suite) \
  GTEST_ALLOW_UNINSTANTIATED_PARAMETERIZED_TEST(Suite); \
  INSTANTIATE_TEST_SUITE_P(AllDevices, Suite, testing::ValuesIn(datest::testDevices()), datest::DeviceName())

namespace devicearray {
// gtest prints devices and error codes by name instead of as raw bytes.
inline void PrintTo(const ComputeDevice& device, std::ostream* os) { *os << device.toString(); }
inline void PrintTo(ErrorCode code, std::ostream* os) { *os << toString(code); }
}  // namespace devicearray
