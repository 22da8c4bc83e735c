// The temporaries of one point-cloud operation as slices of one stream-ordered
// allocation. A frame-sized operation is short enough that the driver calls around
// each temporary (allocate, then free after waiting for its work) would cost more
// than its kernels: one allocation serves them all.
#pragma once

#include <cstddef>
#include <memory>

#include "backend/backend.hpp"

namespace devicearray::detail::pc {

class ScratchLayout {
 public:
  /// Slices start at this alignment: enough for any element type and for the widest
  /// loads the kernels make.
  static constexpr std::size_t kAlignment = 256;

  /// Reserves `count` elements of `elemBytes` bytes and returns the slice's byte offset
  /// in the allocation. Throws OutOfRange naming `fn` when the total overflows.
  std::size_t add(std::size_t count, std::size_t elemBytes, const char* fn);

  /// One allocation holding every reserved slice, usable on `q`.
  std::shared_ptr<Allocation> allocate(QueueImpl& q) const;

  std::size_t bytes() const noexcept { return bytes_; }

 private:
  std::size_t bytes_ = 0;
};

}  // namespace devicearray::detail::pc
