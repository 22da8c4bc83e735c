#include "pointcloud/scratch_layout.hpp"

#include "pointcloud/pointcloud_internal.hpp"

namespace devicearray::detail::pc {

std::size_t ScratchLayout::add(std::size_t count, std::size_t elemBytes, const char* fn) {
  const std::size_t size = checkedBytes(count, elemBytes, fn);
  const std::size_t offset = checkedBytes((bytes_ + kAlignment - 1) / kAlignment, kAlignment, fn);
  if (size > SIZE_MAX - offset) raise(ErrorCode::OutOfRange, fn, "the temporaries' total size overflows std::size_t");
  bytes_ = offset + size;
  return offset;
}

std::shared_ptr<Allocation> ScratchLayout::allocate(QueueImpl& q) const {
  return q.device()->allocate(bytes_ > 0 ? bytes_ : 1, q);
}

}  // namespace devicearray::detail::pc
