// Arithmetic of strided regions, shared by the core (shapes), the copy planner
// (copy_plan.cpp) and the backends' copy and fill steps: packedness, bounds, the word
// width and launch layout of a strided kernel, and the host loop that packs or unpacks a strided host
// region. The one place for each (checked products and sums: checked_math.hpp).
#pragma once

#include <cstddef>
#include <cstdint>

#include "backend/backend.hpp"
#include "backend/checked_math.hpp"
#include "backend/strided_layout.h"

namespace devicearray::detail {

/// True when `step` is the row-major packing of `size` elements of elemSize bytes
/// (axes of size 1 may have any step).
template <class Size, class Step>
bool isPacked(int dims, const Size* size, const Step* step, std::size_t elemSize) {
  std::uint64_t expected = elemSize;
  for (int d = dims - 1; d >= 0; --d) {
    if (size[d] != 1 && static_cast<std::uint64_t>(step[d]) != expected) return false;
    expected *= static_cast<std::uint64_t>(size[d]);
  }
  return true;
}

/// The row-major packed steps of `size` elements of elemSize bytes.
template <class Size, class Step>
void packedSteps(int dims, const Size* size, std::size_t elemSize, Step* step) {
  std::uint64_t s = elemSize;
  for (int d = dims - 1; d >= 0; --d) {
    step[d] = static_cast<Step>(s);
    s *= static_cast<std::uint64_t>(size[d]);
  }
}

/// Elements of a region (1 for dims == 0), overflow-checked; InvalidArgument for a
/// negative size. A zero size gives 0 (nothing to do).
std::int64_t elementCount(int dims, const std::int64_t* size, const char* fn);

/// Throws InvalidArgument unless dims is 0..kMaxDims.
void checkDims(int dims, const char* fn);

/// Throws OutOfRange unless the bytes a strided region touches, [offset + lowest,
/// offset + highest + elemSize), lie inside its allocation (for adopted memory of
/// unknown size only the lower bound is checked). Host memory is not checked.
/// `side` names the region in the message ("source", "destination").
void checkBounds(const MemRef& ref, int dims, const std::int64_t* size, const std::int64_t* step,
                 std::size_t elemSize, const char* fn, const char* side);

/// Validates a fill descriptor (axes, a pattern of 1..32 bytes, device memory, bounds)
/// and returns its element count (0: nothing to fill). Errors name `fn`.
std::int64_t validateFill(const FillDesc& desc, const char* fn);

/// Validates a depth conversion (depth codes, extent, device memory on both sides, row
/// steps covering the rows, offsets and steps aligned to the values, bounds). Returns
/// false when there is nothing to convert. Errors name `fn`.
bool validateConvert(const ConvertDesc& desc, const char* fn);

/// Width in bytes (16, 8, 4, 2 or 1) of the machine word a strided kernel moves: the
/// widest dividing the element size, both base addresses (or byte offsets) and every
/// step, so that every access is naturally aligned.
int stridedWordBytes(std::size_t elemSize, std::uint64_t dstBase, std::uint64_t srcBase, int dims,
                     const std::int64_t* dstStep, const std::int64_t* srcStep);

/// The layout of one launch of the strided copy or fill kernels (strided_layout.h):
/// `size` elements of elemSize bytes moved as words of `word` bytes (stridedWordBytes),
/// the word within its element appended as the innermost axis where an element has
/// several, and the fast-division constants of every axis below 2^31 words. A fill
/// passes no srcStep: its source is the pattern, at the word's offset in the element.
da_strided_layout stridedLayout(int dims, const std::int64_t* size, const std::int64_t* dstStep,
                                const std::int64_t* srcStep, std::size_t elemSize, int word);

/// Copies a strided region between two host layouts (packing a strided host source
/// into a staging image, or unpacking one into a strided host destination). Runs in
/// backends' queue-ordered host callbacks, so it never throws.
void hostStridedCopy(char* dst, const std::int64_t* dstStep, const char* src, const std::int64_t* srcStep, int dims,
                     const std::int64_t* size, std::size_t elemSize) noexcept;

}  // namespace devicearray::detail
