// The frame chain downsample -> normals -> transform -> ROI -> unorganize -> centroid,
// centre and voxel enqueued on a stream without a host synchronization (the unorganized
// clouds' sizes, the centroid and the centring's translation are known after an event),
// on every device: the same points as the blocking chain, and on
// OpenCL, every call returns while the stream is held back by a user event the host
// completes only afterwards (a call that waited on the host would never return; a
// watchdog then opens the gate and the test fails instead of hanging). The CUDA
// counterpart, a gated kernel holding the stream back, is stream_frame_chain_cuda_test.cu.
#include <gtest/gtest.h>

#if defined(DEVICEARRAY_HAS_OPENCL)
#include <CL/cl.h>

#include "opencl_gate.hpp"
#endif

#include <chrono>
#include <thread>
#include <vector>

#include "devicearray/devicearray.hpp"
#include "stream_frame_chain.hpp"
#include "test_support.hpp"

namespace {

using namespace devicearray;
using namespace datest::chain;

class StreamFrameChain : public testing::TestWithParam<ComputeDevice> {};

TEST_P(StreamFrameChain, GivesTheBlockingChainsPoints) {
  const ComputeDevice d = GetParam();
  const PointCloud uploaded = PointCloud::fromHost(frame(), d);
  const ChainResult want = blockingChain(uploaded);
  Stream stream(d);
  const ChainResult got = streamChain(uploaded, stream);
  EXPECT_FALSE(got.voxels.isSizeKnown());
  EXPECT_FALSE(got.centred.isSizeKnown());
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
  const UnorganizedPointCloud cloned = uploaded.toUnorganizedPointCloud(stream).clone(d);
  EXPECT_EQ(cloned.size(), want.size());
  expectSameBytes(cloned.storedXYZ(), uploaded.toUnorganizedPointCloud().storedXYZ(), "clone");
}

TEST_P(StreamFrameChain, ThreadsMayReadOneCloudsCountTogether) {
  const ComputeDevice d = GetParam();
  const PointCloud uploaded = PointCloud::fromHost(frame(), d);
  const std::size_t want = uploaded.toUnorganizedPointCloud().size();
  Stream stream(d);
  const UnorganizedPointCloud pending = uploaded.toUnorganizedPointCloud(stream);
  std::vector<std::size_t> sizes(4, 0);
  std::vector<std::thread> threads;
  for (std::size_t i = 0; i < sizes.size(); ++i)
    threads.emplace_back([&, i] { sizes[i] = i % 2 == 0 ? pending.size() : pending.storedXYZ().size(); });
  for (std::thread& t : threads) t.join();
  for (const std::size_t n : sizes) EXPECT_EQ(n, want);
  EXPECT_TRUE(pending.isSizeKnown());
}

TEST_P(StreamFrameChain, RereadReadsTheCountAndTheTranslationAgain) {
  const ComputeDevice d = GetParam();
  const PointCloud uploaded = PointCloud::fromHost(frame(), d);
  const UnorganizedPointCloud want = uploaded.toUnorganizedPointCloud();
  Stream stream(d);
  UnorganizedPointCloud pending = uploaded.toUnorganizedPointCloud(stream);
  pending.center(stream);
  const Matrix4x4 matrix = pending.transformationMatrix();  // reads the centroid
  EXPECT_EQ(pending.size(), want.size());                   // reads the count
  EXPECT_TRUE(pending.isSizeKnown());
  const UnorganizedPointCloud again = pending.reread();
  EXPECT_FALSE(again.isSizeKnown()) << "reread() shares what the cloud has read";
  EXPECT_TRUE(pending.isSizeKnown());
  EXPECT_EQ(again.transformationMatrix(), matrix);
  EXPECT_EQ(again.size(), want.size());
  expectSameBytes(again.storedXYZ(), pending.storedXYZ(), "reread points");
  // A device-side error is read again with the count.
  const UnorganizedPointCloud voxels = want.voxelDownsampled(1e-6f, 1, stream);
  datest::expectError(ErrorCode::InvalidArgument, [&] { (void)voxels.size(); });
  datest::expectError(ErrorCode::InvalidArgument, [&] { (void)voxels.reread().size(); });
  // A cloud whose size was known from the start stays so.
  EXPECT_TRUE(want.reread().isSizeKnown());
  EXPECT_EQ(want.reread().size(), want.size());
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

TEST_P(StreamFrameChain, EnqueuesWithoutAHostSynchronization) {
  const ComputeDevice d = GetParam();
  if (d.backend() != ComputeBackend::opencl) GTEST_SKIP() << "the OpenCL gate; stream_frame_chain_cuda_test gates CUDA";
  const PointCloud uploaded = PointCloud::fromHost(frame(), d);
  const ChainResult want = blockingChain(uploaded);
  Stream stream(d);
  ChainResult got;
  {
    const auto queue = static_cast<cl_command_queue>(stream.handle().native());
    cl_context context = nullptr;
    ASSERT_EQ(clGetCommandQueueInfo(queue, CL_QUEUE_CONTEXT, sizeof context, &context, nullptr), CL_SUCCESS);
    datest::ordering::Gate gate(context, std::chrono::seconds(20));
    const cl_event held = gate.event();
    ASSERT_NE(held, nullptr);
    ASSERT_EQ(clEnqueueBarrierWithWaitList(queue, 1, &held, nullptr), CL_SUCCESS);
    got = streamChain(uploaded, stream);
    EXPECT_FALSE(got.points.isSizeKnown());
    EXPECT_FALSE(got.centred.isSizeKnown());
    EXPECT_FALSE(got.voxels.isSizeKnown());
    EXPECT_TRUE(gate.open()) << "a call of the chain waited on the host for the held-back stream";
  }
  expectSameChain(got, want);
}
#endif

DATEST_INSTANTIATE_OVER_DEVICES(StreamFrameChain);

}  // namespace
