// `devicearray bench`: median device times of core operations and of the point-cloud
// pipeline on a synthetic scene, as a readable table. Self-contained on purpose: it
// must run wherever the command runs, without the benchmark suite of bench/.
//
// Every measurement is the Event::elapsedTime between events recorded on one stream
// around the operation, after one untimed warm-up run (program builds, memory pools,
// first touch); the table shows the median and the minimum over --repeat runs.
#include <CLI/CLI.hpp>
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "commands.hpp"
#include "device_options.hpp"
#include "devicearray/device_array.hpp"
#include "devicearray/gpu_mat_nd.hpp"
#include "devicearray/host_mat.hpp"
#include "devicearray/io.hpp"
#include "devicearray/point_cloud.hpp"
#include "devicearray/stream.hpp"
#include "devicearray/types.hpp"
#include "progress.hpp"

namespace devicearray::cli {
namespace {

struct BenchArgs {
  std::string device;
  std::string size;  // empty: by device type
  int repeat = 0;    // 0: by device type
  double voxel = 5.0;
};

struct Measurement {
  std::string name;
  std::string data;
  double bytes = 0;   // moved per run, for GB/s (0: not meaningful)
  double points = 0;  // input points per run, for Mpts/s (0: not meaningful)
  std::vector<double> gpuMs;
};

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n % 2 == 1 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

std::string megabytes(double bytes) {
  char b[32];
  std::snprintf(b, sizeof b, "%.1f MB", bytes / 1e6);
  return b;
}

std::string pointsText(std::size_t n) { return std::to_string(n) + " pts"; }

// The synthetic camera's pose is fixed (synthesizeScene: 1.1 m above the floor,
// looking at a point 1.3 m ahead), so this rigid map takes camera coordinates to a
// frame looking straight down from 2.5 m (z = 2500 is the floor) and this box keeps
// everything between 20 mm and 1.5 m above the floor: the objects without the floor.
// scripts/demo.sh uses the same numbers.
constexpr Matrix4x4 kCameraToTopDown = {1, 0,          0,          0,    0, 0.6459422f, -0.7633862f, 1500,
                                        0, 0.7633862f, 0.6459422f, 1400, 0, 0,          0,           1};
constexpr RegionOfInterestBox kAboveFloor = {{-2000, -2000, 0}, {2000, -2000, 0}, {-2000, 2000, 0}, 1000, 2480};

void printTable(const std::vector<Measurement>& ms, int repeat) {
  std::printf("%-30s %-12s %11s %11s %9s %9s\n", "operation", "data", "median ms", "min ms", "GB/s", "Mpts/s");
  for (const Measurement& m : ms) {
    const double med = median(m.gpuMs);
    const double mn = *std::min_element(m.gpuMs.begin(), m.gpuMs.end());
    char gbs[32] = "-", mps[32] = "-";
    if (m.bytes > 0 && med > 0) std::snprintf(gbs, sizeof gbs, "%.2f", m.bytes / (med * 1e-3) / 1e9);
    if (m.points > 0 && med > 0) std::snprintf(mps, sizeof mps, "%.1f", m.points / (med * 1e-3) / 1e6);
    std::printf("%-30s %-12s %11.3f %11.3f %9s %9s\n", m.name.c_str(), m.data.c_str(), med, mn, gbs, mps);
  }
  std::printf("(device time between events on one stream; median and minimum of %d runs after a warm-up)\n", repeat);
}

void runBench(const BenchArgs& a) {
  const ComputeDevice device = selectDevice(a.device);
  const bool cpu = isCpuDevice(device);
  int height = cpu ? 400 : 1200, width = cpu ? 640 : 1920;
  if (!a.size.empty()) parseSize(a.size, "--size", height, width);
  const int repeat = a.repeat > 0 ? a.repeat : (cpu ? 5 : 30);
  const float voxel = static_cast<float>(a.voxel);
  if (height < 2 || width < 2)
    throw CommandError("--size " + a.size + ": the 2x2 downsample needs at least 2 x 2 points");

  SynthOptions options;
  options.camera = PinholeCamera::withFieldOfView(width, height, 60.0);
  HostPointCloud scene;
  {
    ProgressBar bar("synthesizing " + std::to_string(height) + " x " + std::to_string(width) + " scene");
    options.progress = [&bar](double f) { bar.update(f); };
    scene = synthesizeScene(options);
  }
  const std::size_t n = scene.size();
  std::printf("devicearray bench on %s%s\nscene: %d x %d synthetic cloud (%zu points, %zu valid), %d runs each\n",
              device.toString().c_str(), cpu ? " (a CPU device: small default size)" : "", height, width, n,
              scene.validCount(), repeat);

  Stream stream(device);
  const PointCloud base = PointCloud::fromHost(scene, device);
  const GpuMatND xyz = base.storedXYZ().toGpuMatND();
  const double xyzBytes = static_cast<double>(n) * sizeof(PointXYZ);
  HostMat pinned = HostMat::pinned({height, width}, makeType(Depth::F32, 3));
  std::memcpy(pinned.data(), scene.xyz.data(), n * sizeof(PointXYZ));

  // Inputs of each pipeline stage, made once so that each stage is timed alone.
  const PointCloud down = base.downsampled(Downsampling::by2x2, stream);
  const PointCloud moved = down.transformed(kCameraToTopDown, stream);
  const PointCloud inBox = moved.maskedByRegionOfInterest(kAboveFloor, stream);
  const UnorganizedPointCloud compact = inBox.toUnorganizedPointCloud(stream);
  stream.waitForCompletion();
  if (compact.size() == 0)
    throw CommandError("--size " + std::to_string(height) + "x" + std::to_string(width) +
                       ": too small, no point of the scene is left above the floor");

  GpuMatND cloneDst;
  GpuMatND uploadDst({height, width}, makeType(Depth::F32, 3), device);
  DeviceArray<PointXYZW> xyzw;
  DeviceArray<NormalXYZ> normals;
  PointCloud scratchCloud;
  UnorganizedPointCloud scratchPoints;

  std::vector<Measurement> ms;
  const auto add = [&](std::string name, std::string data, double bytes, double points, std::function<void()> work) {
    Measurement m{std::move(name), std::move(data), bytes, points, {}};
    m.gpuMs.reserve(static_cast<std::size_t>(repeat));
    (void)timeOnStream(stream, work);  // warm-up
    for (int r = 0; r < repeat; ++r) m.gpuMs.push_back(timeOnStream(stream, work).gpuMs);
    ms.push_back(std::move(m));
  };
  char voxelName[48];
  std::snprintf(voxelName, sizeof voxelName, "voxel %g mm", a.voxel);
  const int operations = 11;
  ProgressBar bar("benchmarking");
  const auto step = [&] { bar.update(static_cast<double>(ms.size()) / operations); };

  add("clone XYZ", megabytes(xyzBytes), 2 * xyzBytes, 0, [&] { cloneDst = xyz.clone(stream); });
  step();
  add("upload XYZ (pinned host)", megabytes(xyzBytes), xyzBytes, 0, [&] { uploadDst.upload(pinned, stream); });
  step();
  add("download XYZ (pinned host)", megabytes(xyzBytes), xyzBytes, 0, [&] { xyz.download(pinned, stream); });
  step();
  add("convert XYZ -> XYZW", megabytes(xyzBytes), static_cast<double>(n) * (sizeof(PointXYZ) + sizeof(PointXYZW)), 0,
      [&] { xyzw = convert<PointXYZW>(base.storedXYZ(), stream); });
  step();
  add("downsample 2x2", pointsText(n), 0, static_cast<double>(n),
      [&] { scratchCloud = base.downsampled(Downsampling::by2x2, stream); });
  step();
  add("normals", pointsText(down.size()), 0, static_cast<double>(down.size()),
      [&] { normals = down.deviceNormalsXYZ(stream); });
  step();
  add("transform", pointsText(down.size()), 0, static_cast<double>(down.size()),
      [&] { scratchCloud = down.transformed(kCameraToTopDown, stream); });
  step();
  add("roi", pointsText(moved.size()), 0, static_cast<double>(moved.size()),
      [&] { scratchCloud = moved.maskedByRegionOfInterest(kAboveFloor, stream); });
  step();
  add("unorganize", pointsText(inBox.size()), 0, static_cast<double>(inBox.size()),
      [&] { scratchPoints = inBox.toUnorganizedPointCloud(stream); });
  step();
  add(voxelName, pointsText(compact.size()), 0, static_cast<double>(compact.size()),
      [&] { scratchPoints = compact.voxelDownsampled(voxel, 1, stream); });
  step();
  add("pipeline (all 6 stages)", pointsText(n), 0, static_cast<double>(n), [&] {
    PointCloud c = base.downsampled(Downsampling::by2x2, stream);
    normals = c.deviceNormalsXYZ(stream);
    c.transform(kCameraToTopDown, stream);
    c.maskByRegionOfInterest(kAboveFloor, stream);
    scratchPoints = c.toUnorganizedPointCloud(stream).voxelDownsampled(voxel, 1, stream);
  });
  bar.finish();
  printTable(ms, repeat);
}

}  // namespace

void addBenchCommand(CLI::App& app) {
  auto a = std::make_shared<BenchArgs>();
  CLI::App* cmd = app.add_subcommand(
      "bench",
      "Time core operations (clone, upload, download, XYZ -> XYZW) and the point-cloud pipeline on a "
      "synthetic scene: median device time, GB/s and points/s.");
  cmd->add_option("--device", a->device, kDeviceOptionHelp);
  cmd->add_option("--size", a->size, "Scene size HxW (default 1200x1920 on GPUs, 400x640 on CPU devices)");
  cmd->add_option("--repeat", a->repeat, "Timed runs per operation (default 30 on GPUs, 5 on CPU devices)")
      ->check(CLI::Range(1, 100000));
  cmd->add_option("--voxel", a->voxel, "Voxel size in mm for the voxel stage")
      ->capture_default_str()
      ->check(CLI::Range(0.01, 1e6));
  cmd->callback([a] { runBench(*a); });
}

}  // namespace devicearray::cli
