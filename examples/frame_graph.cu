// A frame loop that replays one CUDA graph per frame: the stream calls of the frame
// pipeline (downsample -> transform -> region of interest -> unorganize -> voxel grid)
// are captured once, then each frame is copied into the input's memory and the graph
// is launched. The host pays one launch per frame instead of one per kernel
// (docs/stream-queue-context.md, "Capturing stream calls into a CUDA graph").
//
// Every frame is checked against the blocking pipeline on the same points; the program
// exits non-zero on a difference.
#include <cuda_runtime.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <vector>

#include "devicearray/devicearray.hpp"

namespace da = devicearray;

namespace {

constexpr int kHeight = 240;
constexpr int kWidth = 320;
constexpr float kVoxelMm = 8.0f;

bool check(cudaError_t err, const char* what) {
  if (err == cudaSuccess) return true;
  std::fprintf(stderr, "frame_graph: %s: %s\n", what, cudaGetErrorString(err));
  return false;
}

// A wavy surface about a metre away that drifts with the frame number, with a hole.
void fillFrame(int frame, da::PointXYZ* points) {
  for (int r = 0; r < kHeight; ++r)
    for (int c = 0; c < kWidth; ++c) {
      const float x = 2.0f * static_cast<float>(c - kWidth / 2), y = 2.0f * static_cast<float>(r - kHeight / 2);
      const bool hole = (r - 120) * (r - 120) + (c - 200) * (c - 200) < 400;
      const float z = 1000.0f + 30.0f * std::sin(0.05f * x + 0.4f * static_cast<float>(frame)) + 0.1f * y;
      points[r * kWidth + c] = hole ? da::PointXYZ{NAN, NAN, NAN} : da::PointXYZ{x, y, z};
    }
}

da::Matrix4x4 cameraToRobot() { return {0, -1, 0, 100, 1, 0, 0, -50, 0, 0, 1, -200, 0, 0, 0, 1}; }

da::RegionOfInterestBox workspace() {
  da::RegionOfInterestBox box;
  box.origin = {-100, -200, 700};
  box.pointA = {300, -200, 700};
  box.pointB = {-100, 200, 700};
  box.minExtent = 0;
  box.maxExtent = 300;
  return box;
}

// The pipeline's stream calls: each enqueues on `sq` and returns.
da::UnorganizedPointCloud pipeline(const da::PointCloud& frame, da::StreamOrQueue sq) {
  da::PointCloud cloud = frame.downsampled(da::Downsampling::by2x2, sq);
  cloud.transform(cameraToRobot(), sq);
  cloud.maskByRegionOfInterest(workspace(), sq);
  return cloud.toUnorganizedPointCloud(sq).voxelDownsampled(kVoxelMm, 1, sq);
}

}  // namespace

int main() {
  da::ComputeDevice device;
  for (const auto& d : da::ComputeDevice::all())
    if (d.backend() == da::ComputeBackend::cuda) { device = d; break; }
  if (!device.isValid()) {
    std::puts("skipped: no CUDA device");
    return 0;
  }
  try {
    cudaStream_t stream = nullptr;
    da::PointXYZ* staged = nullptr;  // where the camera's frames arrive: page-locked host memory
    if (!check(cudaSetDevice(device.ordinal()), "cudaSetDevice") ||
        !check(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), "cudaStreamCreate") ||
        !check(cudaMallocHost(reinterpret_cast<void**>(&staged), kHeight * kWidth * sizeof(da::PointXYZ)),
               "cudaMallocHost"))
      return 1;
    const da::CUDAStreamPtr onStream{stream};

    // The input frame's device memory, written by this program before every launch.
    const auto frameXYZ = da::DeviceArray<da::PointXYZ>::allocate(kHeight, kWidth, device);
    da::synchronizeStream(device.sdkStreamOrQueue());  // the allocation is ready for our stream
    const da::PointCloud frame(frameXYZ);
    const auto upload = [&](int number) {
      fillFrame(number, staged);
      return check(cudaMemcpyAsync(frameXYZ.devicePointer(), staged, frameXYZ.sizeInBytes(), cudaMemcpyHostToDevice,
                                   stream),
                   "cudaMemcpyAsync");
    };

    // Once outside the capture, as for any captured code: kernels load, the pool grows.
    if (!upload(0)) return 1;
    (void)pipeline(frame, onStream).size();

    cudaGraph_t graph = nullptr;
    cudaGraphExec_t exec = nullptr;
    if (!check(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal), "cudaStreamBeginCapture")) return 1;
    const da::UnorganizedPointCloud voxels = pipeline(frame, onStream);
    if (!check(cudaStreamEndCapture(stream, &graph), "cudaStreamEndCapture") ||
        !check(cudaGraphInstantiate(&exec, graph, 0), "cudaGraphInstantiate"))
      return 1;

    bool ok = true;
    for (int number = 0; number < 5; ++number) {
      if (!upload(number) || !check(cudaGraphLaunch(exec, stream), "cudaGraphLaunch") ||
          !check(cudaStreamSynchronize(stream), "cudaStreamSynchronize"))
        return 1;
      // The captured cloud read its count once; reread() reads this launch's.
      const da::UnorganizedPointCloud result = voxels.reread();
      const std::vector<da::PointXYZ> got = result.devicePointsXYZ(onStream).toHost();

      const da::PointCloud reference = da::PointCloud::fromHost(kHeight, kWidth, staged, nullptr, nullptr, device);
      const std::vector<da::PointXYZ> want = pipeline(reference, device.sdkStreamOrQueue()).devicePointsXYZ(
          device.sdkStreamOrQueue()).toHost();
      const bool same = got.size() == want.size() &&
                        (got.empty() || std::memcmp(got.data(), want.data(), got.size() * sizeof(da::PointXYZ)) == 0);
      std::printf("frame %d: %zu voxels from one graph launch%s\n", number, got.size(),
                  same ? "" : " -- DIFFERS from the stream calls");
      ok = ok && same && !got.empty();
    }

    (void)cudaGraphExecDestroy(exec);
    (void)cudaGraphDestroy(graph);
    (void)cudaStreamDestroy(stream);
    (void)cudaFreeHost(staged);
    return ok ? 0 : 1;
  } catch (const da::Error& e) {
    std::fprintf(stderr, "frame_graph: %s\n", e.what());
    return 1;
  }
}
