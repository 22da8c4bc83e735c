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

}  // namespace datest

/// Instantiates a value-parametrized suite over every device; a machine with no
/// device at all reports the suite as skipped rather than failing to instantiate.
#define DATEST_INSTANTIATE_OVER_DEVICES(Suite) \
  GTEST_ALLOW_UNINSTANTIATED_PARAMETERIZED_TEST(Suite); \
  INSTANTIATE_TEST_SUITE_P(AllDevices, Suite, testing::ValuesIn(datest::testDevices()), datest::DeviceName())
