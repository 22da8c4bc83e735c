// The point count of an UnorganizedPointCloud that is known after an event: a word in
// device memory written by the work that produced the cloud, read on first demand.
#pragma once

#include <cstddef>
#include <memory>
#include <mutex>
#include <optional>
#include <string>

#include "backend/backend.hpp"

namespace devicearray::detail {

class PendingPointCount {
 public:
  /// The count is the u32 at `offset` of `storage`. With `errorMessage` non-empty, the
  /// u32 before it is an error flag: non-zero means the producing operation failed on
  /// the device, and resolving throws InvalidArgument with that message.
  PendingPointCount(std::shared_ptr<Allocation> storage, std::size_t offset, std::string errorMessage = {});

  /// The count, read once (blocking until the producing work is done; later calls, from
  /// any copy of the cloud, return the value read). Throws the device-side error.
  std::size_t resolve();

 private:
  std::mutex mutex_;
  std::shared_ptr<Allocation> storage_;
  std::size_t offset_;
  std::string errorMessage_;
  std::optional<std::size_t> count_;
};

}  // namespace devicearray::detail
