// The parallel primitives the point-cloud code is written against: exclusive scan,
// radix sort by key, and reductions over valid points. One object per device
// (DeviceImpl::primitives()); CUB on CUDA (src/cuda/cuda_primitives.cu), the library's
// own kernels on OpenCL (src/opencl/opencl_primitives.cpp).
//
// As DeviceImpl's entry points, the public functions are not virtual: they check the
// arguments once, here (a primitive works on raw device addresses, so a wrong buffer
// would corrupt memory instead of failing), count one kernel-launch fault point, and
// then call the backend's private do* implementation.
//
// Contract shared by every primitive: all work is enqueued on `q`, a queue of this
// device, and nothing blocks the host. The caller orders the buffers it passes
// (OrderedUse on `q` around the call); temporaries are allocated, ordered and released
// inside. Each throws InvalidArgument, naming the primitive, for a queue or buffer of
// another device, a count above INT32_MAX, a buffer too small for `count`, or outputs
// that overlap what they must not.
#pragma once

#include <cstddef>

#include "backend/backend.hpp"

namespace devicearray::detail {

class ParallelPrimitives {
 public:
  explicit ParallelPrimitives(DeviceImpl& device) : device_(device) {}
  ParallelPrimitives(const ParallelPrimitives&) = delete;
  ParallelPrimitives& operator=(const ParallelPrimitives&) = delete;
  virtual ~ParallelPrimitives() = default;

  /// out[i] = in[0] + ... + in[i-1] for i < count (uint32, wrapping). `in` and `out`
  /// may be the same memory, but not partly overlap. Callers append a 0 to their
  /// flags and scan count + 1 values, so out[count] is the total.
  void exclusiveScanU32(QueueImpl& q, BufferRef in, BufferRef out, std::size_t count);
  /// Stable ascending sort of `count` (uint64 key, uint32 value) pairs by bits
  /// [0, endBit) of the key (endBit in 1..64). The inputs are left unchanged; the
  /// outputs must overlap neither them nor each other.
  ///
  /// `keyBits`, when given, is a uint32 in device memory that earlier work on `q` wrote
  /// (so the host never reads it): every key whose bits [0, endBit) are not all ones is
  /// below 2^keyBits - 1, keyBits in 1..endBit. Keys of all ones (missing entries) then
  /// already sort last by bits [0, keyBits), so the bits above need no pass: a backend
  /// skips them on the device. Only the caller can know such a bound, and only on the
  /// device (a voxel grid's extent, say), hence a word instead of a smaller endBit. The
  /// uint32 after it must be zero: the device-side pass may use it (CUDA counts its
  /// blocks there) and leaves it zero, so the caller's own fill of its words spares the
  /// sort one. Neither word may overlap the inputs or the outputs.
  ///
  /// `likelyKeyBits` (with `keyBits` only; 0 = no guess, else 1..endBit) is the host's
  /// guess of *keyBits, e.g. the width of the last such grid: a backend whose fastest
  /// sort takes its bit range from the host sorts about that many bits that way and
  /// leaves the rest, if the keys are wider, to its device-side pass. The result does not
  /// depend on it; only the time does.
  ///
  /// `keyedEnd`, when given, is a uint32 in device memory that earlier work on `q`
  /// wrote: the entries from it on are missing. The sort then orders only the entries
  /// before min(count, *keyedEnd) and may leave the outputs at and past that position
  /// unwritten: a caller whose entries are mostly missing (a compaction's capacity)
  /// reads only the positions before it. The entries from *keyedEnd up to
  /// `likelyKeyedEnd` (up to `count` without a guess) must be written as missing keys
  /// (bits [0, endBit) all ones), since a backend may sort that many; the entries past
  /// both are never read. The word overlaps none of the other buffers.
  ///
  /// `likelyKeyedEnd` (with `keyedEnd` only; 0 = no guess, else 1..count) is the host's
  /// guess of *keyedEnd: a backend whose fastest sort takes its count from the host
  /// sorts that many entries that way, and when the guess was low, all of them again on
  /// one multiprocessor (far slower: guess high). Only the time depends on it.
  void sortPairsU64U32(QueueImpl& q, BufferRef keysIn, BufferRef valuesIn, BufferRef keysOut, BufferRef valuesOut,
                       std::size_t count, int endBit, BufferRef keyBits = {}, int likelyKeyBits = 0,
                       BufferRef keyedEnd = {}, std::size_t likelyKeyedEnd = 0);
  /// offsets[i] (uint32) = how many of the points xyz[0..i) (3 floats each) have all
  /// coordinates finite, for i in [0, count]: where a compaction puts point i, and the
  /// number of valid points at offsets[count]. `offsets` holds count + 1 values and
  /// does not overlap `xyz`.
  void validPointOffsets(QueueImpl& q, BufferRef xyz, std::size_t count, BufferRef offsets);
  /// out[0..3] (doubles) = the sums of x, y and z over the points of `xyz` (3 floats
  /// each) whose coordinates are all finite, and the number of such points.
  void sumValidXYZ(QueueImpl& q, BufferRef xyz, std::size_t count, BufferRef out);
  /// out[0..2] (floats) = the component-wise minimum and out[3..5] the maximum of x, y
  /// and z over the finite points of `xyz`; +infinity and -infinity when there is none.
  void boundsValidXYZ(QueueImpl& q, BufferRef xyz, std::size_t count, BufferRef out);

 protected:
  DeviceImpl& device() const { return device_; }

 private:
  // Arguments already checked; count > 0 for the scan and the sort.
  virtual void doExclusiveScanU32(QueueImpl& q, BufferRef in, BufferRef out, std::size_t count) = 0;
  /// keyBits.allocation is null when the caller gave no key width (likelyKeyBits is 0
  /// then), keyedEnd.allocation when it gave no keyed end (likelyKeyedEnd is 0 then).
  virtual void doSortPairsU64U32(QueueImpl& q, BufferRef keysIn, BufferRef valuesIn, BufferRef keysOut,
                                 BufferRef valuesOut, std::size_t count, int endBit, BufferRef keyBits,
                                 int likelyKeyBits, BufferRef keyedEnd, std::size_t likelyKeyedEnd) = 0;
  /// The validity flags of the points written into `offsets`, then scanned there in
  /// place; a backend may override it with one fused scan (CUDA does: a launch saved).
  virtual void doValidPointOffsets(QueueImpl& q, BufferRef xyz, std::size_t count, BufferRef offsets);
  /// The default: FlagsKernel (n, in, flags) writes the count + 1 flags into
  /// `offsets`, which are then scanned in place.
  template <class FlagsKernel>
  void flagsThenScan(QueueImpl& q, BufferRef in, std::size_t count, BufferRef offsets);
  virtual void doSumValidXYZ(QueueImpl& q, BufferRef xyz, std::size_t count, BufferRef out) = 0;
  virtual void doBoundsValidXYZ(QueueImpl& q, BufferRef xyz, std::size_t count, BufferRef out) = 0;

  DeviceImpl& device_;
};

}  // namespace devicearray::detail
