// PendingTransformation: a transformation matrix whose translations by minus a centroid
// are read from the device when the matrix is first needed.
#include "pointcloud/pending_transformation.hpp"

#include <cmath>

#include "pointcloud/pointcloud_internal.hpp"

namespace devicearray::detail {

std::array<float, 3> readCentroid(QueueImpl& q, const DeviceArray<PointXYZ>& centroid) {
  PointXYZ c{};
  pc::readBack(q, pc::storageOf(centroid), pc::bufferOf(centroid).offset, &c, sizeof c);
  // The device writes NaN exactly when the sums count no point.
  if (std::isnan(c.x))
    pc::raise(ErrorCode::InvalidState, "UnorganizedPointCloud::centroid", "the cloud has no valid (finite) point");
  return {c.x, c.y, c.z};
}

PendingTransformation::PendingTransformation(const Matrix4x4& before, DeviceArray<PointXYZ> centroid)
    : before_(before), steps_{Step{std::move(centroid), identityMatrix4x4()}} {}

PendingTransformation::PendingTransformation(const Matrix4x4& before, std::vector<Step> steps)
    : before_(before), steps_(std::move(steps)) {}

std::shared_ptr<const PendingTransformation> PendingTransformation::followedBy(Step step) const {
  std::vector<Step> steps = steps_;
  steps.push_back(std::move(step));
  return std::shared_ptr<const PendingTransformation>(new PendingTransformation(before_, std::move(steps)));
}

std::shared_ptr<const PendingTransformation> PendingTransformation::unread() const {
  return std::shared_ptr<const PendingTransformation>(new PendingTransformation(before_, steps_));
}

std::shared_ptr<const PendingTransformation> PendingTransformation::followedBy(const Matrix4x4& m) const {
  return followedBy(Step{{}, m});
}

std::shared_ptr<const PendingTransformation> PendingTransformation::followedByCentring(
    DeviceArray<PointXYZ> centroid) const {
  return followedBy(Step{std::move(centroid), identityMatrix4x4()});
}

const Matrix4x4& PendingTransformation::matrix() const {
  const std::lock_guard<std::mutex> lock(mutex_);
  if (matrix_) return *matrix_;
  Matrix4x4 product = before_;
  for (const Step& step : steps_) {
    Matrix4x4 m = step.matrix;
    if (step.centroid.isValid()) {
      // The library queue's read is ordered after the centring stream's work through the
      // allocation's last event, whatever stream that was.
      const std::array<float, 3> c = readCentroid(*step.centroid.device().impl()->libraryQueue(), step.centroid);
      m[3] = -c[0];
      m[7] = -c[1];
      m[11] = -c[2];
    }
    product = pc::multiply(m, product);
  }
  matrix_ = product;
  return *matrix_;
}

bool PendingTransformation::isResolved() const noexcept {
  const std::lock_guard<std::mutex> lock(mutex_);
  return matrix_.has_value();
}

}  // namespace devicearray::detail
