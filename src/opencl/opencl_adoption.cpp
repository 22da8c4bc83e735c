// ComputeDevice::fromOpenCL (the OpenCL Backend's adoptNative): a device made of the
// caller's context, device and queue, retained, so that the library allocates in that
// context and runs on that queue and cl_mem objects are interchangeable with the
// caller's. Adopted devices are
// cached weakly per handle triple (same handles -> same device) and release what
// they retained when the last handle drops.
#include <algorithm>
#include <iterator>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <tuple>
#include <vector>

#include "opencl/cl_error.hpp"
#include "opencl/opencl_device.hpp"
#include "opencl/opencl_info.hpp"

namespace devicearray::detail::opencl {
namespace {

// Adopted devices, weakly, by (context, device, queue).
using AdoptKey = std::tuple<void*, void*, void*>;
struct AdoptCache {
  std::mutex mutex;
  std::map<AdoptKey, std::weak_ptr<DeviceImpl>> devices;
};
AdoptCache& adoptCache() {
  static AdoptCache* const cache = new AdoptCache;  // leaked like the device list (opencl_backend.cpp)
  return *cache;
}

}  // namespace

std::shared_ptr<DeviceImpl> adoptDevice(void* context, void* device, void* queue) {
  const std::string fn = "ComputeDevice::fromOpenCL";
  if (context == nullptr || device == nullptr || queue == nullptr)
    fail(ErrorCode::InvalidArgument, fn + ": the cl_context, cl_device_id and cl_command_queue must all be non-null (got " +
                                         (context ? "context" : "null context") + ", " +
                                         (device ? "device" : "null device") + ", " + (queue ? "queue" : "null queue") +
                                         ")");
  auto ctx = static_cast<cl_context>(context);
  auto dev = static_cast<cl_device_id>(device);
  auto q = static_cast<cl_command_queue>(queue);
  noteBackendInitialised(ComputeBackend::opencl);  // the caller's OpenCL objects exist

  cl_uint n = 0;
  cl_int err = clGetContextInfo(ctx, CL_CONTEXT_NUM_DEVICES, sizeof n, &n, nullptr);
  if (err != CL_SUCCESS)
    fail(ErrorCode::InvalidArgument, fn + ": the context is not a valid cl_context (" +
                                         clErrorMessage("clGetContextInfo", err) + ")");
  std::vector<cl_device_id> members(n);
  checkCl(clGetContextInfo(ctx, CL_CONTEXT_DEVICES, n * sizeof(cl_device_id), members.data(), nullptr),
          fn + ": clGetContextInfo");
  if (std::find(members.begin(), members.end(), dev) == members.end())
    fail(ErrorCode::InvalidArgument, fn + ": the cl_device_id is not a device of the cl_context");
  const std::string why = queueMismatch(q, ctx, dev);
  if (!why.empty()) fail(ErrorCode::InvalidArgument, fn + ": the cl_command_queue cannot be used: " + why);
  const std::string version = [&] {
    std::size_t size = 0;
    if (clGetDeviceInfo(dev, CL_DEVICE_VERSION, 0, nullptr, &size) != CL_SUCCESS) return std::string();
    std::string s(size, '\0');
    clGetDeviceInfo(dev, CL_DEVICE_VERSION, size, s.data(), nullptr);
    return s;
  }();
  if (!versionAtLeast12(version))
    fail(ErrorCode::Unsupported, fn + ": the device reports \"" + version + "\"; OpenCL 1.2 or newer is required");
  cl_platform_id platform = nullptr;
  checkCl(clGetDeviceInfo(dev, CL_DEVICE_PLATFORM, sizeof platform, &platform, nullptr),
          fn + ": clGetDeviceInfo(CL_DEVICE_PLATFORM)");

  AdoptCache& cache = adoptCache();
  std::lock_guard<std::mutex> lock(cache.mutex);
  for (auto it = cache.devices.begin(); it != cache.devices.end();)
    it = it->second.expired() ? cache.devices.erase(it) : std::next(it);
  const AdoptKey key{context, device, queue};
  if (auto it = cache.devices.find(key); it != cache.devices.end())
    if (auto alive = it->second.lock()) return alive;

  checkCl(clRetainContext(ctx), fn + ": clRetainContext");
  if (cl_int e = clRetainDevice(dev); e != CL_SUCCESS) {
    clReleaseContext(ctx);
    checkCl(e, fn + ": clRetainDevice");
  }
  if (cl_int e = clRetainCommandQueue(q); e != CL_SUCCESS) {
    clReleaseDevice(dev);
    clReleaseContext(ctx);
    checkCl(e, fn + ": clRetainCommandQueue");
  }
  std::shared_ptr<DeviceImpl> result = OpenCLDevice::create(platform, ctx, dev, q, -1, true);
  cache.devices[key] = result;
  return result;
}

}  // namespace devicearray::detail::opencl
