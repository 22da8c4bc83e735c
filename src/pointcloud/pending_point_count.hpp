// The point count of an UnorganizedPointCloud that is known after an event: a word in
// device memory written by the work that produced the cloud, read on first demand, and
// the cloud's arrays trimmed to it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>

#include "backend/backend.hpp"
#include "devicearray/point_cloud.hpp"

namespace devicearray::detail {

/// The count word, shared by every cloud whose points it counts.
class PointCountWord {
 public:
  /// The count is the u32 at `offset` of `storage`. With `errorMessage` non-empty, the
  /// u32 before it is an error flag: non-zero means the producing operation failed on
  /// the device, and reading the count throws InvalidArgument with that message.
  /// `onRead`, when given, gets the `wordsAfter` u32s after the count, read with it (the
  /// voxel grid keeps its sort's key width and keyed end there).
  using OnRead = std::function<void(const std::uint32_t* wordsAfter)>;
  PointCountWord(std::shared_ptr<Allocation> storage, std::size_t offset, std::string errorMessage = {},
                 std::size_t wordsAfter = 0, OnRead onRead = {});

  /// The count, read once (blocking until the producing work is done; later calls
  /// return the value read). Thread-safe. Throws the device-side error.
  std::size_t read();
  /// Whether read() has read the count (it returns without waiting then).
  bool isRead() const noexcept;
  /// The same word, not read yet (UnorganizedPointCloud::reread).
  std::shared_ptr<PointCountWord> unread() const {
    return std::make_shared<PointCountWord>(storage_, offset_, errorMessage_, wordsAfter_, onRead_);
  }

 private:
  static constexpr std::size_t kMaxWordsAfter = 16;
  mutable std::mutex mutex_;
  const std::shared_ptr<Allocation> storage_;  // kept after the read: unread() reads it again
  const std::size_t offset_;
  const std::string errorMessage_;
  const std::size_t wordsAfter_;
  const OnRead onRead_;
  std::optional<std::size_t> count_;
};

/// The four arrays of an unorganized cloud.
struct PointArrays {
  DeviceArray<PointXYZ> xyz;
  DeviceArray<ColorRGBA> colors;
  DeviceArray<SNR> snrs;
  DeviceArray<NormalXYZ> normals;
};

/// One set of capacity arrays of a cloud (shared by its copies) and its count: the
/// arrays trimmed to the count are made once, thread-safely, so const calls on one
/// cloud from several threads stay safe.
class PendingPointCount {
 public:
  explicit PendingPointCount(std::shared_ptr<PointCountWord> count) : count_(std::move(count)) {}

  /// The same count for another set of capacity arrays with the same points (e.g. a
  /// transformed copy).
  std::shared_ptr<PendingPointCount> forOtherArrays() const { return std::make_shared<PendingPointCount>(count_); }
  /// The same count word, read again by the next call that needs it.
  std::shared_ptr<PendingPointCount> unread() const { return std::make_shared<PendingPointCount>(count_->unread()); }

  /// `capacity` (the cloud's arrays) trimmed to the count, made on the first call.
  const PointArrays& trimmed(const PointArrays& capacity);
  /// Whether trimmed() returns without waiting for the device.
  bool isCountRead() const noexcept { return count_->isRead(); }

 private:
  std::shared_ptr<PointCountWord> count_;
  std::mutex mutex_;
  std::optional<PointArrays> trimmed_;
};

}  // namespace devicearray::detail
