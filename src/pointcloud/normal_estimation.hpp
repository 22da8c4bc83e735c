// Plane-fit normals of unorganized points through a neighbour grid, shared by
// UnorganizedPointCloud::estimateNormals and the registration (kernels:
// src/kernels/pointcloud_normals.h).
#pragma once

#include <array>
#include <cstddef>

#include "backend/backend.hpp"
#include "devicearray/point_cloud.hpp"

namespace devicearray::detail::pc {

/// The plane-fit normals of the `count` points of `xyz` over each point's `neighbours`
/// (3..DA_NRM_MAX_NEIGHBOURS) nearest points, oriented towards `viewpoint`, on `q`. Blocks a few times
/// to size the grid's cells from the points' spacing. The caller keeps `xyz` unchanged
/// until the work on `q` is done.
DeviceArray<NormalXYZ> estimateNormals(QueueImpl& q, BufferRef xyz, std::size_t count, int neighbours,
                                       const std::array<float, 3>& viewpoint, const char* fn);

}  // namespace devicearray::detail::pc
