// devicearray — compute devices, backends and the stream/queue handle type.
//
// A ComputeDevice is a cheap, copyable handle to one CUDA device (its primary
// context) or one OpenCL device (with the context and in-order queue the library
// uses for it). Handles compare equal when they name the same device object.
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <vector>

namespace devicearray {

enum class ComputeBackend { cuda, opencl };
const char* toString(ComputeBackend backend) noexcept;

struct CUDAContextPtr { void* context = nullptr; };
/// A cudaStream_t. nullptr is the CUDA legacy default stream; the value
/// cudaStreamPerThread (0x2) is the per-thread default stream.
struct CUDAStreamPtr { void* stream = nullptr; };
/// A cl_command_queue. nullptr selects the library's own queue of the device.
struct OpenCLCommandQueuePtr { void* commandQueue = nullptr; };
struct CUDADevicePointer { void* pointer = nullptr; };
/// A cl_mem plus a byte offset into it.
struct OpenCLBufferPtr { void* buffer = nullptr; std::size_t offset = 0; };

/// Either a CUDA stream or an OpenCL command queue; implicit from either handle.
struct StreamOrQueue {
  StreamOrQueue(CUDAStreamPtr s) : stream(s.stream), backend_(ComputeBackend::cuda) {}  // NOLINT
  StreamOrQueue(OpenCLCommandQueuePtr q)  // NOLINT(google-explicit-constructor)
      : commandQueue(q.commandQueue), backend_(ComputeBackend::opencl) {}
  ComputeBackend backend() const { return backend_; }
  /// The raw handle of whichever backend this is.
  void* native() const { return backend_ == ComputeBackend::cuda ? stream : commandQueue; }

  void* stream = nullptr;
  void* commandQueue = nullptr;

 private:
  ComputeBackend backend_;
};

/// Blocks the host until all work enqueued on `sq` is complete
/// (cudaStreamSynchronize / clFinish). Throws BackendError on a runtime failure.
void synchronizeStream(const StreamOrQueue& sq);

template <class Format> class DeviceArrayView;
class Stream;

namespace detail { class DeviceImpl; }

class ComputeDevice {
 public:
  /// Every usable device of every backend this build has: CUDA devices by ordinal,
  /// then OpenCL devices of every platform (GPUs first, then the rest). Never throws
  /// for a missing driver: a backend without devices simply contributes none.
  static std::vector<ComputeDevice> all();
  /// DEVICEARRAY_BACKEND=cuda|opencl and DEVICEARRAY_DEVICE=N (index within that
  /// backend) override; else the first CUDA device, else the first OpenCL GPU, else
  /// the first OpenCL CPU. Throws BackendUnavailable naming what was tried.
  static ComputeDevice defaultDevice();
  /// CUDA device `ordinal`. Throws BackendUnavailable / OutOfRange.
  static ComputeDevice cuda(int ordinal = 0);
  /// OpenCL device `index` among the OpenCL devices listed by all().
  static ComputeDevice opencl(int index = 0);
  /// Adopts (retains) the caller's cl_context, cl_device_id and cl_command_queue: the
  /// library then allocates in that context and runs on that queue, so cl_mem objects
  /// are interchangeable with the caller's. The queue must belong to the context and
  /// device. Throws InvalidArgument for null or mismatched handles.
  static ComputeDevice fromOpenCL(void* clContext, void* clDevice, void* clCommandQueue);

  ComputeDevice();  ///< An invalid handle; use the factories above.

  ComputeBackend backend() const;
  /// CUDA ordinal, or the index among the OpenCL devices of all() (-1 for adopted ones).
  int ordinal() const;
  std::string model() const;
  std::string vendor() const;
  /// "cuda:0 (NVIDIA H200)" / "opencl:1 (pthread-... / Portable Computing Language)".
  std::string toString() const;
  bool isValid() const { return impl_ != nullptr; }

  /// CUcontext of the device's primary context, or the cl_context.
  void* nativeContext() const;
  /// cl_device_id on OpenCL; the CUDA ordinal cast to a pointer on CUDA.
  void* nativeDevice() const;
  /// The library's own cudaStream_t / cl_command_queue on this device.
  void* nativeStreamHandle() const;
  /// nativeStreamHandle() as a StreamOrQueue.
  StreamOrQueue sdkStreamOrQueue() const;

  std::size_t totalMemory() const;
  std::size_t freeMemory() const;

  /// Wraps user device memory as a non-owning view (CUDA). Non-blocking. Throws
  /// InvalidArgument for a null pointer, non-positive sizes or a backend mismatch.
  template <class Format>
  DeviceArrayView<Format> createDeviceArrayView(CUDADevicePointer, int width, int height, StreamOrQueue) const;
  /// Wraps user memory (a cl_mem + byte offset in this device's context) as a view.
  template <class Format>
  DeviceArrayView<Format> createDeviceArrayView(OpenCLBufferPtr, int width, int height, StreamOrQueue) const;

  friend bool operator==(const ComputeDevice& a, const ComputeDevice& b) { return a.impl_ == b.impl_; }
  friend bool operator!=(const ComputeDevice& a, const ComputeDevice& b) { return a.impl_ != b.impl_; }

  /// Internal: the backend object. Not part of the stable API.
  const std::shared_ptr<detail::DeviceImpl>& impl() const;
  explicit ComputeDevice(std::shared_ptr<detail::DeviceImpl> impl);

 private:
  std::shared_ptr<detail::DeviceImpl> impl_;
};

}  // namespace devicearray
