// PointCountWord and PendingPointCount: the lazily read point count of a cloud known
// after an event.
#include "pointcloud/pending_point_count.hpp"

#include <cstdint>
#include <type_traits>

#include "pointcloud/pointcloud_internal.hpp"

namespace devicearray::detail {

PointCountWord::PointCountWord(std::shared_ptr<Allocation> storage, std::size_t offset, std::string errorMessage,
                               std::size_t wordsAfter, OnRead onRead)
    : storage_(std::move(storage)),
      offset_(offset),
      errorMessage_(std::move(errorMessage)),
      wordsAfter_(onRead ? wordsAfter : 0),
      onRead_(std::move(onRead)) {
  if (wordsAfter_ > kMaxWordsAfter) fail(ErrorCode::InvalidArgument, "PointCountWord: too many words after the count");
}

std::size_t PointCountWord::read() {
  const std::lock_guard<std::mutex> lock(mutex_);
  if (count_) return *count_;
  // The error flag sits right before the count and the reader's words right after it,
  // so one read brings them all: words = [error flag, count, after...], the read from
  // the first needed to the last. The library queue's read is ordered after the
  // producing stream's work through the allocation's last event, whatever stream that was.
  const bool withError = !errorMessage_.empty();
  std::uint32_t words[2 + kMaxWordsAfter] = {};
  const std::size_t first = withError ? 0 : 1, end = 2 + wordsAfter_;
  const std::size_t at = offset_ + first * sizeof(std::uint32_t) - sizeof(std::uint32_t);  // where words[first] is
  pc::readBack(*storage_->device()->libraryQueue(), storage_.get(), at, words + first,
               (end - first) * sizeof(std::uint32_t));
  if (words[0] != 0) fail(ErrorCode::InvalidArgument, errorMessage_);
  count_ = words[1];
  if (onRead_) {
    // What the words after it feed (a guess) must not fail a count that was read.
    try {
      onRead_(words + 2);
    } catch (...) {
    }
  }
  return *count_;
}

bool PointCountWord::isRead() const noexcept {
  const std::lock_guard<std::mutex> lock(mutex_);
  return count_.has_value();
}

const PointArrays& PendingPointCount::trimmed(const PointArrays& capacity) {
  const std::size_t count = count_->read();
  const std::lock_guard<std::mutex> lock(mutex_);
  if (trimmed_) return *trimmed_;
  // Only memory the producing work never wrote can hold more: a cloud made during a
  // CUDA graph capture, read before the graph's first launch was done.
  if (count > capacity.xyz.size())
    fail(ErrorCode::InvalidState, "UnorganizedPointCloud: the point count in device memory (" + std::to_string(count) +
                                      ") exceeds the cloud's capacity (" + std::to_string(capacity.xyz.size()) +
                                      "): the work that produces it has not run (a CUDA graph not launched yet?)");
  auto trim = [count](const auto& a) {
    using Array = std::decay_t<decltype(a)>;
    return count == 0 || !a.isValid() ? Array() : pc::prefixOf(a, count);
  };
  trimmed_ = PointArrays{trim(capacity.xyz), trim(capacity.colors), trim(capacity.snrs), trim(capacity.normals)};
  return *trimmed_;
}

}  // namespace devicearray::detail
