// Helpers for benchmarks that time device work with device events.
#pragma once

#include <benchmark/benchmark.h>

#include <algorithm>
#include <chrono>
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

/// Seconds since t0 on the host's steady clock.
inline double secondsSince(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

#if defined(DEVICEARRAY_HAS_CUDA)
/// Holds `stream` (a cudaStream_t of CUDA device `device`) back for `microseconds` on
/// the device without touching memory (device_delay.cu).
void delayCudaStream(void* stream, int device, double microseconds);
#endif

/// The device's own time for `body`: its calls are enqueued behind a delay on the
/// device, so the device runs them back to back instead of waiting for the host to
/// enqueue each one. The delay is a kernel that spins for a millisecond on CUDA
/// devices, a 1 GiB copy elsewhere; after a run where the host did not finish
/// enqueuing before the delay ended, the next delay is twice as long (up to 16 times),
/// because a body of many launches (an OpenCL pipeline) can take the host longer than
/// one copy. Sets the counters queued_us (the median event span of the runs kept),
/// queued_delay_us (the delay's span) and enqueue_us (the host's time to make the
/// calls). The runs where the host was late are dropped (their span would be the
/// host's again); queued_us is 0 if all were.
template <class Body>
void timeQueued(benchmark::State& state, devicearray::Stream& stream, Body& body) {
  namespace da = devicearray;
  const da::ComputeDevice device = stream.device();
#if defined(DEVICEARRAY_HAS_CUDA)
  const bool spin = device.backend() == da::ComputeBackend::cuda;
#else
  const bool spin = false;
#endif
  constexpr int kBytes = 1 << 30;  // the copy: about 0.5 ms on a current GPU
  da::GpuMatND from, to;
  if (!spin) {
    from = da::GpuMatND({kBytes}, da::makeType(da::Depth::U8, 1), device);
    to = da::GpuMatND({kBytes}, da::makeType(da::Depth::U8, 1), device);
  }
  std::vector<double> spans, delays, enqueues;
  int lengths = 1;  // the delay, in spins of a millisecond or copies
  for (int run = 0; run < 9; ++run) {
    da::Event delayStart(device), start(device), stop(device);
    delayStart.record(stream);
#if defined(DEVICEARRAY_HAS_CUDA)
    if (spin) delayCudaStream(stream.handle().stream, device.ordinal(), 1000.0 * lengths);
#endif
    if (!spin)
      for (int copy = 0; copy < lengths; ++copy) from.copyTo(to, stream);
    start.record(stream);
    const auto t0 = std::chrono::steady_clock::now();
    body();
    const double hostSeconds = secondsSince(t0);
    stop.record(stream);
    stop.waitForCompletion();
    const double delay = da::Event::elapsedTime(delayStart, start) * 1e-3;
    if (hostSeconds >= delay) {
      lengths = std::min(2 * lengths, 16);
      continue;
    }
    spans.push_back(static_cast<double>(da::Event::elapsedTime(start, stop)) * 1e3);
    delays.push_back(delay * 1e6);
    enqueues.push_back(hostSeconds * 1e6);
  }
  const auto median = [](std::vector<double>& v) {
    std::sort(v.begin(), v.end());
    return v.empty() ? 0.0 : v[v.size() / 2];
  };
  state.counters["queued_us"] = median(spans);
  state.counters["queued_delay_us"] = median(delays);
  state.counters["enqueue_us"] = median(enqueues);
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
