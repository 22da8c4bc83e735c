// devicearray — DeviceArray<Format>: typed, tightly packed device arrays in the
// layout of docs/data-layout.md, their non-owning views, and format conversions.
//
// Layout: row-major, channels interleaved, no row padding.
//   organized,   channels > 1: shape [H, W, C], strides [W*C, C, 1]
//   organized,   channels = 1: shape [H, W],    strides [W, 1]
//   unorganized, channels > 1: shape [N, C],    strides [C, 1]
//   unorganized, channels = 1: shape [N],       strides [1]
// Strides are in elements (channel values); stridesInBytes() multiplies by the
// channel size.
//
// Unorganized arrays have no height of their own; height() returns 1 and
// width() returns N, matching the 1 x N GpuMat header of a 1-D GpuMatND,
// so height() * width() == size() always holds.
//
// Stream ordering (docs/stream-queue-context.md): functions that take a
// StreamOrQueue enqueue on it and return without blocking; what they hand out is
// ready on that stream. The others block until their work is complete.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <type_traits>
#include <vector>

#include "devicearray/device.hpp"
#include "devicearray/error.hpp"
#include "devicearray/formats.hpp"
#include "devicearray/gpu_mat_nd.hpp"
#include "devicearray/types.hpp"

namespace devicearray {

template <class Format> class DeviceArray;
template <class Format> class DeviceArrayView;

namespace detail {

/// Internal: the storage and geometry the non-template implementation works on.
struct ArraySpan {
  std::shared_ptr<Allocation> storage;
  std::size_t offset = 0;  ///< bytes from the allocation's handle to element 0
  ComputeDevice device;
  int height = 0;          ///< 1 for unorganized arrays
  int width = 0;           ///< N for unorganized arrays
  bool organized = false;
};

// Non-template implementation (src/core/device_array.cpp). `fn` names the public
// function for error messages.
[[noreturn]] void fail(ErrorCode code, const std::string& message);

/// Organized height x width (organized) or unorganized `count` elements; the unused
/// geometry argument is ignored.
struct ArrayGeometry {
  bool organized = false;
  int height = 0;
  int width = 0;
  std::size_t count = 0;
};
GpuMatND allocateArray(FormatId format, const ArrayGeometry& geometry, const ComputeDevice& device,
                       const char* fn);
GpuMatND uploadArray(FormatId format, const void* data, const ArrayGeometry& geometry, const ComputeDevice& device,
                     const char* fn);
/// Checks a GpuMatND for wrapping as a DeviceArray of `format`; returns whether it is organized.
bool checkWrappable(FormatId format, const GpuMatND& mat, const char* fn);
ArraySpan spanOf(const GpuMatND& mat, bool organized);
/// CUDA: device pointer of element 0. OpenCL: the cl_mem.
void* devicePointerOf(const ArraySpan& span);
/// CUDA base pointer / cl_mem of an allocation.
void* handleOf(const Allocation& storage);
/// `hostMayBlock`: the caller waits for the copy anyway (blocking API).
void copySpanToHost(FormatId format, const ArraySpan& span, void* dst, std::size_t bytes, const StreamOrQueue& sq,
                    const char* fn, bool hostMayBlock = false);
void downloadSpan(FormatId format, const ArraySpan& span, void* dst, const char* fn);
GpuMatND convertSpan(FormatId to, FormatId from, const ArraySpan& src, const StreamOrQueue& sq, const char* fn);
void convertSpanInto(FormatId to, const ArraySpan& dst, FormatId from, const ArraySpan& src,
                     const StreamOrQueue& sq, const char* fn);
/// Wraps user memory for createDeviceArrayView: validates, adopts (never frees) and
/// orders later library work after the work enqueued on `sq` so far.
std::shared_ptr<Allocation> adoptUserMemory(const ComputeDevice& device, FormatId format, void* handle,
                                            std::size_t offset, bool isOpenCL, int width, int height,
                                            const StreamOrQueue& sq, const char* fn);
[[noreturn]] void throwExpiredView(const char* fn);

/// Layout getters shared by DeviceArray and DeviceArrayView.
template <class Format>
struct LayoutOf {
  static std::vector<int> shape(bool empty, bool organized, int height, int width) {
    if (empty) return {};
    std::vector<int> s;
    if (organized) s = {height, width};
    else s = {width};
    if (Format::channels > 1) s.push_back(Format::channels);
    return s;
  }
  static std::vector<int> strides(bool empty, bool organized, int width) {
    if (empty) return {};
    constexpr int c = Format::channels;
    std::vector<int> s;
    if (organized) s.push_back(width * c);  // validated at construction to fit in int (in bytes)
    if (c > 1) s.push_back(c);
    s.push_back(1);
    if (!organized && c == 1) s = {1};
    return s;
  }
  static std::vector<int> stridesInBytes(bool empty, bool organized, int width) {
    std::vector<int> s = strides(empty, organized, width);
    for (int& v : s) v *= static_cast<int>(sizeof(typename Format::ValueType));
    return s;
  }
};

}  // namespace detail

/// An owning, reference-counted, tightly packed device array of `Format` elements.
/// Copies share the memory (like cv::cuda::GpuMat); memory is released in stream
/// order when the last handle (DeviceArray, or GpuMatND from toGpuMatND()) goes.
template <class Format>
class DeviceArray {
  static_assert(isFormat<Format>, "DeviceArray<Format>: Format must be one of the 14 formats of formats.hpp");

 public:
  using FormatType = Format;                     ///< the element format
  using ValueType = typename Format::ValueType;  ///< type of one channel value (float or std::uint8_t)

  /// An empty array (isEmpty(), no device).
  DeviceArray() = default;

  /// Organized height x width array with uninitialized contents. Blocks until the memory
  /// is usable from any stream. Throws InvalidArgument (non-positive sizes, invalid
  /// device), OutOfRange (byte count overflows), OutOfMemory.
  static DeviceArray allocate(int height, int width, const ComputeDevice& device = ComputeDevice::defaultDevice()) {
    return DeviceArray(detail::allocateArray(Format::id, {true, height, width, 0}, device, "DeviceArray::allocate"),
                       true);
  }
  /// Unorganized array of `count` elements (uninitialized). Blocking. Throws as above;
  /// OutOfRange also when count > INT_MAX.
  static DeviceArray allocate(std::size_t count, const ComputeDevice& device = ComputeDevice::defaultDevice()) {
    return DeviceArray(detail::allocateArray(Format::id, {false, 0, 0, count}, device, "DeviceArray::allocate"),
                       false);
  }
  /// Organized array with a copy of height*width elements at `data`. Blocking.
  /// Throws InvalidArgument for a null `data` and the errors of allocate().
  static DeviceArray fromHost(const Format* data, int height, int width,
                              const ComputeDevice& device = ComputeDevice::defaultDevice()) {
    return DeviceArray(
        detail::uploadArray(Format::id, data, {true, height, width, 0}, device, "DeviceArray::fromHost"), true);
  }
  /// Unorganized array with a copy of `count` elements at `data`. Blocking.
  static DeviceArray fromHost(const Format* data, std::size_t count,
                              const ComputeDevice& device = ComputeDevice::defaultDevice()) {
    return DeviceArray(
        detail::uploadArray(Format::id, data, {false, 0, 0, count}, device, "DeviceArray::fromHost"), false);
  }

  /// [H,W,C] | [H,W] | [N,C] | [N]; empty for an empty array.
  std::vector<int> shape() const { return detail::LayoutOf<Format>::shape(isEmpty(), organized_, height(), width()); }
  /// Row-major strides in elements (channel values); empty for an empty array.
  std::vector<int> strides() const { return detail::LayoutOf<Format>::strides(isEmpty(), organized_, width()); }
  /// strides() multiplied by sizeof(ValueType); empty for an empty array.
  std::vector<int> stridesInBytes() const {
    return detail::LayoutOf<Format>::stridesInBytes(isEmpty(), organized_, width());
  }
  /// Number of points / pixels (not channels).
  std::size_t size() const { return isEmpty() ? 0 : mat_.total(); }
  /// size() * sizeof(Format): the whole buffer, which has no padding.
  std::size_t sizeInBytes() const { return size() * sizeof(Format); }
  /// Throws InvalidState for an empty array.
  ComputeBackend backend() const { return requireDevice("DeviceArray::backend").backend(); }
  /// CUDA: the device pointer of element 0. OpenCL: the cl_mem; element 0 is at
  /// byteOffset() in it, which is 0 for arrays made by allocate, fromHost and convert
  /// (only fromGpuMatND of a sub-array view can give a non-zero offset).
  /// nullptr for an empty array. Work you enqueue on it is yours to order
  /// (docs/stream-queue-context.md).
  void* devicePointer() const { return isEmpty() ? nullptr : detail::devicePointerOf(span()); }
  /// Byte offset of element 0 within the cl_mem on OpenCL (always 0 on CUDA, where
  /// devicePointer() already includes it).
  std::size_t byteOffset() const {
    return (isEmpty() || mat_.backend() == ComputeBackend::cuda) ? 0 : mat_.offset();
  }
  /// The OpenCL buffer and byte offset of element 0. Throws Unsupported on CUDA, InvalidState when empty.
  OpenCLBufferPtr openCLBuffer() const {
    requireDevice("DeviceArray::openCLBuffer");
    return mat_.getOpenCLBuffer();
  }

  /// True when the array holds no memory.
  bool isEmpty() const { return mat_.empty(); }
  /// True when the array holds memory (the opposite of isEmpty()).
  bool isValid() const { return !isEmpty(); }
  /// True for an H x W array (shape [H, W(, C)]); false for a list or an empty array.
  bool isOrganized() const { return !isEmpty() && organized_; }
  /// Rows of an organized array; 1 for an unorganized one; 0 when empty.
  int height() const { return isEmpty() ? 0 : (organized_ ? mat_.size[0] : 1); }
  /// Columns of an organized array; N for an unorganized one; 0 when empty.
  int width() const { return isEmpty() ? 0 : (organized_ ? mat_.size[1] : mat_.size[0]); }
  /// Throws InvalidState for an empty array.
  ComputeDevice device() const { return requireDevice("DeviceArray::device"); }

  /// Enqueues a copy of all elements into `dst` (capacity `bytes` >= sizeInBytes()) on
  /// `sq` and returns without waiting; `dst` must stay valid until `sq` has completed it
  /// (synchronizeStream(sq)). An empty array copies nothing. Throws InvalidArgument for a
  /// null `dst`, too small `bytes`, or `sq` of another backend than the array.
  void copyToHost(Format* dst, std::size_t bytes, StreamOrQueue sq) const {
    if (isEmpty()) return;
    detail::copySpanToHost(Format::id, span(), dst, bytes, sq, "DeviceArray::copyToHost");
  }
  /// All elements, copied to the host. Blocking (waits for earlier work on the array).
  std::vector<Format> toHost() const {
    std::vector<Format> out(size());
    if (!out.empty()) detail::downloadSpan(Format::id, span(), out.data(), "DeviceArray::toHost");
    return out;
  }

  /// A GpuMatND sharing this memory: size {H, W} (organized) or {N}, type
  /// makeType(Format::depth, Format::channels). O(1), no device work.
  GpuMatND toGpuMatND() const { return mat_; }
  /// Shares the memory of `mat`, which must be continuous, of type
  /// makeType(Format::depth, Format::channels), 2-D {H, W} (organized) or 1-D {N}
  /// (unorganized), with element 0 aligned to the channel size; else InvalidArgument.
  /// An empty `mat` gives an empty array. O(1), no device work.
  static DeviceArray fromGpuMatND(const GpuMatND& mat) {
    if (mat.empty()) return DeviceArray();
    const bool organized = detail::checkWrappable(Format::id, mat, "DeviceArray::fromGpuMatND");
    return DeviceArray(mat, organized);
  }

  /// A non-owning view of this array (see DeviceArrayView). Throws InvalidState when empty.
  DeviceArrayView<Format> view() const;

  /// Internal: the storage and geometry.
  detail::ArraySpan span() const { return detail::spanOf(mat_, organized_); }

 private:
  DeviceArray(GpuMatND mat, bool organized) : mat_(std::move(mat)), organized_(organized) {}

  ComputeDevice requireDevice(const char* fn) const;

  GpuMatND mat_;
  bool organized_ = false;
};

/// A non-owning view of device memory laid out as DeviceArray<Format>: from
/// DeviceArray::view() or ComputeDevice::createDeviceArrayView() over user memory.
/// Destroying a view never frees or changes the memory. A view of a DeviceArray
/// does not keep it alive: once every owning handle is gone, the view reports
/// isValid() == false and operations that touch memory throw InvalidState.
template <class Format>
class DeviceArrayView {
  static_assert(isFormat<Format>, "DeviceArrayView<Format>: Format must be one of the 14 formats of formats.hpp");

 public:
  using FormatType = Format;                     ///< the element format
  using ValueType = typename Format::ValueType;  ///< type of one channel value (float or std::uint8_t)

  /// An empty view.
  DeviceArrayView() = default;

  /// As DeviceArray::shape(): [H,W,C] | [H,W] | [N,C] | [N]; empty for an empty view.
  std::vector<int> shape() const { return detail::LayoutOf<Format>::shape(isEmpty(), organized_, height_, width_); }
  /// As DeviceArray::strides(): row-major, in channel values.
  std::vector<int> strides() const { return detail::LayoutOf<Format>::strides(isEmpty(), organized_, width_); }
  /// strides() multiplied by sizeof(ValueType).
  std::vector<int> stridesInBytes() const {
    return detail::LayoutOf<Format>::stridesInBytes(isEmpty(), organized_, width_);
  }
  /// Number of points / pixels (not channels).
  std::size_t size() const { return static_cast<std::size_t>(height_) * static_cast<std::size_t>(width_); }
  /// size() * sizeof(Format).
  std::size_t sizeInBytes() const { return size() * sizeof(Format); }
  /// Throws InvalidState for an empty view.
  ComputeBackend backend() const { return device().backend(); }
  /// CUDA: the device pointer of element 0. OpenCL: the cl_mem (element 0 at byteOffset()).
  void* devicePointer() const {
    if (isEmpty()) return nullptr;
    if (device_.backend() == ComputeBackend::cuda) return static_cast<unsigned char*>(handle_) + offset_;
    return handle_;
  }
  /// Byte offset of element 0 in the cl_mem on OpenCL; 0 on CUDA.
  std::size_t byteOffset() const { return device_.isValid() && device_.backend() == ComputeBackend::opencl ? offset_ : 0; }
  /// True for a default-constructed view.
  bool isEmpty() const { return handle_ == nullptr; }
  /// False when empty, or when the DeviceArray this view was made from is gone.
  bool isValid() const { return !isEmpty() && (adopted_ != nullptr || !owner_.expired()); }
  /// True for an H x W view (views of user memory always are).
  bool isOrganized() const { return !isEmpty() && organized_; }
  /// Rows (1 for a view of an unorganized array; 0 when empty).
  int height() const { return height_; }
  /// Columns (N for a view of an unorganized array; 0 when empty).
  int width() const { return width_; }
  /// The device of the memory. Throws InvalidState for an empty view.
  ComputeDevice device() const {
    if (isEmpty()) detail::fail(ErrorCode::InvalidState, "DeviceArrayView::device: the view is empty");
    return device_;
  }

  /// As DeviceArray::copyToHost: enqueued on `sq`, no host sync. Throws InvalidState
  /// for an empty or expired view.
  void copyToHost(Format* dst, std::size_t bytes, StreamOrQueue sq) const {
    detail::copySpanToHost(Format::id, span("DeviceArrayView::copyToHost"), dst, bytes, sq,
                           "DeviceArrayView::copyToHost");
  }
  /// All elements, copied to the host. Blocking.
  std::vector<Format> toHost() const {
    const detail::ArraySpan s = span("DeviceArrayView::toHost");
    std::vector<Format> out(size());
    detail::downloadSpan(Format::id, s, out.data(), "DeviceArrayView::toHost");
    return out;
  }

  /// Internal: the storage (locked for the duration of one operation) and geometry.
  detail::ArraySpan span(const char* fn) const {
    if (isEmpty()) detail::fail(ErrorCode::InvalidState, std::string(fn) + ": the view is empty");
    std::shared_ptr<detail::Allocation> storage = adopted_ ? adopted_ : owner_.lock();
    if (!storage) detail::throwExpiredView(fn);
    return detail::ArraySpan{std::move(storage), offset_, device_, height_, width_, organized_};
  }

 private:
  friend class DeviceArray<Format>;
  friend class ComputeDevice;

  ComputeDevice device_;
  void* handle_ = nullptr;  ///< CUDA base pointer / cl_mem
  std::size_t offset_ = 0;  ///< bytes from handle_ to element 0
  int height_ = 0;
  int width_ = 0;
  bool organized_ = false;
  std::weak_ptr<detail::Allocation> owner_;     ///< views of a DeviceArray
  std::shared_ptr<detail::Allocation> adopted_;  ///< views of user memory (external: never frees)
};

// ------------------------------------------------------------ definitions --

template <class Format>
ComputeDevice DeviceArray<Format>::requireDevice(const char* fn) const {
  if (isEmpty()) detail::fail(ErrorCode::InvalidState, std::string(fn) + ": the array is empty");
  return mat_.device();
}

template <class Format>
DeviceArrayView<Format> DeviceArray<Format>::view() const {
  if (isEmpty()) detail::fail(ErrorCode::InvalidState, "DeviceArray::view: the array is empty");
  DeviceArrayView<Format> v;
  const detail::ArraySpan s = span();
  v.device_ = s.device;
  v.handle_ = detail::handleOf(*s.storage);
  v.offset_ = s.offset;
  v.height_ = s.height;
  v.width_ = s.width;
  v.organized_ = s.organized;
  v.owner_ = s.storage;
  return v;
}

template <class Format>
DeviceArrayView<Format> ComputeDevice::createDeviceArrayView(CUDADevicePointer pointer, int width, int height,
                                                             StreamOrQueue sq) const {
  static_assert(isFormat<Format>, "createDeviceArrayView<Format>: Format must be one of the 14 formats");
  DeviceArrayView<Format> v;
  v.adopted_ = detail::adoptUserMemory(*this, Format::id, pointer.pointer, 0, false, width, height, sq,
                                       "ComputeDevice::createDeviceArrayView");
  v.device_ = *this;
  v.handle_ = pointer.pointer;
  v.height_ = height;
  v.width_ = width;
  v.organized_ = true;
  return v;
}

template <class Format>
DeviceArrayView<Format> ComputeDevice::createDeviceArrayView(OpenCLBufferPtr buffer, int width, int height,
                                                             StreamOrQueue sq) const {
  static_assert(isFormat<Format>, "createDeviceArrayView<Format>: Format must be one of the 14 formats");
  DeviceArrayView<Format> v;
  v.adopted_ = detail::adoptUserMemory(*this, Format::id, buffer.buffer, buffer.offset, true, width, height, sq,
                                       "ComputeDevice::createDeviceArrayView");
  v.device_ = *this;
  v.handle_ = buffer.buffer;
  v.offset_ = buffer.offset;
  v.height_ = height;
  v.width_ = width;
  v.organized_ = true;
  return v;
}

/// A new array holding `src` converted to `To`, allocated and computed on
/// `sq` (same device as `src`). Returns without blocking; the result is ready on `sq`.
/// An empty `src` gives an empty result. Conversions:
///  - identity: a copy;
///  - PointXYZ -> PointXYZW (w = 1), PointXYZW -> PointXYZ, PointXYZ/PointXYZW -> PointZ;
///    coordinates are copied bit for bit, so NaN (missing) points stay NaN;
///  - colour -> colour: channel order, alpha added (255 / 1.0) or dropped, sRGB
///    encode/decode (IEC 61966-2-1; alpha stays linear), u8 <-> float. Float -> u8 is
///    round(255 * v) (of the encoded value for _SRGB), correctly rounded for every float
///    input, after clamping to [0, 1] (NaN -> 0).
/// Throws InvalidArgument when `sq` belongs to another backend than `src`, OutOfMemory.
template <class To, class From>
DeviceArray<To> convert(const DeviceArray<From>& src, StreamOrQueue sq) {
  static_assert(isFormat<To> && isFormat<From>, "convert<To, From>: both must be DeviceArray formats");
  static_assert(isConvertible<To, From>,
                "convert<To, From>: no meaningful conversion between these formats (supported: identity, "
                "PointXYZ <-> PointXYZW, PointXYZ/PointXYZW -> PointZ, colour format -> colour format)");
  if (src.isEmpty()) return DeviceArray<To>();
  return DeviceArray<To>::fromGpuMatND(detail::convertSpan(To::id, From::id, src.span(), sq, "convert"));
}

/// Converts `src` into the memory of `dst` (same device, same number of elements and,
/// when both are organized, the same height and width), enqueued on `sq`; returns without
/// blocking. In-place conversion (dst viewing exactly src's memory) is allowed when both
/// formats have the same element size; other overlaps throw InvalidArgument.
/// Throws InvalidArgument (size / device / backend mismatch, empty arguments) and
/// InvalidState (dst's owner is gone).
template <class To, class From>
void convertInto(const DeviceArrayView<To>& dst, const DeviceArray<From>& src, StreamOrQueue sq) {
  static_assert(isFormat<To> && isFormat<From>, "convertInto<To, From>: both must be DeviceArray formats");
  static_assert(isConvertible<To, From>,
                "convertInto<To, From>: no meaningful conversion between these formats (supported: identity, "
                "PointXYZ <-> PointXYZW, PointXYZ/PointXYZW -> PointZ, colour format -> colour format)");
  if (src.isEmpty()) detail::fail(ErrorCode::InvalidArgument, "convertInto: the source array is empty");
  if (dst.isEmpty()) detail::fail(ErrorCode::InvalidArgument, "convertInto: the destination view is empty");
  detail::convertSpanInto(To::id, dst.span("convertInto"), From::id, src.span(), sq, "convertInto");
}

}  // namespace devicearray
