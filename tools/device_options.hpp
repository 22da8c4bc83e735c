// What `process` and `bench` share: the --device option, telling CPU devices apart
// (they get smaller default workloads), size parsing and timing a stage of device
// work with events.
#pragma once

#include <cstddef>
#include <functional>
#include <string>
#include <vector>

#include "devicearray/device.hpp"
#include "devicearray/stream.hpp"

namespace devicearray::cli {

/// Help text of the --device option.
inline constexpr const char* kDeviceOptionHelp =
    "Device: cuda:N, opencl:N (index among the OpenCL devices), or N (the # column of 'devicearray info'); "
    "default: DEVICEARRAY_BACKEND/DEVICEARRAY_DEVICE, else the first CUDA device, else the first OpenCL GPU, "
    "else the first OpenCL CPU";

/// The device named by a --device value (empty: ComputeDevice::defaultDevice()). Throws
/// CommandError for a malformed value and devicearray::Error when no such device exists.
ComputeDevice selectDevice(const std::string& spec);

/// True for an OpenCL CPU device (PoCL and the like): work sizes that take
/// milliseconds on a GPU take seconds there. CUDA devices are never CPUs; an OpenCL
/// device whose type cannot be queried counts as a GPU.
bool isCpuDevice(const ComputeDevice& device);

/// Parses "HxW" (e.g. 1200x1920) into positive height and width. Throws CommandError.
void parseSize(const std::string& text, const std::string& what, int& height, int& width);

/// Device time (Event::elapsedTime between events recorded on `stream` before and
/// after) and host wall time of one stage of work.
struct StageTime {
  double gpuMs = 0;
  double wallMs = 0;
};

/// Runs `work` (which enqueues on `stream`; it may block), records events around it,
/// waits for the end event and returns both times. Blocking.
StageTime timeOnStream(Stream& stream, const std::function<void()>& work);

/// Host wall time of `work`, for blocking work that runs on the library's own queue.
StageTime timeOnHost(const std::function<void()>& work);

}  // namespace devicearray::cli
