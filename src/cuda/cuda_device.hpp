// CUDA backend internals shared by the src/cuda/*.cu files (see cuda_device.cu for
// the design overview). Nothing here is visible outside the library.
#pragma once

#include <cuda_runtime.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <new>
#include <string>
#include <unordered_map>
#include <vector>

#include "backend/backend.hpp"
#include "backend/copy_steps.hpp"
#include "backend/parallel_primitives.hpp"
#include "cuda/graph_capture.hpp"

namespace devicearray::detail::cuda {

/// Throws Error(BackendError, "<function>: <cudaGetErrorName>: <cudaGetErrorString>")
/// after clearing the thread's last-error slot (so a non-sticky error does not
/// resurface in an unrelated later call).
[[noreturn]] void throwCudaError(const char* function, cudaError_t err);

inline void check(cudaError_t err, const char* function) {
  if (err != cudaSuccess) throwCudaError(function, err);
}

/// True for the errors the runtime reports while the process is exiting (the
/// runtime or the context is already torn down); destructors ignore them.
inline bool isShutdownError(cudaError_t err) {
  return err == cudaErrorCudartUnloading || err == cudaErrorContextIsDestroyed ||
         err == cudaErrorDeviceUninitialized || err == cudaErrorInitializationError;
}

/// Makes `device` current for the lifetime of the guard and restores the caller's
/// device afterwards, so every entry point works whatever device the calling
/// thread had selected. Restoring never throws.
class DeviceGuard {
 public:
  explicit DeviceGuard(int device) {
    requireNotForked("CUDA call");  // every CUDA entry point passes here
    if (cudaGetDevice(&previous_) != cudaSuccess) {
      (void)cudaGetLastError();
      previous_ = -1;
    }
    if (previous_ != device) {
      check(cudaSetDevice(device), "cudaSetDevice");
      switched_ = true;
    }
  }
  /// Non-throwing variant for destructors: reports success through ok(); false in a
  /// forked child, where no CUDA call may be made (fork_guard.hpp).
  DeviceGuard(int device, std::nothrow_t) noexcept {
    if (forkedAfterInit()) {
      ok_ = false;
      return;
    }
    if (cudaGetDevice(&previous_) != cudaSuccess) {
      (void)cudaGetLastError();
      previous_ = -1;
    }
    if (previous_ != device) {
      if (cudaSetDevice(device) != cudaSuccess) {
        (void)cudaGetLastError();
        ok_ = false;
        return;
      }
      switched_ = true;
    }
  }
  DeviceGuard(const DeviceGuard&) = delete;
  DeviceGuard& operator=(const DeviceGuard&) = delete;
  ~DeviceGuard() {
    if (switched_ && previous_ >= 0 && cudaSetDevice(previous_) != cudaSuccess) (void)cudaGetLastError();
  }
  bool ok() const { return ok_; }

 private:
  int previous_ = -1;
  bool switched_ = false;
  bool ok_ = true;
};

class CudaDevice;

/// A cudaEvent_t recorded on one stream. Ordering events come from the device's
/// recycled pool and go back to it on destruction. An event recorded during a graph
/// capture marks a node of that graph (graph_capture.hpp): outside the capture there is
/// nothing to query or wait for, so it counts as complete there.
class CudaEvent final : public EventImpl {
 public:
  CudaEvent(CudaDevice* device, cudaEvent_t event, const void* queueKey, bool timing, StreamCapture capture = {})
      : device_(device), event_(event), queueKey_(queueKey), timing_(timing), capture_(capture) {}
  ~CudaEvent() override;
  ComputeBackend backend() const override { return ComputeBackend::cuda; }
  bool query() override;
  /// True when the event is known or found to be complete; false when it is not, or
  /// cannot be asked (errors). Never throws.
  bool completeNoThrow() noexcept;
  void synchronize() override;
  const void* queueKey() const override { return queueKey_; }
  cudaEvent_t native() const { return event_; }
  bool timing() const { return timing_; }
  /// The capture the event was recorded in (not captured for ordinary events).
  const StreamCapture& capture() const { return capture_; }

 private:
  float doElapsedMs(EventImpl& later) override;

  CudaDevice* device_;
  cudaEvent_t event_;
  const void* queueKey_;
  bool timing_;
  StreamCapture capture_;
  /// Seen complete once: an event is recorded exactly once, so it stays complete and
  /// later queries, waits and stream waits on it need no driver call.
  std::atomic<bool> done_{false};
};

/// A stream of one device: owned (destroyed with the object) or wrapped. A wrapper
/// lives for one library call and knows whether its stream was being captured into a
/// graph when the call began.
class CudaQueue final : public QueueImpl {
 public:
  CudaQueue(std::shared_ptr<DeviceImpl> device, cudaStream_t stream, bool owned, StreamCapture capture = {});
  ~CudaQueue() override;
  void synchronize() override;
  bool query() override;
  std::shared_ptr<EventImpl> recordEvent(bool timing = false) override;
  void keepAliveForGraph(std::shared_ptr<Allocation> allocation) override;
  cudaStream_t stream() const { return static_cast<cudaStream_t>(native()); }
  const StreamCapture& capture() const { return capture_; }

 private:
  void doWaitEvent(EventImpl& event) override;

  CudaDevice* cudaDevice_;
  bool owned_;
  StreamCapture capture_;
};

/// Device memory from the device's pool (owned, freed in stream order) or adopted.
class CudaAllocation final : public Allocation {
 public:
  using Allocation::Allocation;
  ~CudaAllocation() override;
};

/// Page-locked host buffers reused for staging host transfers. Buffers are handed
/// back from stream callbacks (where no CUDA call is allowed), so returning is a
/// lock + push; freeing surplus buffers happens in acquire().
///
/// The pool keeps up to kMaxRetainedBuffers buffers and kMaxRetainedBytes. A frame loop
/// with pageable frames leases three buffers per array of each frame in flight (27 at
/// 1920x1200 with three frames, 144 MiB); with fewer buffers kept, every frame freed and
/// allocated page-locked memory again, and each cudaHostAlloc / cudaFreeHost of
/// megabytes takes milliseconds.
class PinnedStagingPool {
 public:
  struct Buffer {
    void* data = nullptr;
    std::size_t bytes = 0;
  };
  /// A buffer of at least `bytes` bytes (blocks only inside cudaHostAlloc).
  Buffer acquire(std::size_t bytes);
  /// Returns a buffer; callable from a host callback (no CUDA calls).
  void release(Buffer buffer) noexcept;
  /// Frees the buffers the pool retains (not those in use). Runs at exit (the device's
  /// releaseCachedMemory), so the page-locked memory is handed back while the CUDA
  /// runtime still exists.
  void freeRetained() noexcept;

 private:
  static constexpr std::size_t kMaxRetainedBytes = std::size_t{256} << 20;
  static constexpr std::size_t kMaxRetainedBuffers = 64;
  std::mutex mutex_;
  std::vector<Buffer> free_;
};

/// A kernel launch's configuration for cudaLaunchKernelEx: a dependent launch (its
/// blocks may start before the kernel before it in the stream ends; the kernel waits for
/// it first, see CudaDevice::LaunchTraits) or one in plain stream order.
class LaunchConfig {
 public:
  LaunchConfig(dim3 grid, dim3 block, cudaStream_t stream, bool dependent) {
    config_.gridDim = grid;
    config_.blockDim = block;
    config_.stream = stream;
    dependent_.id = cudaLaunchAttributeProgrammaticStreamSerialization;
    dependent_.val.programmaticStreamSerializationAllowed = 1;
    if (dependent) {
      config_.attrs = &dependent_;
      config_.numAttrs = 1;
    }
  }
  LaunchConfig(const LaunchConfig&) = delete;  // config_ points at dependent_
  LaunchConfig& operator=(const LaunchConfig&) = delete;
  const cudaLaunchConfig_t* get() const noexcept { return &config_; }

 private:
  cudaLaunchConfig_t config_{};
  cudaLaunchAttribute dependent_{};
};

/// One CUDA device (its primary context). Instances are process-wide singletons made
/// by the CUDA Backend (cuda_backend.cu) and intentionally never destroyed; what they
/// cache is freed at exit (DeviceImpl::releaseCachedMemory).
class CudaDevice final : public DeviceImpl {
 public:
  CudaDevice(int ordinal, const cudaDeviceProp& prop);

  ComputeBackend backend() const override { return ComputeBackend::cuda; }
  int ordinal() const override { return ordinal_; }
  std::string model() const override { return model_; }
  std::string vendor() const override { return "NVIDIA"; }
  void* nativeContext() override;
  void* nativeDevice() override;
  std::size_t totalMemory() override { return totalMemory_; }
  std::size_t freeMemory() override;

  const std::shared_ptr<QueueImpl>& libraryQueue() override;

  // ---- internals used by the other backend files ----
  /// "cuda:N", for messages.
  std::string label() const { return "cuda:" + std::to_string(ordinal_); }
  /// The stream of `q`, after checking that `q` is a CUDA queue of this device.
  cudaStream_t streamOf(QueueImpl& q, const char* function);
  /// Device address of `ref` (host pointer or allocation base + offset), after
  /// checking that a device-side allocation belongs to this device.
  char* address(const MemRef& ref, const char* function);
  /// Raw stream-ordered pool memory on `stream` (OutOfMemory after one trim+retry);
  /// release with freeAsync on a stream ordered after its last use.
  void* mallocAsync(std::size_t bytes, cudaStream_t stream, const char* function);
  void freeAsync(void* p, cudaStream_t stream) noexcept;
  /// An ordering (timing-disabled) event from the recycled pool.
  cudaEvent_t acquireOrderingEvent();
  void releaseOrderingEvent(cudaEvent_t event) noexcept;
  /// Frees `p` on the release stream after every event in `pending` (captured events
  /// excepted: the graphs that hold memory release it after their launches). Never
  /// throws.
  void releaseInStreamOrder(void* p, const std::vector<std::shared_ptr<EventImpl>>& pending) noexcept;
  /// The stream releases wait on and free on (created on first use, never destroyed).
  /// Not the library's stream: that stream would then wait for the work of every
  /// stream whose memory is freed, and so would the reads and blocking calls made on it
  /// (a frame's point count would wait for the frames after it).
  cudaStream_t releaseStream();
  /// What the graphs being captured or alive hold of this device's memory.
  GraphKeepAlive& graphKeepAlive() { return graphKeepAlive_; }
  /// The staging buffers; the pool's retained buffers are freed at exit.
  PinnedStagingPool& stagingPool() {
    releaseAtExit();
    return staging_;
  }
  std::size_t maxPitch() const { return maxPitch_; }
  /// How the launches of one registered kernel are shaped, found once per kernel.
  struct LaunchTraits {
    int blockSize = 0;       ///< cudaOccupancyMaxPotentialBlockSize
    bool dependent = false;  ///< launched with programmatic stream serialization
  };
  const LaunchTraits& launchTraitsOf(const void* kernel, const char* name);
  /// Loads the library's kernels on this device once (kernel_registry.hpp: loadKernels).
  void loadKernelsOnce();
  /// True when kernels of this device can read `source`'s memory (its pool and
  /// cudaMalloc memory) directly. Enables peer access on the first call per pair
  /// (cuda_peer.cu); false when the hardware or the driver cannot.
  bool peerAccessTo(CudaDevice& source);

 private:
  std::shared_ptr<QueueImpl> doCreateQueue() override;
  std::shared_ptr<QueueImpl> doWrapQueue(void* native) override;
  std::shared_ptr<EventImpl> doRecordTimingEvent(QueueImpl& q) override;
  std::shared_ptr<Allocation> doAllocate(std::size_t bytes, QueueImpl& q) override;
  std::shared_ptr<Allocation> doAdopt(void* handle, std::size_t bytes) override;
  /// cuda_peer.cu: copies from another CUDA device (peer copy engine or kernel).
  bool doCopyAcrossDevices(const CopyDesc& desc, DeviceImpl& srcDevice, QueueImpl& q) override;
  void doLaunch(const KernelLaunch& launch, QueueImpl& q) override;
  /// Frees the retained staging buffers and hands the pool's unused memory back.
  void doReleaseRetainedMemory() noexcept override;

  cudaMemPool_t memoryPool();

  int ordinal_;
  std::string model_;
  std::size_t totalMemory_;
  std::size_t maxPitch_;

  std::once_flag sdkOnce_;
  std::once_flag kernelsOnce_;  ///< loadKernels() ran on this device
  std::shared_ptr<QueueImpl> libraryQueue_;
  std::once_flag poolOnce_;
  std::once_flag releaseOnce_;
  cudaStream_t releaseStream_ = nullptr;
  std::atomic<cudaMemPool_t> pool_{nullptr};  ///< read by the exit handler too

  std::mutex eventMutex_;
  std::vector<cudaEvent_t> freeEvents_;

  /// Launches may start before the kernel before them ends (sm_90 and later, as
  /// DEVICEARRAY_CUDA_PDL says; cuda_launch.cu).
  bool dependentLaunch_ = false;
  std::mutex launchTraitsMutex_;
  std::unordered_map<const void*, LaunchTraits> launchTraits_;

  PinnedStagingPool staging_;
  GraphKeepAlive graphKeepAlive_;
};

/// The copy, fill and conversion steps of `device` (cuda_copy.cu).
std::unique_ptr<CopySteps> makeCopySteps(CudaDevice& device);
/// The conversion step: one launch of the depth pair's kernel (cuda_convert.cu).
void convertDepths(CudaDevice& device, const ConvertDesc& desc, QueueImpl& q);

/// CUB's scan, radix sort and reductions on `device` (cuda_primitives.cu).
std::unique_ptr<ParallelPrimitives> makePrimitives(CudaDevice& device);

}  // namespace devicearray::detail::cuda
