// Shape / step arithmetic shared by HostMat, GpuMatND and GpuMat: validation
// (overflow-checked once, here), continuity, and normalization of strided copies.
// Everything is host-only and backend-agnostic.
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include "backend/backend.hpp"
#include "backend/checked_math.hpp"
#include "backend/region.hpp"
#include "devicearray/types.hpp"

namespace devicearray::detail {

// checkedMul / checkedAdd: backend/checked_math.hpp; isPacked / packedSteps of
// descriptors: backend/region.hpp.

/// Throws InvalidArgument unless `type` is a valid type code.
void validateType(const char* fn, int type);
/// Bytes of one element of `type` (validated).
std::size_t elemSizeOf(int type);

/// Validates a shape (1..32 axes, every size > 0) and returns the element count
/// (OutOfRange when the byte count of `elemSize`-byte elements overflows).
std::size_t validateShape(const char* fn, const std::vector<int>& size, std::size_t elemSize);

/// device.allocate(bytes, q), with an OutOfMemory error naming the public call `fn`
/// in front of the backend's message (which gives the requested and free bytes).
std::shared_ptr<Allocation> allocateFor(const char* fn, DeviceImpl& device, std::size_t bytes, QueueImpl& q);

/// Row-major packed steps (bytes) of a validated shape.
std::vector<std::size_t> continuousSteps(const std::vector<int>& size, std::size_t elemSize);

/// Validates user steps (empty = continuous; dims-1 entries = the last one is
/// implied; dims entries = the last must equal elemSize) and returns dims steps.
/// Steps must be multiples of elemSize1 and must not make axes overlap.
std::vector<std::size_t> normalizeSteps(const char* fn, const std::vector<int>& size, std::size_t elemSize,
                                        std::size_t elemSize1, const std::vector<std::size_t>& step);

/// True when the elements are packed with no gaps (axes of size 1 ignored).
bool isPacked(const std::vector<int>& size, const std::vector<std::size_t>& step, std::size_t elemSize);

/// Bytes from the first element to one past the last one.
std::size_t spanBytes(const std::vector<int>& size, const std::vector<std::size_t>& step, std::size_t elemSize);

/// A copy of `size` elements between two strided layouts, normalized: axes of
/// size 1 dropped, mergeable axes merged, contiguous trailing axes folded into
/// elemSize.
CopyDesc makeCopy(const std::vector<int>& size, std::size_t elemSize, MemRef dst,
                  const std::vector<std::size_t>& dstStep, MemRef src, const std::vector<std::size_t>& srcStep);

/// The region covered by a strided layout, normalized the same way (for fills).
FillDesc makeFill(const std::vector<int>& size, std::size_t elemSize, MemRef dst,
                  const std::vector<std::size_t>& step);

/// "[2, 3, 4]".
std::string shapeString(const std::vector<int>& size);
std::string stepString(const std::vector<std::size_t>& step);

/// Validates per-axis ranges against a shape (Range::all() = whole axis) and
/// returns the resolved [start, end) pairs. OutOfRange / InvalidArgument.
std::vector<Range> resolveRanges(const char* fn, const std::vector<int>& size, const std::vector<Range>& ranges);
Range resolveRange(const char* fn, int axis, int size, Range r);

}  // namespace devicearray::detail
