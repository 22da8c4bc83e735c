// The frame chain of stream_frame_chain.hpp on a CUDA stream held back by a gated
// kernel (cuda_gate.cuh): every call of the chain must return while the stream is
// still gated (a call that waited on the host would never return; the watchdog then
// opens the gate and the test fails instead of hanging), and the results must be the
// blocking chain's points. The OpenCL counterpart is in stream_frame_chain_test.cpp.
#include <cuda_runtime.h>

#include <gtest/gtest.h>

#include "cuda_gate.cuh"
#include "devicearray/devicearray.hpp"
#include "stream_frame_chain.hpp"
#include "test_support.hpp"

namespace {

using namespace devicearray;
using namespace datest::chain;

TEST(StreamFrameChainCuda, EnqueuesWithoutAHostSynchronization) {
  ComputeDevice device;
  for (const auto& d : datest::testDevices())
    if (d.backend() == ComputeBackend::cuda) {
      device = d;
      break;
    }
  if (!device.isValid()) GTEST_SKIP() << "no CUDA device on this machine (the gated CUDA tests run on the GPU machine)";
  CUDA_OK(cudaSetDevice(device.ordinal()));
  const PointCloud uploaded = PointCloud::fromHost(frame(), device);
  const ChainResult want = blockingChain(uploaded);

  cudaStream_t stream = nullptr;
  CUDA_OK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  float* held = nullptr;
  constexpr int kHeld = 256;
  CUDA_OK(cudaMalloc(&held, kHeld * sizeof(float)));
  ChainResult got;
  {
    // Enqueuing the chain takes about 20 s under compute-sanitizer: the watchdog waits
    // 28 s, inside the gated kernel's own 30 s bound.
    Gate gate({}, std::chrono::seconds(28));
    ASSERT_TRUE(gate.valid());
    gatedProduce<<<1, 256, 0, stream>>>(gate.device(), held, kHeld, cyclesFor50ms(device.ordinal()), 0.0f);
    CUDA_OK(cudaGetLastError());
    got = streamChain(uploaded, CUDAStreamPtr{stream});
    EXPECT_FALSE(got.points.isSizeKnown());
    EXPECT_FALSE(got.centred.isSizeKnown());
    EXPECT_FALSE(got.voxels.isSizeKnown());
    EXPECT_EQ(cudaStreamQuery(stream), cudaErrorNotReady) << "the stream finished while it was gated";
    EXPECT_TRUE(gate.open()) << "a call of the chain waited on the host for the held-back stream";
  }
  expectSameChain(got, want);
  got = ChainResult();
  CUDA_OK(cudaStreamSynchronize(stream));
  CUDA_OK(cudaFree(held));
  CUDA_OK(cudaStreamDestroy(stream));
}

}  // namespace
