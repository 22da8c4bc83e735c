// Wrapping a buffer the user allocated (an OpenCL cl_mem) with createDeviceArrayView
// and letting the library fill it: a colour image converted to 8-bit BGRA sRGB
// straight into the user's memory, then read back with plain OpenCL calls.
//
// The buffer and the queue are made in the library's own cl_context (nativeContext()),
// so both sides can use them; ComputeDevice::fromOpenCL is the other way round.
#include <CL/cl.h>

#include <cstdio>
#include <vector>

#include "devicearray/devicearray.hpp"

namespace da = devicearray;

int main() {
  da::ComputeDevice device;
  for (const auto& d : da::ComputeDevice::all())
    if (d.backend() == da::ComputeBackend::opencl) { device = d; break; }
  if (!device.isValid()) {
    std::puts("skipped: no OpenCL device");
    return 0;
  }
  const auto context = static_cast<cl_context>(device.nativeContext());
  const auto clDevice = static_cast<cl_device_id>(device.nativeDevice());
  const int height = 2, width = 3, count = height * width;
  cl_int err = CL_SUCCESS;
  cl_command_queue queue = clCreateCommandQueue(context, clDevice, 0, &err);
  if (err != CL_SUCCESS) return std::fprintf(stderr, "wrap_user_buffer: clCreateCommandQueue failed (%d)\n", err), 1;
  cl_mem buffer = clCreateBuffer(context, CL_MEM_READ_WRITE, count * sizeof(da::ColorBGRA_SRGB), nullptr, &err);
  if (err != CL_SUCCESS) {
    clReleaseCommandQueue(queue);
    return std::fprintf(stderr, "wrap_user_buffer: clCreateBuffer failed (%d)\n", err), 1;
  }
  int status = 1;
  try {
    // Linear-light RGBA pixels: red half transparent, green, and black.
    std::vector<da::ColorRGBA> pixels(count, da::ColorRGBA{0, 0, 0, 255});
    pixels[0] = {255, 0, 0, 128};
    pixels[1] = {0, 255, 0, 255};
    const da::Frame2D frame = da::Frame2D::fromHost(pixels.data(), height, width, device);

    // The user's buffer as a height x width DeviceArrayView<ColorBGRA_SRGB>.
    const da::OpenCLCommandQueuePtr onQueue{queue};
    const auto view = device.createDeviceArrayView<da::ColorBGRA_SRGB>(da::OpenCLBufferPtr{buffer, 0}, width,
                                                                       height, onQueue);
    frame.imageDeviceArray(view, onQueue);  // enqueued on `queue`, returns at once

    // Same queue, so this blocking read runs after the conversion.
    std::vector<da::ColorBGRA_SRGB> out(count);
    err = clEnqueueReadBuffer(queue, buffer, CL_TRUE, 0, out.size() * sizeof(out[0]), out.data(), 0, nullptr, nullptr);
    if (err != CL_SUCCESS) throw da::Error(da::ErrorCode::BackendError, "clEnqueueReadBuffer failed");

    // 0 and 255 are fixed points of the sRGB curve; channels swap to b, g, r, a.
    const bool ok = out[0].b == 0 && out[0].g == 0 && out[0].r == 255 && out[0].a == 128 && out[1].g == 255 &&
                    out[1].r == 0 && out[5].b == 0 && out[5].a == 255;
    std::printf("first pixel in the user's buffer: b=%d g=%d r=%d a=%d on %s: %s\n", out[0].b, out[0].g, out[0].r,
                out[0].a, device.toString().c_str(), ok ? "ok" : "WRONG");
    status = ok ? 0 : 1;
  } catch (const da::Error& e) {
    std::fprintf(stderr, "wrap_user_buffer: %s\n", e.what());
  }
  clReleaseMemObject(buffer);
  clReleaseCommandQueue(queue);
  return status;
}
