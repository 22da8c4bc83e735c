// A user CUDA kernel on the points of a PointCloud, writing into a buffer the user
// allocated, which the library then reads through createDeviceArrayView.
//
// Everything runs on one user stream and the host waits exactly once: each library
// call that takes the stream enqueues there and returns, and its result is ready on
// that stream (docs/stream-queue-context.md).
#include <cuda_runtime.h>

#include <cmath>
#include <cstdio>
#include <vector>

#include "devicearray/devicearray.hpp"

namespace da = devicearray;

// Distance of each point from the camera; missing (NaN) points give NaN.
__global__ void distanceFromCamera(const da::PointXYZ* points, float* distance, int count) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= count) return;
  const da::PointXYZ p = points[i];
  distance[i] = sqrtf(p.x * p.x + p.y * p.y + p.z * p.z);
}

static bool check(cudaError_t err, const char* what) {
  if (err == cudaSuccess) return true;
  std::fprintf(stderr, "point_cloud_cuda_kernel: %s: %s\n", what, cudaGetErrorString(err));
  return false;
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
    // A 3 x 4 organized cloud on a plane 2 m away; point (1, 2) is missing.
    const int height = 3, width = 4, count = height * width;
    std::vector<da::PointXYZ> host(count);
    for (int i = 0; i < count; ++i) host[i] = {100.0f * float(i % width), 100.0f * float(i / width), 2000.0f};
    host[1 * width + 2] = {NAN, NAN, NAN};
    const da::PointCloud cloud = da::PointCloud::fromHost(height, width, host.data(), nullptr, nullptr, device);

    cudaStream_t stream = nullptr;
    if (!check(cudaSetDevice(device.ordinal()), "cudaSetDevice") ||
        !check(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), "cudaStreamCreate"))
      return 1;
    const da::CUDAStreamPtr onStream{stream};

    // A new DeviceArray<PointXYZ>, computed on `stream`: ready there when this returns.
    const da::DeviceArray<da::PointXYZ> points = cloud.devicePointsXYZ(onStream);
    const auto* xyz = static_cast<const da::PointXYZ*>(points.devicePointer());

    // The user's own buffer, allocated and filled on the same stream.
    float* distance = nullptr;
    if (!check(cudaMallocAsync(reinterpret_cast<void**>(&distance), count * sizeof(float), stream), "cudaMallocAsync"))
      return 1;
    distanceFromCamera<<<(count + 127) / 128, 128, 0, stream>>>(xyz, distance, count);
    if (!check(cudaGetLastError(), "kernel launch")) return 1;

    // Wrap it as a depth map. Passing `stream` orders every later library use of the
    // view after the kernel enqueued above, on any stream.
    const da::DeviceArrayView<da::PointZ> view =
        device.createDeviceArrayView<da::PointZ>(da::CUDADevicePointer{distance}, width, height, onStream);
    const std::vector<da::PointZ> result = view.toHost();  // blocking; waits for the kernel

    bool ok = true;
    for (int i = 0; i < count; ++i) {
      const da::PointXYZ p = host[i];
      const float expected = std::sqrt(p.x * p.x + p.y * p.y + p.z * p.z);
      ok &= std::isnan(expected) ? std::isnan(result[i].z) : std::fabs(result[i].z - expected) <= 1e-3f;
    }
    std::printf("distance of point (2, 3): %.1f mm, point (1, 2): %f (missing) on %s: %s\n",
                result[2 * width + 3].z, result[1 * width + 2].z, device.toString().c_str(), ok ? "ok" : "WRONG");
    check(cudaFreeAsync(distance, stream), "cudaFreeAsync");
    check(cudaStreamSynchronize(stream), "cudaStreamSynchronize");
    cudaStreamDestroy(stream);
    return ok ? 0 : 1;
  } catch (const da::Error& e) {
    std::fprintf(stderr, "point_cloud_cuda_kernel: %s\n", e.what());
    return 1;
  }
}
