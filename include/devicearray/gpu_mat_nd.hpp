// devicearray — cv::cuda::GpuMatND on CUDA and OpenCL.
//
// Storage is a reference-counted device allocation plus a byte offset; size, step
// and type describe the layout. Views (operator()(ranges)) share the storage and
// keep it alive. Memory is freed in stream order once the last handle is gone.
#pragma once

#include <cstddef>
#include <memory>
#include <vector>

#include "devicearray/device.hpp"
#include "devicearray/host_mat.hpp"
#include "devicearray/stream.hpp"
#include "devicearray/types.hpp"

namespace devicearray {

class GpuMat;
// The reference-counted device allocation behind every array: a type of the library's
// own, declared here only so that GpuMatND, GpuMat and DeviceArrayView can hold it by
// shared_ptr; nothing of it is reachable through the public headers.
namespace detail { class Allocation; }

/// An N-dimensional array in device memory: cv::cuda::GpuMatND's interface, on CUDA
/// and OpenCL. Copies share the memory; views (operator()(ranges)) share it too and
/// keep it alive. Overloads without a Stream block; those with one enqueue on it and
/// return at once (docs/stream-queue-context.md). Every failure throws Error.
class GpuMatND {
 public:
  using SizeArray = std::vector<int>;          ///< one length per axis
  using StepArray = std::vector<std::size_t>;  ///< bytes between neighbours along each axis
  using IndexArray = std::vector<int>;         ///< one index per leading axis

  /// OpenCV's flag bits.
  static constexpr int MAGIC_VAL = 0x42FF0000;
  static constexpr int CONTINUOUS_FLAG = 1 << 14;  ///< set when the elements are packed with no gaps
  static constexpr int SUBMATRIX_FLAG = 1 << 15;   ///< set for views that do not cover the whole parent

  /// An empty array.
  GpuMatND();
  /// Copies and moves share the memory (no device work).
  ///@{
  GpuMatND(const GpuMatND&) = default;
  GpuMatND(GpuMatND&&) noexcept = default;
  GpuMatND& operator=(const GpuMatND&) = default;
  GpuMatND& operator=(GpuMatND&&) noexcept = default;
  ///@}
  /// Drops this handle; the memory is released in stream order with the last one.
  ~GpuMatND();

  /// Allocates on defaultDevice(). Blocking only for the allocation itself.
  GpuMatND(SizeArray size, int type);
  /// Allocates on `device` (contents uninitialized). Blocking only for the allocation.
  /// Throws InvalidArgument (sizes, type), OutOfRange (byte count overflows), OutOfMemory.
  GpuMatND(SizeArray size, int type, const ComputeDevice& device);
  /// Wraps external CUDA memory (not freed by the library). The pointer must be CUDA
  /// device-accessible; `step` has dims-1 or dims entries or is empty (continuous).
  GpuMatND(SizeArray size, int type, void* data, StepArray step = StepArray());
  /// Wraps an external cl_mem (+ byte offset) of `device`'s context (retained).
  GpuMatND(SizeArray size, int type, OpenCLBufferPtr data, const ComputeDevice& device,
           StepArray step = StepArray());

  /// Continuous deep copy. Blocking. Throws InvalidState when empty.
  GpuMatND clone() const;
  /// Continuous deep copy enqueued on `stream`; returns without waiting.
  GpuMatND clone(Stream& stream) const;
  /// Continuous deep copy on `device`, which may be another device of any backend: a
  /// peer copy where the two devices reach each other's memory, staged through host
  /// memory otherwise. Blocking. Throws InvalidState when empty, InvalidArgument for an
  /// invalid device.
  GpuMatND clone(const ComputeDevice& device) const;

  /// Copies into `dst`, in any layout of either side: in place when `dst` has this size
  /// and type, whichever device it lives on; otherwise into a new continuous array, on
  /// this array's device (blocking overload) or on the stream's device (enqueued
  /// overload), that replaces `dst` once the copy is enqueued (a failing call leaves
  /// `dst` as it was). The enqueued overload needs a stream of the destination's device
  /// and returns without waiting, except that a copy between devices that cannot reach
  /// each other's memory (another backend or another OpenCL context) waits until the
  /// source side has been read.
  ///@{
  void copyTo(GpuMatND& dst) const;
  void copyTo(GpuMatND& dst, Stream& stream) const;
  ///@}

  /// Allocates continuous memory on this array's device (defaultDevice() when empty),
  /// reusing the current memory only when same size and type, not empty, not external,
  /// continuous and not a submatrix.
  void create(SizeArray size, int type);

  /// Non-owning 2-D header of an effectively 2-D array (does not keep memory alive).
  GpuMat createGpuMatHeader() const;
  /// Non-owning header of the 2-D plane at `idx` (the leading dims-2 indices).
  GpuMat createGpuMatHeader(IndexArray idx, Range rowRange, Range colRange) const;

  /// Blocking download (InvalidState when empty). Writes in place when `dst` has this size and type (also into
  /// a non-continuous host view), otherwise gives `dst` new memory, filled before it replaces the old one: a
  /// failing call leaves `dst` as it was (its bytes too, unless the failure hits the in-place copy itself).
  void download(HostMat& dst) const;
  /// Enqueued download: returns without waiting; `dst` must stay alive until `stream` completes. Same
  /// guarantee for a failure to enqueue.
  void download(HostMat& dst, Stream& stream) const;
  /// Blocking upload. Writes in place when size and type match, otherwise into a new array on this array's
  /// device (defaultDevice() when empty) that replaces this one only once filled: a failing call leaves
  /// this array as it was.
  void upload(const HostMat& src);
  /// Enqueued upload: returns without waiting. Same guarantee for a failure to enqueue.
  void upload(const HostMat& src, Stream& stream);

  /// Bytes per element (all channels).
  std::size_t elemSize() const;
  /// Bytes per channel value.
  std::size_t elemSize1() const;
  /// True when the array has no memory.
  bool empty() const;
  /// True for wrapped external memory (not freed by the library).
  bool external() const;
  /// True when the elements are packed with no gaps.
  bool isContinuous() const;
  /// True for a view that does not cover the whole parent.
  bool isSubmatrix() const;
  /// CUDA: device pointer of the first element (view offset included).
  /// OpenCL: throws Unsupported (use getOpenCLBuffer()).
  uchar* getDevicePtr() const;
  /// OpenCL: cl_mem and byte offset of the first element. CUDA: throws Unsupported.
  OpenCLBufferPtr getOpenCLBuffer() const;

  /// Continuous 2-D clone of an effectively 2-D array.
  operator GpuMat() const;  // NOLINT(google-explicit-constructor)
  /// O(1) view of the sub-array selected by one Range per axis.
  GpuMatND operator()(const std::vector<Range>& ranges) const;
  /// Continuous clone of the 2-D plane at `idx`.
  GpuMat operator()(IndexArray idx, Range rowRange, Range colRange) const;

  /// Drops this handle's reference (memory released in stream order with the last one).
  void release();
  /// Exchanges the two handles (no device work).
  void swap(GpuMatND& m) noexcept;

  /// Number of elements (product of the sizes).
  std::size_t total() const;
  /// total() * elemSize().
  std::size_t totalMemSize() const;
  /// OpenCV type code (depth and channels).
  int type() const;
  /// Depth code of one channel value (a Depth as int).
  int depth() const;
  /// Channels per element.
  int channels() const;
  /// The device of the memory (an invalid handle when empty).
  ComputeDevice device() const;
  /// The backend of the memory. Throws InvalidState when empty.
  ComputeBackend backend() const;

  int flags = 0;   ///< OpenCV-style flags: MAGIC_VAL, type code, CONTINUOUS / SUBMATRIX bits
  int dims = 0;    ///< number of axes
  SizeArray size;  ///< length of each axis
  StepArray step;  ///< bytes between neighbours along each axis; step.back() == elemSize()


 private:
  friend struct ArrayAccess;  // the library's own access to the storage (src/core/array_access.hpp)

  void updateFlags();
  std::shared_ptr<detail::Allocation> data_;  ///< shared storage
  std::size_t offset_ = 0;                    ///< bytes from the storage's start to the first element
};

/// 2-D device matrix with cv::cuda::GpuMat's names, on CUDA and OpenCL.
class GpuMat {
 public:
  GpuMat();
  /// Allocates rows x cols of `type` on `device` (defaultDevice() when omitted).
  ///@{
  GpuMat(int rows, int cols, int type);
  GpuMat(int rows, int cols, int type, const ComputeDevice& device);
  ///@}
  /// Wraps external CUDA memory (not freed by the library).
  GpuMat(int rows, int cols, int type, void* data, std::size_t step);
  /// Wraps an external cl_mem (+ byte offset) of `device`'s context.
  GpuMat(int rows, int cols, int type, OpenCLBufferPtr data, const ComputeDevice& device, std::size_t step);

  /// Allocates unless the matrix already has this size and type (OpenCV's rule).
  void create(int rows, int cols, int type);
  /// Drops this handle's reference (memory released in stream order with the last one).
  void release();

  /// Copies `src` (2-D) into this matrix, recreating it when size or type differ (the new
  /// matrix replaces this one only once the copy is enqueued: a failing call leaves it as it was).
  /// Without a stream: blocking; with one: enqueued there, returns at once.
  ///@{
  void upload(const HostMat& src);
  void upload(const HostMat& src, Stream& stream);
  ///@}
  /// Copies this matrix to `dst` (in place when it has this size and type, else
  /// recreated). Without a stream: blocking; with one: enqueued, `dst` valid after the
  /// stream completes.
  ///@{
  void download(HostMat& dst) const;
  void download(HostMat& dst, Stream& stream) const;
  ///@}
  /// A continuous deep copy. Without a stream: blocking; with one: enqueued, ready there.
  ///@{
  GpuMat clone() const;
  GpuMat clone(Stream& stream) const;
  ///@}

  /// Copies into `dst`: in place when it has this size and type, else into a new matrix on
  /// this device that replaces `dst` once the copy is enqueued (a failing call leaves `dst`
  /// as it was). Blocking / enqueued.
  ///@{
  void copyTo(GpuMat& dst) const;
  void copyTo(GpuMat& dst, Stream& stream) const;
  ///@}
  /// Sets every element to `value` (saturated to the depth). Returns *this.
  ///@{
  GpuMat& setTo(Scalar value);
  GpuMat& setTo(Scalar value, Stream& stream);
  ///@}
  /// dst = saturate_cast<rtype depth>(alpha * src + beta), per channel. rtype < 0
  /// keeps this depth; the channel count must match (or rtype may name only a depth).
  ///@{
  void convertTo(GpuMat& dst, int rtype, double alpha = 1, double beta = 0) const;
  void convertTo(GpuMat& dst, int rtype, double alpha, double beta, Stream& stream) const;
  void convertTo(GpuMat& dst, int rtype, Stream& stream) const;
  ///@}

  /// O(1) view of a rectangle; keeps the memory alive (when owned).
  GpuMat operator()(Range rowRange, Range colRange) const;

  /// OpenCV type code (depth and channels).
  int type() const { return flags & kTypeMask; }
  /// Depth code of one channel value (a Depth as int).
  int depth() const { return static_cast<int>(depthOf(type())); }
  /// Channels per element.
  int channels() const { return channelsOf(type()); }
  /// Bytes per element (all channels).
  std::size_t elemSize() const;
  /// Bytes per channel value.
  std::size_t elemSize1() const;
  /// True when the rows follow each other without gaps.
  bool isContinuous() const { return (flags & GpuMatND::CONTINUOUS_FLAG) != 0; }
  /// True for a view that does not cover the whole parent.
  bool isSubmatrix() const { return (flags & GpuMatND::SUBMATRIX_FLAG) != 0; }
  /// True when the matrix has no memory.
  bool empty() const { return rows == 0 || !storage_; }
  /// True for headers over memory this GpuMat does not own (external / createGpuMatHeader).
  bool external() const;
  /// The device of the memory (an invalid handle when empty).
  ComputeDevice device() const;
  /// The backend of the memory. Throws InvalidState when empty.
  ComputeBackend backend() const;
  /// OpenCL: the cl_mem and byte offset of element (0,0). CUDA: throws Unsupported.
  OpenCLBufferPtr getOpenCLBuffer() const;
  /// This matrix as a 2-D GpuMatND sharing its storage.
  GpuMatND asGpuMatND() const;

  int flags = 0;          ///< OpenCV-style flags: type code, CONTINUOUS / SUBMATRIX bits
  int rows = 0;           ///< number of rows
  int cols = 0;           ///< number of columns
  std::size_t step = 0;   ///< bytes from one row to the next
  /// CUDA device pointer of element (0,0); nullptr on OpenCL.
  uchar* data = nullptr;


 private:
  friend struct ArrayAccess;  // the library's own access to the storage (src/core/array_access.hpp)

  std::shared_ptr<detail::Allocation> storage_;  ///< shared storage
  std::size_t offset_ = 0;                       ///< bytes from the storage's start to element (0,0)
};

inline void swap(GpuMatND& a, GpuMatND& b) noexcept { a.swap(b); }

/// NumPy's squeeze: an O(1) view of the memory of `array` without the axes listed in
/// `axes`, each of length 1; the other axes keep their lengths and steps, and the view
/// keeps the memory alive and the SUBMATRIX flag like operator()(ranges). Removing every
/// axis leaves one axis of length 1 (a GpuMatND has at least one). Throws InvalidState
/// when `array` is empty and InvalidArgument for an axis out of range, listed twice or
/// longer than 1, or when the axes left break GpuMatND's rule that the last step is the
/// element size.
GpuMatND squeeze(const GpuMatND& array, const std::vector<int>& axes);

}  // namespace devicearray
