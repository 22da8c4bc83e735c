// The frame chain of stream_frame_chain.hpp captured into a CUDA graph: in each
// capture mode the capture must succeed, a launch must produce the blocking chain's
// results, later launches must recompute from the input's memory, and the memory the
// graph held must be released once the graph is destroyed.
#include <cuda_runtime.h>

#include <gtest/gtest.h>

#include <chrono>
#include <string>
#include <thread>

#include "backend/fault_injection.hpp"
#include "cuda_gate.cuh"
#include "devicearray/devicearray.hpp"
#include "stream_frame_chain.hpp"
#include "test_support.hpp"

namespace {

using namespace devicearray;
using namespace datest::chain;

/// A stream of its own, destroyed with the fixture.
class GraphCaptureCuda : public ::testing::TestWithParam<cudaStreamCaptureMode> {
 protected:
  void SetUp() override {
    DATEST_REQUIRE_CUDA(cuda);
    device_ = cuda;
    CUDA_OK(cudaSetDevice(device_.ordinal()));
    CUDA_OK(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking));
  }
  void TearDown() override {
    if (exec_ != nullptr) EXPECT_EQ(cudaGraphExecDestroy(exec_), cudaSuccess);
    if (graph_ != nullptr) EXPECT_EQ(cudaGraphDestroy(graph_), cudaSuccess);
    if (stream_ != nullptr) EXPECT_EQ(cudaStreamDestroy(stream_), cudaSuccess);
  }
  /// Ends the capture and instantiates its graph.
  void instantiate() {
    CUDA_OK(cudaStreamEndCapture(stream_, &graph_));
    CUDA_OK(cudaGraphInstantiate(&exec_, graph_, 0));
  }
  void launchAndWait() {
    CUDA_OK(cudaGraphLaunch(exec_, stream_));
    CUDA_OK(cudaStreamSynchronize(stream_));
  }
  /// Destroys the graph, then expects the allocations it held to go: CUDA drops the
  /// graph's hold on a thread of its own, soon after, and the next library call
  /// (`transformed` of `any`) releases them, back to `liveBefore` allocations.
  void destroyGraphAndExpectItsMemoryReleased(std::int64_t liveBefore, const PointCloud& any) {
    CUDA_OK(cudaGraphExecDestroy(exec_));
    exec_ = nullptr;
    CUDA_OK(cudaGraphDestroy(graph_));
    graph_ = nullptr;
    EXPECT_GT(devicearray::detail::liveAllocations(), liveBefore) << "the graph's memory went before the graph";
    for (int attempt = 0; attempt < 200 && devicearray::detail::liveAllocations() > liveBefore; ++attempt) {
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
      (void)any.transformed(pose(), CUDAStreamPtr{stream_});
    }
    CUDA_OK(cudaStreamSynchronize(stream_));
    EXPECT_EQ(devicearray::detail::liveAllocations(), liveBefore) << "memory the destroyed graph held was not released";
  }

  ComputeDevice device_;
  cudaStream_t stream_ = nullptr;
  cudaGraph_t graph_ = nullptr;
  cudaGraphExec_t exec_ = nullptr;
};

TEST_P(GraphCaptureCuda, LaunchesGiveTheBlockingChainsResults) {
  const PointCloud uploaded = PointCloud::fromHost(frame(), device_);
  const ChainResult want = blockingChain(uploaded);
  const std::int64_t liveBefore = devicearray::detail::liveAllocations();

  ChainResult got;
  CUDA_OK(cudaStreamBeginCapture(stream_, GetParam()));
  try {
    got = streamChain(uploaded, CUDAStreamPtr{stream_});
  } catch (const Error& e) {
    cudaGraph_t broken = nullptr;
    (void)cudaStreamEndCapture(stream_, &broken);
    if (broken != nullptr) (void)cudaGraphDestroy(broken);
    FAIL() << "a call of the chain could not be captured: " << e.what();
  }
  EXPECT_FALSE(got.points.isSizeKnown());
  EXPECT_FALSE(got.voxels.isSizeKnown());
  instantiate();
  // Nothing ran yet: the captured calls only built the graph.
  EXPECT_EQ(cudaStreamQuery(stream_), cudaSuccess);

  launchAndWait();
  expectSameChain(got, want);
  // Two more launches over the same input rewrite the same results.
  launchAndWait();
  launchAndWait();
  expectSameBytes(got.normals, want.normals, "normals after three launches");
  expectSameCloud(got.points, want.points, "unorganized after three launches");

  // The graph holds what it uses until it is destroyed, whenever the handles go.
  got = ChainResult();
  destroyGraphAndExpectItsMemoryReleased(liveBefore, uploaded);
}

TEST_P(GraphCaptureCuda, LaunchesRecomputeFromTheInputsMemory) {
  PointCloud input = PointCloud::fromHost(frame(), device_);
  {  // what the library caches on first use is made before counting
    const PointCloud warm = input.transformed(pose());
    (void)warm.deviceNormalsXYZ(device_.sdkStreamOrQueue());
    (void)warm.maskedByRegionOfInterest(box()).toUnorganizedPointCloud().voxelDownsampled(12.f, 2);
    synchronizeStream(device_.sdkStreamOrQueue());
  }
  const std::int64_t liveBefore = devicearray::detail::liveAllocations();
  const Matrix4x4 shift = {1, 0, 0, 25, 0, 1, 0, -5, 0, 0, 1, 40, 0, 0, 0, 1};
  CUDA_OK(cudaStreamBeginCapture(stream_, GetParam()));
  PointCloud moved = input.transformed(pose(), CUDAStreamPtr{stream_});
  DeviceArray<NormalXYZ> normals = moved.deviceNormalsXYZ(CUDAStreamPtr{stream_});
  moved.maskByRegionOfInterest(box(), CUDAStreamPtr{stream_});
  UnorganizedPointCloud voxels =
      moved.toUnorganizedPointCloud(CUDAStreamPtr{stream_}).voxelDownsampled(12.f, 2, CUDAStreamPtr{stream_});
  instantiate();

  std::vector<std::size_t> voxelCounts;
  for (int frameNumber = 0; frameNumber < 3; ++frameNumber) {
    launchAndWait();
    const PointCloud reference = input.transformed(pose());
    expectSameBytes(normals, reference.deviceNormalsXYZ(reference.device().sdkStreamOrQueue()), "normals");
    const PointCloud masked = reference.maskedByRegionOfInterest(box());
    expectSameBytes(moved.devicePointsXYZ(CUDAStreamPtr{stream_}), masked.devicePointsXYZ(masked.device().sdkStreamOrQueue()),
                    "transformed and masked points");
    // Each launch rewrites the count: reread() reads this launch's. (The matrices differ:
    // the input's accumulates the shifts on the host, outside the graph.)
    const UnorganizedPointCloud launched = voxels.reread();
    EXPECT_FALSE(launched.isSizeKnown());
    const UnorganizedPointCloud wantVoxels = masked.toUnorganizedPointCloud().voxelDownsampled(12.f, 2);
    ASSERT_EQ(launched.size(), wantVoxels.size()) << "frame " << frameNumber;
    expectSameBytes(launched.storedXYZ(), wantVoxels.storedXYZ(), "voxel points of this launch");
    expectSameBytes(launched.storedColors(), wantVoxels.storedColors(), "voxel colours of this launch");
    voxelCounts.push_back(launched.size());
    if (frameNumber == 0) EXPECT_EQ(voxels.size(), launched.size());  // the captured cloud reads its count once
    input.transform(shift);  // the next frame, in the input's own memory
  }
  // The frames differ (the shift moves points out of the box), so a stale count would show.
  EXPECT_NE(voxelCounts.front(), voxelCounts.back());
  EXPECT_EQ(voxels.size(), voxelCounts.front()) << "the captured cloud keeps the count it read first";
  EXPECT_EQ(voxels.reread().size(), voxelCounts.back()) << "what the last launch wrote";
  moved = PointCloud();
  normals = DeviceArray<NormalXYZ>();
  voxels = UnorganizedPointCloud();
  destroyGraphAndExpectItsMemoryReleased(liveBefore, input);
}

TEST_P(GraphCaptureCuda, AnInvalidatedCaptureIsReportedByTheNextCall) {
  const PointCloud input = PointCloud::fromHost(frame(), device_);
  CUDA_OK(cudaStreamBeginCapture(stream_, GetParam()));
  // Not capturable: CUDA invalidates the capture.
  EXPECT_NE(cudaStreamSynchronize(stream_), cudaSuccess);
  (void)cudaGetLastError();
  try {
    (void)input.transformed(pose(), CUDAStreamPtr{stream_});
    ADD_FAILURE() << "a call on an invalidated capture did not throw";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::InvalidState) << e.what();
    EXPECT_NE(std::string(e.what()).find("invalidated"), std::string::npos) << e.what();
  }
  cudaGraph_t broken = nullptr;
  EXPECT_NE(cudaStreamEndCapture(stream_, &broken), cudaSuccess);
  if (broken != nullptr) (void)cudaGraphDestroy(broken);
  (void)cudaGetLastError();
  // The stream works again once the capture has ended.
  const PointCloud moved = input.transformed(pose(), CUDAStreamPtr{stream_});
  CUDA_OK(cudaStreamSynchronize(stream_));
  expectSameBytes(moved.devicePointsXYZ(CUDAStreamPtr{stream_}), input.transformed(pose()).devicePointsXYZ(device_.sdkStreamOrQueue()),
                  "after the capture");
}

INSTANTIATE_TEST_SUITE_P(Modes, GraphCaptureCuda,
                         ::testing::Values(cudaStreamCaptureModeGlobal, cudaStreamCaptureModeThreadLocal,
                                           cudaStreamCaptureModeRelaxed),
                         [](const auto& info) {
                           switch (info.param) {
                             case cudaStreamCaptureModeGlobal: return std::string("Global");
                             case cudaStreamCaptureModeThreadLocal: return std::string("ThreadLocal");
                             default: return std::string("Relaxed");
                           }
                         });

}  // namespace
