// The transformation matrix of an UnorganizedPointCloud centred on a stream: the
// translation is by minus a centroid still in device memory, read on first demand, so
// that center(sq) never waits for the device.
#pragma once

#include <memory>
#include <mutex>
#include <optional>
#include <vector>

#include "backend/backend.hpp"
#include "devicearray/point_cloud.hpp"

namespace devicearray::detail {

/// The centroid in `centroid` (one point, UnorganizedPointCloud::deviceCentroid's
/// result), read on `q` after the work that computes it; blocking. Throws InvalidState
/// (the message of UnorganizedPointCloud::centroid) when it is NaN: the cloud had no
/// valid point.
std::array<float, 3> readCentroid(QueueImpl& q, const DeviceArray<PointXYZ>& centroid);

/// A matrix the host knows, followed by steps that are matrices or translations by minus
/// a centroid in device memory; the product is the cloud's transformationMatrix().
/// Immutable (copies of a cloud share it; a further step makes a new one); the product
/// is computed once, thread-safely, by the first matrix() call, multiplying the steps in
/// the order a cloud that knew every centroid at once would have accumulated them.
class PendingTransformation {
 public:
  /// `before`, then the translation by minus the point in `centroid`.
  PendingTransformation(const Matrix4x4& before, DeviceArray<PointXYZ> centroid);

  /// This transformation followed by `m`.
  std::shared_ptr<const PendingTransformation> followedBy(const Matrix4x4& m) const;
  /// This transformation followed by the translation by minus the point in `centroid`.
  std::shared_ptr<const PendingTransformation> followedByCentring(DeviceArray<PointXYZ> centroid) const;

  /// The product. The first call reads the centroids (blocking, on the device's own
  /// queue after the work that computes them); later calls return it at once. Throws
  /// InvalidState when a centroid is NaN, and keeps throwing: nothing is cached then.
  const Matrix4x4& matrix() const;
  /// Whether matrix() returns without reading the device.
  bool isResolved() const noexcept;
  /// The same steps, with the centroids not read yet (UnorganizedPointCloud::reread).
  std::shared_ptr<const PendingTransformation> unread() const;

 private:
  /// A translation by minus the point in `centroid` when it is set, else `matrix`.
  struct Step {
    DeviceArray<PointXYZ> centroid;
    Matrix4x4 matrix;
  };

  PendingTransformation(const Matrix4x4& before, std::vector<Step> steps);
  std::shared_ptr<const PendingTransformation> followedBy(Step step) const;

  Matrix4x4 before_;
  std::vector<Step> steps_;
  mutable std::mutex mutex_;
  mutable std::optional<Matrix4x4> matrix_;
};

}  // namespace devicearray::detail
