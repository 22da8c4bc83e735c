#include "device_options.hpp"

#include <cctype>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <limits>

#ifdef DEVICEARRAY_CLI_QUERY_OPENCL
#include <CL/cl.h>
#endif

#include "commands.hpp"
#include "devicearray/error.hpp"
#include "text.hpp"

namespace devicearray::cli {
namespace {

/// A non-negative decimal integer that fits an int, or -1.
int parseIndex(const std::string& s) {
  if (s.empty() || s.size() > 9) return -1;
  int v = 0;
  for (char c : s) {
    if (!std::isdigit(static_cast<unsigned char>(c))) return -1;
    v = v * 10 + (c - '0');
  }
  return v;
}

double msSince(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace

ComputeDevice selectDevice(const std::string& spec) {
  if (spec.empty()) return ComputeDevice::defaultDevice();
  const auto colon = spec.find(':');
  const std::string prefix = colon == std::string::npos ? "" : spec.substr(0, colon);
  const int index = parseIndex(colon == std::string::npos ? spec : spec.substr(colon + 1));
  if (index < 0 || (colon != std::string::npos && prefix != "cuda" && prefix != "opencl"))
    throw CommandError("--device '" + printable(spec) +
                       "' is not cuda:N, opencl:N or N (N a device index, see 'devicearray info')");
  if (prefix == "cuda") return ComputeDevice::cuda(index);
  if (prefix == "opencl") return ComputeDevice::opencl(index);
  const std::vector<ComputeDevice> devices = ComputeDevice::all();
  if (static_cast<std::size_t>(index) >= devices.size())
    throw CommandError("--device " + spec + " is out of range: this machine has " + std::to_string(devices.size()) +
                       " usable device(s), numbered from 0 (see 'devicearray info')");
  return devices[static_cast<std::size_t>(index)];
}

bool isCpuDevice(const ComputeDevice& device) {
  if (device.backend() != ComputeBackend::opencl) return false;
#ifdef DEVICEARRAY_CLI_QUERY_OPENCL
  cl_device_type type = 0;
  if (clGetDeviceInfo(static_cast<cl_device_id>(device.nativeDevice()), CL_DEVICE_TYPE, sizeof type, &type, nullptr) ==
      CL_SUCCESS)
    return (type & CL_DEVICE_TYPE_CPU) != 0;
  return false;
#else
  // Without the OpenCL headers, PoCL's CPU driver is recognizable by its model name.
  const std::string model = device.model();
  return model.find("pthread") != std::string::npos || model.find("cpu") != std::string::npos;
#endif
}

void parseSize(const std::string& text, const std::string& what, int& height, int& width) {
  const auto x = text.find_first_of("xX");
  const int h = x == std::string::npos ? -1 : parseIndex(text.substr(0, x));
  const int w = x == std::string::npos ? -1 : parseIndex(text.substr(x + 1));
  if (h <= 0 || w <= 0 || h > 20000 || w > 20000)
    throw CommandError(what + " '" + printable(text) + "' is not HxW with H and W in 1..20000 (e.g. 1200x1920)");
  height = h;
  width = w;
}

StageTime timeOnStream(Stream& stream, const std::function<void()>& work) {
  const ComputeDevice device = stream.device();
  Event start(device), stop(device);
  const auto t0 = std::chrono::steady_clock::now();
  start.record(stream);
  work();
  stop.record(stream);
  stop.waitForCompletion();
  StageTime t;
  t.wallMs = msSince(t0);
  t.gpuMs = static_cast<double>(Event::elapsedTime(start, stop));
  return t;
}

StageTime timeOnHost(const std::function<void()>& work) {
  const auto t0 = std::chrono::steady_clock::now();
  work();
  StageTime t;
  t.wallMs = msSince(t0);
  t.gpuMs = std::numeric_limits<double>::quiet_NaN();
  return t;
}

}  // namespace devicearray::cli
