// The OpenCL Backend (backend/backend_registry.hpp). Its devices: every device of
// every platform (PoCL and NVIDIA side by side on the GPU machine), GPUs first, then
// accelerators, then CPUs; the ordinal is the index in that list. Each device gets
// its own cl_context and one in-order queue with profiling (so Event timing works).
// The list is built once, lazily and thread-safely, and intentionally never
// destroyed: OpenCL objects must not be released during static destruction, when the
// ICD may already be gone. A machine without a driver gets an empty list and a
// reason, never an exception.
#include <algorithm>
#include <exception>
#include <string>
#include <vector>

#include "backend/backend_registry.hpp"
#include "opencl/cl_error.hpp"
#include "opencl/opencl_device.hpp"
#include "opencl/opencl_info.hpp"

namespace devicearray::detail::opencl {
namespace {

int typeRank(cl_device_type type) {
  if (type & CL_DEVICE_TYPE_GPU) return 0;
  if (type & CL_DEVICE_TYPE_ACCELERATOR) return 1;
  if (type & CL_DEVICE_TYPE_CPU) return 2;
  return 3;
}

DeviceList enumerate() noexcept {
  DeviceList r;
  std::vector<std::string> skipped;
  try {
    cl_uint count = 0;
    cl_int err = clGetPlatformIDs(0, nullptr, &count);
    if (err == -1001 /* CL_PLATFORM_NOT_FOUND_KHR */ || (err == CL_SUCCESS && count == 0)) {
      r.unavailableReason = "no OpenCL platform is installed (the ICD loader found no driver; see /etc/OpenCL/vendors)";
      return r;
    }
    if (err != CL_SUCCESS) {
      r.unavailableReason = "cannot list OpenCL platforms: " + clErrorMessage("clGetPlatformIDs", err);
      return r;
    }
    noteBackendInitialised(ComputeBackend::opencl);  // the ICD loaded its drivers
    std::vector<cl_platform_id> platforms(count);
    checkCl(clGetPlatformIDs(count, platforms.data(), nullptr), "clGetPlatformIDs");

    struct Candidate {
      cl_platform_id platform;
      cl_device_id device;
      int rank;
    };
    std::vector<Candidate> candidates;
    for (cl_platform_id p : platforms) {
      const std::string pname = platformString(p, CL_PLATFORM_NAME);
      cl_uint n = 0;
      err = clGetDeviceIDs(p, CL_DEVICE_TYPE_ALL, 0, nullptr, &n);
      if (err == CL_DEVICE_NOT_FOUND || (err == CL_SUCCESS && n == 0)) {
        skipped.push_back(pname + ": no devices");
        continue;
      }
      if (err != CL_SUCCESS) {
        skipped.push_back(pname + ": " + clErrorMessage("clGetDeviceIDs", err));
        continue;
      }
      std::vector<cl_device_id> ids(n);
      if ((err = clGetDeviceIDs(p, CL_DEVICE_TYPE_ALL, n, ids.data(), nullptr)) != CL_SUCCESS) {
        skipped.push_back(pname + ": " + clErrorMessage("clGetDeviceIDs", err));
        continue;
      }
      for (cl_device_id d : ids) {
        try {
          const std::string dname = deviceString(d, CL_DEVICE_NAME, "CL_DEVICE_NAME");
          if (!deviceInfo<cl_bool>(d, CL_DEVICE_AVAILABLE, "CL_DEVICE_AVAILABLE")) {
            skipped.push_back(dname + " (" + pname + "): not available");
            continue;
          }
          if (!deviceInfo<cl_bool>(d, CL_DEVICE_COMPILER_AVAILABLE, "CL_DEVICE_COMPILER_AVAILABLE")) {
            skipped.push_back(dname + " (" + pname + "): no OpenCL C compiler");
            continue;
          }
          const std::string version = deviceString(d, CL_DEVICE_VERSION, "CL_DEVICE_VERSION");
          if (!versionAtLeast12(version)) {
            skipped.push_back(dname + " (" + pname + "): " + version + " is older than OpenCL 1.2");
            continue;
          }
          candidates.push_back({p, d, typeRank(deviceInfo<cl_device_type>(d, CL_DEVICE_TYPE, "CL_DEVICE_TYPE"))});
        } catch (const std::exception& e) {
          skipped.push_back(pname + ": " + e.what());
        }
      }
    }
    std::stable_sort(candidates.begin(), candidates.end(),
                     [](const Candidate& a, const Candidate& b) { return a.rank < b.rank; });

    for (const Candidate& c : candidates) {
      const cl_context_properties props[] = {CL_CONTEXT_PLATFORM, reinterpret_cast<cl_context_properties>(c.platform),
                                             0};
      cl_context ctx = clCreateContext(props, 1, &c.device, nullptr, nullptr, &err);
      if (err != CL_SUCCESS) {
        skipped.push_back(platformString(c.platform, CL_PLATFORM_NAME) + ": " + clErrorMessage("clCreateContext", err));
        continue;
      }
      cl_command_queue queue = clCreateCommandQueue(ctx, c.device, CL_QUEUE_PROFILING_ENABLE, &err);
      if (err != CL_SUCCESS) {
        clReleaseContext(ctx);
        skipped.push_back(platformString(c.platform, CL_PLATFORM_NAME) + ": " +
                          clErrorMessage("clCreateCommandQueue", err));
        continue;
      }
      try {
        r.devices.push_back(OpenCLDevice::create(c.platform, ctx, c.device, queue,
                                                 static_cast<int>(r.devices.size()), false));
      } catch (const std::exception& e) {  // create() released ctx and queue
        skipped.push_back(e.what());
      }
    }
  } catch (const std::exception& e) {
    skipped.push_back(e.what());
  } catch (...) {
    skipped.push_back("unknown failure while listing OpenCL devices");
  }
  if (r.devices.empty()) {
    r.unavailableReason = "no usable OpenCL device";
    for (std::size_t i = 0; i < skipped.size(); ++i) r.unavailableReason += (i == 0 ? ": " : "; ") + skipped[i];
  }
  return r;
}

class OpenCLBackend final : public Backend {
 public:
  ComputeBackend kind() const override { return ComputeBackend::opencl; }

  void synchronizeNative(void* queue) const override {
    if (queue == nullptr) fail(ErrorCode::InvalidArgument, "synchronizeStream: null cl_command_queue");
    const cl_int err = clFinish(static_cast<cl_command_queue>(queue));
    if (err != CL_SUCCESS)
      fail(ErrorCode::BackendError, "synchronizeStream: clFinish failed with OpenCL error " + std::to_string(err));
  }

  std::shared_ptr<DeviceImpl> adoptNative(void* context, void* device, void* queue) const override {
    return adoptDevice(context, device, queue);
  }

 private:
  DeviceList listDevices() const override { return enumerate(); }
};

}  // namespace

const Backend& backendObject() {
  static const Backend* const instance = new OpenCLBackend;  // leaked, with its devices: see the top of this file
  return *instance;
}

}  // namespace devicearray::detail::opencl
