#include "backend/copy_plan.hpp"

#include <memory>
#include <string>

#include "backend/copy_steps.hpp"
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

void copyByPlan(CopySteps& steps, const CopyDesc& d, QueueImpl& q) {
  const CopyExtent e = validateCopy(d, "copy");
  if (e.count == 0) return;
  const auto bytes = static_cast<std::size_t>(e.bytes);
  if (e.dstPacked && e.srcPacked) {
    steps.contiguous(d, bytes, q);
    return;
  }
  if (steps.rect(d, q)) return;
  if (!d.dst.isHost() && !d.src.isHost()) {
    steps.strided(d, q);
    return;
  }

  // Staged through a packed image of the region. The scratch image is returned in
  // q's order after the last step that uses it (also when a step throws).
  const bool upload = d.src.isHost();
  if (upload ? e.dstPacked : e.srcPacked) {
    steps.hostImage(d, bytes, q);
    return;
  }
  std::unique_ptr<Allocation> scratch = steps.acquireScratch(bytes, q);
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
    steps.hostImage(transfer, bytes, q);
    steps.strided(onDevice, q);
  } else {
    onDevice.dst = image;
    onDevice.dstStep = packed;
    transfer.src = image;
    transfer.srcStep = packed;
    steps.strided(onDevice, q);
    steps.hostImage(transfer, bytes, q);
  }
}

void DeviceImpl::copy(const CopyDesc& desc, QueueImpl& q) {
  requireNotForked("device copy");
  faultPoint(FaultKind::deviceCopy, "copy");
  copyByPlan(copySteps(), desc, q);
}

void DeviceImpl::fill(const FillDesc& desc, QueueImpl& q) {
  requireNotForked("device fill");
  faultPoint(FaultKind::kernelLaunch, "fill");
  copySteps().fill(desc, q);
}

void DeviceImpl::convert(const ConvertDesc& desc, QueueImpl& q) {
  requireNotForked("device conversion");
  faultPoint(FaultKind::kernelLaunch, "convert");
  copySteps().convert(desc, q);
}

}  // namespace devicearray::detail
