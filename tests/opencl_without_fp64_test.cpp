// OpenCL devices without double precision (cl_khr_fp64): many integrated and embedded
// GPUs. DEVICEARRAY_OPENCL_NO_FP64=1, set here before any device exists, makes the
// library treat every OpenCL device so: its program is built without DA_HAS_FP64 (no
// cl_khr_fp64 pragma, no double code) and the host refuses F64 depths. The tests check
// that the program builds and works, that the reductions (centroid) stay as exact as
// with double and that the device divides their sums as the host does.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <random>
#include <vector>

#include "devicearray/devicearray.hpp"
#include "test_support.hpp"

namespace {

// Runs before main(), so before the library enumerates its devices.
const int kForced = ::setenv("DEVICEARRAY_OPENCL_NO_FP64", "1", 1);

using devicearray::ComputeBackend;
using devicearray::ComputeDevice;
using devicearray::DeviceArray;
using devicearray::ErrorCode;
using devicearray::PointXYZ;
using devicearray::UnorganizedPointCloud;

std::vector<ComputeDevice> openclDevices() {
  std::vector<ComputeDevice> out;
  for (const auto& d : datest::testDevices())
    if (d.backend() == ComputeBackend::opencl) out.push_back(d);
  return out;
}

class WithoutFp64 : public testing::TestWithParam<ComputeDevice> {};

TEST_P(WithoutFp64, CentroidIsAsExactAsWithDouble) {
  ASSERT_EQ(kForced, 0);
  // 1,000,003 points far from the origin with small variations: float sums of chunks
  // of 256 would be off by units at 1e5; the pair sums keep about 48 bits.
  const std::size_t n = 1'000'003;
  std::vector<PointXYZ> points(n);
  long double sx = 0, sy = 0, sz = 0;
  for (std::size_t i = 0; i < n; ++i) {
    points[i] = {100000.0f + static_cast<float>(i % 1000) * 0.37f, -250.5f + static_cast<float>(i % 7),
                 static_cast<float>(i % 13) * 1.0e-3f};
    if (i % 101 == 0) points[i].y = NAN;  // missing points are not counted
  }
  std::size_t valid = 0;
  for (const auto& p : points) {
    if (std::isnan(p.y)) continue;
    sx += p.x;
    sy += p.y;
    sz += p.z;
    ++valid;
  }
  const UnorganizedPointCloud cloud(DeviceArray<PointXYZ>::fromHost(points.data(), n, GetParam()));
  const auto c = cloud.centroid();
  const double expected[3] = {static_cast<double>(sx / valid), static_cast<double>(sy / valid),
                              static_cast<double>(sz / valid)};
  for (int k = 0; k < 3; ++k) {
    const double ulp = std::nextafter(static_cast<float>(expected[k]), INFINITY) - static_cast<float>(expected[k]);
    EXPECT_NEAR(c[k], expected[k], 1.5 * ulp + 1e-12) << "axis " << k;
  }
}

TEST_P(WithoutFp64, DeviceCentroidDividesAsTheHostDoes) {
  // Sums exact in double (coordinates in quarters of a millimetre), so (float)(sum /
  // count) is the reference bit for bit: the device divides the binary64 sums with
  // integers, rounding twice as the host's double division and float conversion do.
  std::mt19937 rng(17);
  std::uniform_int_distribution<int> quarters(-4000000, 4000000);
  for (const std::size_t n : {3u, 7u, 11u, 641u, 30011u}) {
    std::vector<PointXYZ> points(n);
    double s[3] = {0, 0, 0};
    for (auto& p : points) {
      p = {quarters(rng) / 4.0f, quarters(rng) / 4.0f, quarters(rng) / 4.0f};
      s[0] += p.x;
      s[1] += p.y;
      s[2] += p.z;
    }
    const UnorganizedPointCloud cloud(DeviceArray<PointXYZ>::fromHost(points.data(), n, GetParam()));
    const std::vector<PointXYZ> c = cloud.deviceCentroid(GetParam().sdkStreamOrQueue()).toHost();
    ASSERT_EQ(c.size(), 1u);
    const float got[3] = {c[0].x, c[0].y, c[0].z};
    for (int k = 0; k < 3; ++k)
      EXPECT_EQ(got[k], static_cast<float>(s[k] / static_cast<double>(n))) << n << " points, axis " << k;
  }
  const std::vector<PointXYZ> missing(5, PointXYZ{NAN, 0, 0});
  const UnorganizedPointCloud none(DeviceArray<PointXYZ>::fromHost(missing.data(), missing.size(), GetParam()));
  EXPECT_TRUE(std::isnan(none.deviceCentroid(GetParam().sdkStreamOrQueue()).toHost().at(0).z));
}

TEST_P(WithoutFp64, DoubleDepthIsUnsupportedAndOtherDepthsConvert) {
  const ComputeDevice device = GetParam();
  std::vector<std::uint8_t> bytes(64);
  for (std::size_t i = 0; i < bytes.size(); ++i) bytes[i] = static_cast<std::uint8_t>(i * 7);
  devicearray::GpuMat src(8, 8, devicearray::makeType(devicearray::Depth::U8, 1), device);
  src.upload(devicearray::HostMat({8, 8}, devicearray::makeType(devicearray::Depth::U8, 1), bytes.data()));
  devicearray::GpuMat asDouble;
  datest::expectError(ErrorCode::Unsupported,
                      [&] { src.convertTo(asDouble, devicearray::makeType(devicearray::Depth::F64, 1)); });
  devicearray::GpuMat asFloat;
  src.convertTo(asFloat, devicearray::makeType(devicearray::Depth::F32, 1), 0.5, 1.0);
  devicearray::HostMat host;
  asFloat.download(host);
  for (int i = 0; i < 64; ++i)
    EXPECT_EQ(reinterpret_cast<const float*>(host.data())[i], 0.5f * static_cast<float>(bytes[i]) + 1.0f) << i;
}

INSTANTIATE_TEST_SUITE_P(OpenCL, WithoutFp64, testing::ValuesIn(openclDevices()), datest::DeviceName());
GTEST_ALLOW_UNINSTANTIATED_PARAMETERIZED_TEST(WithoutFp64);

}  // namespace
