// Queries of OpenCL platform, device and queue properties (opencl_info.hpp).
#include "opencl/opencl_info.hpp"

#include <cstdio>

namespace devicearray::detail::opencl {

std::string deviceString(cl_device_id device, cl_device_info what, const char* name) {
  std::size_t size = 0;
  checkCl(clGetDeviceInfo(device, what, 0, nullptr, &size), std::string("clGetDeviceInfo(") + name + ")");
  std::string s(size, '\0');
  checkCl(clGetDeviceInfo(device, what, size, s.data(), nullptr), std::string("clGetDeviceInfo(") + name + ")");
  while (!s.empty() && (s.back() == '\0' || s.back() == ' ')) s.pop_back();
  return s;
}

std::string platformString(cl_platform_id platform, cl_platform_info what) {
  std::size_t size = 0;
  if (clGetPlatformInfo(platform, what, 0, nullptr, &size) != CL_SUCCESS) return "unknown platform";
  std::string s(size, '\0');
  if (clGetPlatformInfo(platform, what, size, s.data(), nullptr) != CL_SUCCESS) return "unknown platform";
  while (!s.empty() && (s.back() == '\0' || s.back() == ' ')) s.pop_back();
  return s;
}

bool versionAtLeast12(const std::string& version) {
  int major = 0, minor = 0;
  if (std::sscanf(version.c_str(), "OpenCL %d.%d", &major, &minor) != 2) return false;
  return major > 1 || (major == 1 && minor >= 2);
}

bool queueProfiled(cl_command_queue queue) {
  cl_command_queue_properties props = 0;
  checkCl(clGetCommandQueueInfo(queue, CL_QUEUE_PROPERTIES, sizeof props, &props, nullptr),
          "clGetCommandQueueInfo(CL_QUEUE_PROPERTIES)");
  return (props & CL_QUEUE_PROFILING_ENABLE) != 0;
}

std::string queueMismatch(cl_command_queue queue, cl_context context, cl_device_id device) {
  cl_context qctx = nullptr;
  cl_int err = clGetCommandQueueInfo(queue, CL_QUEUE_CONTEXT, sizeof qctx, &qctx, nullptr);
  if (err != CL_SUCCESS) return "it is not a valid cl_command_queue (" + clErrorMessage("clGetCommandQueueInfo", err) + ")";
  if (qctx != context) return "it belongs to another cl_context";
  cl_device_id qdev = nullptr;
  err = clGetCommandQueueInfo(queue, CL_QUEUE_DEVICE, sizeof qdev, &qdev, nullptr);
  if (err != CL_SUCCESS) return clErrorMessage("clGetCommandQueueInfo(CL_QUEUE_DEVICE)", err);
  if (qdev != device) return "it targets another cl_device_id of the context";
  cl_command_queue_properties props = 0;
  err = clGetCommandQueueInfo(queue, CL_QUEUE_PROPERTIES, sizeof props, &props, nullptr);
  if (err != CL_SUCCESS) return clErrorMessage("clGetCommandQueueInfo(CL_QUEUE_PROPERTIES)", err);
  if (props & CL_QUEUE_OUT_OF_ORDER_EXEC_MODE_ENABLE)
    return "it is an out-of-order queue (the library orders work by in-order queues)";
  return "";
}

}  // namespace devicearray::detail::opencl
