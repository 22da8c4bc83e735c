// devicearray — registration of two unorganized point clouds on the device: the rigid
// transform that moves a source cloud onto a target cloud, for stitching views of one
// object taken from several poses (docs/stitching.md).
#pragma once

#include "devicearray/point_cloud.hpp"
#include "devicearray/device.hpp"

namespace devicearray {

/// How localPointCloudRegistration searches and when it stops.
struct LocalPointCloudRegistrationParameters {
  /// A source point is paired with its nearest target point only when that is closer
  /// than this (mm); it bounds how far apart the initial alignment may leave the views.
  float maxCorrespondenceDistance = 10.0f;
  /// The most ICP steps.
  int maxIterations = 200;
  /// Converged when, from one step to the next, the RMS error changes by less than
  /// rmsChangeThreshold (mm) and the source coverage by less than
  /// coverageChangeThreshold (a fraction, in [0, 1]).
  ///@{
  float rmsChangeThreshold = 1e-3f;
  float coverageChangeThreshold = 1e-3f;
  ///@}
  /// A registration that ends with a smaller source coverage is not converged: the views
  /// barely overlap, and a transform fitted to so few points is not to be trusted. A
  /// fraction of the source points, in [0, 1].
  float minSourceCoverage = 0.05f;
};

/// What localPointCloudRegistration found.
class LocalPointCloudRegistrationResult {
 public:
  /// Not converged, identity, no coverage.
  LocalPointCloudRegistrationResult() = default;
  /// A result with the given values (what localPointCloudRegistration returns).
  LocalPointCloudRegistrationResult(const Matrix4x4& transform, bool converged, float sourceCoverage,
                                    float rootMeanSquareError)
      : transform_(transform), converged_(converged), coverage_(sourceCoverage), rms_(rootMeanSquareError) {}

  /// The rigid transform that maps source points into the target's frame (the last
  /// estimate when not converged).
  Matrix4x4 transform() const { return transform_; }
  /// Whether the convergence criteria were met within maxIterations with enough
  /// overlap (minSourceCoverage).
  bool converged() const { return converged_; }
  /// The fraction of the source points, moved by transform(), that have a target point
  /// within maxCorrespondenceDistance, in [0, 1].
  float sourceCoverage() const { return coverage_; }
  /// The root mean square of the point-to-plane distances of those pairs (mm); NaN when
  /// there is none.
  float rootMeanSquareError() const { return rms_; }

 private:
  Matrix4x4 transform_ = identityMatrix4x4();
  bool converged_ = false;
  float coverage_ = 0.0f;
  float rms_ = 0.0f;
};

/// Point-to-plane ICP on the device: each step pairs every source point (moved by the
/// current estimate, starting at `initialTransform`) with its nearest target point
/// closer than maxCorrespondenceDistance (through a voxel-hash grid of the target),
/// sums the 6x6 normal equations of the point-to-plane distances on the device and
/// solves them on the host. The target's normals are used when it has them, estimated
/// (UnorganizedPointCloud::estimateNormals) otherwise; the source needs none. Both
/// clouds must be on one device. Runs on `sq` and blocks (each step reads its sums
/// back); the overload without a stream runs on the device's own queue. Throws
/// InvalidArgument for an empty cloud, clouds on different devices,
/// maxCorrespondenceDistance not finite and > 0, maxIterations < 0, negative
/// thresholds, coverageChangeThreshold or minSourceCoverage above 1, or a non-affine
/// initialTransform.
///@{
LocalPointCloudRegistrationResult localPointCloudRegistration(
    const UnorganizedPointCloud& target, const UnorganizedPointCloud& source,
    const LocalPointCloudRegistrationParameters& parameters = {},
    const Matrix4x4& initialTransform = identityMatrix4x4());
LocalPointCloudRegistrationResult localPointCloudRegistration(const UnorganizedPointCloud& target,
                                                              const UnorganizedPointCloud& source,
                                                              const LocalPointCloudRegistrationParameters& parameters,
                                                              const Matrix4x4& initialTransform,
                                                              const StreamOrQueue& sq);
///@}

}  // namespace devicearray
