// Benchmarks of the foundation operations on every device: stream-ordered
// allocation, clone (continuous and strided views), upload and download (pinned
// and pageable host memory). Device work is timed with device events; the
// allocation benchmark measures host time per allocate+release pair.
// bench/compare.py turns the JSON output into ratios against the CUDA baseline
// (cuda_baseline.cu) measured in the same run.
#include <cstring>
#include <vector>

#include "bench_util.hpp"

namespace da = devicearray;

namespace {

const int kU8 = da::makeType(da::Depth::U8, 1);

void allocate(benchmark::State& state, da::ComputeDevice device) {
  const int bytes = static_cast<int>(state.range(0));
  { da::GpuMatND warm({bytes}, kU8, device); }
  for (auto _ : state) {
    da::GpuMatND m({bytes}, kU8, device);
    benchmark::DoNotOptimize(m);
  }
  da::synchronizeStream(device.sdkStreamOrQueue());
}

void cloneContinuous(benchmark::State& state, da::ComputeDevice device) {
  const int bytes = static_cast<int>(state.range(0));
  da::GpuMatND src({bytes / 4}, da::makeType(da::Depth::F32, 1), device);
  da::Stream stream(device);
  da::GpuMatND dst;
  dabench::timeOnDevice(state, stream, [&] { dst = src.clone(stream); });
  state.SetBytesProcessed(state.iterations() * 2 * static_cast<std::int64_t>(bytes));
}

// A narrow field: the XYZ floats (12 bytes) of every 16-byte XYZW point.
void cloneXyzOfXyzw(benchmark::State& state, da::ComputeDevice device) {
  const int points = static_cast<int>(state.range(0)) / 16;
  da::GpuMatND xyzw({points, 4}, da::makeType(da::Depth::F32, 1), device);
  da::GpuMatND xyz = xyzw({da::Range::all(), da::Range(0, 3)});
  da::Stream stream(device);
  da::GpuMatND dst;
  dabench::timeOnDevice(state, stream, [&] { dst = xyz.clone(stream); });
  state.SetBytesProcessed(state.iterations() * 2 * 12 * static_cast<std::int64_t>(points));
}

// A 2-D region of interest: the centre half of a square image of 4-byte pixels.
void cloneRoi(benchmark::State& state, da::ComputeDevice device) {
  const int bytes = static_cast<int>(state.range(0));
  int w = 1;
  while (static_cast<long>(w) * w * 4 * 4 <= bytes) w *= 2;  // the ROI has `bytes`/4 bytes
  da::GpuMatND image({2 * w, 2 * w}, da::makeType(da::Depth::U8, 4), device);
  da::GpuMatND roi = image({da::Range(w / 2, w / 2 + w), da::Range(w / 2, w / 2 + w)});
  da::Stream stream(device);
  da::GpuMatND dst;
  dabench::timeOnDevice(state, stream, [&] { dst = roi.clone(stream); });
  state.SetBytesProcessed(state.iterations() * 2 * 4 * static_cast<std::int64_t>(w) * w);
}

void upload(benchmark::State& state, da::ComputeDevice device, bool pinned) {
  const int bytes = static_cast<int>(state.range(0));
  da::HostMat host = pinned ? da::HostMat::pinned({bytes}, kU8) : da::HostMat({bytes}, kU8);
  std::memset(host.data(), 7, static_cast<std::size_t>(bytes));
  da::GpuMatND dst({bytes}, kU8, device);
  da::Stream stream(device);
  dabench::timeOnDevice(state, stream, [&] { dst.upload(host, stream); });
  state.SetBytesProcessed(state.iterations() * static_cast<std::int64_t>(bytes));
}

void download(benchmark::State& state, da::ComputeDevice device, bool pinned) {
  const int bytes = static_cast<int>(state.range(0));
  da::HostMat host = pinned ? da::HostMat::pinned({bytes}, kU8) : da::HostMat({bytes}, kU8);
  da::GpuMatND src({bytes}, kU8, device);
  da::Stream stream(device);
  dabench::timeOnDevice(state, stream, [&] { src.download(host, stream); });
  state.SetBytesProcessed(state.iterations() * static_cast<std::int64_t>(bytes));
}

// The host baseline for OpenCL CPU devices (PoCL): what a plain memcpy of the same
// bytes costs on this machine (read + write counted, like the clones).
void hostMemcpy(benchmark::State& state) {
  const auto bytes = static_cast<std::size_t>(state.range(0));
  std::vector<unsigned char> src(bytes, 3), dst(bytes);
  for (auto _ : state) {
    std::memcpy(dst.data(), src.data(), bytes);
    benchmark::DoNotOptimize(dst.data());
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(state.iterations() * 2 * static_cast<std::int64_t>(bytes));
}

void sizes(benchmark::internal::Benchmark* b, bool large) {
  b->Arg(1 << 10)->Arg(1 << 20)->Arg(9'216'000);  // 1 KiB, 1 MiB, a 1920x1200 XYZW frame / 4
  if (large) b->Arg(1 << 28)->Arg(1 << 30);
}

}  // namespace

#ifdef DEVICEARRAY_HAS_CUDA
void registerCudaBaselines();  // cuda_baseline.cu
#endif

int main(int argc, char** argv) {
  for (const auto& device : da::ComputeDevice::all()) {
    const std::string tag = dabench::deviceTag(device);
    const bool gpu = dabench::isGpu(device);
    benchmark::RegisterBenchmark(("allocate/" + tag).c_str(), allocate, device)->Arg(1 << 10)->Arg(1 << 20)->Arg(1 << 28);
    sizes(benchmark::RegisterBenchmark(("clone_continuous/" + tag).c_str(), cloneContinuous, device)->UseManualTime(), gpu);
    sizes(benchmark::RegisterBenchmark(("clone_xyz_of_xyzw/" + tag).c_str(), cloneXyzOfXyzw, device)->UseManualTime(), gpu);
    sizes(benchmark::RegisterBenchmark(("clone_roi/" + tag).c_str(), cloneRoi, device)->UseManualTime(), gpu);
    for (bool pinned : {true, false}) {
      const std::string kind = pinned ? "pinned" : "pageable";
      sizes(benchmark::RegisterBenchmark(("upload_" + kind + "/" + tag).c_str(), upload, device, pinned)->UseManualTime(), gpu);
      sizes(benchmark::RegisterBenchmark(("download_" + kind + "/" + tag).c_str(), download, device, pinned)->UseManualTime(), gpu);
    }
  }
  benchmark::RegisterBenchmark("baseline_host_memcpy/host", hostMemcpy)
      ->Arg(1 << 20)->Arg(9'216'000)->Arg(1 << 26)->UseRealTime();
#ifdef DEVICEARRAY_HAS_CUDA
  registerCudaBaselines();
#endif
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
