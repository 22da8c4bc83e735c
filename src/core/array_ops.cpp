#include "backend/backend_registry.hpp"
#include "core/array_ops.hpp"

#include <cstring>

#include "core/layout.hpp"

namespace devicearray::detail {

QueueImpl& queueFor(const char* fn, Stream& stream, const std::shared_ptr<DeviceImpl>& device) {
  QueueImpl& q = *stream.impl();
  if (q.device() != device)
    fail(ErrorCode::InvalidArgument, std::string(fn) + ": the stream belongs to " + stream.device().toString() +
                                         " but the array lives on " + ComputeDevice(device).toString());
  return q;
}

std::shared_ptr<EventImpl> enqueueCopy(const char* fn, QueueImpl& q, const std::vector<int>& size,
                                       std::size_t elemSize, const Region& dst, const Region& src,
                                       bool hostMayBlock) {
  requireNotForked(fn);  // names the public call before any ordering touches the driver
  const auto& qdev = q.device();
  Allocation* const dstAlloc = dst.allocation();
  Allocation* const srcAlloc = src.allocation();
  if (srcAlloc && dstAlloc && srcAlloc->device() != dstAlloc->device()) {
    // Different devices: the destination's backend moves the data directly when it
    // can (CUDA peer copies), ordered on q without blocking the host.
    if (dstAlloc->device() == qdev) {
      CopyDesc desc = makeCopy(size, elemSize, dst.memory, dst.step, src.memory, src.step);
      desc.hostMayBlock = hostMayBlock;
      if (qdev->copyAcrossDevices(desc, *srcAlloc->device(), q)) return q.recordEvent();
    }
    // Otherwise (another backend, e.g. CUDA <-> OpenCL): stage through page-locked
    // host memory; the source side blocks.
    std::vector<std::size_t> packed = continuousSteps(size, elemSize);
    const std::size_t bytes = spanBytes(size, packed, elemSize);
    std::shared_ptr<void> buffer = allocatePinnedHostBuffer(bytes);
    if (!buffer) buffer = std::shared_ptr<void>(::operator new(bytes), [](void* p) { ::operator delete(p); });
    const Region host = Region::host(buffer.get(), packed);
    QueueImpl& srcQueue = *srcAlloc->device()->libraryQueue();
    enqueueCopy(fn, srcQueue, size, elemSize, host, src, true)->synchronize();
    auto ev = enqueueCopy(fn, q, size, elemSize, dst, host, true);
    // The staging buffer must outlive the enqueued upload.
    ev->synchronize();
    return ev;
  }
  for (const Allocation* a : {dstAlloc, srcAlloc})
    if (a && a->device() != qdev)
      fail(ErrorCode::InvalidArgument, std::string(fn) + ": memory of " + ComputeDevice(a->device()).toString() +
                                           " cannot be used on a queue of " + ComputeDevice(qdev).toString());
  OrderedUse use(q, {dstAlloc, srcAlloc});
  CopyDesc desc = makeCopy(size, elemSize, dst.memory, dst.step, src.memory, src.step);
  desc.hostMayBlock = hostMayBlock;
  qdev->copy(desc, q);
  auto ev = use.commit();
  return ev ? ev : q.recordEvent();
}

std::shared_ptr<EventImpl> enqueueFill(QueueImpl& q, const std::vector<int>& size, std::size_t elemSize,
                                       const Region& dst, const unsigned char* pattern) {
  FillDesc f = makeFill(size, elemSize, dst.memory, dst.step);
  std::memcpy(f.pattern.data(), pattern, elemSize);
  OrderedUse use(q, {dst.allocation()});
  q.device()->fill(f, q);
  return use.commit();
}

}  // namespace devicearray::detail
