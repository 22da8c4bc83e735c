// Cross-device copy bandwidth between two CUDA devices of one host, timed with
// events on the destination device (manual time):
//   peer_contiguous  GpuMat::copyTo into another device (cudaMemcpyPeerAsync)
//   peer_strided     the same from a sub-matrix (peer copy kernel on the destination)
//   staged_host      the route through page-locked host memory the library takes
//                    when no direct path exists (download on the source's stream,
//                    upload on the destination's, streams joined by events)
//   raw_memcpy_peer  cudaMemcpyPeerAsync on cudaMalloc memory: the driver's figure
// at 1 MiB, 256 MiB and 1 GiB. Without two CUDA devices it prints why and exits 0.
#include <benchmark/benchmark.h>
#include <cuda_runtime.h>

#include <cstdio>
#include <cstdlib>
#include <string>
#include <tuple>
#include <vector>

#include "devicearray/devicearray.hpp"

namespace {

using namespace devicearray;

constexpr int kCols = 1 << 20;  // one MiB rows of CV_8UC1

void check(cudaError_t e, const char* what) {
  if (e != cudaSuccess) {
    std::fprintf(stderr, "multi_gpu_bench: %s: %s\n", what, cudaGetErrorString(e));
    std::exit(1);
  }
}

/// Runs `body` (enqueueing on `timed`) once to warm up, then per iteration between
/// two timing events recorded on `timed`.
template <class Body>
void timeOn(benchmark::State& state, const ComputeDevice& device, Stream& timed, std::size_t bytes, Body&& body) {
  body();
  timed.waitForCompletion();
  for (auto _ : state) {
    Event start(device), end(device);
    start.record(timed);
    body();
    end.record(timed);
    end.waitForCompletion();
    state.SetIterationTime(static_cast<double>(Event::elapsedTime(start, end)) * 1e-3);
  }
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations()) * static_cast<std::int64_t>(bytes));
}

void peerContiguous(benchmark::State& state, ComputeDevice from, ComputeDevice to) {
  const int rows = static_cast<int>(state.range(0));
  GpuMat src(rows, kCols, makeType(Depth::U8, 1), from);
  src.setTo(Scalar(1));
  GpuMat dst(rows, kCols, makeType(Depth::U8, 1), to);
  Stream s(to);
  timeOn(state, to, s, static_cast<std::size_t>(rows) * kCols, [&] { src.copyTo(dst, s); });
}

void peerStrided(benchmark::State& state, ComputeDevice from, ComputeDevice to) {
  const int rows = static_cast<int>(state.range(0));
  // 1 MiB rows read from a matrix with 4 KiB of padding per row.
  GpuMat parent(rows, kCols + 4096, makeType(Depth::U8, 1), from);
  parent.setTo(Scalar(2));
  GpuMat src = parent(Range(0, rows), Range(0, kCols));
  GpuMat dst(rows, kCols, makeType(Depth::U8, 1), to);
  Stream s(to);
  timeOn(state, to, s, static_cast<std::size_t>(rows) * kCols, [&] { src.copyTo(dst, s); });
}

void stagedHost(benchmark::State& state, ComputeDevice from, ComputeDevice to) {
  const int rows = static_cast<int>(state.range(0));
  GpuMat src(rows, kCols, makeType(Depth::U8, 1), from);
  src.setTo(Scalar(3));
  GpuMat dst(rows, kCols, makeType(Depth::U8, 1), to);
  HostMat pinned = HostMat::pinned({rows, kCols}, makeType(Depth::U8, 1));
  Stream sFrom(from), sTo(to);
  timeOn(state, to, sTo, static_cast<std::size_t>(rows) * kCols, [&] {
    Event go(to);
    go.record(sTo);
    sFrom.waitEvent(go);
    src.download(pinned, sFrom);
    Event landed(from);
    landed.record(sFrom);
    sTo.waitEvent(landed);
    dst.upload(pinned, sTo);
  });
}

void rawMemcpyPeer(benchmark::State& state, ComputeDevice from, ComputeDevice to) {
  const std::size_t bytes = static_cast<std::size_t>(state.range(0)) * kCols;
  void* src = nullptr;
  void* dst = nullptr;
  check(cudaSetDevice(from.ordinal()), "cudaSetDevice");
  check(cudaMalloc(&src, bytes), "cudaMalloc");
  check(cudaMemset(src, 4, bytes), "cudaMemset");
  check(cudaDeviceSynchronize(), "cudaDeviceSynchronize");
  check(cudaSetDevice(to.ordinal()), "cudaSetDevice");
  check(cudaMalloc(&dst, bytes), "cudaMalloc");
  int can = 0;
  check(cudaDeviceCanAccessPeer(&can, to.ordinal(), from.ordinal()), "cudaDeviceCanAccessPeer");
  if (can != 0) {
    const cudaError_t err = cudaDeviceEnablePeerAccess(from.ordinal(), 0);
    if (err == cudaErrorPeerAccessAlreadyEnabled) (void)cudaGetLastError();
    else check(err, "cudaDeviceEnablePeerAccess");
  }
  Stream s(to);
  const auto stream = static_cast<cudaStream_t>(s.handle().stream);
  timeOn(state, to, s, bytes, [&] {
    check(cudaMemcpyPeerAsync(dst, to.ordinal(), src, from.ordinal(), bytes, stream), "cudaMemcpyPeerAsync");
  });
  check(cudaFree(dst), "cudaFree");
  check(cudaSetDevice(from.ordinal()), "cudaSetDevice");
  check(cudaFree(src), "cudaFree");
}

}  // namespace

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  std::vector<ComputeDevice> cuda;
  for (const auto& d : ComputeDevice::all())
    if (d.backend() == ComputeBackend::cuda) cuda.push_back(d);
  if (cuda.size() < 2) {
    std::printf("multi_gpu_bench: skipped: needs two CUDA devices, found %zu\n", cuda.size());
    return 0;
  }
  const ComputeDevice d0 = cuda[0], d1 = cuda[1];
  struct Variant {
    const char* name;
    void (*fn)(benchmark::State&, ComputeDevice, ComputeDevice);
  };
  const Variant variants[] = {{"peer_contiguous", peerContiguous},
                              {"peer_strided", peerStrided},
                              {"staged_host", stagedHost},
                              {"raw_memcpy_peer", rawMemcpyPeer}};
  for (const auto& v : variants)
    for (const auto& [label, from, to] : {std::tuple{"0to1", d0, d1}, std::tuple{"1to0", d1, d0}}) {
      const std::string name = std::string("cross_device/") + v.name + "/" + label;
      benchmark::RegisterBenchmark(name.c_str(), v.fn, from, to)
          ->Arg(1)      // 1 MiB
          ->Arg(256)    // 256 MiB
          ->Arg(1024)   // 1 GiB
          ->UseManualTime()
          ->Unit(benchmark::kMicrosecond);
    }
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
