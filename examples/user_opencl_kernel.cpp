// A user OpenCL kernel reading and writing a DeviceArray's cl_mem.
//
// OpenCL objects are valid only in their cl_context, so the user and the library
// must share one: here the user makes the context and queue and the library adopts
// them with ComputeDevice::fromOpenCL. Work on the user's queue is ordered for the
// library by passing that queue to the next library call
// (docs/stream-queue-context.md).
#include <CL/cl.h>

#include <cstdio>
#include <vector>

#include "devicearray/devicearray.hpp"

namespace da = devicearray;

static const char* kSource = R"CLC(
__kernel void scale_depth(__global float* z, ulong offsetBytes, int count, float factor) {
  int i = get_global_id(0);
  __global float* p = (__global float*)((__global char*)z + offsetBytes);
  if (i < count) p[i] *= factor;
}
)CLC";

int main() {
  da::ComputeDevice any;
  for (const auto& d : da::ComputeDevice::all())
    if (d.backend() == da::ComputeBackend::opencl) { any = d; break; }
  if (!any.isValid()) {
    std::puts("skipped: no OpenCL device");
    return 0;
  }
  // The user's context and queue on that OpenCL device.
  auto clDevice = static_cast<cl_device_id>(any.nativeDevice());
  cl_int err = CL_SUCCESS;
  cl_context context = clCreateContext(nullptr, 1, &clDevice, nullptr, nullptr, &err);
  cl_command_queue queue = clCreateCommandQueue(context, clDevice, 0, &err);
  cl_program program = clCreateProgramWithSource(context, 1, &kSource, nullptr, &err);
  if (err != CL_SUCCESS || clBuildProgram(program, 1, &clDevice, "", nullptr, nullptr) != CL_SUCCESS) {
    std::fputs("user_opencl_kernel: could not build the user program\n", stderr);
    return 1;
  }
  cl_kernel kernel = clCreateKernel(program, "scale_depth", &err);
  int status = 1;
  try {
    // The library adopts (retains) the context and queue: its cl_mem objects live there.
    const da::ComputeDevice device = da::ComputeDevice::fromOpenCL(context, clDevice, queue);
    const int height = 3, width = 5, count = height * width;
    std::vector<da::PointZ> depth(count, da::PointZ{2.0f});
    auto array = da::DeviceArray<da::PointZ>::fromHost(depth.data(), height, width, device);

    // On OpenCL, devicePointer() is the cl_mem; element 0 is at byteOffset().
    cl_mem mem = static_cast<cl_mem>(array.devicePointer());
    const cl_ulong offset = array.byteOffset();
    const float factor = 1.5f;
    clSetKernelArg(kernel, 0, sizeof mem, &mem);
    clSetKernelArg(kernel, 1, sizeof offset, &offset);
    clSetKernelArg(kernel, 2, sizeof count, &count);
    clSetKernelArg(kernel, 3, sizeof factor, &factor);
    const size_t global = count;
    clEnqueueNDRangeKernel(queue, kernel, 1, nullptr, &global, nullptr, 0, nullptr, nullptr);

    // Same queue for the read-back: in order after the kernel, no host sync until clFinish.
    array.copyToHost(depth.data(), depth.size() * sizeof(da::PointZ), da::OpenCLCommandQueuePtr{queue});
    clFinish(queue);
    std::printf("depth after the user kernel: %.2f (expected 3.00) on %s\n", depth[7].z, device.toString().c_str());
    status = depth[7].z == 3.0f ? 0 : 1;
  } catch (const da::Error& e) {
    std::fprintf(stderr, "user_opencl_kernel: %s\n", e.what());
  }
  clReleaseKernel(kernel);
  clReleaseProgram(program);
  clReleaseCommandQueue(queue);
  clReleaseContext(context);
  return status;
}
