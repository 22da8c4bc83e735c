// Registration of two views of the synthetic scene on every device:
//   icp_iteration  one point-to-plane ICP step (pair, sum the 6x6 system on the device,
//                  read it back, solve): the time of a registration running K steps
//                  minus that of one running none, divided by K;
//   registration   a whole localPointCloudRegistration of two 1920x1200 views
//                  downsampled 2x2, the target's normals estimated inside; counters
//                  rotation_error_deg and translation_error_mm against the known pose;
//   normals_plane_fit  PointCloud::deviceNormalsXYZ(window) on a 960x600 view (the
//                  frame pipeline's normals stage after its 2x2 downsample), device
//                  time, for the windows 5 (what the pipeline's grid needs), 7 and
//                  kDefaultNormalWindowSize (what a full-resolution grid needs);
//   normals_knn    UnorganizedPointCloud::estimateNormals(k) on the valid points of
//                  the same view, device time.
// The normals rows count median_error_deg against the scene's exact normals and
// missing (valid points that got no normal).
// Each run is named <name>/<device>/<source points>. Registration blocks (each step
// reads its sums back), so times are host wall-clock times of the blocking call. CPU
// OpenCL devices (PoCL) run quarter-resolution views: the full ones take minutes there.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <numbers>
#include <vector>
#include <map>
#include <string>

#include "bench_util.hpp"

namespace da = devicearray;

namespace {

/// Rotation by rx, ry, rz degrees about x, then y, then z, then translation (mm).
da::Matrix4x4 rigid(double rx, double ry, double rz, float tx, float ty, float tz) {
  const double d = 3.14159265358979323846 / 180.0;
  const double cx = std::cos(rx * d), sx = std::sin(rx * d), cy = std::cos(ry * d), sy = std::sin(ry * d),
               cz = std::cos(rz * d), sz = std::sin(rz * d);
  return {float(cz * cy), float(cz * sy * sx - sz * cx), float(cz * sy * cx + sz * sx), tx,
          float(sz * cy), float(sz * sy * sx + cz * cx), float(sz * sy * cx - cz * sx), ty,
          float(-sy),     float(cy * sx),                float(cy * cx),                tz,
          0,              0,                             0,                             1};
}

const da::Matrix4x4 kSourcePose = rigid(2, -6, 1, 40, -10, 15);

/// The valid points of a view from `pose`, downsampled 2x2.
da::UnorganizedPointCloud view(const da::ComputeDevice& device, int width, int height, const da::Matrix4x4& pose) {
  da::SynthOptions o;
  o.camera = da::PinholeCamera::withFieldOfView(width, height, 60.0);
  o.cameraPose = pose;
  o.withColors = false;
  o.withSNR = false;
  const da::PointCloud organized = da::PointCloud::fromHost(da::synthesizeScene(o), device);
  return organized.downsampled(da::Downsampling::by2x2).toUnorganizedPointCloud();
}

/// The rotation angle (degrees) of a^T b and the distance of the translations (mm).
std::pair<double, double> poseError(const da::Matrix4x4& a, const da::Matrix4x4& b) {
  double trace = 0;
  for (int i = 0; i < 3; ++i)
    for (int k = 0; k < 3; ++k) trace += double(a[4 * k + i]) * b[4 * k + i];
  const double angle = std::acos(std::clamp((trace - 1) / 2, -1.0, 1.0)) * 180.0 / std::numbers::pi;
  return {angle, std::hypot(a[3] - b[3], a[7] - b[7], a[11] - b[11])};
}

double seconds(const std::chrono::steady_clock::time_point& since) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - since).count();
}

void icpIteration(benchmark::State& state, da::ComputeDevice device) {
  // 200 k source points: a 1920x1200 view downsampled 2x2 has about 470 k valid points,
  // so every other one (a voxel grid would do as well).
  const bool gpu = dabench::isGpu(device);
  da::UnorganizedPointCloud target = view(device, gpu ? 1920 : 960, gpu ? 1200 : 600, da::identityMatrix4x4());
  da::UnorganizedPointCloud source = view(device, gpu ? 1920 : 960, gpu ? 1200 : 600, kSourcePose);
  if (gpu) source = source.voxelDownsampled(2.3f, 1);
  target.estimateNormals();
  constexpr int kSteps = 10;
  da::LocalPointCloudRegistrationParameters steps;
  steps.rmsChangeThreshold = 0.0f;  // never converged: exactly kSteps steps
  steps.coverageChangeThreshold = 0.0f;
  steps.maxIterations = kSteps;
  da::LocalPointCloudRegistrationParameters none = steps;
  none.maxIterations = 0;
  (void)da::localPointCloudRegistration(target, source, steps, kSourcePose);  // warm-up: program builds, pools
  for (auto _ : state) {
    auto t0 = std::chrono::steady_clock::now();
    (void)da::localPointCloudRegistration(target, source, none, kSourcePose);
    const double setup = seconds(t0);
    t0 = std::chrono::steady_clock::now();
    (void)da::localPointCloudRegistration(target, source, steps, kSourcePose);
    state.SetIterationTime(std::max(0.0, seconds(t0) - setup) / kSteps);
  }
  state.counters["points"] = static_cast<double>(source.size());
}

void registration(benchmark::State& state, da::ComputeDevice device) {
  const bool gpu = dabench::isGpu(device);
  const int width = gpu ? 1920 : 480, height = gpu ? 1200 : 300;
  const da::UnorganizedPointCloud target = view(device, width, height, da::identityMatrix4x4());
  const da::UnorganizedPointCloud source = view(device, width, height, kSourcePose);
  // The initial guess is off by about 0.5 degree and 3 mm, as a robot's pose might be.
  const da::Matrix4x4 initial = rigid(2.3, -6.2, 1.2, 42, -8, 13);
  da::LocalPointCloudRegistrationResult result =
      da::localPointCloudRegistration(target, source, {}, initial);  // warm-up
  for (auto _ : state) {
    const auto t0 = std::chrono::steady_clock::now();
    result = da::localPointCloudRegistration(target, source, {}, initial);
    state.SetIterationTime(seconds(t0));
  }
  state.counters["points"] = static_cast<double>(source.size());
  state.counters["converged"] = result.converged() ? 1 : 0;
  state.counters["rms_mm"] = result.rootMeanSquareError();
  state.counters["coverage"] = result.sourceCoverage();
  const auto [angle, shift] = poseError(result.transform(), kSourcePose);
  state.counters["rotation_error_deg"] = angle;
  state.counters["translation_error_mm"] = shift;
}

/// A view with the scene's exact normals, at the pipeline's resolution after 2x2.
da::HostPointCloud exactView(bool gpu) {
  da::SynthOptions o;
  o.camera = da::PinholeCamera::withFieldOfView(gpu ? 960 : 480, gpu ? 600 : 300, 60.0);
  o.withNormals = true;
  o.withColors = false;
  return da::synthesizeScene(o);
}

/// Median angle (degrees) between `got` and the exact normals of the valid points of
/// `exact` (in their order), and how many of those points got no normal.
void countNormalErrors(benchmark::State& state, const std::vector<da::NormalXYZ>& got, const da::HostPointCloud& exact) {
  std::vector<double> errors;
  std::size_t missing = 0, j = 0;
  const bool organized = got.size() == exact.size();
  for (std::size_t i = 0; i < exact.size(); ++i) {
    if (!exact.isValid(i)) continue;
    const da::NormalXYZ& n = got[organized ? i : j++];
    if (std::isnan(n.x)) {
      ++missing;
      continue;
    }
    const double d = n.x * exact.normals[3 * i] + n.y * exact.normals[3 * i + 1] + n.z * exact.normals[3 * i + 2];
    errors.push_back(std::acos(std::clamp(d, -1.0, 1.0)) * 180.0 / std::numbers::pi);
  }
  std::nth_element(errors.begin(), errors.begin() + std::ptrdiff_t(errors.size() / 2), errors.end());
  state.counters["median_error_deg"] = errors.empty() ? -1.0 : errors[errors.size() / 2];
  state.counters["missing"] = static_cast<double>(missing);
  state.counters["points"] = static_cast<double>(got.size());
}

void normalsPlaneFit(benchmark::State& state, da::ComputeDevice device) {
  const da::HostPointCloud exact = exactView(dabench::isGpu(device));
  da::HostPointCloud input = exact;
  input.normals.clear();
  const da::PointCloud cloud = da::PointCloud::fromHost(input, device);
  da::Stream stream(device);
  da::DeviceArray<da::NormalXYZ> normals;
  dabench::timeOnDevice(state, stream, [&] {
    normals = cloud.deviceNormalsXYZ(static_cast<int>(state.range(0)), stream);
  });
  countNormalErrors(state, normals.toHost(), exact);
}

void normalsKnn(benchmark::State& state, da::ComputeDevice device) {
  const da::HostPointCloud exact = exactView(dabench::isGpu(device));
  da::HostPointCloud input = exact;
  input.normals.clear();
  const da::UnorganizedPointCloud valid = da::PointCloud::fromHost(input, device).toUnorganizedPointCloud();
  da::Stream stream(device);
  da::UnorganizedPointCloud cloud = valid;
  dabench::timeOnDevice(state, stream, [&] {
    cloud = valid;
    cloud.estimateNormals(da::UnorganizedPointCloud::kDefaultNormalNeighbours, stream);
  });
  countNormalErrors(state, cloud.deviceNormalsXYZ(stream).toHost(), exact);
}

}  // namespace

int main(int argc, char** argv) {
  struct Case {
    const char* name;
    void (*run)(benchmark::State&, da::ComputeDevice);
    benchmark::TimeUnit unit;
    std::vector<std::int64_t> args;  ///< one run per value (state.range(0)), or none
  };
  const Case cases[] = {{"icp_iteration/", icpIteration, benchmark::kMillisecond},
                        {"registration/", registration, benchmark::kMillisecond},
                        {"normals_plane_fit/", normalsPlaneFit, benchmark::kMicrosecond,
                         {5, 7, da::PointCloud::kDefaultNormalWindowSize}},
                        {"normals_knn/", normalsKnn, benchmark::kMicrosecond}};
  for (const da::ComputeDevice& device : da::ComputeDevice::all())
    for (const Case& c : cases) {
      benchmark::internal::Benchmark* b =
          benchmark::RegisterBenchmark((c.name + dabench::deviceTag(device)).c_str(), c.run, device)
              ->UseManualTime()
              ->Unit(c.unit);
      for (const std::int64_t arg : c.args) b->Arg(arg);
    }
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  return 0;
}
