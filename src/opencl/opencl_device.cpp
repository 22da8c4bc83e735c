// OpenCL 1.2 backend of src/backend/backend.hpp: the device object. The backend's
// other parts, one concept per file:
//   opencl_backend.cpp    the backend object: the list of devices (enumeration,
//                         never destroyed), synchronizing a raw queue
//   opencl_adoption.cpp   devices made of a caller's context, device and queue
//   opencl_primitives.hpp/.cpp the parallel primitives in their two shapes (kernels in
//                         scan_sort_reduce.cl for CPUs, scan_sort_groups.cl for GPUs)
//   opencl_queue.hpp/.cpp events, queues and the device's queue factory
//   opencl_memory.cpp     allocations through the per-device buffer cache, adopted cl_mem
//   opencl_launch.cpp     the program, its kernels and launch
//   opencl_copy.cpp       copies, fills and conversions: native commands where the
//                         layout allows (buffer, rect, fill), one strided kernel
//                         otherwise; host staging in queue order through event
//                         callbacks and user events, so nothing blocks the host
//   opencl_info.hpp/.cpp  queries of platform, device and queue properties
//
// Enumerated devices live until the process ends; adopted devices are destroyed with
// their last handle. An adopted device's sdk queue points back at the device without
// owning it (an owning pointer would be a cycle that keeps it alive forever);
// wrapQueue(nullptr) on it therefore hands out an owning wrapper instead.
#include "opencl/opencl_device.hpp"

#include <algorithm>
#include <cstdlib>
#include <list>
#include <memory>
#include <mutex>
#include <string>

#include "opencl/cl_error.hpp"
#include "opencl/opencl_info.hpp"

namespace devicearray::detail::opencl {

std::shared_ptr<OpenCLDevice> OpenCLDevice::create(cl_platform_id platform, cl_context context, cl_device_id device,
                                                   cl_command_queue queue, int ordinal, bool adopted) {
  std::shared_ptr<OpenCLDevice> dev;
  bool profiled = false;
  try {
    profiled = queueProfiled(queue);
    dev.reset(new OpenCLDevice(platform, context, device, ordinal, adopted));
  } catch (...) {
    if (!dev) {  // the device did not take ownership yet
      clReleaseCommandQueue(queue);
      clReleaseContext(context);
      if (adopted) clReleaseDevice(device);
    }
    throw;
  }
  try {
    // Enumerated devices live forever, so their sdk queue may own them; an
    // adopted device must be destructible, so its sdk queue only points back.
    std::shared_ptr<DeviceImpl> back =
        adopted ? std::shared_ptr<DeviceImpl>(std::shared_ptr<DeviceImpl>(), dev.get()) : dev;
    dev->libraryQueue_ = std::make_shared<OpenCLQueue>(std::move(back), queue, profiled);
  } catch (...) {
    clReleaseCommandQueue(queue);
    throw;
  }
  return dev;
}

namespace {

bool withoutFp64Requested() {
  const char* value = std::getenv("DEVICEARRAY_OPENCL_NO_FP64");
  return value != nullptr && value[0] != '\0' && std::string(value) != "0";
}

}  // namespace

OpenCLDevice::OpenCLDevice(cl_platform_id platform, cl_context context, cl_device_id device, int ordinal,
                           bool adopted)
    : platform_(platform),
      context_(context),
      device_(device),
      ordinal_(ordinal),
      adopted_(adopted) {
  setWorkObjects(makePrimitives(*this), makeCopySteps(*this));
  model_ = deviceString(device, CL_DEVICE_NAME, "CL_DEVICE_NAME");
  // The platform name ("NVIDIA CUDA", "Portable Computing Language") tells the
  // user which driver runs the device; CL_DEVICE_VENDOR would name the CPU maker.
  vendor_ = platformString(platform, CL_PLATFORM_NAME);
  globalMemBytes_ = static_cast<std::size_t>(deviceInfo<cl_ulong>(device, CL_DEVICE_GLOBAL_MEM_SIZE, "CL_DEVICE_GLOBAL_MEM_SIZE"));
  maxAllocBytes_ =
      static_cast<std::size_t>(deviceInfo<cl_ulong>(device, CL_DEVICE_MAX_MEM_ALLOC_SIZE, "CL_DEVICE_MAX_MEM_ALLOC_SIZE"));
  // DEVICEARRAY_OPENCL_NO_FP64=1 treats the device as one without double precision:
  // how the tests run that path on a CPU device that has it.
  hasFp64_ = !withoutFp64Requested() &&
             deviceInfo<cl_device_fp_config>(device, CL_DEVICE_DOUBLE_FP_CONFIG, "CL_DEVICE_DOUBLE_FP_CONFIG") != 0;
  correctlyRoundedDivide_ =
      (deviceInfo<cl_device_fp_config>(device, CL_DEVICE_SINGLE_FP_CONFIG, "CL_DEVICE_SINGLE_FP_CONFIG") &
       CL_FP_CORRECTLY_ROUNDED_DIVIDE_SQRT) != 0;
  cacheLimitBytes_ = std::clamp<std::size_t>(globalMemBytes_ / 8, std::size_t{16} << 20, std::size_t{1} << 30);
}

OpenCLDevice::~OpenCLDevice() {
  // In a forked child everything here belongs to the parent's driver state: leaked.
  if (forkedAfterInit()) return;
  // Only adopted devices are ever destroyed. Release in dependency order, cached
  // allocations (which hold no reference to the device) first, then leave the exit
  // handler's list (no handler touches the device after that); the caller's objects
  // keep living with the caller's own references.
  releaseCachedMemory();
  forgetAtExit();
  std::list<CachedBuffer> cache;
  {
    std::lock_guard<std::mutex> lock(cacheMutex_);
    cache.swap(cache_);
  }
  for (auto& b : cache) clReleaseMemObject(b.mem);
  cache.clear();
  for (auto& [name, slot] : kernels_) clReleaseKernel(slot->kernel);
  kernels_.clear();
  if (program_) clReleaseProgram(program_);
  libraryQueue_.reset();
  clReleaseContext(context_);
  if (adopted_) clReleaseDevice(device_);
}

std::string OpenCLDevice::describe() const {
  const std::string what = model_ + " / " + vendor_;
  return ordinal_ >= 0 ? "opencl:" + std::to_string(ordinal_) + " (" + what + ")" : "adopted OpenCL device (" + what + ")";
}

}  // namespace devicearray::detail::opencl
