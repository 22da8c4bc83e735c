// Queries of OpenCL platform, device and queue properties, shared by device
// enumeration (opencl_backend.cpp), adoption of a caller's objects
// (opencl_adoption.cpp), the device (opencl_device.cpp) and its queues
// (opencl_queue.cpp).
#pragma once

#include <CL/cl.h>

#include <string>

#include "opencl/cl_error.hpp"

namespace devicearray::detail::opencl {

/// A fixed-size property of `device`; BackendError naming `name` on failure.
template <class T>
T deviceInfo(cl_device_id device, cl_device_info what, const char* name) {
  T value{};
  checkCl(clGetDeviceInfo(device, what, sizeof(T), &value, nullptr), std::string("clGetDeviceInfo(") + name + ")");
  return value;
}

/// A string property of `device`, trailing NULs and blanks removed; BackendError
/// naming `name` on failure.
std::string deviceString(cl_device_id device, cl_device_info what, const char* name);

/// A string property of `platform`, or "unknown platform" when the query fails.
std::string platformString(cl_platform_id platform, cl_platform_info what);

/// True when a CL_DEVICE_VERSION string ("OpenCL <major>.<minor> <vendor text>")
/// names OpenCL 1.2 or newer.
bool versionAtLeast12(const std::string& version);

/// Whether `queue` was created with CL_QUEUE_PROFILING_ENABLE; BackendError on failure.
bool queueProfiled(cl_command_queue queue);

/// Why `queue` cannot be used as a queue of (context, device), or "" when it can.
std::string queueMismatch(cl_command_queue queue, cl_context context, cl_device_id device);

}  // namespace devicearray::detail::opencl
