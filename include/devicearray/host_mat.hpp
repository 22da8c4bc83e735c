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
  using SizeArray = std::vector<int>;
  using StepArray = std::vector<std::size_t>;

  HostMat();
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
  HostMat clone() const;
  /// O(1) view of a sub-array; keeps the memory alive.
  HostMat operator()(const std::vector<Range>& ranges) const;
  void release();

  int type() const;
  int depth() const;
  int channels() const;
  std::size_t elemSize() const;
  std::size_t elemSize1() const;
  std::size_t total() const;
  bool empty() const { return data_ == nullptr; }
  bool isContinuous() const;
  bool isSubmatrix() const;
  bool isPinned() const { return pinned_; }
  bool external() const { return data_ != nullptr && !storage_; }

  uchar* data() const { return data_; }
  template <class T> T* ptr() const { return reinterpret_cast<T*>(data_); }
  /// Address of the element at `idx` (one index per axis; bounds-checked).
  uchar* ptr(const std::vector<int>& idx) const;

  int flags = 0;
  int dims = 0;
  SizeArray size;
  StepArray step;

 private:
  std::shared_ptr<void> storage_;
  uchar* data_ = nullptr;
  bool pinned_ = false;
};

}  // namespace devicearray
