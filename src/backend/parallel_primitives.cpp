// ParallelPrimitives' entry points: the checks every backend shares, made once here,
// then the backend's do* implementation.
#include "backend/parallel_primitives.hpp"

#include <cstdint>
#include <limits>
#include <string>

#include "backend/kernel_signature.hpp"
#include "backend/pointcloud_signatures.h"

namespace devicearray::detail {
namespace {

/// The argument checks of one primitive call on `device`; each failure is an
/// InvalidArgument "<fn>: ...". A primitive works on device memory through raw
/// addresses, so a wrong buffer would corrupt memory instead of failing.
class PrimitiveCall {
 public:
  PrimitiveCall(DeviceImpl& device, QueueImpl& q, const char* fn, std::size_t count) : device_(device), fn_(fn) {
    requireNotForked(fn);
    if (q.device().get() != &device)
      fail(ErrorCode::InvalidArgument, std::string(fn) + ": the queue belongs to " + describe(q.device()) +
                                           ", not to " + describe(device.shared_from_this()));
    // Both backends index with 32-bit counts (CUB's int, OpenCL's per-chunk offsets).
    if (count > static_cast<std::size_t>(std::numeric_limits<std::int32_t>::max()))
      fail(ErrorCode::InvalidArgument,
           std::string(fn) + ": " + std::to_string(count) + " elements is more than a primitive handles (INT32_MAX)");
  }

  /// `b` must hold `bytes` bytes of this device's memory (a null buffer is allowed
  /// when nothing of it is used).
  void buffer(const char* name, BufferRef b, std::size_t bytes) const {
    if (bytes == 0) return;
    if (b.allocation == nullptr)
      fail(ErrorCode::InvalidArgument, std::string(fn_) + ": the " + name + " buffer is null");
    if (b.allocation->device().get() != &device_)
      fail(ErrorCode::InvalidArgument, std::string(fn_) + ": the " + name + " buffer is memory of " +
                                           describe(b.allocation->device()) + ", not of " +
                                           describe(device_.shared_from_this()));
    const std::size_t size = b.allocation->bytes();  // 0: external memory of unknown size
    if (size != 0 && (b.offset > size || size - b.offset < bytes))
      fail(ErrorCode::InvalidArgument, std::string(fn_) + ": the " + name + " buffer has " +
                                           std::to_string(size > b.offset ? size - b.offset : 0) +
                                           " bytes from its offset, fewer than the " + std::to_string(bytes) +
                                           " needed");
  }

  /// `a` (`aBytes` long) and `b` (`bBytes` long) must not share a byte, unless
  /// `sameAllowed` and they start at the same place (an in-place call).
  void disjoint(const char* aName, BufferRef a, std::size_t aBytes, const char* bName, BufferRef b,
                std::size_t bBytes, bool sameAllowed = false) const {
    if (aBytes == 0 || bBytes == 0 || a.allocation == nullptr || b.allocation == nullptr) return;
    if (a.allocation->handle() != b.allocation->handle()) return;
    if (sameAllowed && a.offset == b.offset) return;
    if (a.offset < b.offset + bBytes && b.offset < a.offset + aBytes)
      fail(ErrorCode::InvalidArgument,
           std::string(fn_) + ": the " + aName + " and " + bName + " buffers overlap, which this primitive forbids");
  }

  /// The count + 1 offsets at `offsets` of `count` elements of `elementBytes` each at
  /// `in`, which they must not overlap.
  void offsets(const char* inName, BufferRef in, std::size_t count, std::size_t elementBytes,
               BufferRef offsets) const {
    const std::size_t inBytes = count * elementBytes, offsetBytes = (count + 1) * sizeof(std::uint32_t);
    buffer(inName, in, inBytes);
    buffer("offsets", offsets, offsetBytes);
    disjoint(inName, in, inBytes, "offsets", offsets, offsetBytes);
  }

  /// A reduction of `count` points (3 floats each) of `xyz` into `outBytes` at `out`.
  void reduction(BufferRef xyz, std::size_t count, BufferRef out, std::size_t outBytes) const {
    const std::size_t pointBytes = count * 3 * sizeof(float);
    buffer("points", xyz, pointBytes);
    buffer("output", out, outBytes);
    disjoint("points", xyz, pointBytes, "output", out, outBytes);
  }

 private:
  static std::string describe(const std::shared_ptr<DeviceImpl>& d) {
    return d ? ComputeDevice(d).toString() : std::string("no device");
  }

  DeviceImpl& device_;
  const char* fn_;
};

}  // namespace

void ParallelPrimitives::exclusiveScanU32(QueueImpl& q, BufferRef in, BufferRef out, std::size_t count) {
  constexpr const char* fn = "exclusiveScanU32";
  const PrimitiveCall call(device_, q, fn, count);
  const std::size_t bytes = count * sizeof(std::uint32_t);
  call.buffer("input", in, bytes);
  call.buffer("output", out, bytes);
  // In place is fine (each element is read before it is written); a shifted overlap is not.
  call.disjoint("input", in, bytes, "output", out, bytes, true);
  faultPoint(FaultKind::kernelLaunch, fn);
  if (count == 0) return;
  doExclusiveScanU32(q, in, out, count);
}

void ParallelPrimitives::sortPairsU64U32(QueueImpl& q, BufferRef keysIn, BufferRef valuesIn, BufferRef keysOut,
                                         BufferRef valuesOut, std::size_t count, int endBit, BufferRef keyBits,
                                         int likelyKeyBits, BufferRef keyedEnd, std::size_t likelyKeyedEnd) {
  constexpr const char* fn = "sortPairsU64U32";
  const PrimitiveCall call(device_, q, fn, count);
  if (endBit < 1 || endBit > 64)
    fail(ErrorCode::InvalidArgument, std::string(fn) + ": endBit " + std::to_string(endBit) + " is outside [1, 64]");
  const std::size_t keyBytes = count * sizeof(std::uint64_t);
  const std::size_t valueBytes = count * sizeof(std::uint32_t);
  call.buffer("input keys", keysIn, keyBytes);
  call.buffer("input values", valuesIn, valueBytes);
  call.buffer("output keys", keysOut, keyBytes);
  call.buffer("output values", valuesOut, valueBytes);
  call.disjoint("output keys", keysOut, keyBytes, "input keys", keysIn, keyBytes);
  call.disjoint("output keys", keysOut, keyBytes, "input values", valuesIn, valueBytes);
  call.disjoint("output values", valuesOut, valueBytes, "input keys", keysIn, keyBytes);
  call.disjoint("output values", valuesOut, valueBytes, "input values", valuesIn, valueBytes);
  call.disjoint("output keys", keysOut, keyBytes, "output values", valuesOut, valueBytes);
  // A word of the caller's: in a buffer of this device, apart from the four arrays.
  auto wordApart = [&](const char* name, BufferRef word, std::size_t bytes) {
    call.buffer(name, word, bytes);
    call.disjoint("input keys", keysIn, keyBytes, name, word, bytes);
    call.disjoint("input values", valuesIn, valueBytes, name, word, bytes);
    call.disjoint("output keys", keysOut, keyBytes, name, word, bytes);
    call.disjoint("output values", valuesOut, valueBytes, name, word, bytes);
  };
  constexpr std::size_t widthBytes = 2 * sizeof(std::uint32_t);  // the width and the zero word after it
  if (keyBits.allocation != nullptr) wordApart("key width", keyBits, widthBytes);
  if (likelyKeyBits != 0 && (keyBits.allocation == nullptr || likelyKeyBits < 1 || likelyKeyBits > endBit))
    fail(ErrorCode::InvalidArgument, std::string(fn) + ": likelyKeyBits " + std::to_string(likelyKeyBits) +
                                         (keyBits.allocation == nullptr ? " without a key width word"
                                                                        : " is outside [1, " + std::to_string(endBit) + "]"));
  if (keyedEnd.allocation != nullptr) {
    wordApart("keyed end", keyedEnd, sizeof(std::uint32_t));
    call.disjoint("key width", keyBits, widthBytes, "keyed end", keyedEnd, sizeof(std::uint32_t));
  }
  if (likelyKeyedEnd != 0 && (keyedEnd.allocation == nullptr || likelyKeyedEnd > count)) {
    const std::string why = keyedEnd.allocation == nullptr ? " without a keyed end word"
                                                           : " is above the count " + std::to_string(count);
    fail(ErrorCode::InvalidArgument, std::string(fn) + ": likelyKeyedEnd " + std::to_string(likelyKeyedEnd) + why);
  }
  faultPoint(FaultKind::kernelLaunch, fn);
  if (count == 0) return;
  doSortPairsU64U32(q, keysIn, valuesIn, keysOut, valuesOut, count, endBit, keyBits, likelyKeyBits, keyedEnd,
                    likelyKeyedEnd);
}

void ParallelPrimitives::validPointOffsets(QueueImpl& q, BufferRef xyz, std::size_t count, BufferRef offsets) {
  constexpr const char* fn = "validPointOffsets";
  PrimitiveCall(device_, q, fn, count + 1).offsets("points", xyz, count, 3 * sizeof(float), offsets);
  faultPoint(FaultKind::kernelLaunch, fn);
  doValidPointOffsets(q, xyz, count, offsets);
}

template <class FlagsKernel>
void ParallelPrimitives::flagsThenScan(QueueImpl& q, BufferRef in, std::size_t count, BufferRef offsets) {
  launch<FlagsKernel>(q, LaunchGeometry::items(count + 1), static_cast<std::int64_t>(count), in, offsets);
  doExclusiveScanU32(q, offsets, offsets, count + 1);
}

void ParallelPrimitives::doValidPointOffsets(QueueImpl& q, BufferRef xyz, std::size_t count, BufferRef offsets) {
  flagsThenScan<kernels::da_pc_valid_flags>(q, xyz, count, offsets);
}

void ParallelPrimitives::sumValidXYZ(QueueImpl& q, BufferRef xyz, std::size_t count, BufferRef out) {
  constexpr const char* fn = "sumValidXYZ";
  PrimitiveCall(device_, q, fn, count).reduction(xyz, count, out, 4 * sizeof(double));
  faultPoint(FaultKind::kernelLaunch, fn);
  doSumValidXYZ(q, xyz, count, out);
}

void ParallelPrimitives::boundsValidXYZ(QueueImpl& q, BufferRef xyz, std::size_t count, BufferRef out) {
  constexpr const char* fn = "boundsValidXYZ";
  PrimitiveCall(device_, q, fn, count).reduction(xyz, count, out, 6 * sizeof(float));
  faultPoint(FaultKind::kernelLaunch, fn);
  doBoundsValidXYZ(q, xyz, count, out);
}

}  // namespace devicearray::detail
