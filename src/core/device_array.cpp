// Non-template implementation of DeviceArray / DeviceArrayView and the format
// conversions (include/devicearray/device_array.hpp), written against the
// backend-agnostic interface of src/backend/backend.hpp. The per-element math is in
// src/kernels/convert_formats.h.
#include "devicearray/device_array.hpp"

#include <algorithm>
#include <climits>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <stdexcept>
#include <string>

#include "backend/backend.hpp"
#include "core/layout.hpp"
#include "backend/conversion_geometry.h"
#include "backend/conversion_signatures.h"
#include "core/color_tables.hpp"

namespace devicearray {

namespace {

using detail::Allocation;
using detail::ArrayGeometry;
using detail::ArraySpan;
using detail::BufferRef;
using detail::fail;
using detail::LaunchGeometry;
using detail::QueueImpl;
namespace kernels = detail::kernels;

std::string prefix(const char* fn) { return std::string(fn) + ": "; }

std::string formatName(FormatId id) { return std::string(formatInfo(id).name); }

void requireDevice(const ComputeDevice& device, const char* fn) {
  if (!device.isValid())
    fail(ErrorCode::InvalidArgument, prefix(fn) + "the ComputeDevice is invalid (default-constructed); use "
                                                  "ComputeDevice::defaultDevice() or another factory");
}

/// The one place where the DeviceArray layout (docs/data-layout.md) is computed and overflow-checked.
ArrayLayout layoutFor(FormatId id, const ArrayGeometry& g, const char* fn) {
  const FormatInfo& f = formatInfo(id);
  const auto valueBytes = static_cast<int>(depthSize(f.depth));
  ArrayLayout layout;
  if (g.organized) {
    if (g.height <= 0 || g.width <= 0)
      fail(ErrorCode::InvalidArgument, prefix(fn) + "height " + std::to_string(g.height) + " and width " +
                                           std::to_string(g.width) + " must both be positive");
    // stridesInBytes()[0] is an int, so one row may not exceed INT_MAX bytes.
    if (static_cast<std::size_t>(g.width) > static_cast<std::size_t>(INT_MAX) / f.bytes)
      fail(ErrorCode::OutOfRange, prefix(fn) + "a row of width " + std::to_string(g.width) + " " + formatName(id) +
                                      " exceeds INT_MAX bytes");
    const std::size_t rowBytes = static_cast<std::size_t>(g.width) * f.bytes;
    if (static_cast<std::size_t>(g.height) > std::numeric_limits<std::size_t>::max() / rowBytes)
      fail(ErrorCode::OutOfRange, prefix(fn) + std::to_string(g.height) + " x " + std::to_string(g.width) + " " +
                                      formatName(id) + " overflows the byte count");
    layout.size = static_cast<std::size_t>(g.height) * static_cast<std::size_t>(g.width);
    layout.sizeInBytes = static_cast<std::size_t>(g.height) * rowBytes;
    layout.shape = {g.height, g.width};
    layout.strides = {g.width * f.channels};
  } else {
    if (g.count == 0) fail(ErrorCode::InvalidArgument, prefix(fn) + "the element count must be positive, got 0");
    if (g.count > static_cast<std::size_t>(INT_MAX))
      fail(ErrorCode::OutOfRange, prefix(fn) + "element count " + std::to_string(g.count) +
                                      " exceeds INT_MAX (shape entries are int)");
    layout.size = g.count;
    layout.sizeInBytes = g.count * f.bytes;  // < 2^31 * 16: cannot overflow a 64-bit size_t
    layout.shape = {static_cast<int>(g.count)};
  }
  if (f.channels > 1) {
    layout.shape.push_back(f.channels);
    layout.strides.push_back(f.channels);
  }
  layout.strides.push_back(1);
  if (!g.organized && f.channels == 1) layout.strides = {1};
  for (int s : layout.strides) layout.stridesInBytes.push_back(s * valueBytes);
  return layout;
}

ArrayGeometry geometryOf(const ArraySpan& s) {
  return s.organized ? ArrayGeometry{true, s.height, s.width, 0}
                     : ArrayGeometry{false, 0, 0, static_cast<std::size_t>(s.width)};
}

std::size_t countOf(const ArraySpan& s) {
  return static_cast<std::size_t>(s.height) * static_cast<std::size_t>(s.width);
}

/// A GpuMatND header of size {H, W} or {N} over `storage` at `offset`.
GpuMatND matFor(std::shared_ptr<Allocation> storage, std::size_t offset, FormatId id, const ArrayGeometry& g) {
  const FormatInfo& f = formatInfo(id);
  const int type = makeType(f.depth, f.channels);
  if (g.organized)
    return GpuMatND::fromAllocation(std::move(storage), offset, {g.height, g.width}, type,
                                    {static_cast<std::size_t>(g.width) * f.bytes, f.bytes});
  return GpuMatND::fromAllocation(std::move(storage), offset, {static_cast<int>(g.count)}, type, {f.bytes});
}

/// Address of element 0 for alignment checks: the CUDA address, or the byte offset in
/// a cl_mem (whose base is aligned to CL_DEVICE_MEM_BASE_ADDR_ALIGN).
std::uintptr_t alignmentAddress(ComputeBackend backend, void* handle, std::size_t offset) {
  return backend == ComputeBackend::cuda ? reinterpret_cast<std::uintptr_t>(handle) + offset
                                         : static_cast<std::uintptr_t>(offset);
}

// --------------------------------------------------------------- conversion --

BufferRef bufferOf(const ArraySpan& s) { return BufferRef{s.storage.get(), s.offset}; }

/// The alignment the conversion kernels may assume of a buffer: 16, 4 or 1 bytes.
int accessAlignment(const ArraySpan& s) {
  const std::uintptr_t address = alignmentAddress(s.device.backend(), detail::handleOf(*s.storage), s.offset);
  return address % 16 == 0 ? 16 : (address % 4 == 0 ? 4 : 1);
}

/// Enqueues dst = convert(src) on q. Sizes, devices and overlap are already checked.
void enqueueConversion(FormatId toId, const ArraySpan& dst, FormatId fromId, const ArraySpan& src, QueueImpl& q) {
  const FormatInfo& to = formatInfo(toId);
  const FormatInfo& from = formatInfo(fromId);
  const std::size_t n = countOf(src);
  const std::shared_ptr<detail::DeviceImpl>& device = src.device.impl();
  detail::OrderedUse use(q, {src.storage.get(), dst.storage.get()});

  if (toId == fromId) {
    if (dst.storage->handle() != src.storage->handle() || dst.offset != src.offset) {
      detail::CopyDesc copy;
      copy.elemSize = n * to.bytes;
      copy.dst = detail::MemRef::dev(dst.storage.get(), dst.offset);
      copy.src = detail::MemRef::dev(src.storage.get(), src.offset);
      device->copy(copy, q);
    }
    use.commit();
    return;
  }

  if (toId == FormatId::PointZ) {  // element-wise, no tile (convert_formats.h)
    const std::size_t workItems = (n + DA_CVT_Z_ITEMS - 1) / DA_CVT_Z_ITEMS;
    detail::launch<kernels::da_convert_points_z>(q, LaunchGeometry::items(workItems), static_cast<std::int64_t>(n),
                                                 static_cast<std::int64_t>(workItems), bufferOf(src), from.channels,
                                                 bufferOf(dst));
    use.commit();
    return;
  }

  // One work-group of DA_CVT_GROUP work items per tile of consecutive elements, as
  // many as fit the kernel's local memory (convert_formats.h).
  constexpr std::size_t kColorTableBytes = 2 * 256 * sizeof(float);  // da_convert_color_u8_f32's tables
  static_assert(DA_CVT_LOCAL_BYTES + kColorTableBytes <= 32 * 1024, "OpenCL 1.2 guarantees 32 KiB of local memory");
  const bool floatToU8 = from.isColor && from.depth == Depth::F32 && to.depth == Depth::U8;
  const int tile = floatToU8 ? DA_CVT_F32_U8_TILE : DA_CVT_TILE(from.bytes, to.bytes);
  const LaunchGeometry tiles = LaunchGeometry::groups((n + tile - 1) / tile, DA_CVT_GROUP);
  const auto count = static_cast<std::int64_t>(n);
  const int srcAlign = accessAlignment(src), dstAlign = accessAlignment(dst);

  if (!to.isColor) {
    // PointXYZ <-> PointXYZW: x, y, z are channels 0..2.
    detail::launch<kernels::da_convert_points>(q, tiles, count, tile, bufferOf(src), from.channels, srcAlign,
                                               bufferOf(dst), to.channels, dstAlign, 0, 1, 2, -1);
    use.commit();
    return;
  }

  const std::shared_ptr<Allocation> tables = detail::deviceColorTables(device, q);
  use.add(tables.get());
  // A table of the device's ColorTables (color_tables.hpp), by member.
  auto table = [&](std::size_t offset) { return BufferRef{tables.get(), offset}; };
  if (from.depth == Depth::U8 && to.depth == Depth::U8) {
    detail::launch<kernels::da_convert_color_u8_u8>(
        q, tiles, count, tile, bufferOf(src), from.channels, from.red, from.green, from.blue, from.alpha, srcAlign,
        bufferOf(dst), to.channels, to.red, to.green, to.blue, to.alpha, dstAlign, from.isSRGB != to.isSRGB ? 1 : 0,
        table(from.isSRGB ? offsetof(detail::ColorTables, srgbToLinear) : offsetof(detail::ColorTables, linearToSrgb)));
  } else if (from.depth == Depth::U8) {  // -> ColorRGBAf
    detail::launch<kernels::da_convert_color_u8_f32>(
        q, tiles, count, tile, bufferOf(src), from.channels, from.red, from.green, from.blue, from.alpha, srcAlign,
        bufferOf(dst), to.red, to.green, to.blue, to.alpha, dstAlign,
        table(from.isSRGB ? offsetof(detail::ColorTables, srgbToFloat) : offsetof(detail::ColorTables, linearToFloat)),
        table(offsetof(detail::ColorTables, linearToFloat)));
  } else {  // ColorRGBAf -> u8
    detail::launch<kernels::da_convert_color_f32_u8>(
        q, tiles, count, tile, bufferOf(src), from.red, from.green, from.blue, from.alpha, srcAlign, bufferOf(dst),
        to.channels, to.red, to.green, to.blue, to.alpha, dstAlign,
        table(to.isSRGB ? offsetof(detail::ColorTables, srgbBuckets) : offsetof(detail::ColorTables, linearBuckets)),
        table(offsetof(detail::ColorTables, linearBuckets)));
  }
  use.commit();
}

}  // namespace

// ------------------------------------------------------------------ public --

ArrayLayout organizedLayout(FormatId format, int height, int width) {
  return layoutFor(format, ArrayGeometry{true, height, width, 0}, "organizedLayout");
}

ArrayLayout unorganizedLayout(FormatId format, std::size_t count) {
  return layoutFor(format, ArrayGeometry{false, 0, 0, count}, "unorganizedLayout");
}

namespace detail {

void* handleOf(const Allocation& storage) { return storage.handle(); }

void* devicePointerOf(const ArraySpan& span) {
  void* handle = span.storage->handle();
  if (span.device.backend() == ComputeBackend::cuda) return static_cast<unsigned char*>(handle) + span.offset;
  return handle;
}

ArraySpan spanOf(const GpuMatND& mat, bool organized) {
  if (mat.empty()) return ArraySpan{};
  if (organized) return ArraySpan{mat.allocation(), mat.offset(), mat.device(), mat.size[0], mat.size[1], true};
  return ArraySpan{mat.allocation(), mat.offset(), mat.device(), 1, mat.size[0], false};
}

[[noreturn]] void throwExpiredView(const char* fn) {
  fail(ErrorCode::InvalidState, prefix(fn) + "the DeviceArray this view was made from has been destroyed, so the "
                                             "view no longer refers to valid memory");
}

GpuMatND allocateArray(FormatId format, const ArrayGeometry& geometry, const ComputeDevice& device, const char* fn) {
  const ArrayLayout layout = layoutFor(format, geometry, fn);
  requireDevice(device, fn);
  const std::shared_ptr<DeviceImpl>& impl = device.impl();
  std::shared_ptr<Allocation> storage = allocateFor(fn, *impl, layout.sizeInBytes, *impl->libraryQueue());
  // Blocking by contract: once this returns, any stream may use the memory.
  storage->waitIdle();
  return matFor(std::move(storage), 0, format, geometry);
}

GpuMatND uploadArray(FormatId format, const void* data, const ArrayGeometry& geometry, const ComputeDevice& device,
                     const char* fn) {
  const ArrayLayout layout = layoutFor(format, geometry, fn);
  if (data == nullptr) fail(ErrorCode::InvalidArgument, prefix(fn) + "the host data pointer is null");
  requireDevice(device, fn);
  const std::shared_ptr<DeviceImpl>& impl = device.impl();
  QueueImpl& q = *impl->libraryQueue();
  std::shared_ptr<Allocation> storage = allocateFor(fn, *impl, layout.sizeInBytes, q);
  OrderedUse use(q, {storage.get()});
  CopyDesc copy;
  copy.elemSize = layout.sizeInBytes;
  copy.dst = MemRef::dev(storage.get(), 0);
  copy.src = MemRef::hostPtr(const_cast<void*>(data));
  copy.hostMayBlock = true;  // blocking upload: waits below
  impl->copy(copy, q);
  use.commit();
  storage->waitIdle();
  return matFor(std::move(storage), 0, format, geometry);
}

bool checkWrappable(FormatId format, const GpuMatND& mat, const char* fn) {
  const FormatInfo& f = formatInfo(format);
  const int expected = makeType(f.depth, f.channels);
  if (mat.type() != expected)
    fail(ErrorCode::InvalidArgument, prefix(fn) + "GpuMatND type " + std::to_string(mat.type()) + " (depth " +
                                         std::to_string(mat.depth()) + ", " + std::to_string(mat.channels()) +
                                         " channels) does not match " + formatName(format) + " (type " +
                                         std::to_string(expected) + ")");
  if (mat.dims != 1 && mat.dims != 2)
    fail(ErrorCode::InvalidArgument, prefix(fn) + "the GpuMatND has " + std::to_string(mat.dims) +
                                         " dimensions; a DeviceArray needs {H, W} (organized) or {N} (unorganized)");
  if (!mat.isContinuous())
    fail(ErrorCode::InvalidArgument, prefix(fn) + "the GpuMatND is not continuous; a DeviceArray is always tightly "
                                                  "packed (clone() it first)");
  const bool organized = mat.dims == 2;
  const ArrayGeometry g = organized ? ArrayGeometry{true, mat.size[0], mat.size[1], 0}
                                    : ArrayGeometry{false, 0, 0, static_cast<std::size_t>(mat.size[0])};
  (void)layoutFor(format, g, fn);
  const std::uintptr_t address = alignmentAddress(mat.backend(), mat.allocation()->handle(), mat.offset());
  if (address % depthSize(f.depth) != 0)
    fail(ErrorCode::InvalidArgument, prefix(fn) + "element 0 is at byte offset " + std::to_string(mat.offset()) +
                                         ", not aligned to the " + std::to_string(depthSize(f.depth)) +
                                         "-byte channel values of " + formatName(format));
  return organized;
}

void copySpanToHost(FormatId format, const ArraySpan& span, void* dst, std::size_t bytes, const StreamOrQueue& sq,
                    const char* fn, bool hostMayBlock) {
  const std::size_t needed = countOf(span) * formatInfo(format).bytes;
  if (dst == nullptr) fail(ErrorCode::InvalidArgument, prefix(fn) + "the destination pointer is null");
  if (bytes < needed)
    fail(ErrorCode::InvalidArgument, prefix(fn) + "destination capacity " + std::to_string(bytes) +
                                         " bytes is smaller than sizeInBytes() = " + std::to_string(needed));
  std::shared_ptr<QueueImpl> q = span.device.impl()->queueFor(sq, fn);
  OrderedUse use(*q, {span.storage.get()});
  CopyDesc copy;
  copy.elemSize = needed;
  copy.dst = MemRef::hostPtr(dst);
  copy.src = MemRef::dev(span.storage.get(), span.offset);
  copy.hostMayBlock = hostMayBlock;
  span.device.impl()->copy(copy, *q);
  use.commit();
}

void downloadSpan(FormatId format, const ArraySpan& span, void* dst, const char* fn) {
  const std::size_t bytes = countOf(span) * formatInfo(format).bytes;
  copySpanToHost(format, span, dst, bytes, span.device.sdkStreamOrQueue(), fn, true);
  span.storage->waitIdle();
}

GpuMatND convertSpan(FormatId to, FormatId from, const ArraySpan& src, const StreamOrQueue& sq, const char* fn) {
  std::shared_ptr<QueueImpl> q = src.device.impl()->queueFor(sq, fn);
  const ArrayGeometry g = geometryOf(src);
  const ArrayLayout layout = layoutFor(to, g, fn);
  std::shared_ptr<Allocation> storage = allocateFor(fn, *src.device.impl(), layout.sizeInBytes, *q);
  const ArraySpan dst{storage, 0, src.device, src.height, src.width, src.organized};
  enqueueConversion(to, dst, from, src, *q);
  return matFor(std::move(storage), 0, to, g);
}

void convertSpanInto(FormatId to, const ArraySpan& dst, FormatId from, const ArraySpan& src, const StreamOrQueue& sq,
                     const char* fn) {
  if (dst.device != src.device)
    fail(ErrorCode::InvalidArgument, prefix(fn) + "the destination lives on " + dst.device.toString() +
                                         " but the source on " + src.device.toString());
  if (countOf(dst) != countOf(src) ||
      (dst.organized && src.organized && (dst.height != src.height || dst.width != src.width)))
    fail(ErrorCode::InvalidArgument, prefix(fn) + "destination " + std::to_string(dst.height) + " x " +
                                         std::to_string(dst.width) + " does not match source " +
                                         std::to_string(src.height) + " x " + std::to_string(src.width));
  const std::size_t dstBytes = countOf(dst) * formatInfo(to).bytes;
  const std::size_t srcBytes = countOf(src) * formatInfo(from).bytes;
  if (dst.storage->handle() == src.storage->handle()) {
    const bool overlap = dst.offset < src.offset + srcBytes && src.offset < dst.offset + dstBytes;
    const bool exactlyInPlace = dst.offset == src.offset && dstBytes == srcBytes;
    if (overlap && !exactlyInPlace)
      fail(ErrorCode::InvalidArgument, prefix(fn) + "destination and source memory overlap partially (" +
                                           formatName(from) + " -> " + formatName(to) +
                                           " can only run in place when both cover exactly the same bytes)");
  }
  std::shared_ptr<QueueImpl> q = src.device.impl()->queueFor(sq, fn);
  enqueueConversion(to, dst, from, src, *q);
}

std::shared_ptr<Allocation> adoptUserMemory(const ComputeDevice& device, FormatId format, void* handle,
                                            std::size_t offset, bool isOpenCL, int width, int height,
                                            const StreamOrQueue& sq, const char* fn) {
  requireDevice(device, fn);
  const ComputeBackend wanted = isOpenCL ? ComputeBackend::opencl : ComputeBackend::cuda;
  if (device.backend() != wanted)
    fail(ErrorCode::InvalidArgument, prefix(fn) + "a " + toString(wanted) + " memory handle cannot be used on " +
                                         device.toString());
  if (handle == nullptr)
    fail(ErrorCode::InvalidArgument, prefix(fn) + (isOpenCL ? "the cl_mem is null" : "the device pointer is null"));
  const ArrayLayout layout = layoutFor(format, ArrayGeometry{true, height, width, 0}, fn);
  const std::size_t valueBytes = depthSize(formatInfo(format).depth);
  if (alignmentAddress(wanted, handle, offset) % valueBytes != 0)
    fail(ErrorCode::InvalidArgument, prefix(fn) + "element 0 is not aligned to the " + std::to_string(valueBytes) +
                                         "-byte channel values of " + formatName(format));
  if (offset > std::numeric_limits<std::size_t>::max() - layout.sizeInBytes)
    fail(ErrorCode::OutOfRange, prefix(fn) + "byte offset " + std::to_string(offset) + " plus the array size overflows");
  std::shared_ptr<QueueImpl> q = device.impl()->queueFor(sq, fn);
  std::shared_ptr<Allocation> storage = device.impl()->adopt(handle, offset + layout.sizeInBytes);
  // Later library work on other queues waits for what the caller enqueued on sq so far.
  OrderedUse use(*q, {storage.get()});
  use.commit();
  return storage;
}

}  // namespace detail
}  // namespace devicearray
