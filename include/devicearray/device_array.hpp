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
class UntypedDeviceArrayView;

/// The format-independent part of DeviceArray<Format>, compiled once into the library:
/// its memory (a GpuMatND of size {H, W} when organized, {N} otherwise) and the
/// operations on it, each given the FormatId of the typed wrapper. It has no public
/// members; use DeviceArray<Format>.
class UntypedDeviceArray {
  template <class> friend class DeviceArray;
  template <class> friend class DeviceArrayView;
  template <class To, class From>
  friend DeviceArray<To> convert(const DeviceArray<From>& src, StreamOrQueue sq);
  template <class To, class From>
  friend void convertInto(const DeviceArrayView<To>& dst, const DeviceArray<From>& src, StreamOrQueue sq);
  friend class UntypedDeviceArrayView;
  friend struct ArrayAccess;

  UntypedDeviceArray() = default;
  UntypedDeviceArray(GpuMatND mat, bool organized) : mat_(std::move(mat)), organized_(organized) {}

  static UntypedDeviceArray allocate(FormatId format, int height, int width, const ComputeDevice& device);
  static UntypedDeviceArray allocate(FormatId format, std::size_t count, const ComputeDevice& device);
  static UntypedDeviceArray fromHost(FormatId format, const void* data, int height, int width,
                                     const ComputeDevice& device);
  static UntypedDeviceArray fromHost(FormatId format, const void* data, std::size_t count,
                                     const ComputeDevice& device);
  /// Shares the memory of `mat` after checking that it fits `format` (an empty `mat` gives an empty array).
  static UntypedDeviceArray fromGpuMatND(FormatId format, const GpuMatND& mat);

  bool isEmpty() const { return mat_.empty(); }
  int height() const { return isEmpty() ? 0 : (organized_ ? mat_.size[0] : 1); }
  int width() const { return isEmpty() ? 0 : (organized_ ? mat_.size[1] : mat_.size[0]); }
  std::size_t size() const { return isEmpty() ? 0 : mat_.total(); }
  /// The device; InvalidState naming `fn` when empty.
  ComputeDevice device(const char* fn) const;
  void* devicePointer() const;
  std::size_t byteOffset() const;
  OpenCLBufferPtr openCLBuffer() const;

  void copyToHost(FormatId format, void* dst, std::size_t bytes, const StreamOrQueue& sq) const;
  void download(FormatId format, void* dst) const;
  UntypedDeviceArray clone(const ComputeDevice& device) const;
  UntypedDeviceArray converted(FormatId to, FormatId from, const StreamOrQueue& sq) const;
  static void convertInto(FormatId to, const UntypedDeviceArrayView& dst, FormatId from, const UntypedDeviceArray& src,
                          const StreamOrQueue& sq);
  UntypedDeviceArrayView view() const;

  // The layout table of docs/data-layout.md, shared with the views.
  static std::vector<int> shapeOf(bool organized, int height, int width, int channels) {
    std::vector<int> s;
    if (organized) s = {height, width};
    else s = {width};
    if (channels > 1) s.push_back(channels);
    return s;
  }
  static std::vector<int> stridesOf(bool organized, int width, int channels) {
    std::vector<int> s;
    if (organized) s.push_back(width * channels);  // validated at construction to fit in int (in bytes)
    if (channels > 1) s.push_back(channels);
    s.push_back(1);
    if (!organized && channels == 1) s = {1};
    return s;
  }
  static std::vector<int> scaled(std::vector<int> strides, int valueBytes) {
    for (int& v : strides) v *= valueBytes;
    return strides;
  }

  GpuMatND mat_;
  bool organized_ = false;
};

/// The format-independent part of DeviceArrayView<Format>, compiled once into the
/// library: where the memory is, its geometry and what keeps it alive. It has no
/// public members; use DeviceArrayView<Format>.
class UntypedDeviceArrayView {
  template <class> friend class DeviceArrayView;
  friend class UntypedDeviceArray;
  friend class ComputeDevice;
  friend struct ArrayAccess;

  /// Validates and adopts (never frees) user memory for ComputeDevice::createDeviceArrayView
  /// and orders later library work after what is enqueued on `sq` so far.
  static UntypedDeviceArrayView adopt(const ComputeDevice& device, FormatId format, void* handle, std::size_t offset,
                                      bool isOpenCL, int width, int height, const StreamOrQueue& sq);

  bool isEmpty() const { return handle_ == nullptr; }
  bool isValid() const { return !isEmpty() && (adopted_ != nullptr || !owner_.expired()); }
  std::size_t size() const { return static_cast<std::size_t>(height_) * static_cast<std::size_t>(width_); }
  ComputeDevice device() const {
    if (isEmpty()) throwEmpty("DeviceArrayView::device");
    return device_;
  }
  void* devicePointer() const {
    if (isEmpty()) return nullptr;
    if (device_.backend() == ComputeBackend::cuda) return static_cast<unsigned char*>(handle_) + offset_;
    return handle_;
  }
  std::size_t byteOffset() const {
    return device_.isValid() && device_.backend() == ComputeBackend::opencl ? offset_ : 0;
  }

  void copyToHost(FormatId format, void* dst, std::size_t bytes, const StreamOrQueue& sq) const;
  void download(FormatId format, void* dst) const;
  [[noreturn]] static void throwEmpty(const char* fn);

  ComputeDevice device_;
  void* handle_ = nullptr;  ///< CUDA base pointer / cl_mem
  std::size_t offset_ = 0;  ///< bytes from handle_ to element 0
  int height_ = 0;
  int width_ = 0;
  bool organized_ = false;
  // The memory's reference-counted allocation: an opaque library type (see GpuMatND).
  std::weak_ptr<detail::Allocation> owner_;     ///< views of a DeviceArray
  std::shared_ptr<detail::Allocation> adopted_;  ///< views of user memory (external: never frees)
};

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
    return DeviceArray(UntypedDeviceArray::allocate(Format::id, height, width, device));
  }
  /// Unorganized array of `count` elements (uninitialized). Blocking. Throws as above;
  /// OutOfRange also when count > INT_MAX.
  static DeviceArray allocate(std::size_t count, const ComputeDevice& device = ComputeDevice::defaultDevice()) {
    return DeviceArray(UntypedDeviceArray::allocate(Format::id, count, device));
  }
  /// Organized array with a copy of height*width elements at `data`. Blocking.
  /// Throws InvalidArgument for a null `data` and the errors of allocate().
  static DeviceArray fromHost(const Format* data, int height, int width,
                              const ComputeDevice& device = ComputeDevice::defaultDevice()) {
    return DeviceArray(UntypedDeviceArray::fromHost(Format::id, data, height, width, device));
  }
  /// Unorganized array with a copy of `count` elements at `data`. Blocking.
  static DeviceArray fromHost(const Format* data, std::size_t count,
                              const ComputeDevice& device = ComputeDevice::defaultDevice()) {
    return DeviceArray(UntypedDeviceArray::fromHost(Format::id, data, count, device));
  }

  /// [H,W,C] | [H,W] | [N,C] | [N]; empty for an empty array.
  std::vector<int> shape() const {
    if (isEmpty()) return {};
    return UntypedDeviceArray::shapeOf(array_.organized_, height(), width(), Format::channels);
  }
  /// Row-major strides in elements (channel values); empty for an empty array.
  std::vector<int> strides() const {
    if (isEmpty()) return {};
    return UntypedDeviceArray::stridesOf(array_.organized_, width(), Format::channels);
  }
  /// strides() multiplied by sizeof(ValueType); empty for an empty array.
  std::vector<int> stridesInBytes() const { return UntypedDeviceArray::scaled(strides(), static_cast<int>(sizeof(ValueType))); }
  /// Number of points / pixels (not channels).
  std::size_t size() const { return array_.size(); }
  /// size() * sizeof(Format): the whole buffer, which has no padding.
  std::size_t sizeInBytes() const { return size() * sizeof(Format); }
  /// Throws InvalidState for an empty array.
  ComputeBackend backend() const { return array_.device("DeviceArray::backend").backend(); }
  /// CUDA: the device pointer of element 0. OpenCL: the cl_mem; element 0 is at
  /// byteOffset() in it, which is 0 for arrays made by allocate, fromHost and convert
  /// (only fromGpuMatND of a sub-array view can give a non-zero offset).
  /// nullptr for an empty array. Work you enqueue on it is yours to order
  /// (docs/stream-queue-context.md).
  void* devicePointer() const { return array_.devicePointer(); }
  /// Byte offset of element 0 within the cl_mem on OpenCL (always 0 on CUDA, where
  /// devicePointer() already includes it).
  std::size_t byteOffset() const { return array_.byteOffset(); }
  /// The OpenCL buffer and byte offset of element 0. Throws Unsupported on CUDA, InvalidState when empty.
  OpenCLBufferPtr openCLBuffer() const { return array_.openCLBuffer(); }

  /// True when the array holds no memory.
  bool isEmpty() const { return array_.isEmpty(); }
  /// True when the array holds memory (the opposite of isEmpty()).
  bool isValid() const { return !isEmpty(); }
  /// True for an H x W array (shape [H, W(, C)]); false for a list or an empty array.
  bool isOrganized() const { return !isEmpty() && array_.organized_; }
  /// Rows of an organized array; 1 for an unorganized one; 0 when empty.
  int height() const { return array_.height(); }
  /// Columns of an organized array; N for an unorganized one; 0 when empty.
  int width() const { return array_.width(); }
  /// Throws InvalidState for an empty array.
  ComputeDevice device() const { return array_.device("DeviceArray::device"); }

  /// Enqueues a copy of all elements into `dst` (capacity `bytes` >= sizeInBytes()) on
  /// `sq` and returns without waiting; `dst` must stay valid until `sq` has completed it
  /// (synchronizeStream(sq)). An empty array copies nothing. Throws InvalidArgument for a
  /// null `dst`, too small `bytes`, or `sq` of another backend than the array.
  void copyToHost(Format* dst, std::size_t bytes, StreamOrQueue sq) const {
    if (isEmpty()) return;
    array_.copyToHost(Format::id, dst, bytes, sq);
  }
  /// All elements, copied to the host. Blocking (waits for earlier work on the array).
  std::vector<Format> toHost() const {
    std::vector<Format> out(size());
    if (!out.empty()) array_.download(Format::id, out.data());
    return out;
  }

  /// A packed deep copy on `device`, which may be another device of any backend (a peer
  /// copy where the two devices reach each other's memory, staged through host memory
  /// otherwise), or on this array's device. Blocking. An empty array gives an empty one.
  /// Throws InvalidArgument for an invalid device.
  ///@{
  DeviceArray clone(const ComputeDevice& device) const { return DeviceArray(array_.clone(device)); }
  DeviceArray clone() const { return isEmpty() ? DeviceArray() : clone(device()); }
  ///@}

  /// A GpuMatND sharing this memory: size {H, W} (organized) or {N}, type
  /// makeType(Format::depth, Format::channels). O(1), no device work.
  GpuMatND toGpuMatND() const { return array_.mat_; }
  /// Shares the memory of `mat`, which must be continuous, of type
  /// makeType(Format::depth, Format::channels), 2-D {H, W} (organized) or 1-D {N}
  /// (unorganized), with element 0 aligned to the channel size; else InvalidArgument.
  /// An empty `mat` gives an empty array. O(1), no device work.
  static DeviceArray fromGpuMatND(const GpuMatND& mat) {
    return DeviceArray(UntypedDeviceArray::fromGpuMatND(Format::id, mat));
  }

  /// A non-owning view of this array (see DeviceArrayView). Throws InvalidState when empty.
  DeviceArrayView<Format> view() const { return DeviceArrayView<Format>(array_.view()); }

 private:
  template <class To, class From>
  friend DeviceArray<To> convert(const DeviceArray<From>& src, StreamOrQueue sq);
  template <class To, class From>
  friend void convertInto(const DeviceArrayView<To>& dst, const DeviceArray<From>& src, StreamOrQueue sq);
  friend struct ArrayAccess;

  explicit DeviceArray(UntypedDeviceArray array) : array_(std::move(array)) {}

  UntypedDeviceArray array_;
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
  std::vector<int> shape() const {
    if (isEmpty()) return {};
    return UntypedDeviceArray::shapeOf(view_.organized_, view_.height_, view_.width_, Format::channels);
  }
  /// As DeviceArray::strides(): row-major, in channel values.
  std::vector<int> strides() const {
    if (isEmpty()) return {};
    return UntypedDeviceArray::stridesOf(view_.organized_, view_.width_, Format::channels);
  }
  /// strides() multiplied by sizeof(ValueType).
  std::vector<int> stridesInBytes() const { return UntypedDeviceArray::scaled(strides(), static_cast<int>(sizeof(ValueType))); }
  /// Number of points / pixels (not channels).
  std::size_t size() const { return view_.size(); }
  /// size() * sizeof(Format).
  std::size_t sizeInBytes() const { return size() * sizeof(Format); }
  /// Throws InvalidState for an empty view.
  ComputeBackend backend() const { return device().backend(); }
  /// CUDA: the device pointer of element 0. OpenCL: the cl_mem (element 0 at byteOffset()).
  void* devicePointer() const { return view_.devicePointer(); }
  /// Byte offset of element 0 in the cl_mem on OpenCL; 0 on CUDA.
  std::size_t byteOffset() const { return view_.byteOffset(); }
  /// True for a default-constructed view.
  bool isEmpty() const { return view_.isEmpty(); }
  /// False when empty, or when the DeviceArray this view was made from is gone.
  bool isValid() const { return view_.isValid(); }
  /// True for an H x W view (views of user memory always are).
  bool isOrganized() const { return !isEmpty() && view_.organized_; }
  /// Rows (1 for a view of an unorganized array; 0 when empty).
  int height() const { return view_.height_; }
  /// Columns (N for a view of an unorganized array; 0 when empty).
  int width() const { return view_.width_; }
  /// The device of the memory. Throws InvalidState for an empty view.
  ComputeDevice device() const { return view_.device(); }

  /// As DeviceArray::copyToHost: enqueued on `sq`, no host sync. Throws InvalidState
  /// for an empty or expired view.
  void copyToHost(Format* dst, std::size_t bytes, StreamOrQueue sq) const {
    view_.copyToHost(Format::id, dst, bytes, sq);
  }
  /// All elements, copied to the host. Blocking.
  std::vector<Format> toHost() const {
    std::vector<Format> out(size());
    view_.download(Format::id, out.data());
    return out;
  }

 private:
  friend class DeviceArray<Format>;
  friend class ComputeDevice;
  template <class To, class From>
  friend void convertInto(const DeviceArrayView<To>& dst, const DeviceArray<From>& src, StreamOrQueue sq);
  friend struct ArrayAccess;

  explicit DeviceArrayView(UntypedDeviceArrayView view) : view_(std::move(view)) {}

  UntypedDeviceArrayView view_;
};

// ------------------------------------------------------------ definitions --

template <class Format>
DeviceArrayView<Format> ComputeDevice::createDeviceArrayView(CUDADevicePointer pointer, int width, int height,
                                                             StreamOrQueue sq) const {
  static_assert(isFormat<Format>, "createDeviceArrayView<Format>: Format must be one of the 14 formats");
  return DeviceArrayView<Format>(
      UntypedDeviceArrayView::adopt(*this, Format::id, pointer.pointer, 0, false, width, height, sq));
}

template <class Format>
DeviceArrayView<Format> ComputeDevice::createDeviceArrayView(OpenCLBufferPtr buffer, int width, int height,
                                                             StreamOrQueue sq) const {
  static_assert(isFormat<Format>, "createDeviceArrayView<Format>: Format must be one of the 14 formats");
  return DeviceArrayView<Format>(
      UntypedDeviceArrayView::adopt(*this, Format::id, buffer.buffer, buffer.offset, true, width, height, sq));
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
  return DeviceArray<To>(src.array_.converted(To::id, From::id, sq));
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
  UntypedDeviceArray::convertInto(To::id, dst.view_, From::id, src.array_, sq);
}

}  // namespace devicearray
