// The frame chain of stream_frame_chain.hpp, its input uploaded beforehand, captured
// into a CUDA graph from a non-default stream and replayed: stream capture fails on
// any host synchronization inside the chain, so this proves the chain enqueues only,
// and the replays must give exactly the blocking chain's points.
#include <cuda_runtime.h>

#include <gtest/gtest.h>

#include "cuda_ok.cuh"
#include "devicearray/devicearray.hpp"
#include "stream_frame_chain.hpp"
#include "test_support.hpp"


namespace {

using namespace devicearray;
using namespace datest::chain;

TEST(StreamFrameChainCuda, CapturedIntoAGraphGivesTheBlockingChainsPoints) {
  ComputeDevice device;
  for (const auto& d : datest::testDevices())
    if (d.backend() == ComputeBackend::cuda) {
      device = d;
      break;
    }
  if (!device.isValid()) GTEST_SKIP() << "no CUDA device on this machine (the graph capture runs on the GPU machine)";
  CUDA_OK(cudaSetDevice(device.ordinal()));
  const PointCloud uploaded = PointCloud::fromHost(frame(), device);
  const ChainResult want = blockingChain(uploaded);

  cudaStream_t stream = nullptr;
  CUDA_OK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  // Once outside the capture: the input's last use is then on this stream, so the
  // captured chain needs no wait on work from before the capture.
  expectSameChain(streamChain(uploaded, CUDAStreamPtr{stream}), want);
  CUDA_OK(cudaStreamSynchronize(stream));

  cudaGraph_t graph = nullptr;
  ChainResult got;
  CUDA_OK(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal));
  got = streamChain(uploaded, CUDAStreamPtr{stream});
  CUDA_OK(cudaStreamEndCapture(stream, &graph));
  EXPECT_FALSE(got.points.isSizeKnown());
  EXPECT_FALSE(got.voxels.isSizeKnown());
  cudaGraphExec_t exec = nullptr;
  // The outputs' memory is allocated by the graph and freed by the clouds; a replay frees
  // the previous launch's first, at the same addresses.
  CUDA_OK(cudaGraphInstantiateWithFlags(&exec, graph, cudaGraphInstantiateFlagAutoFreeOnLaunch));
  for (int replay = 0; replay < 2; ++replay) {
    CUDA_OK(cudaGraphLaunch(exec, stream));
    CUDA_OK(cudaStreamSynchronize(stream));
    expectSameChain(got, want);
  }
  got = ChainResult();
  CUDA_OK(cudaStreamSynchronize(stream));
  CUDA_OK(cudaGraphExecDestroy(exec));
  CUDA_OK(cudaGraphDestroy(graph));
  CUDA_OK(cudaStreamDestroy(stream));
}

}  // namespace
