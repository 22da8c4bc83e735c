// The point-cloud pipeline of a 3-D camera frame on every device: each stage alone
// and the whole chain
//   downsample 2x2 -> normals -> transform -> ROI box -> unorganize -> voxel grid
// (the whole chain takes the voxel grid straight from the ROI's grid, as FrameLoop
// does: the voxel grid skips missing points itself) on synthetic scenes
// (synthesizeScene) of a 1920x1200 and a 2448x2048 (5 MP) camera.
// The whole chain moves and masks the points in one pass
// (transformAndMaskByRegionOfInterest), as FrameLoop does; the transform and ROI rows
// time the two alone. Each run is named <stage>/<device>/<points of the camera frame>.
//
// Each stage runs on the output of the stages before it, prepared once outside the
// timed loop. Times are device-event spans around the stage's calls on one stream
// (manual time); every call is a stream call that only enqueues, and the point count
// of a result is read after the span. The host wall-clock time of the same span is
// reported as host_us, and the bytes the stage must read plus write (its memory bound
// at the copy bandwidth) as bytes.
//
// On GPUs the span can be the host's: the device finishes each call before the host
// has enqueued the next. queued_us is the span of the same calls enqueued behind a
// delay on the device (queued_delay_us; dabench::timeQueued), so the device runs them
// back to back: the device's own time, on which bench/compare.py judges the stage
// targets. It is 0 where the host did not finish enqueuing before the delay ended
// (queued_us would again be the host's). enqueue_us is the host's time to make those
// calls while the device is busy: what a frame loop pays on the host per call.
//
// pc_pipeline_graph (CUDA devices) is the pipeline captured once into a CUDA graph and
// launched once per frame: what a frame loop that replays a graph pays.
//
// pc_transform_roi is the one pass of the transform and the ROI that the whole chain
// runs. pc_normals_plane_fit is the stitching pipeline's normals alone (the plane fit
// over a 5 x 5 window of the whole downsampled grid); pc_pipeline_plane_fit the pipeline
// with them, fitted only where the ROI keeps points, as runPipeline and FrameLoop fit
// them.
#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <map>
#include <string>
#include <vector>

#include "bench_util.hpp"

#if DEVICEARRAY_HAS_CUDA
#include <cuda_runtime.h>
#endif

namespace da = devicearray;

namespace {

constexpr float kVoxelMm = 10.0f;
// Voxels so fine that the grid of the ROI box has more than 2^32 cells: the keys need
// more bits than a CUDA stream call sorts before the device decides on the rest. Run
// on the capacity of a stream compaction (576 k slots at 1920x1200), as the pipeline's.
constexpr float kFineVoxelMm = 0.05f;

struct CameraSize {
  int height;
  int width;
};
constexpr CameraSize kCameras[] = {{1200, 1920}, {2048, 2448}};

// The scene of a camera size, synthesized once (the default camera's field of view).
const da::HostPointCloud& scene(CameraSize camera) {
  static std::map<std::pair<int, int>, da::HostPointCloud> scenes;  // map: references stay valid
  const std::pair<int, int> key{camera.height, camera.width};
  if (const auto it = scenes.find(key); it != scenes.end()) return it->second;
  da::SynthOptions options;
  options.camera = da::PinholeCamera::withFieldOfView(camera.width, camera.height, 60.0);
  return scenes.emplace(key, da::synthesizeScene(options)).first->second;
}

// A rigid camera-to-robot pose: a 40-degree tilt about x (the default camera looks
// down at about 40 degrees) and a translation, in millimetres.
da::Matrix4x4 pose() {
  const float c = std::cos(0.6981317f), s = std::sin(0.6981317f);
  return {1, 0, 0, 25.0f, 0, c, -s, 300.0f, 0, s, c, -1100.0f, 0, 0, 0, 1};
}

// Inverse of a rigid transform [R t; 0 1]: [R^T  -R^T t; 0 1].
da::Matrix4x4 inverseRigid(const da::Matrix4x4& m) {
  da::Matrix4x4 inv{};
  for (int r = 0; r < 3; ++r)
    for (int c = 0; c < 3; ++c) inv[4 * r + c] = m[4 * c + r];
  for (int r = 0; r < 3; ++r)
    inv[4 * r + 3] = -(inv[4 * r] * m[3] + inv[4 * r + 1] * m[7] + inv[4 * r + 2] * m[11]);
  inv[15] = 1;
  return inv;
}

// The central box of the transformed scene: between the 25th and 75th percentile of
// the valid points along each axis, so the ROI keeps a realistic part of the frame.
da::RegionOfInterestBox centralBox(const da::HostPointCloud& cloud) {
  const da::Matrix4x4 m = pose();
  std::array<std::vector<float>, 3> axes;
  for (std::size_t i = 0; i < cloud.size(); ++i) {
    if (!cloud.isValid(i)) continue;
    const float* p = &cloud.xyz[3 * i];
    for (int r = 0; r < 3; ++r) axes[r].push_back(m[4 * r] * p[0] + m[4 * r + 1] * p[1] + m[4 * r + 2] * p[2] + m[4 * r + 3]);
  }
  std::array<float, 3> lo{}, hi{};
  for (int r = 0; r < 3; ++r) {
    std::vector<float>& v = axes[r];
    std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(v.size() / 4), v.end());
    lo[r] = v[v.size() / 4];
    std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(3 * v.size() / 4), v.end());
    hi[r] = v[3 * v.size() / 4];
  }
  da::RegionOfInterestBox box;
  box.origin = {lo[0], lo[1], lo[2]};
  box.pointA = {hi[0], lo[1], lo[2]};
  box.pointB = {lo[0], hi[1], lo[2]};  // base normal (A-O) x (B-O) is +z
  box.minExtent = 0;
  box.maxExtent = std::max(hi[2] - lo[2], 1.0f);
  return box;
}

// Device-event time per iteration (manual time) and the host wall-clock time of the
// same span as the host_us counter; on GPUs also queued_us.
template <class Body>
void timeStage(benchmark::State& state, da::Stream& stream, Body&& body) {
  const da::ComputeDevice device = stream.device();
  body();  // warm-up: program builds, pools, scratch buffers
  stream.waitForCompletion();
  double hostSeconds = 0;
  for (auto _ : state) {
    da::Event start(device), stop(device);
    const auto t0 = std::chrono::steady_clock::now();
    start.record(stream);
    body();
    stop.record(stream);
    stop.waitForCompletion();
    hostSeconds += dabench::secondsSince(t0);
    state.SetIterationTime(static_cast<double>(da::Event::elapsedTime(start, stop)) * 1e-3);
  }
  state.counters["host_us"] =
      state.iterations() > 0 ? hostSeconds * 1e6 / static_cast<double>(state.iterations()) : 0.0;
  if (dabench::isGpu(device)) dabench::timeQueued(state, stream, body);
}

// The calls of `body` captured once into a CUDA graph (after a warm-up run outside the
// capture), then timed as timeStage times a stage, one graph launch per iteration: the
// host pays one launch per frame instead of one per kernel. False (the run skipped with
// the reason) where the device is not a CUDA device or the capture fails.
template <class Body>
bool timeAsGraph(benchmark::State& state, da::Stream& stream, Body& body) {
#if DEVICEARRAY_HAS_CUDA
  const auto cudaFailed = [&](const char* call, cudaError_t err) {
    state.SkipWithError((std::string(call) + ": " + cudaGetErrorString(err)).c_str());
    return false;
  };
  body();
  stream.waitForCompletion();
  const auto raw = static_cast<cudaStream_t>(stream.handle().stream);
  cudaGraph_t graph = nullptr;
  if (const cudaError_t err = cudaStreamBeginCapture(raw, cudaStreamCaptureModeThreadLocal); err != cudaSuccess)
    return cudaFailed("cudaStreamBeginCapture", err);
  try {
    body();
  } catch (const da::Error& e) {
    (void)cudaStreamEndCapture(raw, &graph);
    if (graph != nullptr) (void)cudaGraphDestroy(graph);
    state.SkipWithError((std::string("capturing the pipeline: ") + e.what()).c_str());
    return false;
  }
  if (const cudaError_t err = cudaStreamEndCapture(raw, &graph); err != cudaSuccess)
    return cudaFailed("cudaStreamEndCapture", err);
  cudaGraphExec_t exec = nullptr;
  if (const cudaError_t err = cudaGraphInstantiate(&exec, graph, 0); err != cudaSuccess) {
    (void)cudaGraphDestroy(graph);
    return cudaFailed("cudaGraphInstantiate", err);
  }
  cudaError_t launched = cudaSuccess;
  timeStage(state, stream, [&] {
    const cudaError_t err = cudaGraphLaunch(exec, raw);
    if (launched == cudaSuccess) launched = err;
  });
  stream.waitForCompletion();
  (void)cudaGraphExecDestroy(exec);
  (void)cudaGraphDestroy(graph);
  if (launched != cudaSuccess) return cudaFailed("cudaGraphLaunch", launched);
  return true;
#else
  (void)stream;
  (void)body;
  state.SkipWithError("a CUDA build is needed to capture a CUDA graph");
  return false;
#endif
}

// The clouds each stage starts from, built with the stages before it, and the sizes
// the stages' byte counts need.
struct Inputs {
  da::PointCloud full;         ///< the camera frame as uploaded
  da::PointCloud downsampled;  ///< downsampled 2x2
  da::PointCloud transformed;  ///< downsampled, then transformed
  da::PointCloud masked;       ///< transformed, then ROI-masked
  da::UnorganizedPointCloud unorganized;
  std::size_t transformedValid = 0;  ///< valid points before the ROI
  std::size_t voxels = 0;            ///< points the voxel grid leaves of `unorganized`
};

Inputs prepare(const da::HostPointCloud& scene, const da::ComputeDevice& device, const da::RegionOfInterestBox& box) {
  Inputs in;
  in.full = da::PointCloud::fromHost(scene, device);
  in.downsampled = in.full.downsampled(da::Downsampling::by2x2);
  in.transformed = in.downsampled.transformed(pose());
  in.masked = in.transformed.maskedByRegionOfInterest(box);
  in.unorganized = in.masked.toUnorganizedPointCloud();
  in.transformedValid = in.transformed.toHost().validCount();
  in.voxels = in.unorganized.voxelDownsampled(kVoxelMm, 1).size();
  return in;
}

enum class Stage {
  downsample,
  normals,
  transform,
  roi,
  unorganize,
  voxel,
  pipeline,
  fineVoxel,
  pipelineGraph,
  planeFitNormals,
  pipelinePlaneFit,
  transformRoi,
};

// The plane-fit window of the stitching pipeline's normals on a 2x2-downsampled frame
// (docs/stitching.md): the smallest whose median error stays under 2 degrees there.
constexpr int kPlaneFitWindow = 5;

// Bytes a point carries through the stages: XYZ, RGBA and SNR.
constexpr double kPointBytes = 12 + 4 + 4;

// The bytes a stage must read plus write at the least, from the sizes of its input and
// output; the pipeline's is the sum over its stages.
double stageBytes(const Inputs& in, Stage which) {
  const auto full = static_cast<double>(in.full.size()), quarter = static_cast<double>(in.downsampled.size());
  const auto kept = static_cast<double>(in.unorganized.size());
  const double bytes[] = {
      (full + quarter) * kPointBytes,                                            // downsample: all in, a quarter out
      quarter * (12 + 12),                                                       // normals: XYZ in, normals out
      quarter * (12 + 12),                                                       // transform: XYZ in place
      quarter * 12 + static_cast<double>(in.transformedValid - in.unorganized.size()) * 12,  // ROI: read, mask
      (quarter + kept) * kPointBytes,                                            // unorganize: grid in, kept out
      (kept + static_cast<double>(in.voxels)) * kPointBytes,                     // voxel: points in, voxels out
  };
  // The fine grid keeps about every point: the points in and as many out.
  if (which == Stage::fineVoxel) return 2 * kept * kPointBytes;
  if (which == Stage::planeFitNormals) return bytes[static_cast<int>(Stage::normals)];
  if (which == Stage::transformRoi) return quarter * (12 + 12);  // XYZ in, XYZ (or NaN) out
  if (which != Stage::pipeline && which != Stage::pipelineGraph && which != Stage::pipelinePlaneFit)
    return bytes[static_cast<int>(which)];
  double sum = 0;
  for (double b : bytes) sum += b;
  return sum;
}

void stage(benchmark::State& state, da::ComputeDevice device, CameraSize camera, Stage which) {
  const da::HostPointCloud& cloud = scene(camera);
  const da::RegionOfInterestBox box = centralBox(cloud);
  Inputs in = prepare(cloud, device, box);
  da::Stream stream(device);
  const da::Matrix4x4 m = pose();
  const da::Matrix4x4 back = inverseRigid(m);
  std::size_t pointsOut = 0;
  // The last result of a stage that compacts: its count is read after the timing.
  da::UnorganizedPointCloud lastOut;
  switch (which) {
    case Stage::downsample:
      timeStage(state, stream, [&] {
        const da::PointCloud out = in.full.downsampled(da::Downsampling::by2x2, stream);
        pointsOut = out.size();
      });
      break;
    case Stage::normals:
      timeStage(state, stream, [&] {
        const auto normals = in.downsampled.deviceNormalsXYZ(stream);
        pointsOut = normals.size();
      });
      break;
    case Stage::transform: {
      // In place, as the pipeline does; alternating with the inverse keeps the points
      // where they are instead of drifting away over thousands of iterations.
      da::PointCloud cloud = in.downsampled.transformed(m);
      bool forward = false;
      timeStage(state, stream, [&] {
        cloud.transform(forward ? m : back, stream);
        forward = !forward;
      });
      pointsOut = cloud.size();
      break;
    }
    case Stage::transformRoi: {
      // The one-pass transform and ROI, in place as the pipeline runs it, alternating
      // with the inverse (as the transform row) and with a box that holds the scene in
      // both frames: every call moves and tests every valid point. (With the pipeline's
      // box the first call would leave a tenth of them and the next, in the other frame,
      // none; the kernel reads and writes every point either way.)
      const da::RegionOfInterestBox everything{
          {-1e5f, -1e5f, -1e5f}, {1e5f, -1e5f, -1e5f}, {-1e5f, 1e5f, -1e5f}, 0, 2e5f};
      da::PointCloud cloud = in.downsampled.transformed(m);
      bool forward = false;
      timeStage(state, stream, [&] {
        cloud.transformAndMaskByRegionOfInterest(forward ? m : back, everything, stream);
        forward = !forward;
      });
      pointsOut = cloud.size();
      break;
    }
    case Stage::roi: {
      // Masking in place is idempotent: every iteration tests every point again.
      // (`in` belongs to this run, so masking its shared memory disturbs nothing.)
      da::PointCloud cloud = in.transformed;
      timeStage(state, stream, [&] { cloud.maskByRegionOfInterest(box, stream); });
      pointsOut = cloud.size();
      break;
    }
    case Stage::unorganize:
      timeStage(state, stream, [&] { lastOut = in.masked.toUnorganizedPointCloud(stream); });
      pointsOut = lastOut.size();
      break;
    case Stage::voxel:
      timeStage(state, stream, [&] { lastOut = in.unorganized.voxelDownsampled(kVoxelMm, 1, stream); });
      pointsOut = lastOut.size();
      break;
    case Stage::fineVoxel: {
      // On the stream compaction's capacity, as in the pipeline: the slow path's segment
      // must leave its missing points out.
      const da::UnorganizedPointCloud capacity = in.masked.toUnorganizedPointCloud(stream);
      timeStage(state, stream, [&] { lastOut = capacity.voxelDownsampled(kFineVoxelMm, 1, stream); });
      pointsOut = lastOut.size();
      break;
    }
    case Stage::planeFitNormals:
      timeStage(state, stream, [&] {
        const auto normals = in.downsampled.deviceNormalsXYZ(kPlaneFitWindow, stream);
        pointsOut = normals.size();
      });
      break;
    case Stage::pipeline:
    case Stage::pipelineGraph:
    case Stage::pipelinePlaneFit: {
      const auto pipeline = [&] {
        da::PointCloud cloud = in.full.downsampled(da::Downsampling::by2x2, stream);
        // The stitching pipeline's normals: the plane fit, only where the ROI keeps points.
        const auto normals = which == Stage::pipelinePlaneFit
                                 ? cloud.deviceNormalsXYZ(kPlaneFitWindow, box, m, stream)
                                 : cloud.deviceNormalsXYZ(stream);
        // The transform and the ROI in one pass, and the voxel grid straight from the
        // grid, as FrameLoop runs them: the compaction (the unorganize row) is not
        // needed in between.
        cloud.transformAndMaskByRegionOfInterest(m, box, stream);
        lastOut = cloud.voxelDownsampled(kVoxelMm, 1, stream);
        benchmark::DoNotOptimize(normals.devicePointer());
      };
      if (which != Stage::pipelineGraph) {
        timeStage(state, stream, pipeline);
      } else if (!timeAsGraph(state, stream, pipeline)) {
        return;
      }
      pointsOut = lastOut.size();
      break;
    }
  }
  state.counters["points_in"] = static_cast<double>(which == Stage::downsample || which == Stage::pipeline ||
                                                            which == Stage::pipelineGraph ||
                                                            which == Stage::pipelinePlaneFit
                                                        ? in.full.size()
                                                    : which == Stage::voxel || which == Stage::fineVoxel
                                                        ? in.unorganized.size()
                                                        : in.downsampled.size());
  state.counters["points_out"] = static_cast<double>(pointsOut);
  state.counters["bytes"] = stageBytes(in, which);
}

}  // namespace

int main(int argc, char** argv) {
  const std::pair<const char*, Stage> stages[] = {
      {"pc_downsample_2x2", Stage::downsample}, {"pc_normals", Stage::normals},
      {"pc_transform", Stage::transform},       {"pc_roi", Stage::roi},
      {"pc_unorganize", Stage::unorganize},     {"pc_voxel", Stage::voxel},
      {"pc_pipeline", Stage::pipeline},         {"pc_voxel_fine", Stage::fineVoxel},
      {"pc_pipeline_graph", Stage::pipelineGraph},
      {"pc_normals_plane_fit", Stage::planeFitNormals}, {"pc_pipeline_plane_fit", Stage::pipelinePlaneFit},
      {"pc_transform_roi", Stage::transformRoi},
  };
  for (const auto& device : da::ComputeDevice::all())
    for (const CameraSize camera : kCameras) {
      if (camera.width != kCameras[0].width && !dabench::isGpu(device)) continue;  // CPU devices: the frame size
      for (const auto& [name, which] : stages) {
        if (which == Stage::fineVoxel && !dabench::isGpu(device)) continue;  // a GPU's slow path
        if (which == Stage::pipelineGraph && device.backend() != da::ComputeBackend::cuda) continue;
        benchmark::RegisterBenchmark((std::string(name) + "/" + dabench::deviceTag(device) + "/" +
                                      std::to_string(camera.height * camera.width))
                                         .c_str(),
                                     stage, device, camera, which)
            ->UseManualTime()
            ->Unit(benchmark::kMicrosecond);
      }
    }
  return dabench::runRegistered(argc, argv);
}
