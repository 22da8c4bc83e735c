// devicearray — normals of an organized HostPointCloud, computed on the host.
//
// Host only: nothing here touches a GPU, takes a stream or blocks on device work.
// Every failure throws devicearray::Error.
#pragma once

#include <vector>

#include "devicearray/host_point_cloud.hpp"

namespace devicearray {

/// Normals of an organized cloud from its grid, as PointCloud defines them: the unit
/// cross product of the horizontal and vertical central differences of neighbouring
/// valid points (one-sided at borders and next to holes), oriented towards the camera
/// (n · p < 0), NaN where a point is missing or has no valid neighbour along an axis.
/// Returns 3 floats per point. Blocking. Throws InvalidArgument for an unorganized or
/// invalid cloud.
std::vector<float> estimateOrganizedNormals(const HostPointCloud& cloud);

}  // namespace devicearray
