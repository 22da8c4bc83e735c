// The CUDA copy steps (backend/copy_steps.hpp; backend/copy_plan.hpp chooses them)
// and the pattern fill: the copy engine, pinned staging, the strided copy kernel.
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <iterator>
#include <limits>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "backend/copy_steps.hpp"
#include "cuda/cuda_device.hpp"
#include "cuda/host_copy_threads.hpp"
#include "cuda/kernel_registry.hpp"
#include "backend/region.hpp"
#include "cuda/strided_copy.hpp"
#include "kernels/strided_copy.h"

namespace devicearray::detail::cuda {
namespace {

using StridedCopyKernel = void (*)(da_u8*, const da_u8*, da_strided_layout);
using StridedFillKernel = void (*)(da_u8*, da_strided_layout, da_fill_pattern);

/// The instances of one word width (kernels/strided_copy.h): [0] below 2^31 words, [1] any.
struct StridedKernels {
  int wordBytes;
  StridedCopyKernel copy[2];
  StridedFillKernel fill[2];
};

#define DA_CUDA_STRIDED_INSTANCES(bytes, Word, groups)                              \
  StridedKernels{bytes,                                                     \
                 {&da_strided_copy_##bytes##_i32, &da_strided_copy_##bytes##_i64}, \
                 {&da_strided_fill_##bytes##_i32, &da_strided_fill_##bytes##_i64}},
constexpr StridedKernels kStridedKernels[] = {DA_STRIDED_WORDS(DA_CUDA_STRIDED_INSTANCES)};
#undef DA_CUDA_STRIDED_INSTANCES

const StridedKernels& stridedKernelsOf(int wordBytes) {
  for (const StridedKernels& k : kStridedKernels)
    if (k.wordBytes == wordBytes) return k;
  return kStridedKernels[std::size(kStridedKernels) - 1];
}

bool preloadStridedKernels() noexcept {
  for (const StridedKernels& k : kStridedKernels)
    for (int index = 0; index < 2; ++index)
      if (!registerPreload(reinterpret_cast<const void*>(k.copy[index])) ||
          !registerPreload(reinterpret_cast<const void*>(k.fill[index])))
        return false;
  return true;
}

// Every instance a launch can pick, loaded with the device (kernel_registry.hpp).
[[maybe_unused]] const bool kStridedKernelsRegistered = preloadStridedKernels();

/// Launches the strided copy kernel, or the fill kernel with `pattern`, over the
/// layout's words (in blocks of DA_STRIDED_GROUP work items); as a dependent launch
/// (CudaDevice::launchTraitsOf) when `device` allows it, like the shared kernels.
void launchStrided(CudaDevice& device, const da_strided_layout& layout, int word, char* dst, const char* src,
                   const da_fill_pattern* pattern, cudaStream_t stream, const char* function) {
  if (layout.total == 0) return;
  constexpr std::uint64_t kPerBlock = std::uint64_t{DA_STRIDED_GROUP} * DA_STRIDED_WORDS_PER_ITEM;
  const std::uint64_t blocks = (layout.total + kPerBlock - 1) / kPerBlock;
  if (blocks > static_cast<std::uint64_t>(std::numeric_limits<int>::max()))
    fail(ErrorCode::Unsupported, std::string(function) + ": " + std::to_string(layout.total) +
                                     " words exceed one kernel launch");
  const int index = layout.total < (std::uint64_t{1} << 31) ? 0 : 1;
  const StridedKernels& kernels = stridedKernelsOf(word);
  auto* d = reinterpret_cast<da_u8*>(dst);
  const auto launchOf = [&](auto kernel, auto... args) {
    const bool dependent = device.launchTraitsOf(reinterpret_cast<const void*>(kernel), function).dependent;
    const LaunchConfig config(dim3(static_cast<unsigned>(blocks)), dim3(DA_STRIDED_GROUP), stream, dependent);
    return cudaLaunchKernelEx(config.get(), kernel, args...);
  };
  const cudaError_t err = pattern != nullptr
                              ? launchOf(kernels.fill[index], d, layout, *pattern)
                              : launchOf(kernels.copy[index], d, reinterpret_cast<const da_u8*>(src), layout);
  check(err, function);
}

}  // namespace

void stridedDeviceCopy(CudaDevice& device, char* dst, const std::int64_t* dstStep, const char* src,
                       const std::int64_t* srcStep, int dims, const std::int64_t* size, std::size_t elemSize,
                       cudaStream_t stream) {
  const int word = stridedWordBytes(elemSize, reinterpret_cast<std::uintptr_t>(dst),
                                    reinterpret_cast<std::uintptr_t>(src), dims, dstStep, srcStep);
  launchStrided(device, stridedLayout(dims, size, dstStep, srcStep, elemSize, word), word, dst, src, nullptr, stream,
                "copy: strided copy kernel launch");
}

namespace {

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

/// Pool memory for a staged copy's packed image, freed on its stream (in stream order,
/// also when the copy fails part-way).
class CudaScratch final : public Allocation {
 public:
  CudaScratch(CudaDevice& device, std::size_t bytes, cudaStream_t stream)
      : Allocation(device.shared_from_this(), device.mallocAsync(bytes, stream, "copy"), bytes, false),
        stream_(stream) {}
  ~CudaScratch() override {
    auto& device = static_cast<CudaDevice&>(*device_);
    DeviceGuard guard(device.ordinal(), std::nothrow);
    if (guard.ok()) device.freeAsync(handle_, stream_);
  }

 private:
  cudaStream_t stream_;
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

/// Idle non-blocking streams of one device, on which the host side of a pipelined
/// staging runs. A transfer reserves one (acquire) and gives it back once enqueued
/// (release); transfers never share a busy side stream, which would order unrelated
/// user streams after each other. Kept for reuse: as many as transfers ever ran at
/// once on the device (the steps, like the device, live until the process ends).
class StagingStreams {
 public:
  explicit StagingStreams(int ordinal) : ordinal_(ordinal) {}

  cudaStream_t acquire() {
    DeviceGuard guard(ordinal_);
    {
      std::lock_guard<std::mutex> lock(mutex_);
      for (auto it = idle_.begin(); it != idle_.end(); ++it) {
        // Idle: every transfer that used it has finished its host side.
        if (cudaStreamQuery(*it) == cudaSuccess) {
          cudaStream_t stream = *it;
          idle_.erase(it);
          return stream;
        }
        (void)cudaGetLastError();
      }
    }
    cudaStream_t stream = nullptr;
    check(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), "cudaStreamCreateWithFlags");
    return stream;
  }

  void release(cudaStream_t stream) noexcept {
    try {
      std::lock_guard<std::mutex> lock(mutex_);
      idle_.push_back(stream);
    } catch (...) {
      // Not pooled: left to the process's end rather than destroyed while busy.
    }
  }

 private:
  int ordinal_;
  std::mutex mutex_;
  std::vector<cudaStream_t> idle_;
};

/// Makes `stream` wait for everything enqueued on `side` so far: joins the staging
/// stream back into the caller's stream (also when an error cut the sequence short,
/// so staging buffers are never returned while the host side still uses them), then
/// gives the side stream back to the device. When an exception is leaving the
/// transfer, it also waits for the host copies already enqueued: the caller's
/// memory must not be touched after a call has failed.
class JoinOnExit {
 public:
  JoinOnExit(StagingStreams& streams, cudaStream_t stream, cudaStream_t side, cudaEvent_t event)
      : streams_(streams), stream_(stream), side_(side), event_(event), exceptions_(std::uncaught_exceptions()) {}
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
    streams_.release(side_);
  }

 private:
  StagingStreams& streams_;
  cudaStream_t stream_;
  cudaStream_t side_;
  cudaEvent_t event_;
  int exceptions_;
};

/// Contiguous pageable host memory <-> device memory through page-locked staging
/// buffers, pipelined: the host copy of one chunk (split over host threads) overlaps
/// the DMA of the previous one. In stream order on `stream`; never blocks the host.
void stagedTransfer(CudaDevice& device, StagingStreams& streams, char* dst, const char* src, std::size_t bytes,
                    cudaMemcpyKind kind, cudaStream_t stream) {
  // Chunks: about a quarter of the transfer, 1 MiB to 8 MiB. A large transfer keeps
  // the per-chunk overhead (two events, a callback) below 1% of the chunk's time; a
  // megabyte or less is one chunk, because a chunk's callback latency is longer than
  // the DMA that splitting it would overlap, and its host copy is split over threads.
  constexpr std::size_t kMinChunk = std::size_t{1} << 20, kMaxChunk = std::size_t{8} << 20;
  constexpr std::size_t kSlots = 3;  // one being filled, one in DMA, one spare
  const std::size_t chunk = std::clamp<std::size_t>(bytes / 4, kMinChunk, kMaxChunk);
  const std::size_t chunks = (bytes + chunk - 1) / chunk;
  const std::size_t slots = std::min(kSlots, chunks);
  const bool upload = kind == cudaMemcpyHostToDevice;

  std::vector<std::unique_ptr<StagingLease>> buffers;
  for (std::size_t i = 0; i < slots; ++i)
    buffers.push_back(std::make_unique<StagingLease>(device.stagingPool(), std::min(chunk, bytes), stream));
  // hostDone[s]: the host copy into / out of slot s finished (staging stream);
  // dmaDone[s]: the transfer of slot s finished (caller's stream).
  EventSet hostDone(device, slots), dmaDone(device, slots), join(device, 2);
  cudaStream_t side = streams.acquire();
  const JoinOnExit joinOnExit(streams, stream, side, join[1]);  // before the leases return their buffers

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

cudaMemcpyKind kindOf(const CopyDesc& desc) {
  return desc.src.isHost() ? cudaMemcpyHostToDevice : desc.dst.isHost() ? cudaMemcpyDeviceToHost : cudaMemcpyDeviceToDevice;
}

/// The CUDA copy steps (backend/copy_steps.hpp): the copy engine for runs and
/// page-locked pitched rows, pinned pipelined staging of pageable memory, the strided
/// kernel for everything else; fills by memset where a byte repeats, else the kernel.
class CudaCopySteps final : public CopySteps {
 public:
  explicit CudaCopySteps(CudaDevice& device) : device_(device), streams_(device.ordinal()) {}

  void contiguous(const CopyDesc& desc, std::size_t bytes, QueueImpl& q) override {
    cudaStream_t stream = device_.streamOf(q, "copy");
    char* dst = device_.address(desc.dst, "copy");
    char* src = device_.address(desc.src, "copy");
    DeviceGuard guard(device_.ordinal());
    const cudaMemcpyKind kind = kindOf(desc);
    // Pageable host memory under stream semantics is staged through page-locked
    // buffers in stream order: the driver would otherwise block the host until the
    // stream reaches the copy (a device-to-host copy behind a slow kernel). The
    // pipelined staging also beats the driver's own pageable path (one thread, no
    // overlap) for the blocking overloads (hostMayBlock), from a megabyte up.
    const bool pageable = kind != cudaMemcpyDeviceToDevice && !isPageLocked(desc.src.isHost() ? src : dst);
    if (pageable && (!desc.hostMayBlock || bytes >= (std::size_t{1} << 20))) {
      stagedTransfer(device_, streams_, dst, src, bytes, kind, stream);
      return;
    }
    check(cudaMemcpyAsync(dst, src, bytes, kind, stream), "cudaMemcpyAsync");
  }

  bool rect(const CopyDesc& desc, QueueImpl& q) override {
    // One strided axis with the host involved: the copy engine. Device-to-device
    // copies always use the kernel, which keeps pitched rows near contiguous
    // bandwidth where cudaMemcpy2DAsync does not (docs/PERFORMANCE.md).
    // cudaMemcpy2DAsync only for page-locked host memory: with pageable memory the
    // driver stages it synchronously (blocking the host), and a driver was seen to
    // drop an odd-offset pitched upload from pageable memory. Pageable memory takes
    // the pinned staging of hostImage instead.
    if (desc.dims != 1 || desc.dst.isHost() == desc.src.isHost() ||
        !fitsMemcpy2D(desc.dstStep[0], desc.srcStep[0], desc.elemSize, device_.maxPitch()))
      return false;
    cudaStream_t stream = device_.streamOf(q, "copy");
    char* dst = device_.address(desc.dst, "copy");
    char* src = device_.address(desc.src, "copy");
    if (!isPageLocked(desc.src.isHost() ? src : dst)) return false;
    DeviceGuard guard(device_.ordinal());
    check(cudaMemcpy2DAsync(dst, static_cast<std::size_t>(desc.dstStep[0]), src,
                            static_cast<std::size_t>(desc.srcStep[0]), desc.elemSize,
                            static_cast<std::size_t>(desc.size[0]), kindOf(desc), stream),
          "cudaMemcpy2DAsync");
    return true;
  }

  void strided(const CopyDesc& desc, QueueImpl& q) override {
    cudaStream_t stream = device_.streamOf(q, "copy");
    char* dst = device_.address(desc.dst, "copy");
    char* src = device_.address(desc.src, "copy");
    DeviceGuard guard(device_.ordinal());
    stridedDeviceCopy(device_, dst, desc.dstStep.data(), src, desc.srcStep.data(), desc.dims, desc.size.data(),
                      desc.elemSize, stream);
  }

  void hostImage(const CopyDesc& desc, std::size_t bytes, QueueImpl& q) override {
    cudaStream_t stream = device_.streamOf(q, "copy");
    char* dst = device_.address(desc.dst, "copy");
    char* src = device_.address(desc.src, "copy");
    DeviceGuard guard(device_.ordinal());
    const bool upload = desc.src.isHost();
    const int dims = desc.dims;
    const std::int64_t* size = desc.size.data();
    const bool hostPacked = isPacked(dims, size, upload ? desc.srcStep.data() : desc.dstStep.data(), desc.elemSize);
    // Pageable memory under stream semantics goes through a page-locked buffer too
    // (see contiguous).
    const bool stageHost = !desc.hostMayBlock && !isPageLocked(upload ? src : dst);
    if (hostPacked && !stageHost) {
      check(cudaMemcpyAsync(dst, src, bytes, kindOf(desc), stream), "cudaMemcpyAsync");
      return;
    }
    std::int64_t packed[kMaxDims] = {};
    packedSteps(dims, size, desc.elemSize, packed);
    auto job = std::make_unique<HostCopyJob>();
    job->dims = dims;
    job->elemSize = desc.elemSize;
    std::copy(size, size + dims, job->size);
    if (upload) {
      StagingLease staging(device_.stagingPool(), bytes, stream);
      std::copy(packed, packed + dims, job->dstStep);
      std::copy(desc.srcStep.data(), desc.srcStep.data() + dims, job->srcStep);
      job->dst = staging.data();
      job->src = src;
      enqueueHostJob(job.release(), stream);  // packs when the stream reaches it: earlier writes to src are visible
      check(cudaMemcpyAsync(dst, staging.data(), bytes, cudaMemcpyHostToDevice, stream), "cudaMemcpyAsync");
      return;  // the lease returns the buffer in stream order, after the transfer
    }
    StagingLease staging(device_.stagingPool(), bytes, stream);
    check(cudaMemcpyAsync(staging.data(), src, bytes, cudaMemcpyDeviceToHost, stream), "cudaMemcpyAsync");
    std::copy(desc.dstStep.data(), desc.dstStep.data() + dims, job->dstStep);
    std::copy(packed, packed + dims, job->srcStep);
    job->dst = dst;
    job->src = staging.data();
    staging.transferTo(*job);
    enqueueHostJob(job.release(), stream);  // throws (and the lease returns the buffer) if it could not be enqueued
    staging.transferred();
  }

  std::unique_ptr<Allocation> acquireScratch(std::size_t bytes, QueueImpl& q) override {
    cudaStream_t stream = device_.streamOf(q, "copy");
    DeviceGuard guard(device_.ordinal());
    return std::make_unique<CudaScratch>(device_, bytes, stream);
  }

  void fill(const FillDesc& desc, QueueImpl& q) override {
    static constexpr const char* kFn = "fill";
    cudaStream_t stream = device_.streamOf(q, kFn);
    const auto elements = static_cast<std::size_t>(validateFill(desc, kFn));
    if (elements == 0) return;
    char* dst = device_.address(desc.dst, kFn);

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
    DeviceGuard guard(device_.ordinal());

    const bool oneByte = std::all_of(pattern.begin(), pattern.begin() + static_cast<std::ptrdiff_t>(elemSize),
                                     [&](unsigned char b) { return b == pattern[0]; });
    if (oneByte && !fillsByDependentLaunch(elements * elemSize)) {
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
          static_cast<std::uint64_t>(step[0]) <= device_.maxPitch()) {
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

    const int word = stridedWordBytes(elemSize, reinterpret_cast<std::uintptr_t>(dst), 0, dims, step, step);
    da_fill_pattern fillPattern;
    std::memcpy(fillPattern.bytes, pattern.data(), sizeof fillPattern.bytes);
    launchStrided(device_, stridedLayout(dims, size, step, nullptr, elemSize, word), word, dst, nullptr, &fillPattern,
                  stream, "fill: strided fill kernel launch");
  }

  void convert(const ConvertDesc& desc, QueueImpl& q) override { convertDepths(device_, desc, q); }

 private:
  /// A small fill's time on the device is mostly its start. Where the fill kernel is a
  /// dependent launch it starts while the kernel before it ends, where a memset would
  /// wait for that kernel and make the kernel after it wait too.
  bool fillsByDependentLaunch(std::size_t bytes) {
    constexpr std::size_t kMostBytes = std::size_t{1} << 20;
    const auto kernel = reinterpret_cast<const void*>(stridedKernelsOf(4).fill[0]);
    return bytes <= kMostBytes && device_.launchTraitsOf(kernel, "fill").dependent;
  }

  CudaDevice& device_;
  StagingStreams streams_;
};

}  // namespace

std::unique_ptr<CopySteps> makeCopySteps(CudaDevice& device) { return std::make_unique<CudaCopySteps>(device); }

}  // namespace devicearray::detail::cuda
