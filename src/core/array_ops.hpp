// Operations shared by GpuMatND, GpuMat and DeviceArray: resolving the queue of
// a call, ordered strided copies and fills between host and device regions.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "backend/backend.hpp"
#include "devicearray/device.hpp"
#include "devicearray/stream.hpp"

namespace devicearray::detail {

/// The queue `stream` wraps, after checking it lives on `device` (InvalidArgument).
QueueImpl& queueFor(const char* fn, Stream& stream, const std::shared_ptr<DeviceImpl>& device);

/// One side of a copy: host memory (alloc == nullptr, host pointer) or device storage.
struct Region {
  std::shared_ptr<Allocation> alloc;
  void* host = nullptr;
  std::size_t offset = 0;
  std::vector<std::size_t> step;
  MemRef ref() const { return alloc ? MemRef::dev(alloc.get(), offset) : MemRef::hostPtr(host); }
};

/// Enqueues on `q` a copy of `size` elements of `elemSize` bytes from src to dst,
/// ordered after earlier library work on both allocations. A device-to-device copy
/// between two different devices goes through DeviceImpl::copyAcrossDevices of the
/// destination (non-blocking) when `q` is a queue of the destination's device and
/// the backend handles it; otherwise it is staged through pinned host memory (the
/// source side blocks). Returns the event that completes the copy.
/// `hostMayBlock`: the caller waits for the copy anyway (see CopyDesc).
std::shared_ptr<EventImpl> enqueueCopy(const char* fn, QueueImpl& q, const std::vector<int>& size,
                                       std::size_t elemSize, const Region& dst, const Region& src,
                                       bool hostMayBlock = false);

/// Enqueues a fill of the strided region with one element pattern.
std::shared_ptr<EventImpl> enqueueFill(QueueImpl& q, const std::vector<int>& size, std::size_t elemSize,
                                       const Region& dst, const unsigned char* pattern);

}  // namespace devicearray::detail
