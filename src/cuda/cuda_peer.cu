// CudaDevice::doCopyAcrossDevices: copies between two CUDA devices of one process,
// enqueued on a queue of the destination device without blocking the host.
//
// Strategy (first that applies):
//   * both sides one contiguous run  -> cudaMemcpyPeerAsync;
//   * the destination can read the source's memory directly (peer access, enabled
//     once per device pair) and the source is library pool memory -> the strided
//     copy kernel (kernels/strided_copy.h) on the destination device, reading peer
//     memory (one launch, full-width words);
//   * rows of contiguous bytes with pitches cudaMemcpy3D can describe ->
//     cudaMemcpy3DPeerAsync;
//   * otherwise the region is packed into a temporary on the source device (kernel
//     on the source's library stream), moved with one cudaMemcpyPeerAsync and
//     unpacked on the destination device; streams of the two devices hand over
//     through events, never through the host.
// Peer access to memory-pool allocations does not follow
// cudaDeviceEnablePeerAccess, so the source pool also grants the destination
// device access (cudaMemPoolSetAccess). Memory the library did not allocate may
// come from a pool it cannot see; it takes the copy-engine paths, which work on
// any device memory.
//
// Ordering: the copy waits for the recorded work on both allocations and is
// recorded on both (OrderedUse), on the caller's queue. The special stream handles
// (0, cudaStreamLegacy, cudaStreamPerThread) have the same identity on every
// device, so an event of device 0's default stream would look like "same queue" to
// device 1's default stream; such copies run on the destination's library stream
// instead, joined to the caller's stream by events before and after.
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <limits>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <utility>

#include "backend/copy_plan.hpp"
#include "backend/region.hpp"
#include "cuda/cuda_device.hpp"
#include "cuda/strided_copy.hpp"

namespace devicearray::detail::cuda {
namespace {

/// Pitches of a layout cudaMemcpy3D can describe: runs of `width` contiguous bytes,
/// `height` rows `pitch` apart, `depth` slices `pitch * ysize` apart.
struct Pitched {
  std::size_t pitch = 0;
  std::size_t ysize = 0;
};

bool pitchedLayout(int dims, const std::int64_t* size, const std::int64_t* step, std::size_t width,
                   std::size_t maxPitch, Pitched& out) {
  if (dims < 1 || dims > 2) return false;
  const std::int64_t rowPitch = step[dims - 1];
  if (rowPitch < static_cast<std::int64_t>(width) || static_cast<std::uint64_t>(rowPitch) > maxPitch) return false;
  out.pitch = static_cast<std::size_t>(rowPitch);
  out.ysize = static_cast<std::size_t>(size[dims - 1]);
  if (dims == 2) {
    if (step[0] <= 0 || step[0] % rowPitch != 0 || step[0] / rowPitch < size[1]) return false;
    out.ysize = static_cast<std::size_t>(step[0] / rowPitch);
  }
  return true;
}

bool isSpecialStream(cudaStream_t s) { return s == nullptr || s == cudaStreamLegacy || s == cudaStreamPerThread; }

/// Device-to-device peer access already settled per (destination, source) ordinal
/// pair. Leaked with the devices: enabled access lasts for the process.
struct PeerTable {
  std::mutex mutex;
  std::map<std::pair<int, int>, bool> direct;
};

PeerTable& peerTable() {
  static PeerTable* table = new PeerTable;
  return *table;
}

/// Pool memory of `device` used on `stream` and freed on it (also on errors).
class StreamTemp {
 public:
  StreamTemp(CudaDevice& device, std::size_t bytes, cudaStream_t stream, const std::string& fn)
      : device_(device), stream_(stream), data_(static_cast<char*>(device.mallocAsync(bytes, stream, fn.c_str()))) {}
  StreamTemp(const StreamTemp&) = delete;
  StreamTemp& operator=(const StreamTemp&) = delete;
  ~StreamTemp() {
    DeviceGuard guard(device_.ordinal(), std::nothrow);
    if (guard.ok()) device_.freeAsync(data_, stream_);
  }
  char* data() const { return data_; }

 private:
  CudaDevice& device_;
  cudaStream_t stream_;
  char* data_;
};

/// The packed copy of the source region, on the source device's library stream.
/// The destination's stream reads it, so it is freed on the source stream only
/// after an event of the destination stream; if that hand-over cannot be made, the
/// destination stream is drained first, and if even that fails the buffer is
/// leaked rather than freed under a running copy.
class SourceTemp {
 public:
  SourceTemp(CudaDevice& source, QueueImpl& sourceQueue, QueueImpl& reader, std::size_t bytes, const std::string& fn)
      : source_(source), sourceQueue_(sourceQueue), reader_(reader) {
    DeviceGuard guard(source.ordinal());
    data_ = static_cast<char*>(source.mallocAsync(bytes, stream(), fn.c_str()));
  }
  SourceTemp(const SourceTemp&) = delete;
  SourceTemp& operator=(const SourceTemp&) = delete;
  ~SourceTemp() {
    try {
      auto readDone = reader_.recordEvent();
      sourceQueue_.waitEvent(*readDone);
    } catch (...) {
      try {
        reader_.synchronize();
      } catch (...) {
        return;
      }
    }
    DeviceGuard guard(source_.ordinal(), std::nothrow);
    if (guard.ok()) source_.freeAsync(data_, stream());
  }
  char* data() const { return data_; }
  cudaStream_t stream() const { return static_cast<CudaQueue&>(sourceQueue_).stream(); }

 private:
  CudaDevice& source_;
  QueueImpl& sourceQueue_;
  QueueImpl& reader_;
  char* data_ = nullptr;
};

}  // namespace

bool CudaDevice::peerAccessTo(CudaDevice& source) {
  if (&source == this) return true;
  PeerTable& table = peerTable();
  std::lock_guard<std::mutex> lock(table.mutex);
  const auto key = std::make_pair(ordinal_, source.ordinal_);
  if (auto it = table.direct.find(key); it != table.direct.end()) return it->second;

  bool direct = false;
  {
    DeviceGuard guard(ordinal_);
    int can = 0;
    check(cudaDeviceCanAccessPeer(&can, ordinal_, source.ordinal_), "cudaDeviceCanAccessPeer");
    if (can != 0) {
      // Access is enabled in the primary context, which the process shares: code that
      // enables it again gets cudaErrorPeerAccessAlreadyEnabled, which it must (and
      // commonly does) tolerate, as we do here.
      cudaError_t err = cudaDeviceEnablePeerAccess(source.ordinal_, 0);
      if (err == cudaErrorPeerAccessAlreadyEnabled) {
        (void)cudaGetLastError();
        err = cudaSuccess;
      }
      if (err == cudaSuccess) {
        cudaMemAccessDesc access{};
        access.location.type = cudaMemLocationTypeDevice;
        access.location.id = ordinal_;
        access.flags = cudaMemAccessFlagsProtReadWrite;
        err = cudaMemPoolSetAccess(source.memoryPool(), &access, 1);
      }
      if (err == cudaSuccess) {
        direct = true;
      } else {
        // Out of peer resources (cudaErrorTooManyPeers) or refused by the driver:
        // the copy-engine and staged paths still work, only slower.
        (void)cudaGetLastError();
      }
    }
  }
  table.direct.emplace(key, direct);
  return direct;
}

bool CudaDevice::doCopyAcrossDevices(const CopyDesc& desc, DeviceImpl& srcDevice, QueueImpl& q) {
  auto* source = dynamic_cast<CudaDevice*>(&srcDevice);
  if (source == nullptr) return false;  // another backend: the core stages through the host
  const std::string fn = "copy (" + source->label() + " -> " + label() + ")";
  if (source == this) fail(ErrorCode::InvalidArgument, fn + ": source and destination are the same device");
  cudaStream_t callerStream = streamOf(q, fn.c_str());
  if (desc.dst.isHost() || desc.src.isHost())
    fail(ErrorCode::InvalidArgument, fn + ": both sides must be device memory");
  if (desc.src.buffer.allocation->device().get() != source)
    fail(ErrorCode::InvalidArgument, fn + ": the source memory does not belong to " + source->label());
  const CopyExtent extent = validateCopy(desc, fn.c_str());
  if (extent.count == 0) return true;
  const int dims = desc.dims;
  const std::int64_t* size = desc.size.data();
  char* dst = address(desc.dst, fn.c_str());
  char* src = static_cast<char*>(desc.src.buffer.allocation->handle()) + desc.src.buffer.offset;
  const auto bytes = static_cast<std::size_t>(extent.bytes);
  const bool dstPacked = extent.dstPacked;
  const bool srcPacked = extent.srcPacked;
  // Settled before anything is enqueued; also lets the contiguous copy use the
  // direct link instead of the driver's staging.
  const bool direct = peerAccessTo(*source);
  Pitched dstPitched, srcPitched;
  enum class Path { contiguous, peerKernel, copy3D, staged } path = Path::staged;
  if (dstPacked && srcPacked) path = Path::contiguous;
  else if (direct && !desc.src.buffer.allocation->external()) path = Path::peerKernel;
  else if (pitchedLayout(dims, size, desc.dstStep.data(), desc.elemSize, maxPitch_, dstPitched) &&
           pitchedLayout(dims, size, desc.srcStep.data(), desc.elemSize, source->maxPitch(), srcPitched))
    path = Path::copy3D;

  QueueImpl* work = &q;
  if (isSpecialStream(callerStream)) {
    work = libraryQueue().get();
    auto callerSoFar = q.recordEvent();
    work->waitEvent(*callerSoFar);
  }
  const cudaStream_t stream = static_cast<CudaQueue&>(*work).stream();
  OrderedUse use(*work, {desc.dst.buffer.allocation, desc.src.buffer.allocation});
  {
    DeviceGuard guard(ordinal_);
    switch (path) {
      case Path::contiguous:
        check(cudaMemcpyPeerAsync(dst, ordinal_, src, source->ordinal(), bytes, stream), "cudaMemcpyPeerAsync");
        break;
      case Path::peerKernel:
        stridedDeviceCopy(*this, dst, desc.dstStep.data(), src, desc.srcStep.data(), dims, size, desc.elemSize, stream);
        break;
      case Path::copy3D: {
        cudaMemcpy3DPeerParms p{};
        p.srcPtr = make_cudaPitchedPtr(src, srcPitched.pitch, desc.elemSize, srcPitched.ysize);
        p.srcDevice = source->ordinal();
        p.dstPtr = make_cudaPitchedPtr(dst, dstPitched.pitch, desc.elemSize, dstPitched.ysize);
        p.dstDevice = ordinal_;
        p.extent = make_cudaExtent(desc.elemSize, static_cast<std::size_t>(size[dims - 1]),
                                   dims == 2 ? static_cast<std::size_t>(size[0]) : 1);
        check(cudaMemcpy3DPeerAsync(&p, stream), "cudaMemcpy3DPeerAsync");
        break;
      }
      case Path::staged: {
        std::int64_t packed[kMaxDims] = {};
        packedSteps(dims, size, desc.elemSize, packed);
        const char* from = src;
        std::unique_ptr<SourceTemp> sourceTemp;
        if (!srcPacked) {
          // The source's library stream packs the region once `work` has waited for
          // the source allocation's recorded work (OrderedUse above).
          QueueImpl& sourceQueue = *source->libraryQueue();
          auto ready = work->recordEvent();
          sourceQueue.waitEvent(*ready);
          sourceTemp = std::make_unique<SourceTemp>(*source, sourceQueue, *work, bytes, fn);
          {
            DeviceGuard sourceGuard(source->ordinal());
            stridedDeviceCopy(*source, sourceTemp->data(), packed, src, desc.srcStep.data(), dims, size, desc.elemSize,
                              sourceTemp->stream());
          }
          auto packedDone = sourceQueue.recordEvent();
          work->waitEvent(*packedDone);
          from = sourceTemp->data();
        }
        if (dstPacked) {
          check(cudaMemcpyPeerAsync(dst, ordinal_, from, source->ordinal(), bytes, stream), "cudaMemcpyPeerAsync");
        } else {
          StreamTemp landing(*this, bytes, stream, fn);
          check(cudaMemcpyPeerAsync(landing.data(), ordinal_, from, source->ordinal(), bytes, stream),
                "cudaMemcpyPeerAsync");
          stridedDeviceCopy(*this, dst, desc.dstStep.data(), landing.data(), packed, dims, size, desc.elemSize, stream);
        }
        break;  // sourceTemp is released after an event of `work` that follows the transfer
      }
    }
  }
  auto done = use.commit();
  if (work != &q) q.waitEvent(*done);
  return true;
}

}  // namespace devicearray::detail::cuda
