// Helpers shared by the point-cloud sources: queue resolution, stream-ordered
// allocation of DeviceArrays, kernel launches and small read-backs.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "backend/backend.hpp"
#include "backend/kernel_signature.hpp"
#include "backend/parallel_primitives.hpp"
#include "backend/normal_signatures.h"
#include "backend/pointcloud_signatures.h"
#include "core/array_access.hpp"
#include "devicearray/point_cloud.hpp"

namespace devicearray::detail::pc {

[[noreturn]] inline void raise(ErrorCode code, const char* fn, const std::string& message) {
  fail(code, std::string(fn) + ": " + message);
}

/// The queue behind `sq` on `device` (the device's own queue for its native handle or a
/// null OpenCL queue). Throws InvalidArgument on a backend mismatch.
std::shared_ptr<QueueImpl> queueOf(const ComputeDevice& device, const StreamOrQueue& sq, const char* fn);

/// count * elemBytes, OutOfRange when it overflows.
std::size_t checkedBytes(std::size_t count, std::size_t elemBytes, const char* fn);

/// A packed DeviceArray over stream-ordered storage, starting `offset` bytes into it.
template <class F>
DeviceArray<F> wrapStorage(std::shared_ptr<Allocation> storage, std::size_t offset, bool organized, int height,
                           int width) {
  const int type = makeType(F::depth, F::channels);
  if (organized)
    return DeviceArray<F>::fromGpuMatND(makeGpuMatND(std::move(storage), offset, {height, width}, type,
                                                     {static_cast<std::size_t>(width) * sizeof(F), sizeof(F)}));
  return DeviceArray<F>::fromGpuMatND(makeGpuMatND(std::move(storage), offset, {width}, type, {sizeof(F)}));
}

template <class F>
DeviceArray<F> allocateOrganized(QueueImpl& q, int height, int width, const char* fn) {
  const std::size_t n = checkedBytes(static_cast<std::size_t>(height), static_cast<std::size_t>(width), fn);
  return wrapStorage<F>(q.device()->allocate(checkedBytes(n, sizeof(F), fn), q), 0, true, height, width);
}

/// Throws OutOfRange naming `fn` when `count` points exceed what an unorganized
/// DeviceArray can hold (INT_MAX elements).
inline void checkPointCount(std::size_t count, const char* fn) {
  if (count > static_cast<std::size_t>(INT32_MAX))
    raise(ErrorCode::OutOfRange, fn, std::to_string(count) + " points exceed the INT_MAX limit of a DeviceArray");
}

template <class F>
DeviceArray<F> allocateUnorganized(QueueImpl& q, std::size_t count, const char* fn) {
  checkPointCount(count, fn);
  return wrapStorage<F>(q.device()->allocate(checkedBytes(count, sizeof(F), fn), q), 0, false, 1,
                        static_cast<int>(count));
}

/// The first `count` elements of `a` as an unorganized array sharing its storage.
template <class F>
DeviceArray<F> prefixOf(const DeviceArray<F>& a, std::size_t count) {
  const ArraySpan s = spanOf(a);
  return DeviceArray<F>::fromGpuMatND(
      makeGpuMatND(s.owner, s.buffer.offset, {static_cast<int>(count)}, makeType(F::depth, F::channels), {sizeof(F)}));
}

/// Raw stream-ordered scratch memory.
std::shared_ptr<Allocation> scratch(QueueImpl& q, std::size_t count, std::size_t elemBytes, const char* fn);

/// The memory of `a` as a kernel buffer of its value type (float for XYZ, u8 for colours).
template <class F>
Buffer<typename F::ValueType> arg(const DeviceArray<F>& a) {
  return spanOf(a).buffer;
}
template <class F>
Allocation* storageOf(const DeviceArray<F>& a) {
  return a.isEmpty() ? nullptr : spanOf(a).buffer.allocation;
}
template <class F>
BufferRef bufferOf(const DeviceArray<F>& a) {
  return spanOf(a).buffer;
}
/// `a` when present, else the memory of `fallback`: kernels take absent attributes as
/// another valid buffer with a has-flag of 0, so every buffer argument stays bindable.
template <class F, class G>
Buffer<typename F::ValueType> argOr(const DeviceArray<F>& a, const DeviceArray<G>& fallback) {
  return a.isEmpty() ? Buffer<typename F::ValueType>(arg(fallback).ref) : arg(a);
}
/// Scratch memory (untyped) as a kernel buffer.
inline BufferRef arg(const std::shared_ptr<Allocation>& a, std::size_t offset = 0) { return {a.get(), offset}; }
/// A point count as the kernels' 64-bit count parameter.
inline std::int64_t i64(std::size_t v) { return static_cast<std::int64_t>(v); }

/// Enqueues a fill of `count` uint32 values `v` at `offset` of `a` (callers order it).
void fillU32(QueueImpl& q, Allocation* a, std::size_t offset, std::size_t count, std::uint32_t v);
/// Enqueues a copy of `bytes` bytes between two device regions (callers order them).
void copyBytes(QueueImpl& q, Allocation* dst, std::size_t dstOffset, Allocation* src, std::size_t srcOffset,
               std::size_t bytes);
/// Enqueues a read of `bytes` bytes into host memory after the queue's earlier work and
/// blocks until it has arrived.
void readBack(QueueImpl& q, Allocation* src, std::size_t srcOffset, void* dst, std::size_t bytes);

/// A region-of-interest box as the ROI kernel tests it: origin O, unit base edges u and v
/// with their lengths, unit base normal n, extent [lo, hi] along n.
struct RoiParams {
  float o[3], u[3], v[3], n[3];
  float lenU, lenV, lo, hi;
};
/// Validates `box` (finite points and extent, min <= max, a base that spans a plane) and
/// returns its test; InvalidArgument naming `fn`.
RoiParams checkBox(const RegionOfInterestBox& box, const char* fn);
/// Validates an affine, finite matrix (InvalidArgument naming `fn`).
void checkAffine(const Matrix4x4& m, const char* fn);
/// a * b (row-major), accumulated in double.
Matrix4x4 multiply(const Matrix4x4& a, const Matrix4x4& b);
/// Enqueues p' = m p on the valid points of `in` into `out` (may be the same array),
/// ordered after earlier users of both.
void enqueueTransform(QueueImpl& q, const Matrix4x4& m, const DeviceArray<PointXYZ>& in,
                      const DeviceArray<PointXYZ>& out);

/// Enqueues n' = R n on `in` into `out` (may be the same array), R the upper-left 3x3
/// of `m`, ordered after earlier users of both.
void enqueueRotateNormals(QueueImpl& q, const Matrix4x4& m, const DeviceArray<NormalXYZ>& in,
                          const DeviceArray<NormalXYZ>& out);

/// Compacted (or voxel) output arrays with capacity >= count, trimmed to `count`.
/// Small results are copied into exact-size arrays so a large capacity is not held.
struct CompactResult {
  DeviceArray<PointXYZ> xyz;
  DeviceArray<ColorRGBA> colors;
  DeviceArray<SNR> snrs;
  DeviceArray<NormalXYZ> normals;
  /// The allocation holding the arrays, and the offset of its `countWords` u32 words.
  std::shared_ptr<Allocation> block;
  std::size_t countAt = 0;
};
/// Unorganized arrays of `count` points each, with colours, SNRs and normals only where
/// asked for, as slices of one allocation (one driver call to allocate and one to free),
/// followed by `countWords` u32 words for a count known after an event.
CompactResult allocateAttributes(QueueImpl& q, std::size_t count, bool colors, bool snrs, bool normals,
                                 const char* fn, std::size_t countWords = 0);
CompactResult trimmed(QueueImpl& q, const CompactResult& capacity, std::size_t capacityCount, std::size_t count,
                      const char* fn);
/// Enqueues the compaction of the n points of `xyz`, with their colours, SNRs and
/// normals where those arrays are given, into `cap` (allocated for n points and at least
/// one count word): the points whose `offsets` differ from the next (the exclusive scan
/// of their keep flags, n + 1 values) in their order, missing points after them, and the
/// kept count in cap's first count word. Callers order the buffers' use.
void enqueueCompaction(QueueImpl& q, std::size_t n, BufferRef offsets, const DeviceArray<PointXYZ>& xyz,
                       const DeviceArray<ColorRGBA>& colors, const DeviceArray<SNR>& snrs,
                       const DeviceArray<NormalXYZ>& normals, const CompactResult& cap);

/// Reads the three attribute arrays back into `out` (xyz, rgba as sRGB bytes: the codes
/// of `colors` as they are when `colorSpace` is srgb, encoded otherwise; snr); blocks,
/// uses the device's own queue. Empty colour/SNR arrays leave those fields empty.
void downloadAttributes(const ComputeDevice& device, const DeviceArray<PointXYZ>& xyz,
                        const DeviceArray<ColorRGBA>& colors, ColorSpace colorSpace, const DeviceArray<SNR>& snrs,
                        HostPointCloud& out);

/// The conversion tables (color_tables.hpp) through which the colour-averaging kernels
/// decode sRGB codes to linear light and encode the means back (linear_light.h), uploaded
/// on `q` at first use. Add `owner` to the launch's OrderedUse.
struct SrgbTables {
  std::shared_ptr<Allocation> owner;
  BufferRef decode;  ///< srgbToFloat
  BufferRef encode;  ///< srgbBuckets
};
SrgbTables srgbTables(QueueImpl& q);

/// Colour codes `codes` (in `from`) in colour space `to`: `codes` itself when the spaces
/// agree, else a new array converted on `sq` as convert<>() converts.
DeviceArray<ColorRGBA> inColorSpace(const DeviceArray<ColorRGBA>& codes, ColorSpace from, ColorSpace to,
                                    StreamOrQueue sq);

/// Throws InvalidArgument naming `fn` when `a` (described by `what`) and the XYZ array
/// live on different devices.
template <class F>
void checkSameDevice(const DeviceArray<F>& a, const DeviceArray<PointXYZ>& xyz, const char* what, const char* fn) {
  if (a.device() != xyz.device())
    raise(ErrorCode::InvalidArgument, fn,
          std::string(what) + " array lives on " + a.device().toString() + " but XYZ on " + xyz.device().toString());
}

/// Blocks until all work enqueued on the device's own queue is done.
void finishDeviceQueue(const ComputeDevice& device);

}  // namespace devicearray::detail::pc
