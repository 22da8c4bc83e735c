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

/// The GPU programming interface a device is driven through.
enum class ComputeBackend {
  cuda,    ///< NVIDIA CUDA (runtime API, the device's primary context)
  opencl,  ///< OpenCL 1.2 or later (any vendor, including PoCL on CPUs)
};
/// "cuda" or "opencl".
const char* toString(ComputeBackend backend) noexcept;

/// A CUcontext, for code that talks to the CUDA driver API.
struct CUDAContextPtr {
  void* context = nullptr;  ///< the CUcontext
};
/// A cudaStream_t. nullptr is the CUDA legacy default stream; the value
/// cudaStreamPerThread (0x2) is the per-thread default stream.
struct CUDAStreamPtr {
  void* stream = nullptr;  ///< the cudaStream_t
};
/// A cl_command_queue. nullptr selects the library's own queue of the device.
struct OpenCLCommandQueuePtr {
  void* commandQueue = nullptr;  ///< the cl_command_queue
};
/// An address in CUDA device memory (for createDeviceArrayView).
struct CUDADevicePointer {
  void* pointer = nullptr;  ///< device address of element 0
};
/// A cl_mem plus a byte offset into it.
struct OpenCLBufferPtr {
  void* buffer = nullptr;  ///< the cl_mem
  std::size_t offset = 0;  ///< bytes from the start of the cl_mem to element 0
};

/// Either a CUDA stream or an OpenCL command queue; implicit from either handle.
struct StreamOrQueue {
  /// A CUDA stream (nullptr: the legacy default stream).
  StreamOrQueue(CUDAStreamPtr s) : stream(s.stream), backend_(ComputeBackend::cuda) {}  // NOLINT
  /// An OpenCL command queue.
  StreamOrQueue(OpenCLCommandQueuePtr q)  // NOLINT(google-explicit-constructor)
      : commandQueue(q.commandQueue), backend_(ComputeBackend::opencl) {}
  /// Which of the two handles this is.
  ComputeBackend backend() const { return backend_; }
  /// The raw handle of whichever backend this is.
  void* native() const { return backend_ == ComputeBackend::cuda ? stream : commandQueue; }

  void* stream = nullptr;        ///< the cudaStream_t (CUDA only)
  void* commandQueue = nullptr;  ///< the cl_command_queue (OpenCL only)

 private:
  ComputeBackend backend_;
};

/// Blocks the host until all work enqueued on `sq` is complete
/// (cudaStreamSynchronize / clFinish). Throws BackendError on a runtime failure.
void synchronizeStream(const StreamOrQueue& sq);

template <class Format> class DeviceArrayView;
class Stream;

// The backend's object for one device: a type of the library's own, declared here
// only so that ComputeDevice can hold it by shared_ptr (pimpl); nothing of it is
// reachable through the public headers.
namespace detail { class DeviceImpl; }

/// A cheap, copyable handle to one device of one backend: a CUDA device (its
/// primary context) or an OpenCL device with the context and in-order queue the
/// library uses for it. Arrays, streams and events belong to one ComputeDevice;
/// see docs/stream-queue-context.md for how work on it is ordered.
///
/// Processes: a child forked after the library initialised a backend cannot use the
/// parent's driver state, so there every call that reaches a device (these factories,
/// allocations, copies, streams, events) throws InvalidState naming the call; use
/// the 'spawn' start method of Python's multiprocessing, or use devices only in the
/// children. Objects inherited from the parent can still be destroyed there. A child
/// forked before any device use is unaffected.
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

  /// CUDA or OpenCL. Throws InvalidState for an invalid handle (as do the getters below).
  ComputeBackend backend() const;
  /// CUDA ordinal, or the index among the OpenCL devices of all() (-1 for adopted ones).
  int ordinal() const;
  /// The device name, e.g. "NVIDIA H200".
  std::string model() const;
  /// "NVIDIA" on CUDA; the platform name on OpenCL (e.g. "Portable Computing Language").
  std::string vendor() const;
  /// "cuda:0 (NVIDIA H200)" / "opencl:1 (pthread-... / Portable Computing Language)".
  std::string toString() const;
  /// False for a default-constructed handle.
  bool isValid() const { return impl_ != nullptr; }

  /// CUcontext of the device's primary context, or the cl_context.
  void* nativeContext() const;
  /// cl_device_id on OpenCL; the CUDA ordinal cast to a pointer on CUDA.
  void* nativeDevice() const;
  /// The library's own cudaStream_t / cl_command_queue on this device.
  void* nativeStreamHandle() const;
  /// nativeStreamHandle() as a StreamOrQueue.
  StreamOrQueue sdkStreamOrQueue() const;

  /// Bytes of device memory.
  std::size_t totalMemory() const;
  /// Bytes of device memory currently free. OpenCL has no such query: there it is the
  /// global memory minus what this library holds, exact only when nothing else uses it.
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
  /// Internal: wraps a backend device object.
  explicit ComputeDevice(std::shared_ptr<detail::DeviceImpl> impl);

 private:
  std::shared_ptr<detail::DeviceImpl> impl_;
};

}  // namespace devicearray
