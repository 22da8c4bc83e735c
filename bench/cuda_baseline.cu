// The raw-CUDA baseline every devicearray figure is compared with, measured in
// the same process run: what a user would write by hand with the runtime API.
#include <benchmark/benchmark.h>
#include <cuda_runtime.h>

#include <cstdio>
#include <cstdlib>

namespace {

void check(cudaError_t e, const char* what) {
  if (e != cudaSuccess) {
    std::fprintf(stderr, "cuda_baseline: %s: %s\n", what, cudaGetErrorString(e));
    std::exit(1);
  }
}

template <class Body>
void timeWithEvents(benchmark::State& state, cudaStream_t s, Body&& body) {
  cudaEvent_t a, b;
  check(cudaEventCreate(&a), "cudaEventCreate");
  check(cudaEventCreate(&b), "cudaEventCreate");
  body();
  check(cudaStreamSynchronize(s), "sync");
  for (auto _ : state) {
    check(cudaEventRecord(a, s), "record");
    body();
    check(cudaEventRecord(b, s), "record");
    check(cudaEventSynchronize(b), "sync");
    float ms = 0;
    check(cudaEventElapsedTime(&ms, a, b), "elapsed");
    state.SetIterationTime(ms * 1e-3);
  }
  cudaEventDestroy(a);
  cudaEventDestroy(b);
}

void memcpyD2D(benchmark::State& state) {
  const size_t bytes = static_cast<size_t>(state.range(0));
  cudaStream_t s;
  check(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), "stream");
  void *src, *dst;
  check(cudaMalloc(&src, bytes), "malloc");
  check(cudaMalloc(&dst, bytes), "malloc");
  timeWithEvents(state, s, [&] { check(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, s), "memcpy"); });
  state.SetBytesProcessed(state.iterations() * 2 * static_cast<int64_t>(bytes));
  cudaFree(src);
  cudaFree(dst);
  cudaStreamDestroy(s);
}

void memcpyHost(benchmark::State& state, cudaMemcpyKind kind, bool pinned) {
  const size_t bytes = static_cast<size_t>(state.range(0));
  // Pageable copies use plain cudaMemcpy, which runs on the legacy default stream.
  cudaStream_t s = nullptr;
  if (pinned) check(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), "stream");
  void* dev;
  check(cudaMalloc(&dev, bytes), "malloc");
  void* host = nullptr;
  if (pinned)
    check(cudaMallocHost(&host, bytes), "mallocHost");
  else
    host = std::malloc(bytes);
  const bool up = kind == cudaMemcpyHostToDevice;
  timeWithEvents(state, s, [&] {
    if (pinned)
      check(cudaMemcpyAsync(up ? dev : host, up ? host : dev, bytes, kind, s), "memcpy");
    else
      check(cudaMemcpy(up ? dev : host, up ? host : dev, bytes, kind), "memcpy");  // what users write
  });
  state.SetBytesProcessed(state.iterations() * static_cast<int64_t>(bytes));
  if (pinned) {
    cudaFreeHost(host);
    cudaStreamDestroy(s);
  } else {
    std::free(host);
  }
  cudaFree(dev);
}

void mallocAsyncPair(benchmark::State& state) {
  const size_t bytes = static_cast<size_t>(state.range(0));
  cudaStream_t s;
  check(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), "stream");
  for (auto _ : state) {
    void* p;
    check(cudaMallocAsync(&p, bytes, s), "mallocAsync");
    check(cudaFreeAsync(p, s), "freeAsync");
  }
  check(cudaStreamSynchronize(s), "sync");
  cudaStreamDestroy(s);
}

__global__ void emptyKernel() {}

// Host time of one launch of an empty kernel: the floor under every stream call that
// launches one. The stream drains every 256 launches, outside the timed span.
void launchEmpty(benchmark::State& state) {
  cudaStream_t s;
  check(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), "stream");
  int launched = 0;
  for (auto _ : state) {
    emptyKernel<<<1, 32, 0, s>>>();
    if (++launched % 256 == 0) {
      state.PauseTiming();
      check(cudaStreamSynchronize(s), "sync");
      state.ResumeTiming();
    }
  }
  check(cudaGetLastError(), "launch");
  check(cudaStreamSynchronize(s), "sync");
  cudaStreamDestroy(s);
}

}  // namespace

void registerCudaBaselines() {
  int n = 0;
  if (cudaGetDeviceCount(&n) != cudaSuccess || n == 0) {
    (void)cudaGetLastError();
    return;
  }
  const long sizes[] = {1 << 10, 1 << 20, 9'216'000, 1L << 28, 1L << 30};
  auto* d2d = benchmark::RegisterBenchmark("baseline_cudaMemcpyAsync_d2d/cuda0", memcpyD2D)->UseManualTime();
  auto* h2d = benchmark::RegisterBenchmark("baseline_cudaMemcpyAsync_h2d_pinned/cuda0", memcpyHost,
                                           cudaMemcpyHostToDevice, true)->UseManualTime();
  auto* d2h = benchmark::RegisterBenchmark("baseline_cudaMemcpyAsync_d2h_pinned/cuda0", memcpyHost,
                                           cudaMemcpyDeviceToHost, true)->UseManualTime();
  auto* h2dp = benchmark::RegisterBenchmark("baseline_cudaMemcpy_h2d_pageable/cuda0", memcpyHost,
                                            cudaMemcpyHostToDevice, false)->UseManualTime();
  auto* d2hp = benchmark::RegisterBenchmark("baseline_cudaMemcpy_d2h_pageable/cuda0", memcpyHost,
                                            cudaMemcpyDeviceToHost, false)->UseManualTime();
  for (long s : sizes)
    for (auto* b : {d2d, h2d, d2h, h2dp, d2hp}) b->Arg(s);
  benchmark::RegisterBenchmark("baseline_cudaMallocAsync_pair/cuda0", mallocAsyncPair)->Arg(1 << 10)->Arg(1 << 20)->Arg(1 << 28);
  benchmark::RegisterBenchmark("baseline_kernel_launch/cuda0", launchEmpty);
}
