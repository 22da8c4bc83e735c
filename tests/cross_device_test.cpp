// Arrays and point clouds copied between two devices of one process: every pair of
// distinct devices of ComputeDevice::all() (CUDA peers, CUDA <-> OpenCL), and each
// OpenCL device with a second context of its own (ComputeDevice::fromOpenCL), which
// is how one OpenCL device looks like two: their memory cannot be shared, so the copy
// is staged through the host.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "cl_api.hpp"
#include "test_support.hpp"

namespace {

using namespace devicearray;
using datest::byteOffset;
using datest::forEachIndex;

/// A second OpenCL context and queue on the device of `device`, adopted as a
/// ComputeDevice of its own (the adopted device retains both).
ComputeDevice secondContextOf(const ComputeDevice& device) {
  const backendtest::ClApi* cl = backendtest::ClApi::get();
  if (cl == nullptr) return {};
  auto clDevice = static_cast<cl_device_id>(device.nativeDevice());
  cl_platform_id platform = nullptr;
  if (cl->getDeviceInfo(clDevice, CL_DEVICE_PLATFORM, sizeof platform, &platform, nullptr) != CL_SUCCESS) return {};
  const cl_context_properties props[] = {CL_CONTEXT_PLATFORM, reinterpret_cast<cl_context_properties>(platform), 0};
  cl_int err = CL_SUCCESS;
  cl_context context = cl->createContext(props, 1, &clDevice, nullptr, nullptr, &err);
  if (err != CL_SUCCESS) return {};
  cl_command_queue queue = cl->createCommandQueue(context, clDevice, CL_QUEUE_PROFILING_ENABLE, &err);
  ComputeDevice adopted;
  if (err == CL_SUCCESS) adopted = ComputeDevice::fromOpenCL(context, clDevice, queue);
  if (queue != nullptr) cl->releaseCommandQueue(queue);
  cl->releaseContext(context);
  return adopted;
}

struct DevicePair {
  ComputeDevice from;
  ComputeDevice to;
  std::string name;
};

std::string nameOf(const ComputeDevice& d) {
  return std::string(d.backend() == ComputeBackend::cuda ? "cuda" : "opencl") +
         (d.ordinal() < 0 ? std::string("_adopted") : std::to_string(d.ordinal()));
}

std::vector<DevicePair> devicePairs() {
  static const std::vector<DevicePair> pairs = [] {
    std::vector<DevicePair> out;
    const auto devices = datest::testDevices();
    for (const auto& a : devices)
      for (const auto& b : devices)
        if (a != b) out.push_back({a, b, nameOf(a) + "_to_" + nameOf(b)});
    for (const auto& d : devices) {
      if (d.backend() != ComputeBackend::opencl) continue;
      const ComputeDevice twin = secondContextOf(d);
      if (!twin.isValid()) continue;
      out.push_back({d, twin, nameOf(d) + "_to_second_context"});
      out.push_back({twin, d, "second_context_to_" + nameOf(d)});
    }
    return out;
  }();
  return pairs;
}

class CrossDevice : public testing::TestWithParam<DevicePair> {
 protected:
  const ComputeDevice& from() const { return GetParam().from; }
  const ComputeDevice& to() const { return GetParam().to; }
};

/// A continuous host array of `size` x `type` filled with distinct bytes.
HostMat patterned(const std::vector<int>& size, int type, std::uint32_t seed) {
  HostMat h(size, type);
  const auto bytes = datest::randomBytes(h.total() * h.elemSize(), seed);
  std::memcpy(h.data(), bytes.data(), bytes.size());
  return h;
}

/// Expects the elements of `got` (any layout) to equal those of `want` starting at
/// `origin` (one index per axis).
void expectRegion(const HostMat& got, const HostMat& want, const std::vector<int>& origin) {
  const std::size_t es = got.elemSize();
  int mismatches = 0;
  forEachIndex(got.size, [&](const std::vector<int>& idx) {
    std::vector<int> at = idx;
    for (std::size_t i = 0; i < at.size(); ++i) at[i] += origin[i];
    const auto* g = static_cast<const unsigned char*>(got.data()) + byteOffset(idx, got.step);
    const auto* w = static_cast<const unsigned char*>(want.data()) + byteOffset(at, want.step);
    if (std::memcmp(g, w, es) != 0) ++mismatches;
  });
  EXPECT_EQ(mismatches, 0);
}

TEST_P(CrossDevice, CloneOfAStridedViewIsContinuousOnTheOtherDevice) {
  const int type = makeType(Depth::F32, 3);
  const HostMat host = patterned({4, 5, 6, 3}, type, 11);
  GpuMatND src({4, 5, 6, 3}, type, from());
  src.upload(host);
  const GpuMatND view = src({Range(1, 4), Range(0, 5), Range(2, 5), Range(1, 3)});
  ASSERT_FALSE(view.isContinuous());

  const GpuMatND copy = view.clone(to());
  EXPECT_EQ(copy.device(), to());
  EXPECT_TRUE(copy.isContinuous());
  EXPECT_EQ(copy.size, view.size);
  EXPECT_EQ(copy.type(), type);
  HostMat back;
  copy.download(back);
  expectRegion(back, host, {1, 0, 2, 1});
}

TEST_P(CrossDevice, CopyToWritesAStridedDestinationInPlace) {
  const int type = makeType(Depth::U8, 3);
  const HostMat srcHost = patterned({3, 7, 9}, type, 21);
  const HostMat dstHost = patterned({5, 8, 10}, type, 22);
  GpuMatND src({3, 7, 9}, type, from());
  src.upload(srcHost);
  GpuMatND dst({5, 8, 10}, type, to());
  dst.upload(dstHost);

  GpuMatND target = dst({Range(2, 5), Range(1, 8), Range(0, 9)});
  src.copyTo(target);
  EXPECT_EQ(target.device(), to());
  HostMat back;
  dst.download(back);
  // The view holds the source; everything around it is as it was.
  expectRegion(back({Range(2, 5), Range(1, 8), Range(0, 9)}), srcHost, {0, 0, 0});
  expectRegion(back({Range(0, 2), Range::all(), Range::all()}), dstHost, {0, 0, 0});
  expectRegion(back({Range(2, 5), Range(0, 1), Range::all()}), dstHost, {2, 0, 0});
  expectRegion(back({Range(2, 5), Range(1, 8), Range(9, 10)}), dstHost, {2, 1, 9});
}

TEST_P(CrossDevice, EnqueuedCopyIsOrderedAfterEnqueuedWorkOnBothDevices) {
  const int type = makeType(Depth::F32, 1);
  const HostMat first = patterned({64, 33, 17}, type, 31);
  const HostMat second = patterned({64, 33, 17}, type, 32);
  Stream onSource(from());
  Stream onDestination(to());
  GpuMatND src({64, 33, 17}, type, from());
  src.upload(first, onSource);  // still in flight when the copy is enqueued
  GpuMatND dst({64, 33, 17}, type, to());
  dst.upload(second, onDestination);

  GpuMatND copied;
  src({Range::all(), Range(1, 33), Range::all()}).copyTo(copied, onDestination);
  src.copyTo(dst, onDestination);  // in place, after the upload of `second`
  onDestination.waitForCompletion();
  EXPECT_EQ(copied.device(), to());
  HostMat back;
  copied.download(back);
  expectRegion(back, first, {0, 1, 0});
  dst.download(back);
  expectRegion(back, first, {0, 0, 0});
}

TEST_P(CrossDevice, DeviceArraysAndPointCloudsClone) {
  const int h = 6, w = 7;
  std::vector<PointXYZ> xyz(static_cast<std::size_t>(h * w));
  std::vector<ColorRGBA> colors(xyz.size());
  std::vector<SNR> snrs(xyz.size());
  for (std::size_t i = 0; i < xyz.size(); ++i) {
    const float f = static_cast<float>(i);
    xyz[i] = {f, 2 * f, 1000 + f};
    colors[i] = {static_cast<std::uint8_t>(i), static_cast<std::uint8_t>(3 * i), 7, 255};
    snrs[i] = {f / 2};
  }
  xyz[5] = {NAN, NAN, NAN};

  const auto organized = DeviceArray<PointXYZ>::fromHost(xyz.data(), h, w, from());
  const auto copy = organized.clone(to());
  EXPECT_EQ(copy.device(), to());
  EXPECT_TRUE(copy.isOrganized());
  EXPECT_EQ(copy.shape(), organized.shape());
  const auto got = copy.toHost();
  EXPECT_EQ(std::memcmp(got.data(), xyz.data(), xyz.size() * sizeof(PointXYZ)), 0);
  const auto list = DeviceArray<SNR>::fromHost(snrs.data(), snrs.size(), from()).clone(to());
  EXPECT_FALSE(list.isOrganized());
  EXPECT_EQ(std::memcmp(list.toHost().data(), snrs.data(), snrs.size() * sizeof(SNR)), 0);
  EXPECT_TRUE(DeviceArray<SNR>().clone(to()).isEmpty());

  PointCloud cloud = PointCloud::fromHost(h, w, xyz.data(), colors.data(), snrs.data(), from());
  cloud.transform({1, 0, 0, 5, 0, 1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1});
  const PointCloud moved = cloud.clone(to());
  EXPECT_EQ(moved.device(), to());
  EXPECT_EQ(moved.transformationMatrix(), cloud.transformationMatrix());
  const HostPointCloud a = cloud.toHost(), b = moved.toHost();
  ASSERT_EQ(a.xyz.size(), b.xyz.size());
  EXPECT_EQ(std::memcmp(a.xyz.data(), b.xyz.data(), a.xyz.size() * sizeof(float)), 0);
  EXPECT_EQ(a.rgba, b.rgba);
  ASSERT_EQ(a.snr.size(), b.snr.size());
  EXPECT_EQ(std::memcmp(a.snr.data(), b.snr.data(), a.snr.size() * sizeof(float)), 0);

  const UnorganizedPointCloud points = cloud.toUnorganizedPointCloud();
  const UnorganizedPointCloud pointsThere = points.clone(to());
  EXPECT_EQ(pointsThere.device(), to());
  EXPECT_EQ(pointsThere.size(), points.size());
  EXPECT_EQ(pointsThere.transformationMatrix(), points.transformationMatrix());
  const HostPointCloud c = points.toHost(), d = pointsThere.toHost();
  ASSERT_EQ(c.xyz.size(), d.xyz.size());
  EXPECT_EQ(std::memcmp(c.xyz.data(), d.xyz.data(), c.xyz.size() * sizeof(float)), 0);

  const auto none = UnorganizedPointCloud::fromParts(from(), {}, {}, {}, identityMatrix4x4()).clone(to());
  EXPECT_EQ(none.size(), 0u);
  EXPECT_EQ(none.device(), to());
}

TEST_P(CrossDevice, RefusesEmptySourcesAndInvalidDevices) {
  datest::expectError(ErrorCode::InvalidState, [&] { (void)GpuMatND().clone(to()); });
  datest::expectError(ErrorCode::InvalidState, [&] { (void)PointCloud().clone(to()); });
  GpuMatND src({4, 4}, makeType(Depth::U8, 1), from());
  datest::expectError(ErrorCode::InvalidArgument, [&] { (void)src.clone(ComputeDevice()); });
  Stream onDestination(to());
  datest::expectError(ErrorCode::InvalidArgument, [&] {
    GpuMatND sameSize({4, 4}, makeType(Depth::U8, 1), from());
    src.copyTo(sameSize, onDestination);  // in place needs a stream of the destination's device
  });
}

GTEST_ALLOW_UNINSTANTIATED_PARAMETERIZED_TEST(CrossDevice);
INSTANTIATE_TEST_SUITE_P(Pairs, CrossDevice, testing::ValuesIn(devicePairs()),
                         [](const testing::TestParamInfo<DevicePair>& info) { return info.param.name; });

}  // namespace
