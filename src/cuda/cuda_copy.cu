// CudaDevice::doCopy and CudaDevice::doFill: the strided N-d copy engine and the
// pattern fill (strategies in cuda_device.cu's overview and strided_kernels.cuh).
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <limits>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "cuda/cuda_device.hpp"
#include "cuda/host_copy_threads.hpp"
#include "cuda/kernel_registry.hpp"
#include "cuda/strided_copy.hpp"
#include "cuda/strided_kernels.cuh"

namespace devicearray::detail::cuda {
namespace {
constexpr int kThreads = 256;
}  // namespace

std::int64_t checkedMul(std::int64_t a, std::int64_t b, const char* function) {
  std::int64_t r = 0;
  if (__builtin_mul_overflow(a, b, &r))
    fail(ErrorCode::OutOfRange, std::string(function) + ": the region's byte count overflows 64 bits");
  return r;
}

std::int64_t checkedAdd(std::int64_t a, std::int64_t b, const char* function) {
  std::int64_t r = 0;
  if (__builtin_add_overflow(a, b, &r))
    fail(ErrorCode::OutOfRange, std::string(function) + ": the region's byte extent overflows 64 bits");
  return r;
}

/// Number of elements of the region (product of sizes, at least 1 for dims == 0).
std::int64_t elementCount(int dims, const std::int64_t* size, const char* function) {
  std::int64_t n = 1;
  for (int d = 0; d < dims; ++d) {
    if (size[d] <= 0)
      fail(ErrorCode::InvalidArgument, std::string(function) + ": axis " + std::to_string(d) + " has size " +
                                           std::to_string(size[d]) + "; sizes must be positive");
    n = checkedMul(n, size[d], function);
  }
  return n;
}

/// Checks that the region [offset + min, offset + max + elemSize) lies inside an
/// allocation of known size (external memory of unknown size is not checked).
void checkBounds(const MemRef& ref, int dims, const std::int64_t* size, const std::int64_t* step,
                 std::size_t elemSize, const char* function) {
  if (ref.isHost() || ref.device->bytes() == 0) return;
  std::int64_t lo = 0, hi = 0;
  for (int d = 0; d < dims; ++d) {
    const std::int64_t span = checkedMul(size[d] - 1, step[d], function);
    if (span < 0) lo = checkedAdd(lo, span, function);
    else hi = checkedAdd(hi, span, function);
  }
  hi = checkedAdd(hi, static_cast<std::int64_t>(elemSize), function);
  const auto offset = static_cast<std::int64_t>(ref.offset);
  if (offset + lo < 0 || checkedAdd(offset, hi, function) > static_cast<std::int64_t>(ref.device->bytes()))
    fail(ErrorCode::OutOfRange, std::string(function) + ": the strided region at byte offset " +
                                    std::to_string(ref.offset) + " reaches beyond the " +
                                    std::to_string(ref.device->bytes()) + "-byte allocation");
}

bool isPacked(int dims, const std::int64_t* size, const std::int64_t* step, std::size_t elemSize) {
  std::int64_t expected = static_cast<std::int64_t>(elemSize);
  for (int d = dims - 1; d >= 0; --d) {
    if (size[d] != 1 && step[d] != expected) return false;
    expected *= size[d];
  }
  return true;
}

void packedSteps(int dims, const std::int64_t* size, std::size_t elemSize, std::int64_t* step) {
  std::int64_t s = static_cast<std::int64_t>(elemSize);
  for (int d = dims - 1; d >= 0; --d) {
    step[d] = s;
    s *= size[d];
  }
}

namespace {

std::uint64_t magnitude(std::int64_t v) {
  return v < 0 ? std::uint64_t(0) - static_cast<std::uint64_t>(v) : static_cast<std::uint64_t>(v);
}

/// Widest word in {16, 8, 4, 2, 1} dividing every value in `bits` (OR-ed together).
int widestWord(std::uint64_t bits) {
  int w = 16;
  while (w > 1 && (bits % static_cast<std::uint64_t>(w)) != 0) w /= 2;
  return w;
}

template <class Word>
void launchWords(bool fill, bool small, const StridedParams& p, dim3 grid, dim3 block, cudaStream_t stream) {
  if (fill) {
    if (small) stridedFillKernel<Word, true><<<grid, block, 0, stream>>>(p);
    else stridedFillKernel<Word, false><<<grid, block, 0, stream>>>(p);
  } else {
    if (small) stridedCopyKernel<Word, true><<<grid, block, 0, stream>>>(p);
    else stridedCopyKernel<Word, false><<<grid, block, 0, stream>>>(p);
  }
}

template <class Word>
bool preloadWords() noexcept {
  return registerPreload(reinterpret_cast<const void*>(&stridedCopyKernel<Word, true>)) &&
         registerPreload(reinterpret_cast<const void*>(&stridedCopyKernel<Word, false>)) &&
         registerPreload(reinterpret_cast<const void*>(&stridedFillKernel<Word, true>)) &&
         registerPreload(reinterpret_cast<const void*>(&stridedFillKernel<Word, false>));
}

// Every instantiation launchWords can pick, loaded with the device (kernel_registry.hpp).
[[maybe_unused]] const bool kStridedKernelsRegistered = preloadWords<uint4>() && preloadWords<unsigned long long>() &&
                                                         preloadWords<unsigned int>() &&
                                                         preloadWords<unsigned short>() &&
                                                         preloadWords<unsigned char>();

/// Launches the strided copy (fill == false) or fill kernel over p.total words.
void launchStrided(bool fill, StridedParams& p, int word, cudaStream_t stream, const char* function) {
  if (p.total == 0) return;
  const std::uint64_t perBlock = static_cast<std::uint64_t>(kThreads) * kWordsPerThread;
  const std::uint64_t blocks64 = (p.total + perBlock - 1) / perBlock;
  if (blocks64 > static_cast<std::uint64_t>(std::numeric_limits<int>::max()))
    fail(ErrorCode::Unsupported, std::string(function) + ": " + std::to_string(p.total) +
                                     " words exceed one kernel launch");
  const bool small = p.total < (std::uint64_t{1} << 31);
  if (small)
    for (int d = 0; d < p.dims; ++d) p.div[d] = FastDivmod(static_cast<std::uint32_t>(p.size[d]));
  const dim3 grid(static_cast<unsigned>(blocks64));
  const dim3 block(kThreads);
  switch (word) {
    case 16: launchWords<uint4>(fill, small, p, grid, block, stream); break;
    case 8: launchWords<unsigned long long>(fill, small, p, grid, block, stream); break;
    case 4: launchWords<unsigned int>(fill, small, p, grid, block, stream); break;
    case 2: launchWords<unsigned short>(fill, small, p, grid, block, stream); break;
    default: launchWords<unsigned char>(fill, small, p, grid, block, stream); break;
  }
  check(cudaGetLastError(), function);
}

}  // namespace

void stridedDeviceCopy(char* dst, const std::int64_t* dstStep, const char* src, const std::int64_t* srcStep,
                       int dims, const std::int64_t* size, std::size_t elemSize, cudaStream_t stream) {
  std::uint64_t bits = elemSize | reinterpret_cast<std::uintptr_t>(dst) | reinterpret_cast<std::uintptr_t>(src);
  for (int d = 0; d < dims; ++d) bits |= magnitude(dstStep[d]) | magnitude(srcStep[d]);
  const int word = widestWord(bits);
  StridedParams p;
  p.dst = dst;
  p.src = src;
  p.dims = dims;
  std::uint64_t total = 1;
  for (int d = 0; d < dims; ++d) {
    p.size[d] = size[d];
    p.dstStep[d] = dstStep[d];
    p.srcStep[d] = srcStep[d];
    total *= static_cast<std::uint64_t>(size[d]);
  }
  const std::int64_t wordsPerElement = static_cast<std::int64_t>(elemSize) / word;
  if (wordsPerElement > 1 || dims == 0) {
    p.size[p.dims] = wordsPerElement;
    p.dstStep[p.dims] = word;
    p.srcStep[p.dims] = word;
    ++p.dims;
  }
  p.total = total * static_cast<std::uint64_t>(wordsPerElement);
  launchStrided(false, p, word, stream, "copy: strided copy kernel launch");
}

namespace {

/// Host-side strided copy (pack/unpack of staging buffers in stream callbacks).
void hostStridedCopy(char* dst, const std::int64_t* dstStep, const char* src, const std::int64_t* srcStep, int dims,
                     const std::int64_t* size, std::size_t elemSize) noexcept {
  if (dims == 0) {
    std::memcpy(dst, src, elemSize);
    return;
  }
  std::int64_t index[kMaxDims] = {};
  const int inner = dims - 1;
  for (;;) {
    std::int64_t dOff = 0, sOff = 0;
    for (int d = 0; d < inner; ++d) {
      dOff += index[d] * dstStep[d];
      sOff += index[d] * srcStep[d];
    }
    char* drow = dst + dOff;
    const char* srow = src + sOff;
    const std::int64_t n = size[inner];
    const std::int64_t ds = dstStep[inner], ss = srcStep[inner];
    if (ds == static_cast<std::int64_t>(elemSize) && ss == ds) {
      std::memcpy(drow, srow, static_cast<std::size_t>(n) * elemSize);
    } else {
      switch (elemSize) {  // constant sizes let memcpy become one load/store
        case 4: for (std::int64_t i = 0; i < n; ++i) std::memcpy(drow + i * ds, srow + i * ss, 4); break;
        case 8: for (std::int64_t i = 0; i < n; ++i) std::memcpy(drow + i * ds, srow + i * ss, 8); break;
        case 12: for (std::int64_t i = 0; i < n; ++i) std::memcpy(drow + i * ds, srow + i * ss, 12); break;
        case 16: for (std::int64_t i = 0; i < n; ++i) std::memcpy(drow + i * ds, srow + i * ss, 16); break;
        default: for (std::int64_t i = 0; i < n; ++i) std::memcpy(drow + i * ds, srow + i * ss, elemSize);
      }
    }
    int d = inner - 1;
    for (; d >= 0; --d) {
      if (++index[d] < size[d]) break;
      index[d] = 0;
    }
    if (d < 0) return;
  }
}

/// A host-side strided copy run by the stream (cudaLaunchHostFunc), optionally
/// returning a staging buffer to its pool afterwards. Callbacks make no CUDA calls.
struct HostCopyJob {
  int dims = 0;
  std::int64_t size[kMaxDims] = {};
  std::int64_t dstStep[kMaxDims] = {};
  std::int64_t srcStep[kMaxDims] = {};
  std::size_t elemSize = 0;
  char* dst = nullptr;
  const char* src = nullptr;
  PinnedStagingPool* pool = nullptr;  ///< when set, `release` goes back to it after the copy
  PinnedStagingPool::Buffer release;

  static void CUDART_CB run(void* userData) {
    auto* job = static_cast<HostCopyJob*>(userData);
    if (job->dst != nullptr)
      hostStridedCopy(job->dst, job->dstStep, job->src, job->srcStep, job->dims, job->size, job->elemSize);
    if (job->pool != nullptr) job->pool->release(job->release);
    delete job;
  }
};

void enqueueHostJob(HostCopyJob* job, cudaStream_t stream) {
  const cudaError_t err = cudaLaunchHostFunc(stream, &HostCopyJob::run, job);
  if (err != cudaSuccess) {
    delete job;
    throwCudaError("cudaLaunchHostFunc", err);
  }
}

/// Owns a staging buffer until its stream-ordered return is enqueued. If an error
/// interrupts the sequence, the buffer is still returned in stream order (after
/// whatever was already enqueued on it), or leaked if even that fails.
class StagingLease {
 public:
  StagingLease(PinnedStagingPool& pool, std::size_t bytes, cudaStream_t stream)
      : pool_(pool), buffer_(pool.acquire(bytes)), stream_(stream) {}
  StagingLease(const StagingLease&) = delete;
  StagingLease& operator=(const StagingLease&) = delete;
  ~StagingLease() {
    if (buffer_.data == nullptr) return;
    auto* job = new (std::nothrow) HostCopyJob;
    if (job == nullptr) return;
    job->pool = &pool_;
    job->release = buffer_;
    if (cudaLaunchHostFunc(stream_, &HostCopyJob::run, job) != cudaSuccess) {
      (void)cudaGetLastError();
      delete job;
    }
  }
  char* data() const { return static_cast<char*>(buffer_.data); }
  /// Hands the buffer's return over to a job that will run after its last use.
  void transferTo(HostCopyJob& job) {
    job.pool = &pool_;
    job.release = buffer_;
  }
  void transferred() { buffer_ = {}; }

 private:
  PinnedStagingPool& pool_;
  PinnedStagingPool::Buffer buffer_;
  cudaStream_t stream_;
};

/// A temporary pool buffer freed in stream order (also on errors).
class DeviceTemp {
 public:
  DeviceTemp(CudaDevice& device, std::size_t bytes, cudaStream_t stream)
      : device_(device), stream_(stream), data_(static_cast<char*>(device.mallocAsync(bytes, stream, "copy"))) {}
  DeviceTemp(const DeviceTemp&) = delete;
  DeviceTemp& operator=(const DeviceTemp&) = delete;
  ~DeviceTemp() { device_.freeAsync(data_, stream_); }
  char* data() const { return data_; }

 private:
  CudaDevice& device_;
  cudaStream_t stream_;
  char* data_;
};

/// True for host memory the CUDA driver knows as page-locked (cudaHostAlloc'd or registered).
bool isPageLocked(const void* host) {
  cudaPointerAttributes attr{};
  if (cudaPointerGetAttributes(&attr, host) != cudaSuccess) {
    (void)cudaGetLastError();
    return false;
  }
  return attr.type == cudaMemoryTypeHost;
}

bool fitsMemcpy2D(std::int64_t dstPitch, std::int64_t srcPitch, std::size_t width, std::size_t maxPitch) {
  const auto w = static_cast<std::int64_t>(width);
  return dstPitch >= w && srcPitch >= w && static_cast<std::uint64_t>(dstPitch) <= maxPitch &&
         static_cast<std::uint64_t>(srcPitch) <= maxPitch;
}

}  // namespace

namespace {

/// One chunk of a staged transfer, copied on the host by parallelMemcpy when the
/// staging stream reaches it (a CUDA host callback: no CUDA calls inside).
struct ChunkCopy {
  void* dst;
  const void* src;
  std::size_t bytes;

  static void CUDART_CB run(void* userData) {
    auto* chunk = static_cast<ChunkCopy*>(userData);
    parallelMemcpy(chunk->dst, chunk->src, chunk->bytes);
    delete chunk;
  }
};

void enqueueChunkCopy(cudaStream_t stream, void* dst, const void* src, std::size_t bytes) {
  auto chunk = std::make_unique<ChunkCopy>(ChunkCopy{dst, src, bytes});
  check(cudaLaunchHostFunc(stream, &ChunkCopy::run, chunk.get()), "cudaLaunchHostFunc");
  chunk.release();  // the callback deletes it
}

/// Ordering events of one staged transfer, returned to the device's pool at the
/// end of the enqueue sequence (a wait enqueued on an event keeps what it captured).
class EventSet {
 public:
  EventSet(CudaDevice& device, std::size_t count) : device_(device) {
    events_.reserve(count);
    try {
      for (std::size_t i = 0; i < count; ++i) events_.push_back(device.acquireOrderingEvent());
    } catch (...) {
      for (cudaEvent_t e : events_) device_.releaseOrderingEvent(e);
      throw;
    }
  }
  EventSet(const EventSet&) = delete;
  EventSet& operator=(const EventSet&) = delete;
  ~EventSet() {
    for (cudaEvent_t e : events_) device_.releaseOrderingEvent(e);
  }
  cudaEvent_t operator[](std::size_t i) const { return events_[i]; }

 private:
  CudaDevice& device_;
  std::vector<cudaEvent_t> events_;
};

/// Makes `stream` wait for everything enqueued on `side` so far: joins the staging
/// stream back into the caller's stream (also when an error cut the sequence short,
/// so staging buffers are never returned while the host side still uses them), then
/// gives the side stream back to the device. When an exception is leaving the
/// transfer, it also waits for the host copies already enqueued: the caller's
/// memory must not be touched after a call has failed.
class JoinOnExit {
 public:
  JoinOnExit(CudaDevice& device, cudaStream_t stream, cudaStream_t side, cudaEvent_t event)
      : device_(device), stream_(stream), side_(side), event_(event), exceptions_(std::uncaught_exceptions()) {}
  JoinOnExit(const JoinOnExit&) = delete;
  JoinOnExit& operator=(const JoinOnExit&) = delete;
  ~JoinOnExit() {
    const bool failing = std::uncaught_exceptions() > exceptions_;
    if (cudaEventRecord(event_, side_) != cudaSuccess || cudaStreamWaitEvent(stream_, event_, 0) != cudaSuccess ||
        failing) {
      (void)cudaGetLastError();
      (void)cudaStreamSynchronize(side_);
      (void)cudaGetLastError();
    }
    device_.releaseStagingStream(side_);
  }

 private:
  CudaDevice& device_;
  cudaStream_t stream_;
  cudaStream_t side_;
  cudaEvent_t event_;
  int exceptions_;
};

}  // namespace

cudaStream_t CudaDevice::acquireStagingStream() {
  DeviceGuard guard(ordinal_);
  {
    std::lock_guard<std::mutex> lock(stagingMutex_);
    for (auto it = stagingStreams_.begin(); it != stagingStreams_.end(); ++it) {
      // Idle: every transfer that used it has finished its host side.
      if (cudaStreamQuery(*it) == cudaSuccess) {
        cudaStream_t stream = *it;
        stagingStreams_.erase(it);
        return stream;
      }
      (void)cudaGetLastError();
    }
  }
  cudaStream_t stream = nullptr;
  check(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), "cudaStreamCreateWithFlags");
  return stream;
}

void CudaDevice::releaseStagingStream(cudaStream_t stream) noexcept {
  // Kept for reuse (as many as transfers ever ran at once on this device; the
  // device object, and so its streams, live until the process ends).
  try {
    std::lock_guard<std::mutex> lock(stagingMutex_);
    stagingStreams_.push_back(stream);
  } catch (...) {
    // Not pooled: left to the process's end rather than destroyed while busy.
  }
}

void CudaDevice::stagedTransfer(char* dst, const char* src, std::size_t bytes, cudaMemcpyKind kind,
                                cudaStream_t stream) {
  // Chunks: about a quarter of the transfer, 512 KiB to 8 MiB, so that even a
  // 2 MiB transfer overlaps host copies with DMA and a large one keeps the
  // per-chunk overhead (two events, a callback) below 1% of the chunk's time.
  constexpr std::size_t kMinChunk = std::size_t{512} << 10, kMaxChunk = std::size_t{8} << 20;
  constexpr std::size_t kSlots = 3;  // one being filled, one in DMA, one spare
  const std::size_t chunk = std::clamp<std::size_t>(bytes / 4, kMinChunk, kMaxChunk);
  const std::size_t chunks = (bytes + chunk - 1) / chunk;
  const std::size_t slots = std::min(kSlots, chunks);
  const bool upload = kind == cudaMemcpyHostToDevice;

  std::vector<std::unique_ptr<StagingLease>> buffers;
  for (std::size_t i = 0; i < slots; ++i)
    buffers.push_back(std::make_unique<StagingLease>(stagingPool(), std::min(chunk, bytes), stream));
  // hostDone[s]: the host copy into / out of slot s finished (staging stream);
  // dmaDone[s]: the transfer of slot s finished (caller's stream).
  EventSet hostDone(*this, slots), dmaDone(*this, slots), join(*this, 2);
  cudaStream_t side = acquireStagingStream();
  const JoinOnExit joinOnExit(*this, stream, side, join[1]);  // before the leases return their buffers

  // The host side starts after the caller's earlier work (e.g. a download into the
  // memory this upload reads).
  check(cudaEventRecord(join[0], stream), "cudaEventRecord");
  check(cudaStreamWaitEvent(side, join[0], 0), "cudaStreamWaitEvent");
  for (std::size_t i = 0; i < chunks; ++i) {
    const std::size_t s = i % slots;
    const std::size_t offset = i * chunk;
    const std::size_t n = std::min(chunk, bytes - offset);
    char* staging = buffers[s]->data();
    if (upload) {
      // Pack chunk i once slot s has been sent (chunk i - slots), then send it.
      if (i >= slots) check(cudaStreamWaitEvent(side, dmaDone[s], 0), "cudaStreamWaitEvent");
      enqueueChunkCopy(side, staging, src + offset, n);
      check(cudaEventRecord(hostDone[s], side), "cudaEventRecord");
      check(cudaStreamWaitEvent(stream, hostDone[s], 0), "cudaStreamWaitEvent");
      check(cudaMemcpyAsync(dst + offset, staging, n, cudaMemcpyHostToDevice, stream), "cudaMemcpyAsync");
      check(cudaEventRecord(dmaDone[s], stream), "cudaEventRecord");
    } else {
      // Receive chunk i once slot s has been unpacked (chunk i - slots), then unpack it.
      if (i >= slots) check(cudaStreamWaitEvent(stream, hostDone[s], 0), "cudaStreamWaitEvent");
      check(cudaMemcpyAsync(staging, src + offset, n, cudaMemcpyDeviceToHost, stream), "cudaMemcpyAsync");
      check(cudaEventRecord(dmaDone[s], stream), "cudaEventRecord");
      check(cudaStreamWaitEvent(side, dmaDone[s], 0), "cudaStreamWaitEvent");
      enqueueChunkCopy(side, dst + offset, staging, n);
      check(cudaEventRecord(hostDone[s], side), "cudaEventRecord");
    }
  }
  // joinOnExit: the caller's stream waits for the last host copy; then the leases
  // return the buffers in the caller's stream order.
}

void CudaDevice::doCopy(const CopyDesc& desc, QueueImpl& q) {
  static constexpr const char* kFn = "copy";
  cudaStream_t stream = streamOf(q, kFn);
  if (desc.dims < 0 || desc.dims > kMaxDims)
    fail(ErrorCode::InvalidArgument, "copy: " + std::to_string(desc.dims) + " dimensions; expected 0.." +
                                         std::to_string(kMaxDims));
  if (desc.elemSize == 0) fail(ErrorCode::InvalidArgument, "copy: element size is 0");
  if (desc.dst.isHost() && desc.src.isHost())
    fail(ErrorCode::InvalidArgument, "copy: host-to-host copies do not go through a device backend");
  const int dims = desc.dims;
  const std::int64_t* size = desc.size.data();
  const std::int64_t count = elementCount(dims, size, kFn);
  const std::int64_t packedBytes = checkedMul(count, static_cast<std::int64_t>(desc.elemSize), kFn);
  checkBounds(desc.dst, dims, size, desc.dstStep.data(), desc.elemSize, kFn);
  checkBounds(desc.src, dims, size, desc.srcStep.data(), desc.elemSize, kFn);
  char* dst = address(desc.dst, kFn);
  char* src = address(desc.src, kFn);
  DeviceGuard guard(ordinal_);

  const bool dstPacked = isPacked(dims, size, desc.dstStep.data(), desc.elemSize);
  const bool srcPacked = isPacked(dims, size, desc.srcStep.data(), desc.elemSize);
  const cudaMemcpyKind kind = desc.src.isHost()   ? cudaMemcpyHostToDevice
                              : desc.dst.isHost() ? cudaMemcpyDeviceToHost
                                                  : cudaMemcpyDeviceToDevice;

  // Pageable host memory under stream semantics is staged through page-locked
  // buffers in stream order: the driver would otherwise block the host until the
  // stream reaches the copy (a device-to-host copy behind a slow kernel).
  const bool hostInvolved = kind != cudaMemcpyDeviceToDevice;
  const bool hostPinned = hostInvolved && isPageLocked(kind == cudaMemcpyHostToDevice ? src : dst);
  const bool pageable = hostInvolved && !hostPinned;
  const bool stageHost = pageable && !desc.hostMayBlock;

  // Pageable memory, contiguous on both sides: the pipelined staging, which beats
  // the driver's own pageable path (one thread, no overlap) also for the blocking
  // overloads (hostMayBlock), from a megabyte up.
  if (pageable && dstPacked && srcPacked && (stageHost || packedBytes >= (std::int64_t{1} << 20))) {
    stagedTransfer(dst, src, static_cast<std::size_t>(packedBytes), kind, stream);
    return;
  }
  // One contiguous run.
  if (dstPacked && srcPacked && !stageHost) {
    check(cudaMemcpyAsync(dst, src, static_cast<std::size_t>(packedBytes), kind, stream), "cudaMemcpyAsync");
    return;
  }
  // One strided axis with the host involved: the copy engine. Device-to-device
  // copies always use the kernel, which keeps pitched rows near contiguous
  // bandwidth where cudaMemcpy2DAsync does not (docs/PERFORMANCE.md).
  // cudaMemcpy2DAsync only for page-locked host memory: with pageable memory the
  // driver stages it synchronously (blocking the host), and a driver was seen to
  // drop an odd-offset pitched upload from pageable memory. Pageable memory takes
  // the pinned staging path below instead.
  if (dims == 1 && hostPinned &&
      fitsMemcpy2D(desc.dstStep[0], desc.srcStep[0], desc.elemSize, maxPitch_)) {
    check(cudaMemcpy2DAsync(dst, static_cast<std::size_t>(desc.dstStep[0]), src,
                            static_cast<std::size_t>(desc.srcStep[0]), desc.elemSize,
                            static_cast<std::size_t>(size[0]), kind, stream),
          "cudaMemcpy2DAsync");
    return;
  }
  if (!hostInvolved) {
    stridedDeviceCopy(dst, desc.dstStep.data(), src, desc.srcStep.data(), dims, size, desc.elemSize, stream);
    return;
  }

  // Host layouts cudaMemcpy2D cannot express: move one packed image of the region
  // across the bus and (un)pack on either side, all in stream order.
  std::int64_t packed[kMaxDims] = {};
  packedSteps(dims, size, desc.elemSize, packed);
  const auto bytes = static_cast<std::size_t>(packedBytes);
  if (kind == cudaMemcpyHostToDevice) {
    const char* hostData = src;
    std::unique_ptr<StagingLease> staging;
    if (!srcPacked || stageHost) {
      staging = std::make_unique<StagingLease>(stagingPool(), bytes, stream);
      auto* job = new HostCopyJob;
      job->dims = dims;
      std::copy(size, size + dims, job->size);
      std::copy(packed, packed + dims, job->dstStep);
      std::copy(desc.srcStep.data(), desc.srcStep.data() + dims, job->srcStep);
      job->elemSize = desc.elemSize;
      job->dst = staging->data();
      job->src = src;
      enqueueHostJob(job, stream);  // packs when the stream reaches it: earlier writes to src are visible
      hostData = staging->data();
    }
    std::unique_ptr<DeviceTemp> temp;
    char* target = dst;
    if (!dstPacked) {
      temp = std::make_unique<DeviceTemp>(*this, bytes, stream);
      target = temp->data();
    }
    check(cudaMemcpyAsync(target, hostData, bytes, cudaMemcpyHostToDevice, stream), "cudaMemcpyAsync");
    staging.reset();  // returns the buffer in stream order, after the transfer
    if (!dstPacked) stridedDeviceCopy(dst, desc.dstStep.data(), target, packed, dims, size, desc.elemSize, stream);
    return;
  }

  // Device to host.
  std::unique_ptr<DeviceTemp> temp;
  const char* deviceData = src;
  if (!srcPacked) {
    temp = std::make_unique<DeviceTemp>(*this, bytes, stream);
    stridedDeviceCopy(temp->data(), packed, src, desc.srcStep.data(), dims, size, desc.elemSize, stream);
    deviceData = temp->data();
  }
  if (dstPacked && !stageHost) {
    check(cudaMemcpyAsync(dst, deviceData, bytes, cudaMemcpyDeviceToHost, stream), "cudaMemcpyAsync");
    return;
  }
  StagingLease staging(stagingPool(), bytes, stream);
  check(cudaMemcpyAsync(staging.data(), deviceData, bytes, cudaMemcpyDeviceToHost, stream), "cudaMemcpyAsync");
  auto* job = new HostCopyJob;
  job->dims = dims;
  std::copy(size, size + dims, job->size);
  std::copy(desc.dstStep.data(), desc.dstStep.data() + dims, job->dstStep);
  std::copy(packed, packed + dims, job->srcStep);
  job->elemSize = desc.elemSize;
  job->dst = dst;
  job->src = staging.data();
  staging.transferTo(*job);
  enqueueHostJob(job, stream);  // throws (and the lease returns the buffer) if it could not be enqueued
  staging.transferred();
}

void CudaDevice::doFill(const FillDesc& desc, QueueImpl& q) {
  static constexpr const char* kFn = "fill";
  cudaStream_t stream = streamOf(q, kFn);
  if (desc.dims < 0 || desc.dims > kMaxDims)
    fail(ErrorCode::InvalidArgument, "fill: " + std::to_string(desc.dims) + " dimensions; expected 0.." +
                                         std::to_string(kMaxDims));
  if (desc.elemSize == 0 || desc.elemSize > desc.pattern.size())
    fail(ErrorCode::InvalidArgument, "fill: pattern size " + std::to_string(desc.elemSize) +
                                         " bytes; expected 1..32");
  if (desc.dst.isHost()) fail(ErrorCode::InvalidArgument, "fill: the destination must be device memory");
  (void)elementCount(desc.dims, desc.size.data(), kFn);
  checkBounds(desc.dst, desc.dims, desc.size.data(), desc.step.data(), desc.elemSize, kFn);
  char* dst = address(desc.dst, kFn);

  // Normalize: drop unit axes and merge axes that continue each other.
  int dims = 0;
  std::int64_t size[kMaxDims] = {}, step[kMaxDims] = {};
  for (int d = 0; d < desc.dims; ++d) {
    if (desc.size[d] == 1) continue;
    if (dims > 0 && step[dims - 1] == desc.size[d] * desc.step[d]) {
      size[dims - 1] *= desc.size[d];
      step[dims - 1] = desc.step[d];
      continue;
    }
    size[dims] = desc.size[d];
    step[dims] = desc.step[d];
    ++dims;
  }
  std::size_t elemSize = desc.elemSize;
  std::array<unsigned char, 32> pattern = desc.pattern;
  DeviceGuard guard(ordinal_);

  const bool oneByte = std::all_of(pattern.begin(), pattern.begin() + static_cast<std::ptrdiff_t>(elemSize),
                                   [&](unsigned char b) { return b == pattern[0]; });
  if (oneByte) {
    // Fold a contiguous innermost axis into the run, then use memset where the
    // remaining shape is a run or a pitched 2-D block.
    std::size_t run = elemSize;
    int outer = dims;
    if (dims > 0 && step[dims - 1] == static_cast<std::int64_t>(elemSize)) {
      run = static_cast<std::size_t>(size[dims - 1]) * elemSize;
      outer = dims - 1;
    }
    if (outer == 0) {
      check(cudaMemsetAsync(dst, pattern[0], run, stream), "cudaMemsetAsync");
      return;
    }
    if (outer == 1 && step[0] >= static_cast<std::int64_t>(run) &&
        static_cast<std::uint64_t>(step[0]) <= maxPitch_) {
      check(cudaMemset2DAsync(dst, static_cast<std::size_t>(step[0]), pattern[0], run,
                              static_cast<std::size_t>(size[0]), stream),
            "cudaMemset2DAsync");
      return;
    }
  }

  // Widen a short pattern over a contiguous innermost axis (e.g. a 4-byte float
  // repeated into 16 bytes) so the kernel can store full 16-byte words.
  if (dims > 0 && step[dims - 1] == static_cast<std::int64_t>(elemSize)) {
    for (std::size_t target : {std::size_t{16}, std::size_t{8}, std::size_t{4}}) {
      if (target <= elemSize || target % elemSize != 0) continue;
      const auto factor = static_cast<std::int64_t>(target / elemSize);
      if (size[dims - 1] % factor != 0) continue;
      for (std::size_t i = elemSize; i < target; ++i) pattern[i] = pattern[i % elemSize];
      size[dims - 1] /= factor;
      step[dims - 1] = static_cast<std::int64_t>(target);
      elemSize = target;
      break;
    }
  }

  std::uint64_t bits = elemSize | reinterpret_cast<std::uintptr_t>(dst);
  for (int d = 0; d < dims; ++d) bits |= magnitude(step[d]);
  const int word = widestWord(bits);
  StridedParams p;
  p.dst = dst;
  p.dims = dims;
  std::uint64_t total = 1;
  for (int d = 0; d < dims; ++d) {
    p.size[d] = size[d];
    p.dstStep[d] = step[d];
    p.srcStep[d] = 0;
    total *= static_cast<std::uint64_t>(size[d]);
  }
  const auto wordsPerElement = static_cast<std::int64_t>(elemSize) / word;
  p.size[p.dims] = wordsPerElement;
  p.dstStep[p.dims] = word;
  p.srcStep[p.dims] = word;  // byte offset inside the pattern
  ++p.dims;
  p.total = total * static_cast<std::uint64_t>(wordsPerElement);
  std::memcpy(p.pattern, pattern.data(), pattern.size());
  launchStrided(true, p, word, stream, "fill: strided fill kernel launch");
}

}  // namespace devicearray::detail::cuda
