// Registration of two views of the synthetic scene on every device:
//   icp_iteration  one point-to-plane ICP step (pair, sum the 6x6 system on the device,
//                  read it back, solve): the time of a registration running K steps
//                  minus that of one running none, divided by K;
//   registration   a whole localPointCloudRegistration of two 1920x1200 views
//                  downsampled 2x2, the target's normals estimated inside.
// Each run is named <name>/<device>/<source points>. Registration blocks (each step
// reads its sums back), so times are host wall-clock times of the blocking call. CPU
// OpenCL devices (PoCL) run quarter-resolution views: the full ones take minutes there.
#include <chrono>
#include <cmath>
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
}

}  // namespace

int main(int argc, char** argv) {
  for (const da::ComputeDevice& device : da::ComputeDevice::all()) {
    const std::string tag = dabench::deviceTag(device);
    benchmark::RegisterBenchmark(("icp_iteration/" + tag).c_str(), icpIteration, device)
        ->UseManualTime()
        ->Unit(benchmark::kMillisecond);
    benchmark::RegisterBenchmark(("registration/" + tag).c_str(), registration, device)
        ->UseManualTime()
        ->Unit(benchmark::kMillisecond);
  }
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  return 0;
}
