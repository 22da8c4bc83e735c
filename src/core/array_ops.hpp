// Operations shared by GpuMatND, GpuMat and DeviceArray: resolving the queue of
// a call, ordered strided copies and fills between host and device regions.
#pragma once

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "backend/backend.hpp"
#include "devicearray/device.hpp"
#include "devicearray/stream.hpp"

namespace devicearray::detail {

/// The queue `stream` wraps, after checking it lives on `device` (InvalidArgument).
QueueImpl& queueFor(const char* fn, Stream& stream, const std::shared_ptr<DeviceImpl>& device);

/// One side of a copy: host memory or a place in device memory (MemRef), with the
/// byte step of every axis. `owner` keeps a device side's allocation alive.
struct Region {
  MemRef memory;
  std::shared_ptr<Allocation> owner;
  std::vector<std::size_t> step;

  static Region device(std::shared_ptr<Allocation> allocation, std::size_t offset, std::vector<std::size_t> step) {
    Region r;
    r.memory = MemRef::dev(allocation.get(), offset);
    r.owner = std::move(allocation);
    r.step = std::move(step);
    return r;
  }
  static Region host(void* data, std::vector<std::size_t> step) {
    Region r;
    r.memory = MemRef::hostPtr(data);
    r.step = std::move(step);
    return r;
  }
  /// The device allocation, or null for host memory.
  Allocation* allocation() const { return memory.buffer.allocation; }
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
