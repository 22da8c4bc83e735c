// Camera data on every device: the organized-cloud camera filters (SNR noise removal,
// outlier removal, depth smoothing, hole repair) and RGB-D (a cloud from a U16 depth
// image, and the z-buffered projection of a cloud into depth and colour images) on a
// 1920x1200 synthetic scene (io.hpp synthesizeScene, the default camera); CPU OpenCL
// devices run a 480x300 scene, since the frame size takes long there and says nothing
// about GPUs.
//
// Times are device-event spans around each operation on one stream (manual time); the
// input is prepared once outside the timed loop and every iteration writes new arrays,
// so iterations are independent.
#include <string>

#include "bench_util.hpp"

namespace da = devicearray;

namespace {

da::SynthOptions sceneOptions(bool fullFrame) {
  da::SynthOptions options;
  if (!fullFrame) options.camera = da::PinholeCamera::withFieldOfView(480, 300, 60.0);
  return options;
}

enum class Operation { noise, outliers, smoothing, holes, fromDepth, projection };

void operation(benchmark::State& state, da::ComputeDevice device, Operation which) {
  const da::SynthOptions options = sceneOptions(dabench::isGpu(device));
  const da::PointCloud cloud = da::PointCloud::fromHost(da::synthesizeScene(options), device);
  const da::PinholeCamera& camera = options.camera;
  constexpr float kDepthScale = 0.05f;  // mm per unit of the U16 depth image
  da::Stream stream(device);
  switch (which) {
    case Operation::noise:
      dabench::timeOnDevice(state, stream, [&] { benchmark::DoNotOptimize(cloud.noiseFiltered(5.0f, stream)); });
      break;
    case Operation::outliers:
      dabench::timeOnDevice(state, stream, [&] { benchmark::DoNotOptimize(cloud.outliersFiltered(5.0f, stream)); });
      break;
    case Operation::smoothing:
      dabench::timeOnDevice(state, stream, [&] { benchmark::DoNotOptimize(cloud.depthSmoothed(1.5f, 10.0f, 3, stream)); });
      break;
    case Operation::holes:
      dabench::timeOnDevice(state, stream, [&] { benchmark::DoNotOptimize(cloud.holesFilled(8, 10.0f, stream)); });
      break;
    case Operation::fromDepth: {
      const da::RGBDImage image = da::projectToRGBDImage(cloud, camera, da::Depth::U16, kDepthScale);
      dabench::timeOnDevice(state, stream, [&] {
        benchmark::DoNotOptimize(da::pointCloudFromDepthImage(image.depth, kDepthScale, camera, stream));
      });
      break;
    }
    case Operation::projection:
      dabench::timeOnDevice(state, stream, [&] {
        benchmark::DoNotOptimize(
            da::projectToRGBDImage(cloud, camera, da::Depth::U16, kDepthScale, da::identityMatrix4x4(), stream));
      });
      break;
  }
  state.counters["pixels"] = static_cast<double>(cloud.size());
}

}  // namespace

int main(int argc, char** argv) {
  const std::pair<const char*, Operation> operations[] = {
      {"cam_filter_noise", Operation::noise},          {"cam_filter_outliers", Operation::outliers},
      {"cam_smooth_depth_r3", Operation::smoothing},   {"cam_fill_holes_8", Operation::holes},
      {"rgbd_from_depth_u16", Operation::fromDepth},  {"rgbd_project_u16_rgba", Operation::projection},
  };
  return dabench::runPerDevice(argc, argv, operations, operation);
}
