// OpenCL implementation of the backend interface (src/backend/backend.hpp): the
// device, its allocations and what the copy engine shares with it. opencl_device.cpp
// lists which file implements what.
#pragma once

#include <CL/cl.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <list>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "backend/backend.hpp"
#include "backend/copy_steps.hpp"
#include "backend/parallel_primitives.hpp"
#include "opencl/opencl_queue.hpp"

namespace devicearray::detail::opencl {

/// Device memory of one cl_context. Owned buffers go back to the device's
/// buffer cache (with their pending work) when the last handle drops; adopted
/// ones were retained and are released.
class OpenCLAllocation final : public Allocation {
 public:
  OpenCLAllocation(std::shared_ptr<DeviceImpl> device, cl_mem mem, std::size_t bytes, std::size_t capacity,
                   bool owned) noexcept
      : Allocation(std::move(device), mem, bytes, owned), capacity_(capacity) {}
  ~OpenCLAllocation() override;

  cl_mem mem() const { return static_cast<cl_mem>(handle()); }

 private:
  std::size_t capacity_;  // the size the cl_mem was created with
};

/// A plain kernel argument: clSetKernelArg(kernel, i, size, value).
struct RawArg {
  std::size_t size;
  const void* value;
};

/// A buffer taken from (or created for) the cache, for internal temporaries.
struct ScratchBuffer {
  cl_mem mem = nullptr;
  std::size_t capacity = 0;
};

class OpenCLDevice final : public DeviceImpl {
 public:
  /// Takes over one reference of `context` and `queue`; `device` is retained when
  /// `adopted` (root device ids of enumerated devices need none).
  static std::shared_ptr<OpenCLDevice> create(cl_platform_id platform, cl_context context, cl_device_id device,
                                              cl_command_queue queue, int ordinal, bool adopted);
  OpenCLDevice(const OpenCLDevice&) = delete;
  OpenCLDevice& operator=(const OpenCLDevice&) = delete;
  ~OpenCLDevice() override;

  ComputeBackend backend() const override { return ComputeBackend::opencl; }
  int ordinal() const override { return ordinal_; }
  std::string model() const override { return model_; }
  std::string vendor() const override { return vendor_; }
  void* nativeContext() override { return context_; }
  void* nativeDevice() override { return device_; }
  std::size_t totalMemory() override { return globalMemBytes_; }
  std::size_t freeMemory() override;

  const std::shared_ptr<QueueImpl>& libraryQueue() override { return libraryQueue_; }

  // ---- internals shared by the copy engine (opencl_copy.cpp) ----
  cl_context context() const { return context_; }
  cl_device_id device() const { return device_; }
  bool hasFp64() const { return hasFp64_; }
  /// `q` as a queue of this device, or InvalidArgument naming `fn`.
  OpenCLQueue& queueOf(QueueImpl& q, const char* fn);
  /// The cl_mem of an allocation of this device's context, or InvalidArgument.
  cl_mem memOf(const Allocation* a, const char* fn) const;
  /// A buffer of at least `bytes` usable on `q` (q already waits for its previous
  /// users); give it back with releaseScratch after enqueuing its last use.
  ScratchBuffer acquireScratch(std::size_t bytes, OpenCLQueue& q, const char* fn);
  void releaseScratch(const ScratchBuffer& buffer, OpenCLQueue& q);
  /// Returns an owned buffer to the cache (or releases it when the cache is full).
  void recycle(cl_mem mem, std::size_t capacity, std::vector<std::shared_ptr<EventImpl>> pending) noexcept;
  /// Sets the arguments of kernel `name` and enqueues it on `q` (thread-safe).
  /// `local`: the work-group shape, or null to let the implementation choose.
  void enqueueKernel(const char* fn, const char* name, OpenCLQueue& q, cl_uint workDims, const std::size_t* global,
                     const std::vector<RawArg>& args, const std::size_t* local = nullptr);
  /// A typed launch (kernelLaunch<>) from a step whose caller has passed the checks of
  /// DeviceImpl::launch; errors name `fn`.
  void enqueueLaunch(const char* fn, const KernelLaunch& launch, OpenCLQueue& q);
  /// Whether kernel `name` can run in work-groups of `size` work items here: its
  /// CL_KERNEL_WORK_GROUP_SIZE allows them and its local memory fits the device's
  /// (builds the program on first use).
  bool runsWorkGroupsOf(const char* name, std::size_t size);
  /// "opencl:1 (model / vendor)" or "adopted OpenCL device (model / vendor)", for messages.
  std::string describe() const;

 private:
  struct KernelSlot {
    cl_kernel kernel = nullptr;
    cl_uint numArgs = 0;
    std::size_t maxGroupItems = 0;  // CL_KERNEL_WORK_GROUP_SIZE on this device
    std::atomic<const KernelSignature*> matched{nullptr};  // the last signature found to match
    std::mutex mutex;  // clSetKernelArg + enqueue must not interleave between threads
  };
  struct CachedBuffer {
    cl_mem mem;
    std::size_t capacity;
    std::vector<std::shared_ptr<EventImpl>> pending;
  };
  struct Acquired {
    cl_mem mem;
    std::size_t capacity;
    bool hadPendingWork;  // q was made to wait, so q must record the hand-over
  };

  OpenCLDevice(cl_platform_id platform, cl_context context, cl_device_id device, int ordinal, bool adopted);

  std::shared_ptr<QueueImpl> doCreateQueue() override;
  std::shared_ptr<QueueImpl> doWrapQueue(void* native) override;
  std::shared_ptr<EventImpl> doRecordTimingEvent(QueueImpl& q) override;
  std::shared_ptr<Allocation> doAllocate(std::size_t bytes, QueueImpl& q) override;
  std::shared_ptr<Allocation> doAdopt(void* handle, std::size_t bytes) override;
  void doLaunch(const KernelLaunch& launch, QueueImpl& q) override;
  /// Releases the cached buffers without waiting (OpenCL deletes a cl_mem once the
  /// commands using it have finished).
  void doReleaseRetainedMemory() noexcept override;

  Acquired acquire(std::size_t bytes, OpenCLQueue& q, const char* fn);
  /// Releases every cached buffer after its pending work (blocks on that work).
  void flushCache() noexcept;
  cl_program program();
  KernelSlot& kernel(const char* name);
  /// enqueueKernel for a kernel already looked up.
  void enqueue(KernelSlot& k, const char* fn, const char* name, OpenCLQueue& q, cl_uint workDims,
               const std::size_t* global, const RawArg* args, std::size_t argCount, const std::size_t* local);

  cl_platform_id platform_;
  cl_context context_;
  cl_device_id device_;
  int ordinal_;
  bool adopted_;
  std::string model_;
  std::string vendor_;
  std::size_t globalMemBytes_ = 0;
  std::size_t maxAllocBytes_ = 0;
  bool hasFp64_ = false;
  /// The device can divide and take square roots of floats correctly rounded, as CUDA
  /// and the host do (OpenCL's default allows 2.5 ulp for a division).
  bool correctlyRoundedDivide_ = false;
  std::shared_ptr<QueueImpl> libraryQueue_;

  std::mutex programMutex_;
  cl_program program_ = nullptr;
  std::string buildError_;  // kept so a failed build is reported, not retried, on every launch

  std::mutex kernelsMutex_;
  std::unordered_map<std::string, std::unique_ptr<KernelSlot>> kernels_;

  std::mutex cacheMutex_;
  std::list<CachedBuffer> cache_;  // most recently returned first
  std::size_t cachedBytes_ = 0;
  std::size_t cacheLimitBytes_ = 0;
  std::size_t liveBytes_ = 0;  // owned buffers handed out and not yet returned (guarded by cacheMutex_)

};

/// The copy, fill and conversion steps of `device` (opencl_copy.cpp).
std::unique_ptr<CopySteps> makeCopySteps(OpenCLDevice& device);

/// The library's scan, radix sort and reductions on `device` (opencl_primitives.cpp),
/// in the shape for its device type unless DEVICEARRAY_OPENCL_PRIMITIVES names one.
std::unique_ptr<ParallelPrimitives> makePrimitives(OpenCLDevice& device);

/// ComputeDevice::fromOpenCL: the device of the caller's context, device and queue,
/// which it retains; the same handles give the same device while it lives
/// (opencl_adoption.cpp).
std::shared_ptr<DeviceImpl> adoptDevice(void* context, void* device, void* queue);

}  // namespace devicearray::detail::opencl
