// A wait on the device for dabench::timeQueued (bench_util.hpp): one thread that spins
// on the global timer. Holding the stream back this way touches no memory, so the
// timed calls behind it start with the cache as the frame loop leaves it; a long copy
// as the delay leaves the L2 cache full of dirty lines whose write-back the first
// microseconds of the timed calls would pay.
#include <cuda_runtime.h>

#include <stdexcept>

namespace {

__global__ void spinUntilElapsed(unsigned long long nanoseconds) {
  unsigned long long start = 0, now = 0;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(start));
  do {
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(now));
  } while (now - start < nanoseconds);
}

}  // namespace

namespace dabench {

void delayCudaStream(void* stream, int device, double microseconds) {
  // This program's CUDA runtime is its own (the library keeps its runtime private), so
  // its current device is set here: a launch must be made on the stream's device.
  int previous = 0;
  if (cudaGetDevice(&previous) != cudaSuccess || cudaSetDevice(device) != cudaSuccess)
    throw std::runtime_error("delayCudaStream: cannot select the stream's device");
  spinUntilElapsed<<<1, 1, 0, static_cast<cudaStream_t>(stream)>>>(static_cast<unsigned long long>(microseconds * 1e3));
  const cudaError_t launched = cudaGetLastError();
  (void)cudaSetDevice(previous);
  if (launched != cudaSuccess) throw std::runtime_error("delayCudaStream: the launch failed");
}

}  // namespace dabench
