// devicearray — N-dimensional host array: what upload() takes and download() gives.
#pragma once

#include <cstddef>
#include <memory>
#include <vector>

#include "devicearray/types.hpp"

namespace devicearray {

/// An owning or viewing N-d array in host memory with OpenCV's Mat conventions:
/// `size` per axis, `step` in bytes per axis (step.back() == elemSize()), `type()`
/// an OpenCV type code. Copies share the data (like cv::Mat); clone() deep-copies.
class HostMat {
 public:
  using SizeArray = std::vector<int>;          ///< one length per axis
  using StepArray = std::vector<std::size_t>;  ///< bytes between neighbours along each axis

  /// An empty array (no memory).
  HostMat();
  /// Copies share the memory (a view of the same elements), as cv::Mat's do.
  ///@{
  HostMat(const HostMat&) = default;
  HostMat& operator=(const HostMat&) = default;
  ///@}
  /// A moved-from array is empty, as a moved-from cv::Mat is (its data pointer would
  /// otherwise outlive the memory it points into).
  ///@{
  HostMat(HostMat&& other) noexcept;
  HostMat& operator=(HostMat&& other) noexcept;
  ///@}
  /// Allocates a continuous array (64-byte aligned). Throws InvalidArgument for bad sizes
  /// or type, OutOfRange when the byte count overflows, OutOfMemory when it cannot be had.
  HostMat(SizeArray size, int type);
  /// Views user memory (not freed by the library). `step` has dims-1 or dims entries
  /// (like OpenCV); empty means continuous.
  HostMat(SizeArray size, int type, void* data, StepArray step = StepArray());
  /// Allocates page-locked memory (cudaHostAlloc when a CUDA driver is present, else
  /// page-aligned memory locked with mlock when permitted): transfers from it run at
  /// full bus speed and asynchronously.
  static HostMat pinned(SizeArray size, int type);

  /// (Re)allocates unless the array already has this size and type and owns continuous memory.
  void create(SizeArray size, int type);
  /// A continuous deep copy (ordinary, not pinned, memory).
  HostMat clone() const;
  /// O(1) view of a sub-array; keeps the memory alive.
  HostMat operator()(const std::vector<Range>& ranges) const;
  /// Drops this handle's reference (the memory goes with the last one); becomes empty.
  void release();

  /// OpenCV type code (depth and channels).
  int type() const;
  /// Depth code of one channel value (a Depth as int).
  int depth() const;
  /// Channels per element.
  int channels() const;
  /// Bytes per element (all channels).
  std::size_t elemSize() const;
  /// Bytes per channel value.
  std::size_t elemSize1() const;
  /// Number of elements (product of the sizes).
  std::size_t total() const;
  /// True when the array has no memory.
  bool empty() const { return data_ == nullptr; }
  /// True when the elements are packed with no gaps.
  bool isContinuous() const;
  /// True for a view made by operator() that does not cover the whole parent.
  bool isSubmatrix() const;
  /// True for page-locked memory (transfers run by DMA, asynchronously).
  bool isPinned() const { return pinned_; }
  /// True for a view of user memory (not freed by the library).
  bool external() const { return data_ != nullptr && !storage_; }

  /// Address of the first element (nullptr when empty).
  uchar* data() const { return data_; }
  /// data() as a `T*` (no check that T matches the type).
  template <class T> T* ptr() const { return reinterpret_cast<T*>(data_); }
  /// Address of the element at `idx` (one index per axis; bounds-checked).
  uchar* ptr(const std::vector<int>& idx) const;

  int flags = 0;   ///< OpenCV-style flags: type code plus CONTINUOUS / SUBMATRIX bits
  int dims = 0;    ///< number of axes
  SizeArray size;  ///< length of each axis
  StepArray step;  ///< bytes between neighbours along each axis; step.back() == elemSize()

 private:
  friend struct ArrayAccess;  // the library's own access (src/core/array_access.hpp)

  std::shared_ptr<void> storage_;
  uchar* data_ = nullptr;
  /// Bytes of the library's own memory from data_ to its end; 0 for a view of user
  /// memory, whose size the library does not know.
  std::size_t capacity_ = 0;
  bool pinned_ = false;
};

}  // namespace devicearray
