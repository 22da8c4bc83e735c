// UntypedDeviceArray and UntypedDeviceArrayView, the non-template implementation of
// DeviceArray / DeviceArrayView and the format conversions
// (include/devicearray/device_array.hpp), written against the
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
#include "core/array_access.hpp"
#include "core/layout.hpp"
#include "backend/conversion_geometry.h"
#include "backend/conversion_signatures.h"
#include "core/color_tables.hpp"

namespace devicearray {

namespace {

using detail::Allocation;
using detail::ArraySpan;
using detail::BufferRef;
using detail::fail;
using detail::LaunchGeometry;
using detail::QueueImpl;
namespace kernels = detail::kernels;

std::string prefix(const char* fn) { return std::string(fn) + ": "; }

std::string formatName(FormatId id) { return std::string(formatInfo(id).name); }

/// Organized height x width, or unorganized `count` elements; the unused part is ignored.
struct ArrayGeometry {
  bool organized = false;
  int height = 0;
  int width = 0;
  std::size_t count = 0;
};

void requireDevice(const ComputeDevice& device, const char* fn) {
  if (!device.isValid())
    fail(ErrorCode::InvalidArgument, prefix(fn) + "the ComputeDevice is invalid (default-constructed); use "
                                                  "ComputeDevice::defaultDevice() or another factory");
}

/// Throws unless `g` is a DeviceArray geometry of `id` whose sizes fit their types:
/// layoutFor's checks, without building the layout (every array a call allocates or
/// wraps passes here).
void checkGeometry(FormatId id, const ArrayGeometry& g, const char* fn) {
  const FormatInfo& f = formatInfo(id);
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
    return;
  }
  if (g.count == 0) fail(ErrorCode::InvalidArgument, prefix(fn) + "the element count must be positive, got 0");
  if (g.count > static_cast<std::size_t>(INT_MAX))
    fail(ErrorCode::OutOfRange, prefix(fn) + "element count " + std::to_string(g.count) +
                                    " exceeds INT_MAX (shape entries are int)");
}

/// The one place where the DeviceArray layout (docs/data-layout.md) is computed and overflow-checked.
ArrayLayout layoutFor(FormatId id, const ArrayGeometry& g, const char* fn) {
  checkGeometry(id, g, fn);
  const FormatInfo& f = formatInfo(id);
  const auto valueBytes = static_cast<int>(depthSize(f.depth));
  ArrayLayout layout;
  if (g.organized) {
    layout.size = static_cast<std::size_t>(g.height) * static_cast<std::size_t>(g.width);
    layout.sizeInBytes = layout.size * f.bytes;
    layout.shape = {g.height, g.width};
    layout.strides = {g.width * f.channels};
  } else {
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

/// A GpuMatND header of size {H, W} or {N} over `storage` at `offset`.
GpuMatND matFor(std::shared_ptr<Allocation> storage, std::size_t offset, FormatId id, const ArrayGeometry& g) {
  const FormatInfo& f = formatInfo(id);
  const int type = makeType(f.depth, f.channels);
  if (g.organized)
    return detail::makeGpuMatND(std::move(storage), offset, {g.height, g.width}, type,
                                {static_cast<std::size_t>(g.width) * f.bytes, f.bytes});
  return detail::makeGpuMatND(std::move(storage), offset, {static_cast<int>(g.count)}, type, {f.bytes});
}

/// Address of element 0 for alignment checks: the CUDA address, or the byte offset in
/// a cl_mem (whose base is aligned to CL_DEVICE_MEM_BASE_ADDR_ALIGN).
std::uintptr_t alignmentAddress(ComputeBackend backend, void* handle, std::size_t offset) {
  return backend == ComputeBackend::cuda ? reinterpret_cast<std::uintptr_t>(handle) + offset
                                         : static_cast<std::uintptr_t>(offset);
}

// --------------------------------------------------------------- conversion --

/// The alignment the conversion kernels may assume of a buffer: 16, 4 or 1 bytes.
int accessAlignment(const ArraySpan& s) {
  const std::uintptr_t address = alignmentAddress(s.device.backend(), s.buffer.allocation->handle(), s.buffer.offset);
  return address % 16 == 0 ? 16 : (address % 4 == 0 ? 4 : 1);
}

/// Enqueues dst = convert(src) on q. Sizes, devices and overlap are already checked.
void enqueueConversion(FormatId toId, const ArraySpan& dst, FormatId fromId, const ArraySpan& src, QueueImpl& q) {
  const FormatInfo& to = formatInfo(toId);
  const FormatInfo& from = formatInfo(fromId);
  const std::size_t n = src.count();
  const std::shared_ptr<detail::DeviceImpl>& device = src.device.impl();
  detail::OrderedUse use(q, {src.buffer.allocation, dst.buffer.allocation});

  if (toId == fromId) {
    if (dst.buffer.allocation->handle() != src.buffer.allocation->handle() || dst.buffer.offset != src.buffer.offset) {
      detail::CopyDesc copy;
      copy.elemSize = n * to.bytes;
      copy.dst = detail::MemRef{nullptr, dst.buffer};
      copy.src = detail::MemRef{nullptr, src.buffer};
      device->copy(copy, q);
    }
    use.commit();
    return;
  }

  if (toId == FormatId::PointZ) {  // element-wise, no tile (convert_formats.h)
    const std::size_t workItems = (n + DA_CVT_Z_ITEMS - 1) / DA_CVT_Z_ITEMS;
    detail::launch<kernels::da_convert_points_z>(q, LaunchGeometry::items(workItems), static_cast<std::int64_t>(n),
                                                 static_cast<std::int64_t>(workItems), src.buffer, from.channels,
                                                 dst.buffer);
    use.commit();
    return;
  }

  // One work-group of DA_CVT_GROUP work items per tile of consecutive elements, as
  // many as fit the kernel's local memory (convert_formats.h); float -> 8-bit colour
  // and 8-bit conversions too small to fill the GPU with tiles take the untiled kernels
  // (DA_CVT_ITEMS elements per work item).
  constexpr std::size_t kColorTableBytes = 2 * 256 * sizeof(float);  // da_convert_color_u8_f32's tables
  static_assert(DA_CVT_LOCAL_BYTES + kColorTableBytes <= 32 * 1024, "OpenCL 1.2 guarantees 32 KiB of local memory");
  const bool floatToU8 = from.isColor && from.depth == Depth::F32 && to.depth == Depth::U8;
  const bool u8ToU8 = from.isColor && from.depth == Depth::U8 && to.depth == Depth::U8;
  const bool u8ToU8Items = u8ToU8 && n < DA_CVT_U8_ITEMS_MAX_ELEMENTS;
  const int tile = floatToU8 || u8ToU8Items ? DA_CVT_ITEMS_TILE : DA_CVT_TILE(from.bytes, to.bytes);
  const LaunchGeometry tiles = LaunchGeometry::groups((n + tile - 1) / tile, DA_CVT_GROUP);
  const auto count = static_cast<std::int64_t>(n);
  const int srcAlign = accessAlignment(src), dstAlign = accessAlignment(dst);

  if (!to.isColor) {
    // PointXYZ <-> PointXYZW: x, y, z are channels 0..2.
    detail::launch<kernels::da_convert_points>(q, tiles, count, tile, src.buffer, from.channels, srcAlign,
                                               dst.buffer, to.channels, dstAlign, 0, 1, 2, -1);
    use.commit();
    return;
  }

  const std::shared_ptr<Allocation> tables = detail::deviceColorTables(device, q);
  use.add(tables.get());
  // A table of the device's ColorTables (color_tables.hpp), by member.
  auto table = [&](std::size_t offset) { return BufferRef{tables.get(), offset}; };
  if (u8ToU8) {
    // Both 8-bit kernels take the same arguments (DA_CONVERT_COLOR_U8_U8_PARAMS).
    auto launchU8ToU8 = [&](auto kernel) {
      detail::launch<decltype(kernel)>(
          q, tiles, count, tile, src.buffer, from.channels, from.red, from.green, from.blue, from.alpha, srcAlign,
          dst.buffer, to.channels, to.red, to.green, to.blue, to.alpha, dstAlign, from.isSRGB != to.isSRGB ? 1 : 0,
          table(from.isSRGB ? offsetof(detail::ColorTables, srgbToLinear)
                            : offsetof(detail::ColorTables, linearToSrgb)));
    };
    if (u8ToU8Items)
      launchU8ToU8(kernels::da_convert_color_u8_u8_items{});
    else
      launchU8ToU8(kernels::da_convert_color_u8_u8{});
  } else if (from.depth == Depth::U8) {  // -> ColorRGBAf
    detail::launch<kernels::da_convert_color_u8_f32>(
        q, tiles, count, tile, src.buffer, from.channels, from.red, from.green, from.blue, from.alpha, srcAlign,
        dst.buffer, to.red, to.green, to.blue, to.alpha, dstAlign,
        table(from.isSRGB ? offsetof(detail::ColorTables, srgbToFloat) : offsetof(detail::ColorTables, linearToFloat)),
        table(offsetof(detail::ColorTables, linearToFloat)));
  } else {  // ColorRGBAf -> u8
    detail::launch<kernels::da_convert_color_f32_u8>(
        q, tiles, count, tile, src.buffer, from.red, from.green, from.blue, from.alpha, srcAlign, dst.buffer,
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

// ------------------------------------------------------ UntypedDeviceArray --

detail::ArraySpan ArrayAccess::span(const UntypedDeviceArray& a) {
  const std::shared_ptr<Allocation>& storage = allocation(a.mat_);
  return ArraySpan{storage, BufferRef{storage.get(), offset(a.mat_)}, a.mat_.device(), a.height(), a.width(),
                   a.organized_};
}

detail::ArraySpan ArrayAccess::span(const UntypedDeviceArrayView& v, const char* fn) {
  if (v.isEmpty()) fail(ErrorCode::InvalidState, prefix(fn) + "the view is empty");
  std::shared_ptr<Allocation> storage = v.adopted_ ? v.adopted_ : v.owner_.lock();
  if (!storage)
    fail(ErrorCode::InvalidState, prefix(fn) + "the DeviceArray this view was made from has been destroyed, so the "
                                               "view no longer refers to valid memory");
  const BufferRef buffer{storage.get(), v.offset_};
  return ArraySpan{std::move(storage), buffer, v.device_, v.height_, v.width_, v.organized_};
}

namespace {

constexpr const char* kAllocate = "DeviceArray::allocate";
constexpr const char* kFromHost = "DeviceArray::fromHost";

GpuMatND allocateArray(FormatId format, const ArrayGeometry& geometry, const ComputeDevice& device) {
  const ArrayLayout layout = layoutFor(format, geometry, kAllocate);
  requireDevice(device, kAllocate);
  const std::shared_ptr<detail::DeviceImpl>& impl = device.impl();
  std::shared_ptr<Allocation> storage = detail::allocateFor(kAllocate, *impl, layout.sizeInBytes, *impl->libraryQueue());
  // Blocking by contract: once this returns, any stream may use the memory.
  storage->waitIdle();
  return matFor(std::move(storage), 0, format, geometry);
}

GpuMatND uploadArray(FormatId format, const void* data, const ArrayGeometry& geometry, const ComputeDevice& device) {
  const ArrayLayout layout = layoutFor(format, geometry, kFromHost);
  if (data == nullptr) fail(ErrorCode::InvalidArgument, prefix(kFromHost) + "the host data pointer is null");
  requireDevice(device, kFromHost);
  const std::shared_ptr<detail::DeviceImpl>& impl = device.impl();
  QueueImpl& q = *impl->libraryQueue();
  std::shared_ptr<Allocation> storage = detail::allocateFor(kFromHost, *impl, layout.sizeInBytes, q);
  detail::OrderedUse use(q, {storage.get()});
  detail::CopyDesc copy;
  copy.elemSize = layout.sizeInBytes;
  copy.dst = detail::MemRef::dev(storage.get(), 0);
  copy.src = detail::MemRef::hostPtr(const_cast<void*>(data));
  copy.hostMayBlock = true;  // blocking upload: waits below
  impl->copy(copy, q);
  use.commit();
  storage->waitIdle();
  return matFor(std::move(storage), 0, format, geometry);
}

/// Checks a GpuMatND for wrapping as a DeviceArray of `format`; returns whether it is organized.
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
  checkGeometry(format, g, fn);
  // A header's fields are public, as OpenCV's are: the flags may say "continuous" of
  // steps that are not, so the steps themselves must pack the elements (an axis of
  // length 1 may have any step, as isContinuous() allows), and the elements must lie
  // inside the memory (when its size is known: not for a bare external pointer).
  const auto axes = static_cast<std::size_t>(mat.dims);
  if (mat.size.size() != axes || mat.step.size() != axes || !detail::isPacked(mat.size, mat.step, f.bytes))
    fail(ErrorCode::InvalidArgument, prefix(fn) + "the GpuMatND's steps do not pack " + formatName(format) +
                                         " elements (its flags say continuous, its steps do not)");
  detail::checkHeaderInsideMemory(mat, fn);
  const std::size_t offset = detail::offsetOf(mat);
  const std::uintptr_t address = alignmentAddress(mat.backend(), detail::allocationOf(mat)->handle(), offset);
  if (address % depthSize(f.depth) != 0)
    fail(ErrorCode::InvalidArgument, prefix(fn) + "element 0 is at byte offset " + std::to_string(offset) +
                                         ", not aligned to the " + std::to_string(depthSize(f.depth)) +
                                         "-byte channel values of " + formatName(format));
  return organized;
}

/// `hostMayBlock`: the caller waits for the copy anyway (blocking API).
void copySpanToHost(FormatId format, const ArraySpan& span, void* dst, std::size_t bytes, const StreamOrQueue& sq,
                    const char* fn, bool hostMayBlock) {
  const std::size_t needed = span.count() * formatInfo(format).bytes;
  if (dst == nullptr) fail(ErrorCode::InvalidArgument, prefix(fn) + "the destination pointer is null");
  if (bytes < needed)
    fail(ErrorCode::InvalidArgument, prefix(fn) + "destination capacity " + std::to_string(bytes) +
                                         " bytes is smaller than sizeInBytes() = " + std::to_string(needed));
  std::shared_ptr<QueueImpl> q = span.device.impl()->queueFor(sq, fn);
  detail::OrderedUse use(*q, {span.buffer.allocation});
  detail::CopyDesc copy;
  copy.elemSize = needed;
  copy.dst = detail::MemRef::hostPtr(dst);
  copy.src = detail::MemRef{nullptr, span.buffer};
  copy.hostMayBlock = hostMayBlock;
  span.device.impl()->copy(copy, *q);
  use.commit();
}

void downloadSpan(FormatId format, const ArraySpan& span, void* dst, const char* fn) {
  const std::size_t bytes = span.count() * formatInfo(format).bytes;
  copySpanToHost(format, span, dst, bytes, span.device.sdkStreamOrQueue(), fn, true);
  span.buffer.allocation->waitIdle();
}

}  // namespace

UntypedDeviceArray UntypedDeviceArray::allocate(FormatId format, int height, int width, const ComputeDevice& device) {
  return UntypedDeviceArray(allocateArray(format, ArrayGeometry{true, height, width, 0}, device), true);
}

UntypedDeviceArray UntypedDeviceArray::allocate(FormatId format, std::size_t count, const ComputeDevice& device) {
  return UntypedDeviceArray(allocateArray(format, ArrayGeometry{false, 0, 0, count}, device), false);
}

UntypedDeviceArray UntypedDeviceArray::fromHost(FormatId format, const void* data, int height, int width,
                                                const ComputeDevice& device) {
  return UntypedDeviceArray(uploadArray(format, data, ArrayGeometry{true, height, width, 0}, device), true);
}

UntypedDeviceArray UntypedDeviceArray::fromHost(FormatId format, const void* data, std::size_t count,
                                                const ComputeDevice& device) {
  return UntypedDeviceArray(uploadArray(format, data, ArrayGeometry{false, 0, 0, count}, device), false);
}

UntypedDeviceArray UntypedDeviceArray::fromGpuMatND(FormatId format, const GpuMatND& mat) {
  if (mat.empty()) return UntypedDeviceArray();
  const bool organized = checkWrappable(format, mat, "DeviceArray::fromGpuMatND");
  return UntypedDeviceArray(mat, organized);
}

ComputeDevice UntypedDeviceArray::device(const char* fn) const {
  if (isEmpty()) fail(ErrorCode::InvalidState, prefix(fn) + "the array is empty");
  return mat_.device();
}

void* UntypedDeviceArray::devicePointer() const {
  if (isEmpty()) return nullptr;
  void* handle = detail::allocationOf(mat_)->handle();
  if (mat_.backend() == ComputeBackend::cuda) return static_cast<unsigned char*>(handle) + detail::offsetOf(mat_);
  return handle;
}

std::size_t UntypedDeviceArray::byteOffset() const {
  return (isEmpty() || mat_.backend() == ComputeBackend::cuda) ? 0 : detail::offsetOf(mat_);
}

OpenCLBufferPtr UntypedDeviceArray::openCLBuffer() const {
  device("DeviceArray::openCLBuffer");
  return mat_.getOpenCLBuffer();
}

void UntypedDeviceArray::copyToHost(FormatId format, void* dst, std::size_t bytes, const StreamOrQueue& sq) const {
  copySpanToHost(format, ArrayAccess::span(*this), dst, bytes, sq, "DeviceArray::copyToHost", false);
}

void UntypedDeviceArray::download(FormatId format, void* dst) const {
  downloadSpan(format, ArrayAccess::span(*this), dst, "DeviceArray::toHost");
}

UntypedDeviceArray UntypedDeviceArray::clone(const ComputeDevice& device) const {
  if (!device.isValid()) fail(ErrorCode::InvalidArgument, "DeviceArray::clone: invalid ComputeDevice");
  if (isEmpty()) return {};
  return UntypedDeviceArray(mat_.clone(device), organized_);
}

UntypedDeviceArray UntypedDeviceArray::converted(FormatId to, FormatId from, const StreamOrQueue& sq) const {
  constexpr const char* fn = "convert";
  const ArraySpan src = ArrayAccess::span(*this);
  std::shared_ptr<QueueImpl> q = src.device.impl()->queueFor(sq, fn);
  const ArrayGeometry g = geometryOf(src);
  const ArrayLayout layout = layoutFor(to, g, fn);
  std::shared_ptr<Allocation> storage = detail::allocateFor(fn, *src.device.impl(), layout.sizeInBytes, *q);
  const ArraySpan dst{storage, BufferRef{storage.get(), 0}, src.device, src.height, src.width, src.organized};
  enqueueConversion(to, dst, from, src, *q);
  return fromGpuMatND(to, matFor(std::move(storage), 0, to, g));
}

void UntypedDeviceArray::convertInto(FormatId to, const UntypedDeviceArrayView& dstView, FormatId from,
                                     const UntypedDeviceArray& srcArray, const StreamOrQueue& sq) {
  constexpr const char* fn = "convertInto";
  if (srcArray.isEmpty()) fail(ErrorCode::InvalidArgument, prefix(fn) + "the source array is empty");
  if (dstView.isEmpty()) fail(ErrorCode::InvalidArgument, prefix(fn) + "the destination view is empty");
  const ArraySpan dst = ArrayAccess::span(dstView, fn);
  const ArraySpan src = ArrayAccess::span(srcArray);
  if (dst.device != src.device)
    fail(ErrorCode::InvalidArgument, prefix(fn) + "the destination lives on " + dst.device.toString() +
                                         " but the source on " + src.device.toString());
  if (dst.count() != src.count() ||
      (dst.organized && src.organized && (dst.height != src.height || dst.width != src.width)))
    fail(ErrorCode::InvalidArgument, prefix(fn) + "destination " + std::to_string(dst.height) + " x " +
                                         std::to_string(dst.width) + " does not match source " +
                                         std::to_string(src.height) + " x " + std::to_string(src.width));
  const std::size_t dstBytes = dst.count() * formatInfo(to).bytes;
  const std::size_t srcBytes = src.count() * formatInfo(from).bytes;
  if (dst.buffer.allocation->handle() == src.buffer.allocation->handle()) {
    const std::size_t dstAt = dst.buffer.offset, srcAt = src.buffer.offset;
    const bool overlap = dstAt < srcAt + srcBytes && srcAt < dstAt + dstBytes;
    const bool exactlyInPlace = dstAt == srcAt && dstBytes == srcBytes;
    if (overlap && !exactlyInPlace)
      fail(ErrorCode::InvalidArgument, prefix(fn) + "destination and source memory overlap partially (" +
                                           formatName(from) + " -> " + formatName(to) +
                                           " can only run in place when both cover exactly the same bytes)");
  }
  std::shared_ptr<QueueImpl> q = src.device.impl()->queueFor(sq, fn);
  enqueueConversion(to, dst, from, src, *q);
}

UntypedDeviceArrayView UntypedDeviceArray::view() const {
  if (isEmpty()) fail(ErrorCode::InvalidState, "DeviceArray::view: the array is empty");
  const ArraySpan s = ArrayAccess::span(*this);
  UntypedDeviceArrayView v;
  v.device_ = s.device;
  v.handle_ = s.buffer.allocation->handle();
  v.offset_ = s.buffer.offset;
  v.height_ = s.height;
  v.width_ = s.width;
  v.organized_ = s.organized;
  v.owner_ = s.owner;
  return v;
}

// -------------------------------------------------- UntypedDeviceArrayView --

UntypedDeviceArrayView UntypedDeviceArrayView::adopt(const ComputeDevice& device, FormatId format, void* handle,
                                                     std::size_t offset, bool isOpenCL, int width, int height,
                                                     const StreamOrQueue& sq) {
  constexpr const char* fn = "ComputeDevice::createDeviceArrayView";
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
  detail::OrderedUse use(*q, {storage.get()});
  use.commit();
  UntypedDeviceArrayView v;
  v.adopted_ = std::move(storage);
  v.device_ = device;
  v.handle_ = handle;
  v.offset_ = offset;
  v.height_ = height;
  v.width_ = width;
  v.organized_ = true;
  return v;
}

void UntypedDeviceArrayView::copyToHost(FormatId format, void* dst, std::size_t bytes, const StreamOrQueue& sq) const {
  constexpr const char* fn = "DeviceArrayView::copyToHost";
  copySpanToHost(format, ArrayAccess::span(*this, fn), dst, bytes, sq, fn, false);
}

void UntypedDeviceArrayView::download(FormatId format, void* dst) const {
  constexpr const char* fn = "DeviceArrayView::toHost";
  downloadSpan(format, ArrayAccess::span(*this, fn), dst, fn);
}

void UntypedDeviceArrayView::throwEmpty(const char* fn) {
  fail(ErrorCode::InvalidState, prefix(fn) + "the view is empty");
}

}  // namespace devicearray
