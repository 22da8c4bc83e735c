// The library's own access to what the public array classes keep private: the
// allocation and byte offset behind a GpuMatND, GpuMat, DeviceArray or
// DeviceArrayView, and headers over an existing allocation. The public headers only
// name ArrayAccess as a friend; it is defined here, so nothing of it is public.
#pragma once

#include <cstddef>
#include <memory>
#include <utility>

#include "backend/backend.hpp"
#include "devicearray/device_array.hpp"
#include "devicearray/gpu_mat_nd.hpp"
#include "devicearray/host_mat.hpp"

namespace devicearray {

namespace detail {

/// A DeviceArray's or view's memory and geometry, as the non-template code works on it.
struct ArraySpan {
  std::shared_ptr<Allocation> owner;  ///< keeps buffer.allocation alive while the span is used
  BufferRef buffer;                   ///< element 0
  ComputeDevice device;
  int height = 0;  ///< 1 for unorganized arrays
  int width = 0;   ///< N for unorganized arrays
  bool organized = false;

  std::size_t count() const { return static_cast<std::size_t>(height) * static_cast<std::size_t>(width); }
};

}  // namespace detail

struct ArrayAccess {
  // ----------------------------------------------------------------- GpuMatND --
  static const std::shared_ptr<detail::Allocation>& allocation(const GpuMatND& m) { return m.data_; }
  static std::size_t offset(const GpuMatND& m) { return m.offset_; }
  /// A header over `storage` starting `offset` bytes in; validates the layout against
  /// the storage's size (gpu_mat_nd.cpp).
  static GpuMatND makeGpuMatND(std::shared_ptr<detail::Allocation> storage, std::size_t offset,
                               GpuMatND::SizeArray size, int type, GpuMatND::StepArray step);

  // ------------------------------------------------------------------- GpuMat --
  static const std::shared_ptr<detail::Allocation>& allocation(const GpuMat& m) { return m.storage_; }
  static std::size_t offset(const GpuMat& m) { return m.offset_; }
  /// A header over `storage` starting `offset` bytes in (gpu_mat.cpp).
  static GpuMat makeGpuMat(std::shared_ptr<detail::Allocation> storage, std::size_t offset, int rows, int cols,
                           int type, std::size_t step);

  // ------------------------------------------------------------------ HostMat --
  /// Bytes of the library's own memory from data() on; 0 for a view of user memory.
  static std::size_t capacity(const HostMat& m) { return m.capacity_; }

  // -------------------------------------------------- DeviceArray and its view --
  /// The memory and geometry of a non-empty array (device_array.cpp).
  static detail::ArraySpan span(const UntypedDeviceArray& a);
  /// The memory of a view, locked for one operation; InvalidState naming `fn` when the
  /// view is empty or its DeviceArray is gone (device_array.cpp).
  static detail::ArraySpan span(const UntypedDeviceArrayView& v, const char* fn);
  template <class F>
  static detail::ArraySpan span(const DeviceArray<F>& a) {
    return span(a.array_);
  }
  template <class F>
  static detail::ArraySpan span(const DeviceArrayView<F>& v, const char* fn) {
    return span(v.view_, fn);
  }
};

namespace detail {

// Call-site spellings of the accessors above.

inline const std::shared_ptr<Allocation>& allocationOf(const GpuMatND& m) { return ArrayAccess::allocation(m); }
inline const std::shared_ptr<Allocation>& allocationOf(const GpuMat& m) { return ArrayAccess::allocation(m); }
inline std::size_t offsetOf(const GpuMatND& m) { return ArrayAccess::offset(m); }
inline std::size_t offsetOf(const GpuMat& m) { return ArrayAccess::offset(m); }
/// Where the first element of `m` is.
inline BufferRef bufferOf(const GpuMatND& m) { return BufferRef{allocationOf(m).get(), offsetOf(m)}; }
inline BufferRef bufferOf(const GpuMat& m) { return BufferRef{allocationOf(m).get(), offsetOf(m)}; }

/// Throws unless `m`'s header (dims, size, step: public fields, as OpenCV's) is
/// consistent and every element it describes lies inside its memory, when the memory's
/// size is known (not for a bare external pointer). For the paths that hand the header
/// to code which cannot check it (a DLPack consumer, the kernels of a DeviceArray).
void checkHeaderInsideMemory(const GpuMatND& m, const char* fn);
/// The same for a HostMat of the library's own memory (a view of user memory has no
/// known size, and is the caller's to describe).
void checkHeaderInsideMemory(const HostMat& m, const char* fn);

inline GpuMatND makeGpuMatND(std::shared_ptr<Allocation> storage, std::size_t offset, GpuMatND::SizeArray size,
                             int type, GpuMatND::StepArray step) {
  return ArrayAccess::makeGpuMatND(std::move(storage), offset, std::move(size), type, std::move(step));
}
inline GpuMat makeGpuMat(std::shared_ptr<Allocation> storage, std::size_t offset, int rows, int cols, int type,
                         std::size_t step) {
  return ArrayAccess::makeGpuMat(std::move(storage), offset, rows, cols, type, step);
}

/// The memory and geometry of a non-empty DeviceArray.
template <class F>
ArraySpan spanOf(const DeviceArray<F>& a) {
  return ArrayAccess::span(a);
}

}  // namespace detail
}  // namespace devicearray
