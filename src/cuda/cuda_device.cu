// CUDA backend of src/backend/backend.hpp.
//
// Design
// ------
// * Loading without a driver. The library links only the static runtime
//   (cudart_static), which opens libcuda at run time. The CUDA Backend
//   (cuda_backend.cu) asks cudaGetDeviceCount once; on failure it lists no devices
//   and keeps the runtime's answer as its unavailableReason(). libcuda symbols we need
//   (cuCtxGetCurrent for nativeContext) come from cudaGetDriverEntryPointByVersion.
// * Devices. One CudaDevice per ordinal, created on first use and never destroyed:
//   allocations, streams and events may outlive static destructors, and the CUDA
//   runtime tears itself down at exit in an order we do not control. What a device
//   caches (the core's tables, staging buffers, pool memory) is freed by an exit
//   handler that runs before the runtime's (DeviceImpl::releaseCachedMemory). Everything
//   runs in the device's primary context, so memory and streams are
//   interchangeable with PyTorch, CuPy and plain runtime-API code. Each entry
//   point sets the device with a DeviceGuard and restores the caller's device.
// * Streams and events. The device has one library stream (non-blocking, so it
//   never serializes with the legacy default stream). Ordering events are
//   timing-disabled and recycled through a per-device free list, because the
//   core records one per operation; re-recording a recycled event is safe since
//   nobody holds it any more. Timing events (Event class) are created per use.
// * Memory. A library-owned cudaMemPool per device with release threshold
//   UINT64_MAX, so freed blocks stay in the pool and allocation is a cheap
//   stream-ordered sub-allocation (cudaMallocFromPoolAsync). The new block's first
//   use is recorded on the allocating stream; other streams order after it via the
//   Allocation's event list. Freeing happens in stream order on a release stream
//   after waiting on every recorded event, so dropping the last handle while
//   kernels still run is safe; the release stream is not the library stream, so
//   the library's own reads and blocking calls never wait for other streams' work
//   through a free. On out-of-memory we synchronize the device,
//   trim the pool to zero and retry once before reporting the free bytes.
// * Graph capture (graph_capture.hpp): a wrapper of a stream that is being captured
//   marks its events with the capture, allocates on the library stream instead, and
//   makes the graph hold every allocation the capture uses.
// * Copies (cuda_copy.cu): contiguous -> cudaMemcpyAsync; host<->device with one
//   strided axis -> cudaMemcpy2DAsync; every other device<->device layout (wide
//   pitched rows included, which cudaMemcpy2DAsync moves far below contiguous
//   bandwidth) -> one launch of a strided N-d copy kernel moving the widest word
//   that divides element size, steps and base addresses. Host layouts that
//   cudaMemcpy2D cannot express go through page-locked staging buffers, packed and
//   unpacked in stream-ordered host callbacks, plus a temporary pool buffer and the
//   strided kernel on the device side. Nothing in the stream overloads blocks the
//   host, except that CUDA itself may block for transfers with pageable memory.
// * Kernels (cuda_launch.cu, kernel_registry.hpp): shared kernels register by name
//   at static-init time; launches validate the argument list against the
//   kernel's C++ signature recorded at registration.
#include "cuda/cuda_device.hpp"
#include "cuda/kernel_registry.hpp"

#include <cuda.h>

#include <algorithm>
#include <cstdlib>
#include <cstdint>
#include <limits>
#include <string_view>

namespace devicearray::detail {
namespace cuda {

[[noreturn]] void throwCudaError(const char* function, cudaError_t err) {
  (void)cudaGetLastError();  // clear non-sticky errors so they do not leak into later calls
  std::string message = function;
  message += ": ";
  message += cudaGetErrorName(err);
  message += ": ";
  message += cudaGetErrorString(err);
  fail(ErrorCode::BackendError, message);
}

// ------------------------------------------------------------------ events ---

CudaEvent::~CudaEvent() {
  if (forkedAfterInit()) return;  // leaked: no CUDA call (nor a pool lock) in a forked child
  if (timing_) {
    DeviceGuard guard(device_->ordinal(), std::nothrow);
    if (guard.ok() && cudaEventDestroy(event_) != cudaSuccess) (void)cudaGetLastError();
  } else {
    device_->releaseOrderingEvent(event_);
  }
}

bool CudaEvent::query() {
  if (capture_.captured() || done_.load(std::memory_order_acquire)) return true;
  DeviceGuard guard(device_->ordinal());
  // The calling thread may be capturing another stream: asking about an ordinary event
  // is safe then, but the global and thread-local modes forbid it (and end the capture).
  const RelaxedCaptureMode relaxed;
  const cudaError_t err = cudaEventQuery(event_);
  if (err == cudaSuccess) {
    done_.store(true, std::memory_order_release);
    return true;
  }
  if (err == cudaErrorNotReady) return false;
  throwCudaError("cudaEventQuery", err);
}

bool CudaEvent::completeNoThrow() noexcept {
  try {
    return query();
  } catch (...) {
    return false;  // let the wait report the error
  }
}

void CudaEvent::synchronize() {
  if (capture_.captured() || done_.load(std::memory_order_acquire)) return;
  DeviceGuard guard(device_->ordinal());
  const RelaxedCaptureMode relaxed;  // as in query()
  check(cudaEventSynchronize(event_), "cudaEventSynchronize");
  done_.store(true, std::memory_order_release);
}

float CudaEvent::doElapsedMs(EventImpl& later) {
  auto* end = static_cast<CudaEvent*>(&later);
  if (!timing_ || !end->timing_)
    fail(ErrorCode::InvalidArgument,
         "Event::elapsedTime: both events must be timing events (recorded through Event::record)");
  if (capture_.captured() || end->capture_.captured())
    fail(ErrorCode::InvalidState,
         "Event::elapsedTime: an event recorded during a graph capture marks a node of the graph, not a moment");
  DeviceGuard guard(device_->ordinal());
  // cudaEventElapsedTime fails with NotReady on pending events; wait instead so the
  // call means "time between the two markers" whatever the caller synchronized.
  check(cudaEventSynchronize(event_), "cudaEventSynchronize");
  check(cudaEventSynchronize(end->event_), "cudaEventSynchronize");
  float ms = 0;
  check(cudaEventElapsedTime(&ms, event_, end->event_), "cudaEventElapsedTime");
  return ms;
}

// ------------------------------------------------------------------ queues ---

CudaQueue::CudaQueue(std::shared_ptr<DeviceImpl> device, cudaStream_t stream, bool owned, StreamCapture capture)
    : QueueImpl(std::move(device), stream),
      cudaDevice_(static_cast<CudaDevice*>(this->device().get())),
      owned_(owned),
      capture_(capture) {
  capturesIntoGraph_ = capture_.captured();
}

CudaQueue::~CudaQueue() {
  if (!owned_ || forkedAfterInit()) return;  // leaked in a forked child: the stream is the parent's
  DeviceGuard guard(cudaDevice_->ordinal(), std::nothrow);
  // Work already enqueued still completes after cudaStreamDestroy returns.
  if (guard.ok() && cudaStreamDestroy(stream()) != cudaSuccess) (void)cudaGetLastError();
}

void CudaQueue::synchronize() {
  DeviceGuard guard(cudaDevice_->ordinal());
  check(cudaStreamSynchronize(stream()), "cudaStreamSynchronize");
}

bool CudaQueue::query() {
  DeviceGuard guard(cudaDevice_->ordinal());
  const cudaError_t err = cudaStreamQuery(stream());
  if (err == cudaSuccess) return true;
  if (err == cudaErrorNotReady) return false;
  throwCudaError("cudaStreamQuery", err);
}

std::shared_ptr<EventImpl> CudaQueue::recordEvent(bool timing) {
  DeviceGuard guard(cudaDevice_->ordinal());
  cudaEvent_t event = nullptr;
  if (timing) {
    check(cudaEventCreate(&event), "cudaEventCreate");
  } else {
    event = cudaDevice_->acquireOrderingEvent();
  }
  // Own the handle before recording so a failed record does not leak it.
  auto impl = std::make_shared<CudaEvent>(cudaDevice_, event, key(), timing, capture_);
  check(cudaEventRecord(event, stream()), "cudaEventRecord");
  return impl;
}

void CudaQueue::keepAliveForGraph(std::shared_ptr<Allocation> allocation) {
  cudaDevice_->graphKeepAlive().hold(capture_, std::move(allocation));
}

void CudaQueue::doWaitEvent(EventImpl& event) {
  auto* cudaEvent = static_cast<CudaEvent*>(&event);
  const StreamCapture& recordedIn = cudaEvent->capture();
  if (recordedIn.captured()) {
    // A node of a graph: an edge inside its own capture; anywhere else the caller
    // orders the graph's launches against their streams.
    if (recordedIn.id != capture_.id) return;
  } else if (cudaEvent->completeNoThrow()) {
    return;  // finished work needs no wait
  } else if (capture_.captured()) {
    // A graph cannot depend on work recorded before it was built: the host waits for
    // it, once, while the graph is being captured.
    cudaEvent->synchronize();
    return;
  }
  DeviceGuard guard(cudaDevice_->ordinal());
  // Cross-device waits are legal in CUDA (same process), so no device check here.
  check(cudaStreamWaitEvent(stream(), cudaEvent->native(), 0), "cudaStreamWaitEvent");
}

// ------------------------------------------------------------- allocation ---

CudaAllocation::~CudaAllocation() {
  // In a forked child the memory belongs to the parent's context: leaked, no CUDA call.
  if (!owned_ || handle_ == nullptr || forkedAfterInit()) return;
  std::vector<std::shared_ptr<EventImpl>> pending;
  try {
    pending = takePending();
  } catch (...) {
    // Without the list we cannot order the free after the recorded work; the
    // device-wide fallback below keeps it safe.
    pending.clear();
    auto* device = static_cast<CudaDevice*>(device_.get());
    DeviceGuard guard(device->ordinal(), std::nothrow);
    if (guard.ok() && cudaDeviceSynchronize() != cudaSuccess) (void)cudaGetLastError();
  }
  static_cast<CudaDevice*>(device_.get())->releaseInStreamOrder(handle_, pending);
}

// ---------------------------------------------------------- staging pool ---

PinnedStagingPool::Buffer PinnedStagingPool::acquire(std::size_t bytes) {
  std::vector<Buffer> surplus;
  Buffer found;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    // Smallest free buffer that fits, so big buffers stay available for big copies.
    auto best = free_.end();
    for (auto it = free_.begin(); it != free_.end(); ++it)
      if (it->bytes >= bytes && (best == free_.end() || it->bytes < best->bytes)) best = it;
    if (best != free_.end()) {
      found = *best;
      free_.erase(best);
    }
    // Buffers come back from host callbacks, which may not call cudaFreeHost; the
    // retention limit is therefore enforced here.
    std::size_t retained = 0;
    std::sort(free_.begin(), free_.end(), [](const Buffer& a, const Buffer& b) { return a.bytes < b.bytes; });
    std::vector<Buffer> keep;
    for (const Buffer& b : free_) {
      if (keep.size() < kMaxRetainedBuffers && retained + b.bytes <= kMaxRetainedBytes) {
        keep.push_back(b);
        retained += b.bytes;
      } else {
        surplus.push_back(b);
      }
    }
    free_ = std::move(keep);
  }
  for (const Buffer& b : surplus)
    if (cudaFreeHost(b.data) != cudaSuccess) (void)cudaGetLastError();
  if (found.data != nullptr) return found;

  // Round up so that slightly different shapes reuse the same buffer.
  std::size_t rounded = std::size_t{64} << 10;
  while (rounded < bytes && rounded <= (std::numeric_limits<std::size_t>::max() >> 1)) rounded <<= 1;
  if (rounded < bytes) rounded = bytes;
  void* p = nullptr;
  cudaError_t err = cudaHostAlloc(&p, rounded, cudaHostAllocPortable);
  if (err != cudaSuccess && rounded != bytes) {
    (void)cudaGetLastError();
    rounded = bytes;
    err = cudaHostAlloc(&p, rounded, cudaHostAllocPortable);
  }
  if (err == cudaErrorMemoryAllocation) {
    (void)cudaGetLastError();
    fail(ErrorCode::OutOfMemory, "copy: cannot allocate " + std::to_string(bytes) +
                                     " bytes of page-locked staging memory for a strided host transfer");
  }
  check(err, "cudaHostAlloc");
  return Buffer{p, rounded};
}

void PinnedStagingPool::freeRetained() noexcept {
  std::vector<Buffer> retained;
  try {
    std::lock_guard<std::mutex> lock(mutex_);
    retained.swap(free_);
  } catch (...) {
    return;
  }
  for (const Buffer& b : retained)
    if (cudaFreeHost(b.data) != cudaSuccess) (void)cudaGetLastError();
}

void PinnedStagingPool::release(Buffer buffer) noexcept {
  try {
    std::lock_guard<std::mutex> lock(mutex_);
    free_.push_back(buffer);
  } catch (...) {
    // push_back failed (no memory): the buffer leaks rather than being freed from a
    // context where CUDA calls are not allowed.
  }
}

// ------------------------------------------------------------------ device ---

namespace {

/// Whether the library's kernels are dependent launches where DEVICEARRAY_CUDA_PDL does
/// not say ("0" turns them off, for profilers or comparisons).
constexpr bool kDependentLaunchByDefault = true;

/// The environment switch `name`: "1" on, "0" off, unset or anything else `byDefault`.
bool switchedOn(const char* name, bool byDefault) {
  const char* value = std::getenv(name);
  if (value == nullptr) return byDefault;
  const std::string_view v(value);
  return v == "1" ? true : v == "0" ? false : byDefault;
}

}  // namespace

CudaDevice::CudaDevice(int ordinal, const cudaDeviceProp& prop)
    : ordinal_(ordinal),
      model_(prop.name),
      totalMemory_(prop.totalGlobalMem),
      maxPitch_(prop.memPitch),
      dependentLaunch_(prop.major >= 9 && switchedOn("DEVICEARRAY_CUDA_PDL", kDependentLaunchByDefault)) {
  setWorkObjects(makePrimitives(*this), makeCopySteps(*this));
}

void* CudaDevice::nativeContext() {
  using GetCurrent = CUresult (*)(CUcontext*);
  static GetCurrent getCurrent = []() -> GetCurrent {
    void* fn = nullptr;
    cudaDriverEntryPointQueryResult status = cudaDriverEntryPointSymbolNotFound;
    if (cudaGetDriverEntryPointByVersion("cuCtxGetCurrent", &fn, 4000, cudaEnableDefault, &status) != cudaSuccess ||
        status != cudaDriverEntryPointSuccess) {
      (void)cudaGetLastError();
      return nullptr;
    }
    return reinterpret_cast<GetCurrent>(fn);
  }();
  if (getCurrent == nullptr)
    fail(ErrorCode::BackendError, "ComputeDevice::nativeContext: the CUDA driver does not export cuCtxGetCurrent");
  DeviceGuard guard(ordinal_);
  // cudaFree(nullptr) initializes the primary context and makes it current on this
  // thread; the runtime keeps it retained for the life of the process.
  check(cudaFree(nullptr), "cudaFree");
  CUcontext context = nullptr;
  const CUresult result = getCurrent(&context);
  if (result != CUDA_SUCCESS || context == nullptr)
    fail(ErrorCode::BackendError,
         "ComputeDevice::nativeContext: cuCtxGetCurrent failed (CUresult " + std::to_string(result) + ")");
  return context;
}

void* CudaDevice::nativeDevice() {
  return reinterpret_cast<void*>(static_cast<std::intptr_t>(ordinal_));
}

std::size_t CudaDevice::freeMemory() {
  DeviceGuard guard(ordinal_);
  std::size_t freeBytes = 0, totalBytes = 0;
  check(cudaMemGetInfo(&freeBytes, &totalBytes), "cudaMemGetInfo");
  return freeBytes;
}

void CudaDevice::loadKernelsOnce() {
  std::call_once(kernelsOnce_, [this] {
    DeviceGuard guard(ordinal_);
    loadKernels();
  });
}

const std::shared_ptr<QueueImpl>& CudaDevice::libraryQueue() {
  std::call_once(sdkOnce_, [this] {
    loadKernelsOnce();
    DeviceGuard guard(ordinal_);
    cudaStream_t stream = nullptr;
    check(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), "cudaStreamCreateWithFlags");
    libraryQueue_ = std::make_shared<CudaQueue>(shared_from_this(), stream, true);
  });
  return libraryQueue_;
}

cudaStream_t CudaDevice::releaseStream() {
  std::call_once(releaseOnce_, [this] {
    DeviceGuard guard(ordinal_);
    check(cudaStreamCreateWithFlags(&releaseStream_, cudaStreamNonBlocking), "cudaStreamCreateWithFlags");
  });
  return releaseStream_;
}

std::shared_ptr<QueueImpl> CudaDevice::doCreateQueue() {
  loadKernelsOnce();
  DeviceGuard guard(ordinal_);
  cudaStream_t stream = nullptr;
  check(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), "cudaStreamCreateWithFlags");
  try {
    return std::make_shared<CudaQueue>(shared_from_this(), stream, true);
  } catch (...) {
    (void)cudaStreamDestroy(stream);
    throw;
  }
}

std::shared_ptr<QueueImpl> CudaDevice::doWrapQueue(void* native) {
  loadKernelsOnce();
  graphKeepAlive_.releaseDestroyed();  // every call passes here: drop what dead graphs held
  auto stream = static_cast<cudaStream_t>(native);
  // The special handles name the calling thread's stream of the *current* device,
  // which the guard makes this device in every call. The legacy stream cannot be
  // captured; the per-thread one can.
  const bool special = stream == nullptr || stream == cudaStreamLegacy || stream == cudaStreamPerThread;
  DeviceGuard guard(ordinal_);
  const StreamCapture capture =
      stream == nullptr || stream == cudaStreamLegacy ? StreamCapture{} : StreamCapture::of(stream, "Stream::wrap");
  // CUDA refuses cudaStreamGetDevice on a capturing stream (and invalidates the
  // capture), so a captured stream's device is not checked here: a stream of another
  // device fails at the capture's first launch.
  if (!special && !capture.captured()) {
    int owner = -1;
    const cudaError_t err = cudaStreamGetDevice(stream, &owner);
    if (err != cudaSuccess) {
      (void)cudaGetLastError();
      fail(ErrorCode::InvalidArgument, std::string("Stream::wrap: the handle is not a valid CUDA stream (") +
                                           cudaGetErrorName(err) + ")");
    }
    if (owner != ordinal_)
      fail(ErrorCode::InvalidArgument, "Stream::wrap: the stream belongs to cuda:" + std::to_string(owner) +
                                           ", not to " + label());
  }
  return std::make_shared<CudaQueue>(shared_from_this(), stream, false, capture);
}

std::shared_ptr<EventImpl> CudaDevice::doRecordTimingEvent(QueueImpl& q) {
  (void)streamOf(q, "Event::record");
  return q.recordEvent(true);
}

cudaStream_t CudaDevice::streamOf(QueueImpl& q, const char* function) {
  if (q.device().get() != this) {
    const auto& other = q.device();
    fail(ErrorCode::InvalidArgument,
         std::string(function) + ": the stream belongs to " +
             (other && other->backend() == ComputeBackend::cuda ? "cuda:" + std::to_string(other->ordinal())
                                                                : std::string("another backend")) +
             ", not to " + label());
  }
  return static_cast<CudaQueue&>(q).stream();
}

char* CudaDevice::address(const MemRef& ref, const char* function) {
  if (ref.isHost()) {
    if (ref.host == nullptr) fail(ErrorCode::InvalidArgument, std::string(function) + ": null host pointer");
    return static_cast<char*>(ref.host);
  }
  if (ref.buffer.allocation->device().get() != this)
    fail(ErrorCode::InvalidArgument, std::string(function) + ": the memory belongs to " +
                                         (ref.buffer.allocation->device()->backend() == ComputeBackend::cuda
                                              ? "cuda:" + std::to_string(ref.buffer.allocation->device()->ordinal())
                                              : std::string("another backend")) +
                                         ", not to " + label());
  return static_cast<char*>(ref.buffer.allocation->handle()) + ref.buffer.offset;
}

void CudaDevice::doReleaseRetainedMemory() noexcept {
  graphKeepAlive_.releaseDestroyed();  // what destroyed graphs held (at exit: no later call would)
  staging_.freeRetained();
  // Blocks freed into the pool stay reserved (release threshold UINT64_MAX); hand
  // back those no longer in use. Frees still pending in stream order stay.
  cudaMemPool_t pool = pool_.load(std::memory_order_acquire);
  DeviceGuard guard(ordinal_, std::nothrow);
  if (pool != nullptr && guard.ok() && cudaMemPoolTrimTo(pool, 0) != cudaSuccess) (void)cudaGetLastError();
}

cudaMemPool_t CudaDevice::memoryPool() {
  std::call_once(poolOnce_, [this] {
    DeviceGuard guard(ordinal_);
    int supported = 0;
    check(cudaDeviceGetAttribute(&supported, cudaDevAttrMemoryPoolsSupported, ordinal_), "cudaDeviceGetAttribute");
    if (!supported)
      fail(ErrorCode::Unsupported, "allocate: " + label() + " (" + model_ +
                                       ") does not support stream-ordered memory pools");
    cudaMemPoolProps props{};
    props.allocType = cudaMemAllocationTypePinned;
    props.handleTypes = cudaMemHandleTypeNone;
    props.location.type = cudaMemLocationTypeDevice;
    props.location.id = ordinal_;
    cudaMemPool_t pool = nullptr;
    check(cudaMemPoolCreate(&pool, &props), "cudaMemPoolCreate");
    // Keep freed memory in the pool: returning it to the driver at every
    // synchronization would make steady-state allocation a driver call.
    std::uint64_t threshold = std::numeric_limits<std::uint64_t>::max();
    check(cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &threshold), "cudaMemPoolSetAttribute");
    pool_.store(pool, std::memory_order_release);
    releaseAtExit();  // trim the pool at exit
  });
  return pool_.load(std::memory_order_acquire);
}

void* CudaDevice::mallocAsync(std::size_t bytes, cudaStream_t stream, const char* function) {
  cudaMemPool_t pool = memoryPool();
  const std::size_t request = std::max<std::size_t>(bytes, 1);
  void* p = nullptr;
  // Requests beyond the device's capacity can never succeed (and some make the
  // driver report InvalidValue instead of an allocation failure).
  cudaError_t err = request > totalMemory_ ? cudaErrorMemoryAllocation
                                           : cudaMallocFromPoolAsync(&p, request, pool, stream);
  if (err == cudaErrorMemoryAllocation) {
    (void)cudaGetLastError();
    // Blocks that other streams freed may still be pending; wait for them, hand
    // everything unused back to the driver, and try once more.
    if (request <= totalMemory_) {
      check(cudaDeviceSynchronize(), "cudaDeviceSynchronize");
      check(cudaMemPoolTrimTo(pool, 0), "cudaMemPoolTrimTo");
      err = cudaMallocFromPoolAsync(&p, request, pool, stream);
    }
    if (err == cudaErrorMemoryAllocation) {
      (void)cudaGetLastError();
      std::size_t freeBytes = 0, totalBytes = 0;
      if (cudaMemGetInfo(&freeBytes, &totalBytes) != cudaSuccess) (void)cudaGetLastError();
      fail(ErrorCode::OutOfMemory, std::string(function) + ": cannot allocate " + std::to_string(bytes) +
                                       " bytes on " + label() + " (" + std::to_string(freeBytes) + " of " +
                                       std::to_string(totalBytes) + " bytes free)");
    }
  }
  check(err, "cudaMallocFromPoolAsync");
  return p;
}

void CudaDevice::freeAsync(void* p, cudaStream_t stream) noexcept {
  if (p == nullptr) return;
  if (cudaFreeAsync(p, stream) != cudaSuccess) (void)cudaGetLastError();
}

cudaEvent_t CudaDevice::acquireOrderingEvent() {
  {
    std::lock_guard<std::mutex> lock(eventMutex_);
    if (!freeEvents_.empty()) {
      cudaEvent_t e = freeEvents_.back();
      freeEvents_.pop_back();
      return e;
    }
  }
  cudaEvent_t e = nullptr;
  check(cudaEventCreateWithFlags(&e, cudaEventDisableTiming), "cudaEventCreateWithFlags");
  return e;
}

void CudaDevice::releaseOrderingEvent(cudaEvent_t event) noexcept {
  constexpr std::size_t kMaxPooledEvents = 4096;
  try {
    std::lock_guard<std::mutex> lock(eventMutex_);
    if (freeEvents_.size() < kMaxPooledEvents) {
      freeEvents_.push_back(event);
      return;
    }
  } catch (...) {
    // fall through: destroy instead of pooling
  }
  DeviceGuard guard(ordinal_, std::nothrow);
  if (guard.ok() && cudaEventDestroy(event) != cudaSuccess) (void)cudaGetLastError();
}

void CudaDevice::releaseInStreamOrder(void* p, const std::vector<std::shared_ptr<EventImpl>>& pending) noexcept {
  DeviceGuard guard(ordinal_, std::nothrow);
  if (!guard.ok()) return;  // runtime gone (process exit): the memory dies with the context
  // The thread may be capturing a stream of its own (a handle dropped during a capture).
  const RelaxedCaptureMode relaxed;
  cudaStream_t stream = nullptr;
  try {
    stream = releaseStream();
  } catch (...) {
    (void)cudaGetLastError();
    // No release stream: fall back to a device-wide barrier and a synchronous free.
    if (cudaDeviceSynchronize() == cudaSuccess && cudaFree(p) == cudaSuccess) return;
    (void)cudaGetLastError();
    return;
  }
  for (const auto& event : pending) {
    auto* e = dynamic_cast<CudaEvent*>(event.get());
    // A captured event marks a graph node: the graph held this memory until its
    // launches were done, so there is nothing left to wait for.
    if (e == nullptr || e->capture().captured()) continue;
    const cudaError_t err = cudaStreamWaitEvent(stream, e->native(), 0);
    if (err == cudaSuccess) continue;
    (void)cudaGetLastError();
    if (isShutdownError(err)) return;
    // The stream cannot wait on it: make the host wait instead, so the free below
    // still cannot overtake the work.
    if (cudaEventSynchronize(e->native()) != cudaSuccess) (void)cudaGetLastError();
  }
  freeAsync(p, stream);
}

std::shared_ptr<Allocation> CudaDevice::doAllocate(std::size_t bytes, QueueImpl& q) {
  cudaStream_t stream = streamOf(q, "allocate");
  DeviceGuard guard(ordinal_);
  void* p = nullptr;
  if (static_cast<CudaQueue&>(q).capture().captured()) {
    // Not a graph allocation (it would have no physical memory before the graph's first
    // launch): pool memory allocated on the library stream, which the host waits for
    // once, since the graph cannot wait on the library stream. The graph holds it.
    stream = static_cast<CudaQueue&>(*libraryQueue()).stream();
    const RelaxedCaptureMode relaxed;
    p = mallocAsync(bytes, stream, "allocate");
    const cudaError_t err = cudaStreamSynchronize(stream);
    if (err != cudaSuccess) {
      freeAsync(p, stream);
      throwCudaError("cudaStreamSynchronize", err);
    }
  } else {
    p = mallocAsync(bytes, stream, "allocate");
  }
  std::shared_ptr<CudaAllocation> allocation;
  try {
    allocation = std::make_shared<CudaAllocation>(shared_from_this(), p, bytes, true);
  } catch (...) {
    freeAsync(p, stream);
    throw;
  }
  // From here on the allocation's destructor frees p in stream order if anything throws.
  allocation->afterUse(q, q.recordEvent());
  return allocation;
}

std::shared_ptr<Allocation> CudaDevice::doAdopt(void* handle, std::size_t bytes) {
  if (handle == nullptr) fail(ErrorCode::InvalidArgument, "adopt: the device pointer is null");
  DeviceGuard guard(ordinal_);
  cudaPointerAttributes attributes{};
  const cudaError_t err = cudaPointerGetAttributes(&attributes, handle);
  if (err != cudaSuccess) {
    (void)cudaGetLastError();
    fail(ErrorCode::InvalidArgument, std::string("adopt: cudaPointerGetAttributes rejected the pointer (") +
                                         cudaGetErrorName(err) + ")");
  }
  void* devicePointer = handle;
  switch (attributes.type) {
    case cudaMemoryTypeDevice:
      if (attributes.device != ordinal_)
        fail(ErrorCode::InvalidArgument, "adopt: the pointer is device memory of cuda:" +
                                             std::to_string(attributes.device) + ", not of " + label());
      break;
    case cudaMemoryTypeManaged:
      break;  // migratable memory is accessible from every device
    case cudaMemoryTypeHost:
      if (attributes.devicePointer == nullptr)
        fail(ErrorCode::InvalidArgument,
             "adopt: the pointer is page-locked host memory without a device mapping on " + label());
      devicePointer = attributes.devicePointer;
      break;
    default:
      fail(ErrorCode::InvalidArgument,
           "adopt: the pointer is not CUDA device memory (ordinary host memory or an unknown address)");
  }
  return std::make_shared<CudaAllocation>(shared_from_this(), devicePointer, bytes, false);
}

}  // namespace cuda
}  // namespace devicearray::detail
