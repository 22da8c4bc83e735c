// PendingPointCount: the lazily read point count of a cloud known after an event.
#include "pointcloud/pending_point_count.hpp"

#include <cstdint>

#include "pointcloud/pointcloud_internal.hpp"

namespace devicearray::detail {

PendingPointCount::PendingPointCount(std::shared_ptr<Allocation> storage, std::size_t offset,
                                     std::string errorMessage)
    : storage_(std::move(storage)), offset_(offset), errorMessage_(std::move(errorMessage)) {}

std::size_t PendingPointCount::resolve() {
  const std::lock_guard<std::mutex> lock(mutex_);
  if (count_) return *count_;
  // The error flag sits right before the count, so one read brings both. The library
  // queue's read is ordered after the producing stream's work through the allocation's
  // last event, whatever stream that was.
  const bool withError = !errorMessage_.empty();
  std::uint32_t words[2] = {0, 0};
  const std::size_t at = withError ? offset_ - sizeof(std::uint32_t) : offset_;
  pc::readBack(*storage_->device()->libraryQueue(), storage_.get(), at, withError ? words : words + 1,
               withError ? sizeof(words) : sizeof(std::uint32_t));
  if (words[0] != 0) fail(ErrorCode::InvalidArgument, errorMessage_);
  count_ = words[1];
  storage_.reset();  // the arrays keep the memory alive; the count needs it no more
  return *count_;
}

}  // namespace devicearray::detail
