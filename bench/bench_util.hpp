// Helpers for benchmarks that time device work with device events.
#pragma once

#include <benchmark/benchmark.h>

#include <cstddef>
#include <string>
#include <utility>
#include <vector>

#include <devicearray/devicearray.hpp>

#if defined(DEVICEARRAY_HAS_OPENCL)
#include <CL/cl.h>
#endif

namespace dabench {

/// "cuda0" / "opencl1": used in benchmark names so compare.py can group by device.
inline std::string deviceTag(const devicearray::ComputeDevice& d) {
  return std::string(d.backend() == devicearray::ComputeBackend::cuda ? "cuda" : "opencl") +
         std::to_string(d.ordinal() < 0 ? 99 : d.ordinal());
}

/// Whether `d` is a GPU (or other accelerator): CPU OpenCL devices such as PoCL's
/// run the small sizes only, since the large ones take minutes there and say nothing
/// about GPUs. (PoCL names its device "pthread-..." or "cpu-..." by version, so the
/// device type is asked, not the name.)
inline bool isGpu(const devicearray::ComputeDevice& d) {
#if defined(DEVICEARRAY_HAS_OPENCL)
  if (d.backend() == devicearray::ComputeBackend::opencl) {
    cl_device_type type = 0;
    clGetDeviceInfo(static_cast<cl_device_id>(d.nativeDevice()), CL_DEVICE_TYPE, sizeof type, &type, nullptr);
    return (type & CL_DEVICE_TYPE_CPU) == 0;
  }
#endif
  return true;
}

/// Runs `body` (which enqueues work on `stream`) once per iteration and reports the
/// device time between two events around it (manual time).
template <class Body>
void timeOnDevice(benchmark::State& state, devicearray::Stream& stream, Body&& body) {
  const devicearray::ComputeDevice device = stream.device();
  body();  // warm-up: pools, program builds, first-touch
  stream.waitForCompletion();
  for (auto _ : state) {
    devicearray::Event start(device), stop(device);
    start.record(stream);
    body();
    stop.record(stream);
    stop.waitForCompletion();
    state.SetIterationTime(static_cast<double>(devicearray::Event::elapsedTime(start, stop)) * 1e-3);
  }
}

/// Runs the registered benchmarks with the command line's options: main()'s body.
inline int runRegistered(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}

/// Registers `bench(state, device, value)` as "NAME/<device tag>" for every device and
/// every (NAME, value) of `cases` (manual time, microseconds), then runs the benchmarks
/// the command line selects. The `main` of a per-device benchmark program.
template <class Value, std::size_t N>
int runPerDevice(int argc, char** argv, const std::pair<const char*, Value> (&cases)[N],
                 void (*bench)(benchmark::State&, devicearray::ComputeDevice, Value)) {
  for (const auto& device : devicearray::ComputeDevice::all())
    for (const auto& [name, value] : cases)
      benchmark::RegisterBenchmark((std::string(name) + "/" + deviceTag(device)).c_str(), bench, device, value)
          ->UseManualTime()
          ->Unit(benchmark::kMicrosecond);
  return runRegistered(argc, argv);
}

}  // namespace dabench
