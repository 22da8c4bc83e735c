// The caller's side of OpenCL interop in the backend tests, through the ICD loader
// the library already loaded, so the tests themselves do not link OpenCL.
#pragma once

#ifndef CL_TARGET_OPENCL_VERSION
#define CL_TARGET_OPENCL_VERSION 120
#endif
#include <CL/cl.h>
#include <dlfcn.h>

#include <type_traits>

namespace backendtest {

/// The caller's side of OpenCL interop, through the ICD loader the library
/// already loaded (the test itself does not link OpenCL).
struct ClApi {
  decltype(&::clCreateContext) createContext = nullptr;
  decltype(&::clCreateCommandQueue) createCommandQueue = nullptr;
  decltype(&::clCreateBuffer) createBuffer = nullptr;
  decltype(&::clReleaseContext) releaseContext = nullptr;
  decltype(&::clReleaseCommandQueue) releaseCommandQueue = nullptr;
  decltype(&::clReleaseMemObject) releaseMemObject = nullptr;
  decltype(&::clGetMemObjectInfo) getMemObjectInfo = nullptr;
  decltype(&::clGetContextInfo) getContextInfo = nullptr;
  decltype(&::clGetCommandQueueInfo) getCommandQueueInfo = nullptr;
  decltype(&::clGetDeviceInfo) getDeviceInfo = nullptr;
  decltype(&::clEnqueueReadBuffer) enqueueReadBuffer = nullptr;
  decltype(&::clFinish) finish = nullptr;

  static const ClApi* get() {
    static const ClApi api = [] {
      ClApi a;
      void* lib = dlopen("libOpenCL.so.1", RTLD_NOW | RTLD_NOLOAD);
      if (lib == nullptr) lib = dlopen("libOpenCL.so.1", RTLD_NOW);
      if (lib == nullptr) return a;
      auto load = [&](auto& fn, const char* name) { fn = reinterpret_cast<std::remove_reference_t<decltype(fn)>>(dlsym(lib, name)); };
      load(a.createContext, "clCreateContext");
      load(a.createCommandQueue, "clCreateCommandQueue");
      load(a.createBuffer, "clCreateBuffer");
      load(a.releaseContext, "clReleaseContext");
      load(a.releaseCommandQueue, "clReleaseCommandQueue");
      load(a.releaseMemObject, "clReleaseMemObject");
      load(a.getMemObjectInfo, "clGetMemObjectInfo");
      load(a.getContextInfo, "clGetContextInfo");
      load(a.getCommandQueueInfo, "clGetCommandQueueInfo");
      load(a.getDeviceInfo, "clGetDeviceInfo");
      load(a.enqueueReadBuffer, "clEnqueueReadBuffer");
      load(a.finish, "clFinish");
      return a;
    }();
    return api.finish ? &api : nullptr;
  }
};

}  // namespace backendtest
