// Helpers for benchmarks that time device work with device events.
#pragma once

#include <benchmark/benchmark.h>

#include <string>
#include <vector>

#include <devicearray/devicearray.hpp>

namespace dabench {

/// "cuda0" / "opencl1": used in benchmark names so compare.py can group by device.
inline std::string deviceTag(const devicearray::ComputeDevice& d) {
  return std::string(d.backend() == devicearray::ComputeBackend::cuda ? "cuda" : "opencl") +
         std::to_string(d.ordinal() < 0 ? 99 : d.ordinal());
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

}  // namespace dabench
