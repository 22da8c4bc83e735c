// The primitive steps a backend implements for copies, fills and depth conversions:
// one object per device (DeviceImpl::copySteps()), made by the backend. The copy
// planner (copy_plan.hpp) turns a strided copy into these steps; DeviceImpl's public
// copy, fill and convert make the checks every backend shares first, so a step only
// enqueues its backend's commands.
#pragma once

#include <cstddef>
#include <memory>

#include "backend/backend.hpp"

namespace devicearray::detail {

class CopySteps {
 public:
  virtual ~CopySteps() = default;

  // The steps of a copy. The planner has validated the descriptor (shape, bounds,
  // not host to host); device sides must still be checked to be this device's.

  /// Both sides one contiguous run of `bytes` bytes.
  virtual void contiguous(const CopyDesc& desc, std::size_t bytes, QueueImpl& q) = 0;
  /// The copy as one pitched-rectangle command, where the backend has one that
  /// expresses this layout and is the faster way; false, having enqueued nothing,
  /// otherwise.
  virtual bool rect(const CopyDesc& desc, QueueImpl& q) = 0;
  /// Device to device in any layout: the strided copy kernel.
  virtual void strided(const CopyDesc& desc, QueueImpl& q) = 0;
  /// Host to device or back where the device side is packed (`bytes` bytes) and the
  /// host side is any layout: one transfer of the packed image, the host side
  /// packed or unpacked in queue order.
  virtual void hostImage(const CopyDesc& desc, std::size_t bytes, QueueImpl& q) = 0;
  /// Device memory of `bytes` bytes for a staged copy's packed image, usable on `q`
  /// and returned in q's order (after the work enqueued so far) when destroyed.
  virtual std::unique_ptr<Allocation> acquireScratch(std::size_t bytes, QueueImpl& q) = 0;

  /// A pattern fill of a strided device region (validated here: validateFill).
  virtual void fill(const FillDesc& desc, QueueImpl& q) = 0;
  /// A depth conversion with saturation (validated here: validateConvert).
  virtual void convert(const ConvertDesc& desc, QueueImpl& q) = 0;
};

}  // namespace devicearray::detail
