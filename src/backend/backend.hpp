// Internal backend interface: everything above this header is backend-agnostic.
//
// A DeviceImpl is one device of one backend. It allocates stream-ordered,
// reference-counted device memory (Allocation), owns the library's queue, wraps
// user queues, and offers the small set of device operations the library is
// written against: a strided N-d copy (device<->device, host<->device), a
// pattern fill, a depth conversion, and launching a named kernel whose body is
// shared between backends (src/kernels/*.h); its parallel primitives (scan, sort,
// reductions) are an object of its own (parallel_primitives.hpp). The backends
// themselves, and their device lists, are Backend objects (backend_registry.hpp).
//
// Ordering model: every Allocation remembers the events of the work enqueued on
// it (at most one per queue). Before new work on queue q touches an allocation,
// q waits (device-side, no host sync) on the events of the other queues; after
// the work is enqueued, an event recorded on q replaces q's entry. Freeing waits
// on all entries in stream order. OrderedUse below does both steps.
//
// DeviceImpl's work entry points are not virtual: they refuse a forked child
// (fork_guard.hpp) and count fault-injection points (backend/fault_injection.hpp) for
// every backend, then call the backend's private do* primitive.
#pragma once

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <limits>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "devicearray/device.hpp"
#include "devicearray/error.hpp"
#include "devicearray/types.hpp"
#include "backend/fork_guard.hpp"
#include "backend/fault_injection.hpp"

namespace devicearray::detail {

inline constexpr int kMaxDims = 32;  // OpenCV's CV_MAX_DIM

class Allocation;
class CopySteps;
class DeviceImpl;
class ParallelPrimitives;
class QueueImpl;

/// A marker in a queue.
class EventImpl {
 public:
  virtual ~EventImpl() = default;
  /// The backend that recorded it.
  virtual ComputeBackend backend() const = 0;
  virtual bool query() = 0;
  virtual void synchronize() = 0;
  /// Milliseconds from this event to `later` (both recorded with timing). Throws
  /// InvalidArgument when `later` was recorded by another backend (queues.cpp).
  float elapsedMs(EventImpl& later);
  /// Identity of the queue it was recorded on (its native handle).
  virtual const void* queueKey() const = 0;

 private:
  /// elapsedMs, for an event `later` of this backend.
  virtual float doElapsedMs(EventImpl& later) = 0;
};

/// A CUDA stream or OpenCL in-order command queue, owned or wrapped.
class QueueImpl {
 public:
  QueueImpl(std::shared_ptr<DeviceImpl> device, void* native) : device_(std::move(device)), native_(native) {}
  QueueImpl(const QueueImpl&) = delete;
  QueueImpl& operator=(const QueueImpl&) = delete;
  virtual ~QueueImpl() = default;
  const std::shared_ptr<DeviceImpl>& device() const { return device_; }
  /// cudaStream_t / cl_command_queue.
  void* native() const { return native_; }
  virtual void synchronize() = 0;
  virtual bool query() = 0;
  /// Records an event capturing the work enqueued so far.
  virtual std::shared_ptr<EventImpl> recordEvent(bool timing = false) = 0;
  /// Later work on this queue waits for `event` (device-side). Throws
  /// InvalidArgument when `event` was recorded by another backend (queues.cpp).
  void waitEvent(EventImpl& event);
  /// Identity of the queue for ordering (EventImpl::queueKey of events recorded on
  /// it): the native handle, except for CUDA's special handles, which name a
  /// different stream per device (legacy default stream, nullptr) or per thread
  /// (cudaStreamPerThread, 0x2) and are keyed accordingly.
  const void* key() const;
  /// True when the work enqueued here is being captured into a CUDA graph (the queue
  /// wraps a capturing stream): it runs at the graph's launches, so what it uses must
  /// live as long as the graph.
  bool capturesIntoGraph() const { return capturesIntoGraph_; }
  /// Makes the graph being captured hold `allocation` (Allocation::afterUse calls it
  /// when capturesIntoGraph()).
  virtual void keepAliveForGraph(std::shared_ptr<Allocation> allocation) { (void)allocation; }

 protected:
  bool capturesIntoGraph_ = false;  ///< set once by the backend, at construction

 private:
  /// waitEvent, for an event of this backend.
  virtual void doWaitEvent(EventImpl& event) = 0;

  std::shared_ptr<DeviceImpl> device_;
  void* native_;
};

/// Reference-counted device storage. The destructor of an owning allocation
/// returns the memory in stream order (after all recorded work); an external
/// one frees nothing.
class Allocation : public std::enable_shared_from_this<Allocation> {
 public:
  Allocation(std::shared_ptr<DeviceImpl> device, void* handle, std::size_t bytes, bool owned)
      : device_(std::move(device)), handle_(handle), bytes_(bytes), owned_(owned) {
    noteAllocationCreated();
  }
  Allocation(const Allocation&) = delete;
  Allocation& operator=(const Allocation&) = delete;
  virtual ~Allocation() { noteAllocationDestroyed(); }

  /// CUDA: device base address. OpenCL: the cl_mem.
  void* handle() const { return handle_; }
  /// Usable bytes from handle() (for external memory: as declared by the caller,
  /// 0 when unknown).
  std::size_t bytes() const { return bytes_; }
  bool external() const { return !owned_; }
  const std::shared_ptr<DeviceImpl>& device() const { return device_; }
  /// Stops this allocation from keeping its device alive: for memory the device
  /// itself caches (DeviceImpl::cachedAllocation), where an owning reference would be
  /// a cycle. The device must outlive the allocation. Call before sharing it.
  void dropDeviceOwnership() { device_ = std::shared_ptr<DeviceImpl>(std::shared_ptr<DeviceImpl>(), device_.get()); }

  /// Makes `q` wait for recorded work of other queues on this allocation.
  void beforeUse(QueueImpl& q);
  /// Records `event` (on queue `q`) as the latest work of `q` on this allocation.
  void afterUse(QueueImpl& q, const std::shared_ptr<EventImpl>& event);
  /// Blocks the host until all recorded work is complete.
  void waitIdle();
  /// Recorded work, for stream-ordered release by backends.
  std::vector<std::shared_ptr<EventImpl>> takePending();
  /// Makes this non-owning alias (a createGpuMatHeader header) share the ordering
  /// of `parent` while the parent lives: work through either handle waits for the
  /// other's recorded work, including a recycled buffer's hand-over. The alias
  /// does not keep the parent alive.
  void shareOrderingWith(const std::shared_ptr<Allocation>& parent);

 protected:
  std::shared_ptr<DeviceImpl> device_;
  void* handle_;
  std::size_t bytes_;
  bool owned_;

 private:
  std::mutex mutex_;
  std::vector<std::shared_ptr<EventImpl>> pending_;  // at most one per queue
  std::weak_ptr<Allocation> orderingParent_;         // set once, before the alias is shared
};

/// A place in device memory: an allocation and a byte offset into it.
struct BufferRef {
  Allocation* allocation = nullptr;
  std::size_t offset = 0;
};

/// One side of a transfer: host memory, or a place in device memory.
struct MemRef {
  void* host = nullptr;
  BufferRef buffer;
  bool isHost() const { return buffer.allocation == nullptr; }
  static MemRef hostPtr(void* p) { return MemRef{p, {}}; }
  static MemRef dev(Allocation* a, std::size_t off) { return MemRef{nullptr, {a, off}}; }
};

/// Copy `size` (per axis) elements of `elemSize` bytes from src to dst, each side
/// with its own byte steps. Produced by the core already normalized (see
/// layout.hpp: collapseCopy): axes of size 1 removed, mergeable axes merged, and a
/// trailing axis that is contiguous on both sides folded into elemSize. dims == 0
/// means one contiguous run of elemSize bytes.
struct CopyDesc {
  int dims = 0;
  std::array<std::int64_t, kMaxDims> size{};
  std::array<std::int64_t, kMaxDims> dstStep{};
  std::array<std::int64_t, kMaxDims> srcStep{};
  std::size_t elemSize = 0;
  MemRef dst;
  MemRef src;
  /// True when the caller blocks until the copy completes anyway (the blocking
  /// API): a backend may then let the driver block the host on pageable memory.
  /// False (stream semantics): the call must return without waiting for the
  /// queue, so pageable host memory is staged through page-locked buffers in
  /// queue order.
  bool hostMayBlock = false;
};

/// A strided region of device memory, for fill / conversions.
struct FillDesc {
  int dims = 0;
  std::array<std::int64_t, kMaxDims> size{};
  std::array<std::int64_t, kMaxDims> step{};
  std::size_t elemSize = 0;  ///< bytes of the pattern (1..32)
  MemRef dst;
  std::array<unsigned char, 32> pattern{};  ///< one element, already converted to the depth
};

/// dst(r, c) = saturate<dstDepth>(alpha * src(r, c) + beta) for rows x values
/// (values = cols * channels; the row steps are in bytes).
struct ConvertDesc {
  std::int64_t rows = 0;
  std::int64_t values = 0;
  Depth srcDepth = Depth::U8;
  Depth dstDepth = Depth::U8;
  std::int64_t srcStep = 0;
  std::int64_t dstStep = 0;
  double alpha = 1;
  double beta = 0;
  MemRef dst;
  MemRef src;
};

/// An argument of a shared kernel (src/kernels/*.h). A buffer becomes a typed
/// pointer on CUDA (offset folded in) and a (global T* base, ulong offset) pair
/// on OpenCL; see DA_BUFFER in src/kernels/prelude.h. Library code launches the
/// kernels it declares a signature for with launch<> (kernel_signature.hpp), which
/// makes these; the OpenCL-only kernels of src/opencl/*.cl are launched untyped.
struct KernelArg {
  enum class Kind { buffer, i32, u32, i64, u64, f32, f64 };
  Kind kind = Kind::i32;
  Allocation* buffer = nullptr;
  std::size_t offset = 0;
  union {
    std::int32_t i32;
    std::uint32_t u32;
    std::int64_t i64;
    std::uint64_t u64;
    float f32;
    double f64;
  } value{};

  static KernelArg buf(Allocation* a, std::size_t off = 0) {
    KernelArg k; k.kind = Kind::buffer; k.buffer = a; k.offset = off; return k;
  }
  static KernelArg i32(std::int32_t v) { KernelArg k; k.kind = Kind::i32; k.value.i32 = v; return k; }
  static KernelArg u32(std::uint32_t v) { KernelArg k; k.kind = Kind::u32; k.value.u32 = v; return k; }
  static KernelArg i64(std::int64_t v) { KernelArg k; k.kind = Kind::i64; k.value.i64 = v; return k; }
  static KernelArg u64(std::uint64_t v) { KernelArg k; k.kind = Kind::u64; k.value.u64 = v; return k; }
  static KernelArg f32(float v) { KernelArg k; k.kind = Kind::f32; k.value.f32 = v; return k; }
  static KernelArg f64(double v) { KernelArg k; k.kind = Kind::f64; k.value.f64 = v; return k; }
};

struct KernelSignature;  // kernel_signature.hpp

/// Launch of a shared kernel over a 1-, 2- or 3-D index space of exactly
/// globalSize work items (the kernel itself bounds-checks against its own size
/// arguments; backends may round the launch up).
///
/// localSize 0 lets the backend choose the work-group shape. A kernel declared with
/// DA_KERNEL_GROUP(name, size) (local memory, barriers) needs localSize == size, a
/// 1-D launch, and a globalSize that is a multiple of it; the launch is then exact.
struct KernelLaunch {
  const char* name = nullptr;
  /// The declared parameters of kernel `name` when launched with launch<>
  /// (kernel_signature.hpp): the OpenCL backend checks the program's kernel against
  /// them. Null for an untyped launch (CUDA then checks the argument kinds, OpenCL
  /// their count).
  const KernelSignature* signature = nullptr;
  int workDims = 1;
  std::array<std::size_t, 3> globalSize{1, 1, 1};
  std::size_t localSize = 0;
  std::vector<KernelArg> args;

  /// Throws InvalidArgument naming `fn` and the kernel unless localSize is 0, or
  /// divides the global size of a 1-D launch and is at most maxLocalSize. Every launch
  /// passes here, so nothing is formatted unless it throws.
  void checkWorkGroup(const char* fn, std::size_t maxLocalSize = std::numeric_limits<std::size_t>::max()) const;
};

class DeviceImpl : public std::enable_shared_from_this<DeviceImpl> {
 public:
  DeviceImpl();
  DeviceImpl(const DeviceImpl&) = delete;
  DeviceImpl& operator=(const DeviceImpl&) = delete;
  /// Backends that destroy devices call releaseCachedMemory() and then forgetAtExit()
  /// first in their own destructor, while their context still exists.
  virtual ~DeviceImpl();

  virtual ComputeBackend backend() const = 0;
  virtual int ordinal() const = 0;
  virtual std::string model() const = 0;
  virtual std::string vendor() const = 0;
  virtual void* nativeContext() = 0;
  virtual void* nativeDevice() = 0;
  virtual std::size_t totalMemory() = 0;
  virtual std::size_t freeMemory() = 0;

  /// The library's own queue of this device.
  virtual const std::shared_ptr<QueueImpl>& libraryQueue() = 0;

  /// The one way a caller's StreamOrQueue becomes a queue of this device: the
  /// library's own queue when `sq` is its handle (or a null OpenCL queue, which names
  /// no queue of its own), else a wrapper of the caller's handle. Throws
  /// InvalidArgument naming `fn` when `sq` is a handle of the other backend.
  std::shared_ptr<QueueImpl> queueFor(const StreamOrQueue& sq, const char* fn);

  // The entry points below are not virtual: they make the checks every backend
  // shares (a forked child, fault injection) once, here, and then call the
  // backend's primitive (the private do* functions).

  /// A new owned queue (CUDA: non-blocking stream; OpenCL: in-order queue).
  std::shared_ptr<QueueImpl> createQueue() {
    requireNotForked("Stream::Stream");
    return doCreateQueue();
  }
  /// Non-owning wrapper of a native handle (validated against this device).
  std::shared_ptr<QueueImpl> wrapQueue(void* native) {
    requireNotForked("using a stream/queue");
    return doWrapQueue(native);
  }
  /// An unrecorded event with timing enabled (Event class).
  std::shared_ptr<EventImpl> recordTimingEvent(QueueImpl& q) {
    requireNotForked("Event::record");
    return doRecordTimingEvent(q);
  }

  /// Stream-ordered allocation usable on `q` (its first use is recorded on `q`).
  /// Throws OutOfMemory naming the requested and free bytes.
  std::shared_ptr<Allocation> allocate(std::size_t bytes, QueueImpl& q) {
    requireNotForked("device allocation");
    faultPoint(FaultKind::deviceAllocation, "allocate");
    return doAllocate(bytes, q);
  }
  /// Wraps memory the library does not own (CUDA pointer / cl_mem, which is retained
  /// for the wrapper's lifetime). `bytes` may be 0 when unknown.
  std::shared_ptr<Allocation> adopt(void* handle, std::size_t bytes) {
    requireNotForked("wrapping device memory");
    return doAdopt(handle, bytes);
  }

  /// Enqueues the strided copy on `q` (host<->device or within this device). The
  /// copy planner (copy_plan.cpp) validates it and carries it out with the
  /// backend's copy steps (copySteps()).
  void copy(const CopyDesc& desc, QueueImpl& q);
  /// A device-to-device copy from memory of `srcDevice` (desc.src) into memory of
  /// this device (desc.dst), enqueued on `q` (a queue of this device) without
  /// blocking the host. Returns false, having enqueued and waited for nothing, when
  /// this backend cannot move data from `srcDevice` directly; the core then stages
  /// the copy through host memory. When it returns true the copy is ordered after
  /// the recorded work on both allocations and recorded on both (OrderedUse on
  /// `q`): only the backend knows whether its queues can wait on the other device's
  /// events, so it does the ordering itself.
  bool copyAcrossDevices(const CopyDesc& desc, DeviceImpl& srcDevice, QueueImpl& q) {
    requireNotForked("device copy");
    faultPoint(FaultKind::deviceCopy, "copy across devices");
    return doCopyAcrossDevices(desc, srcDevice, q);
  }
  /// Enqueues a pattern fill of a strided region of this device on `q`.
  void fill(const FillDesc& desc, QueueImpl& q);
  /// Enqueues a depth conversion (OpenCV's convertTo) within this device on `q`.
  void convert(const ConvertDesc& desc, QueueImpl& q);
  void launch(const KernelLaunch& launch, QueueImpl& q) {
    requireNotForked("kernel launch");
    faultPoint(FaultKind::kernelLaunch, launch.name != nullptr ? launch.name : "launch");
    doLaunch(launch, q);
  }

  /// Device memory the core keeps for the life of this device (the colour conversion
  /// tables): `build` runs on the first call for `key`, later calls share its result.
  /// The entry does not keep the device alive (that would be a cycle); it is freed,
  /// in stream order, by releaseCachedMemory().
  std::shared_ptr<Allocation> cachedAllocation(const void* key,
                                               const std::function<std::shared_ptr<Allocation>()>& build);
  /// Frees what this device caches: the cachedAllocation() entries, then the
  /// backend's own retained memory (doReleaseRetainedMemory). Later calls rebuild
  /// them. Runs for every device at exit (before the drivers tear down), in a
  /// destructible device's destructor, and from tests. No-op in a forked child.
  void releaseCachedMemory() noexcept;

  /// The parallel primitives (scan, sort, reductions) of this device
  /// (backend/parallel_primitives.hpp).
  ParallelPrimitives& primitives() { return *primitives_; }

 protected:
  /// Registers this device with the exit handler that calls releaseCachedMemory()
  /// (idempotent). Backends call it when they start retaining device memory, which is
  /// after their driver set up its own exit handlers, so this one runs first.
  void releaseAtExit() noexcept;
  /// Undoes releaseAtExit(), waiting for an exit handler that is running. Destructible
  /// devices call it early in their destructor (the base destructor calls it again).
  void forgetAtExit() noexcept;
  /// Hands the device the backend's objects that do its work: the parallel primitives
  /// and the copy steps (each refers to the device). Backends call it once, in their
  /// constructor.
  void setWorkObjects(std::unique_ptr<ParallelPrimitives> primitives, std::unique_ptr<CopySteps> copySteps);

 private:
  virtual std::shared_ptr<QueueImpl> doCreateQueue() = 0;
  virtual std::shared_ptr<QueueImpl> doWrapQueue(void* native) = 0;
  virtual std::shared_ptr<EventImpl> doRecordTimingEvent(QueueImpl& q) = 0;
  virtual std::shared_ptr<Allocation> doAllocate(std::size_t bytes, QueueImpl& q) = 0;
  virtual std::shared_ptr<Allocation> doAdopt(void* handle, std::size_t bytes) = 0;
  /// The copy, fill and conversion steps of this device (copy_steps.hpp), which
  /// copy(), fill() and convert() call after their checks.
  CopySteps& copySteps() { return *copySteps_; }
  virtual bool doCopyAcrossDevices(const CopyDesc& desc, DeviceImpl& srcDevice, QueueImpl& q) {
    (void)desc;
    (void)srcDevice;
    (void)q;
    return false;
  }
  virtual void doLaunch(const KernelLaunch& launch, QueueImpl& q) = 0;
  /// Frees device memory the backend retains for reuse (never blocks). Default: none.
  virtual void doReleaseRetainedMemory() noexcept {}

  std::unique_ptr<ParallelPrimitives> primitives_;
  std::unique_ptr<CopySteps> copySteps_;
  std::mutex cachedMutex_;
  std::vector<std::pair<const void*, std::shared_ptr<Allocation>>> cached_;
  std::atomic<bool> releaseAtExit_{false};
};

/// DeviceImpl::releaseCachedMemory() of every device that holds cached memory:
/// what the exit handler runs, callable by tests.
void releaseAllCachedMemory() noexcept;

/// Makes `q` ready to use every allocation in `uses` (beforeUse), and on commit()
/// records one event on `q` as their latest work. Construct, enqueue, commit().
class OrderedUse {
 public:
  OrderedUse(QueueImpl& q, std::initializer_list<Allocation*> uses);
  void add(Allocation* a);
  /// Records the event (if any allocation was added) and returns it, so a
  /// blocking caller can wait for exactly this work.
  std::shared_ptr<EventImpl> commit();

 private:
  QueueImpl& q_;
  std::vector<Allocation*> uses_;
};

/// Throws Error(code, "function: message").
[[noreturn]] void fail(ErrorCode code, const std::string& message);

}  // namespace devicearray::detail
