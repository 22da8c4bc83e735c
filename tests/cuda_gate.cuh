// The gated producer kernels of the CUDA ordering tests (ordering_cuda_test.cu,
// multi_gpu_test.cu): a host flag in mapped, portable page-locked memory that
// kernels of any device poll, opened by the test or by the shared watchdog
// (ordering_support.hpp) so that a library call wrongly blocking the host on gated
// work fails the test instead of hanging it. Each test executable includes it once.
#pragma once

#include <cuda_runtime.h>

#include <chrono>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include "ordering_support.hpp"

#define CUDA_OK(expr)                                                           \
  do {                                                                          \
    const cudaError_t err_ = (expr);                                            \
    ASSERT_EQ(err_, cudaSuccess) << #expr << ": " << cudaGetErrorString(err_); \
  } while (0)

namespace {

/// The calling thread's current CUDA device (-2 when the runtime cannot say).
int currentDevice() {
  int d = -1;
  if (cudaGetDevice(&d) != cudaSuccess) return -2;
  return d;
}

/// Thread 0 spins until the host opens the gate (or 600 x spinCycles pass, ~30 s, so
/// a broken test cannot wedge the GPU), then spinCycles more; the block waits for it.
__device__ void waitForGate(const volatile int* gate, long long spinCycles) {
  if (threadIdx.x == 0) {
    const long long start = clock64();
    while (*gate == 0 && clock64() - start < 600 * spinCycles) __nanosleep(1000);
    const long long opened = clock64();
    while (clock64() - opened < spinCycles) {
    }
  }
  __syncthreads();
}

/// After the gate: out[i] = base + 0.5 * i for the n floats of out.
__global__ void gatedProduce(const volatile int* gate, float* out, int n, long long spinCycles, float base) {
  waitForGate(gate, spinCycles);
  for (int i = static_cast<int>(threadIdx.x); i < n; i += static_cast<int>(blockDim.x)) out[i] = base + 0.5f * i;
}

/// Like gatedProduce, but reads: out[i] = in[i] after the gate and the spin.
__global__ void gatedCopy(const volatile int* gate, const float* in, float* out, int n, long long spinCycles) {
  waitForGate(gate, spinCycles);
  for (int i = static_cast<int>(threadIdx.x); i < n; i += static_cast<int>(blockDim.x)) out[i] = in[i];
}

/// The flag the gated kernels poll. `devices` are the devices whose kernels may wait
/// on it (all synchronized before the flag is freed); empty means the current one.
class Gate {
 public:
  explicit Gate(std::vector<int> devices = {}, std::chrono::seconds limit = std::chrono::seconds(20))
      : devices_(std::move(devices)) {
    if (cudaHostAlloc(reinterpret_cast<void**>(&flag_), sizeof(int), cudaHostAllocMapped | cudaHostAllocPortable) !=
        cudaSuccess) {
      flag_ = nullptr;
      return;
    }
    *flag_ = 0;
    if (cudaHostGetDevicePointer(reinterpret_cast<void**>(&deviceFlag_), flag_, 0) != cudaSuccess) deviceFlag_ = nullptr;
    watchdog_.start(limit, [this] { __atomic_store_n(flag_, 1, __ATOMIC_RELEASE); });
  }
  Gate(const Gate&) = delete;
  Gate& operator=(const Gate&) = delete;
  ~Gate() {
    watchdog_.stop();
    // Kernels spinning on the flag must be done (on every device) before it is freed.
    const int previous = currentDevice();
    if (devices_.empty()) {
      (void)cudaDeviceSynchronize();
    } else {
      for (int d : devices_)
        if (cudaSetDevice(d) == cudaSuccess) (void)cudaDeviceSynchronize();
      (void)cudaSetDevice(previous);
    }
    if (flag_ != nullptr) (void)cudaFreeHost(flag_);
  }
  bool valid() const { return flag_ != nullptr && deviceFlag_ != nullptr; }
  const int* device() const { return deviceFlag_; }
  /// Opens the gate; true when the watchdog had not already opened it (nothing blocked).
  bool open() { return watchdog_.open(); }

 private:
  std::vector<int> devices_;
  int* flag_ = nullptr;
  int* deviceFlag_ = nullptr;
  datest::ordering::GateWatchdog watchdog_;
};

/// Device cycles in ~50 ms.
long long cyclesFor50ms(int ordinal) {
  int kHz = 0;
  if (cudaDeviceGetAttribute(&kHz, cudaDevAttrClockRate, ordinal) != cudaSuccess || kHz <= 0) kHz = 1'500'000;
  return static_cast<long long>(kHz) * 50;
}

}  // namespace
