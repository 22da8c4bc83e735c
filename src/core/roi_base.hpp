// The test that a region-of-interest box's origin O and points A, B span its base,
// shared by the point-cloud calls that take a box (pointcloud/pointcloud_common.cpp)
// and PipelineStages::validate (io/frame_pipeline_stages.cpp): a box the stage value
// accepts is never refused by a stage later.
#pragma once

#include <cmath>

namespace devicearray::detail {

/// Whether the edges u = A - O and v = B - O span a plane: |u x v| > 1e-9 |u| |v|, the
/// sine of their angle above 1e-9 (false when either edge is zero).
inline bool spansBase(const double (&u)[3], const double (&v)[3]) {
  const double n[3] = {u[1] * v[2] - u[2] * v[1], u[2] * v[0] - u[0] * v[2], u[0] * v[1] - u[1] * v[0]};
  const double lu = std::sqrt(u[0] * u[0] + u[1] * u[1] + u[2] * u[2]);
  const double lv = std::sqrt(v[0] * v[0] + v[1] * v[1] + v[2] * v[2]);
  return std::sqrt(n[0] * n[0] + n[1] * n[1] + n[2] * n[2]) > 1e-9 * lu * lv;
}

}  // namespace devicearray::detail
