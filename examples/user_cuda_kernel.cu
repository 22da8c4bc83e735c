// A user CUDA kernel on a DeviceArray<PointXYZ>: first on the library's own stream,
// then on a stream of the user's, with library calls that take that stream.
//
// The rule (docs/stream-queue-context.md): work you enqueue yourself through
// devicePointer() is yours to order. Enqueue it on a stream and pass that same
// stream to the next library call; the library then orders everything else after
// it without host syncs.
#include <cuda_runtime.h>

#include <cstdio>
#include <vector>

#include "devicearray/devicearray.hpp"

namespace da = devicearray;

// Moves every point 1 m further along z (NaN points stay NaN).
__global__ void pushAlongZ(da::PointXYZ* points, int count) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < count) points[i].z += 1.0f;
}

int main() {
  da::ComputeDevice device;
  for (const auto& d : da::ComputeDevice::all())
    if (d.backend() == da::ComputeBackend::cuda) { device = d; break; }
  if (!device.isValid()) {
    std::puts("skipped: no CUDA device");
    return 0;
  }
  try {
    const int height = 4, width = 8, count = height * width;
    std::vector<da::PointXYZ> host(count);
    for (int i = 0; i < count; ++i) host[i] = {float(i % width), float(i / width), 2.0f};
    auto points = da::DeviceArray<da::PointXYZ>::fromHost(host.data(), height, width, device);
    auto* raw = static_cast<da::PointXYZ*>(points.devicePointer());
    const int blocks = (count + 127) / 128;

    // 1) On the SDK stream: library calls without a stream argument run there too,
    //    so toHost() below sees the kernel without any extra step.
    auto sdk = static_cast<cudaStream_t>(device.nativeStreamHandle());
    pushAlongZ<<<blocks, 128, 0, sdk>>>(raw, count);
    std::printf("after the SDK-stream kernel: z = %.1f\n", points.toHost()[0].z);  // 3.0

    // 2) On the user's own stream: pass it to the library calls that follow.
    cudaStream_t mine = nullptr;
    cudaStreamCreateWithFlags(&mine, cudaStreamNonBlocking);
    pushAlongZ<<<blocks, 128, 0, mine>>>(raw, count);
    // Enqueued on `mine` after the kernel; returns at once; the result is ready on `mine`.
    auto withW = da::convert<da::PointXYZW>(points, da::CUDAStreamPtr{mine});
    std::vector<da::PointXYZW> out(count);
    withW.copyToHost(out.data(), out.size() * sizeof(da::PointXYZW), da::CUDAStreamPtr{mine});
    cudaStreamSynchronize(mine);  // the only host wait
    std::printf("after the user-stream kernel: (%.1f, %.1f, %.1f, w=%.1f)\n", out[9].x, out[9].y, out[9].z, out[9].w);
    cudaStreamDestroy(mine);
    return out[9].z == 4.0f && out[9].w == 1.0f ? 0 : 1;
  } catch (const da::Error& e) {
    std::fprintf(stderr, "user_cuda_kernel: %s\n", e.what());
    return 1;
  }
}
