#include "backend/copy_plan.hpp"

#include <memory>
#include <string>

#include "backend/region.hpp"

namespace devicearray::detail {

CopyExtent validateCopy(const CopyDesc& d, const char* fn) {
  checkDims(d.dims, fn);
  if (d.elemSize == 0) fail(ErrorCode::InvalidArgument, std::string(fn) + ": the element size is 0");
  if (d.dst.isHost() && d.src.isHost())
    fail(ErrorCode::InvalidArgument, std::string(fn) + ": host-to-host copies do not go through a device backend");
  for (const MemRef* side : {&d.dst, &d.src})
    if (side->isHost() && side->host == nullptr)
      fail(ErrorCode::InvalidArgument, std::string(fn) + ": null host " + (side == &d.dst ? "destination" : "source"));
  CopyExtent e;
  e.count = elementCount(d.dims, d.size.data(), fn);
  e.bytes = checkedMul(e.count, static_cast<std::int64_t>(d.elemSize), fn);
  checkBounds(d.dst, d.dims, d.size.data(), d.dstStep.data(), d.elemSize, fn, "destination");
  checkBounds(d.src, d.dims, d.size.data(), d.srcStep.data(), d.elemSize, fn, "source");
  e.dstPacked = isPacked(d.dims, d.size.data(), d.dstStep.data(), d.elemSize);
  e.srcPacked = isPacked(d.dims, d.size.data(), d.srcStep.data(), d.elemSize);
  return e;
}

void DeviceImpl::copyByPlan(const CopyDesc& d, QueueImpl& q) {
  const CopyExtent e = validateCopy(d, "copy");
  if (e.count == 0) return;
  const auto bytes = static_cast<std::size_t>(e.bytes);
  if (e.dstPacked && e.srcPacked) {
    doCopyContiguous(d, bytes, q);
    return;
  }
  if (doCopyRect(d, q)) return;
  if (!d.dst.isHost() && !d.src.isHost()) {
    doCopyStrided(d, q);
    return;
  }

  // Staged through a packed image of the region. The scratch image is returned in
  // q's order after the last step that uses it (also when a step throws).
  const bool upload = d.src.isHost();
  if (upload ? e.dstPacked : e.srcPacked) {
    doCopyHostImage(d, bytes, q);
    return;
  }
  std::unique_ptr<Allocation> scratch = doAcquireScratch(bytes, q);
  std::array<std::int64_t, kMaxDims> packed{};
  packedSteps(d.dims, d.size.data(), d.elemSize, packed.data());
  CopyDesc transfer = d;  // host side <-> scratch image
  CopyDesc onDevice = d;  // scratch image <-> device side
  const MemRef image = MemRef::dev(scratch.get(), 0);
  if (upload) {
    transfer.dst = image;
    transfer.dstStep = packed;
    onDevice.src = image;
    onDevice.srcStep = packed;
    doCopyHostImage(transfer, bytes, q);
    doCopyStrided(onDevice, q);
  } else {
    onDevice.dst = image;
    onDevice.dstStep = packed;
    transfer.src = image;
    transfer.srcStep = packed;
    doCopyStrided(onDevice, q);
    doCopyHostImage(transfer, bytes, q);
  }
}

}  // namespace devicearray::detail
