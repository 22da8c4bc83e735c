// The frame chain downsample -> normals -> transform -> ROI -> unorganize -> voxel
// enqueued on a stream without a host synchronization (the unorganized clouds' sizes are
// known after an event), on every device: the same points as the blocking chain, and on
// OpenCL, every call returns while the stream is held back by a user event the host
// completes only afterwards (a call that waited on the host would never return; a
// watchdog then opens the gate and the test fails instead of hanging). The CUDA
// counterpart, a CUDA graph captured from the chain, is in stream_frame_chain_cuda_test.cu.
#include <gtest/gtest.h>

#if defined(DEVICEARRAY_HAS_OPENCL)
#include <CL/cl.h>
#endif

#include <chrono>
#include <cstring>
#include <random>
#include <vector>

#include "devicearray/devicearray.hpp"
#include "ordering_support.hpp"
#include "test_support.hpp"

namespace {

using namespace devicearray;

constexpr int kHeight = 96;
constexpr int kWidth = 128;

/// A noisy tilted plane with holes, colours and SNR.
HostPointCloud frame() {
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> noise(-2.f, 2.f), u(0.f, 1.f), snr(0.5f, 10.f);
  HostPointCloud c;
  c.height = kHeight;
  c.width = kWidth;
  for (int r = 0; r < kHeight; ++r)
    for (int col = 0; col < kWidth; ++col) {
      const bool hole = u(rng) < 0.1f;
      const float nan = std::numeric_limits<float>::quiet_NaN();
      c.xyz.insert(c.xyz.end(), {hole ? nan : (col - kWidth / 2) * 4.f, hole ? nan : (r - kHeight / 2) * 4.f,
                                 hole ? nan : 800.f + 0.5f * col + noise(rng)});
      c.rgba.insert(c.rgba.end(), {std::uint8_t(rng()), std::uint8_t(rng()), std::uint8_t(rng()), 255});
      c.snr.push_back(snr(rng));
    }
  return c;
}

Matrix4x4 pose() { return {0.8f, -0.6f, 0, 10, 0.6f, 0.8f, 0, -20, 0, 0, 1, 5, 0, 0, 0, 1}; }

RegionOfInterestBox box() {
  RegionOfInterestBox b;
  b.origin = {-150, -150, 0};
  b.pointA = {150, -150, 0};
  b.pointB = {-150, 150, 0};
  b.minExtent = -2000;
  b.maxExtent = 2000;
  return b;
}

struct ChainResult {
  UnorganizedPointCloud points;  // unorganized
  UnorganizedPointCloud voxels;  // voxelDownsampled
  DeviceArray<NormalXYZ> normals;
};

ChainResult blockingChain(const PointCloud& uploaded) {
  ChainResult r;
  PointCloud cloud = uploaded.downsampled(Downsampling::by2x2);
  r.normals = cloud.deviceNormalsXYZ(cloud.device().sdkStreamOrQueue());
  synchronizeStream(cloud.device().sdkStreamOrQueue());
  cloud.transform(pose());
  cloud.maskByRegionOfInterest(box());
  r.points = cloud.toUnorganizedPointCloud();
  r.voxels = r.points.voxelDownsampled(12.f, 2);
  return r;
}

ChainResult streamChain(const PointCloud& uploaded, StreamOrQueue sq) {
  ChainResult r;
  PointCloud cloud = uploaded.downsampled(Downsampling::by2x2, sq);
  r.normals = cloud.deviceNormalsXYZ(sq);
  cloud.transform(pose(), sq);
  cloud.maskByRegionOfInterest(box(), sq);
  r.points = cloud.toUnorganizedPointCloud(sq);
  r.voxels = r.points.voxelDownsampled(12.f, 2, sq);
  return r;
}

template <class F>
void expectSameBytes(const DeviceArray<F>& got, const DeviceArray<F>& want, const char* what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  if (want.isEmpty()) return;
  const std::vector<F> g = got.toHost(), w = want.toHost();
  EXPECT_EQ(std::memcmp(g.data(), w.data(), g.size() * sizeof(F)), 0) << what;
}

void expectSameCloud(const UnorganizedPointCloud& got, const UnorganizedPointCloud& want, const char* what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  ASSERT_GT(want.size(), 0u) << what;
  EXPECT_TRUE(got.isSizeKnown());
  expectSameBytes(got.storedXYZ(), want.storedXYZ(), what);
  expectSameBytes(got.storedColors(), want.storedColors(), what);
  expectSameBytes(got.storedSNRs(), want.storedSNRs(), what);
  EXPECT_EQ(got.transformationMatrix(), want.transformationMatrix()) << what;
}

void expectSameChain(const ChainResult& got, const ChainResult& want) {
  expectSameCloud(got.points, want.points, "unorganized");
  expectSameCloud(got.voxels, want.voxels, "voxels");
  expectSameBytes(got.normals, want.normals, "normals");
}

class StreamFrameChain : public testing::TestWithParam<ComputeDevice> {};

TEST_P(StreamFrameChain, GivesTheBlockingChainsPoints) {
  const ComputeDevice d = GetParam();
  const PointCloud uploaded = PointCloud::fromHost(frame(), d);
  const ChainResult want = blockingChain(uploaded);
  Stream stream(d);
  const ChainResult got = streamChain(uploaded, stream);
  EXPECT_FALSE(got.voxels.isSizeKnown());
  expectSameChain(got, want);
}

TEST_P(StreamFrameChain, TransformAndCopiesOfAPendingCloudKeepItsCount) {
  const ComputeDevice d = GetParam();
  const PointCloud uploaded = PointCloud::fromHost(frame(), d);
  const UnorganizedPointCloud want = uploaded.toUnorganizedPointCloud().transformed(pose());
  Stream stream(d);
  const UnorganizedPointCloud pending = uploaded.toUnorganizedPointCloud(stream);
  const UnorganizedPointCloud copy = pending;  // resolves on its own, from the shared count
  UnorganizedPointCloud moved = pending.transformed(pose(), stream);
  EXPECT_FALSE(moved.isSizeKnown());
  expectSameCloud(moved, want, "transformed");
  EXPECT_EQ(copy.size(), pending.size());
  EXPECT_EQ(copy.size(), want.size());
}

TEST_P(StreamFrameChain, ATooSmallVoxelIsReportedWhenTheCountIsRead) {
  const ComputeDevice d = GetParam();
  const PointCloud uploaded = PointCloud::fromHost(frame(), d);
  Stream stream(d);
  const UnorganizedPointCloud voxels = uploaded.toUnorganizedPointCloud(stream).voxelDownsampled(1e-6f, 1, stream);
  datest::expectError(ErrorCode::InvalidArgument, [&] { (void)voxels.size(); });
  EXPECT_THROW((void)uploaded.toUnorganizedPointCloud().voxelDownsampled(1e-6f, 1), Error);
}

#if defined(DEVICEARRAY_HAS_OPENCL)
/// Holds an OpenCL queue back until the host completes a user event (see GateWatchdog).
class QueueGate {
 public:
  QueueGate(cl_command_queue q, std::chrono::seconds limit) {
    cl_context context = nullptr;
    clGetCommandQueueInfo(q, CL_QUEUE_CONTEXT, sizeof context, &context, nullptr);
    cl_int err = CL_SUCCESS;
    event_ = clCreateUserEvent(context, &err);
    if (err != CL_SUCCESS) event_ = nullptr;
    if (event_ != nullptr) clEnqueueBarrierWithWaitList(q, 1, &event_, nullptr);
    watchdog_.start(limit, [this] {
      if (event_ != nullptr) clSetUserEventStatus(event_, CL_COMPLETE);
    });
  }
  QueueGate(const QueueGate&) = delete;
  QueueGate& operator=(const QueueGate&) = delete;
  ~QueueGate() {
    watchdog_.stop();
    if (event_ != nullptr) clReleaseEvent(event_);
  }
  bool valid() const { return event_ != nullptr; }
  bool open() { return watchdog_.open(); }

 private:
  cl_event event_ = nullptr;
  datest::ordering::GateWatchdog watchdog_;
};

TEST_P(StreamFrameChain, EnqueuesWithoutAHostSynchronization) {
  const ComputeDevice d = GetParam();
  if (d.backend() != ComputeBackend::opencl) GTEST_SKIP() << "the OpenCL user-event gate; CUDA has the graph test";
  const PointCloud uploaded = PointCloud::fromHost(frame(), d);
  const ChainResult want = blockingChain(uploaded);
  Stream stream(d);
  ChainResult got;
  {
    QueueGate gate(static_cast<cl_command_queue>(stream.handle().native()), std::chrono::seconds(20));
    ASSERT_TRUE(gate.valid());
    got = streamChain(uploaded, stream);
    EXPECT_FALSE(got.points.isSizeKnown());
    EXPECT_FALSE(got.voxels.isSizeKnown());
    EXPECT_TRUE(gate.open()) << "a call of the chain waited on the host for the held-back stream";
  }
  expectSameChain(got, want);
}
#endif

DATEST_INSTANTIATE_OVER_DEVICES(StreamFrameChain);

}  // namespace
