// The copy planner: how DeviceImpl::copy turns a strided copy into the backend's
// copy steps (copy_steps.hpp), in this order:
//
//   both sides packed          -> one contiguous run (contiguous)
//   a pitched rectangle        -> the backend's rectangle command, where it has one
//                                 for this layout (rect)
//   device to device           -> the strided copy kernel (strided)
//   host <-> device otherwise  -> staged through a packed image: the device side
//                                 is gathered into / scattered from scratch memory
//                                 by the kernel unless it is packed, and the packed
//                                 image crosses the bus with the host side packed or
//                                 unpacked in queue order (hostImage; the scratch
//                                 memory from acquireScratch)
//
// Backends decide only what is theirs: which rectangles their command expresses,
// how host memory is staged (page-locked buffers, host threads, callbacks), what a
// scratch buffer is. Copies between two devices (DeviceImpl::copyAcrossDevices)
// validate with validateCopy and are one backend step of their own.
#pragma once

#include <cstdint>

#include "backend/backend.hpp"

namespace devicearray::detail {

/// A copy's size, as validateCopy measured it.
struct CopyExtent {
  std::int64_t count = 0;  ///< elements (0: nothing to copy)
  std::int64_t bytes = 0;  ///< bytes of the packed image
  bool dstPacked = false;
  bool srcPacked = false;
};

/// Validates a copy descriptor (axes, element size, sizes, both sides' bounds; no
/// host-to-host copies) and measures it. Errors name `fn`.
CopyExtent validateCopy(const CopyDesc& desc, const char* fn);

/// Validates `desc` (validateCopy) and enqueues it on `q` as the steps above.
void copyByPlan(CopySteps& steps, const CopyDesc& desc, QueueImpl& q);

}  // namespace devicearray::detail
