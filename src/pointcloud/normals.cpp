// Plane-fit normals: organized clouds over a window of the grid, unorganized clouds over
// their nearest neighbours (kernels: src/kernels/pointcloud_normals.h).
#include <algorithm>
#include <cmath>
#include <numbers>

#include "pointcloud/neighbour_grid.hpp"
#include "pointcloud/normal_estimation.hpp"
#include "pointcloud/pointcloud_internal.hpp"

namespace devicearray {

using detail::LaunchGeometry;
using detail::OrderedUse;
namespace kernels = detail::kernels;
namespace pc = detail::pc;

namespace detail::pc {

namespace {

/// The largest extent of the valid points along an axis (0 for fewer than two distinct
/// points; blocks).
float largestExtent(QueueImpl& q, BufferRef xyz, std::size_t count, const char* fn) {
  const auto bounds = scratch(q, 6, sizeof(float), fn);
  {
    OrderedUse use(q, {xyz.allocation, bounds.get()});
    q.device()->primitives().boundsValidXYZ(q, xyz, count, {bounds.get(), 0});
    use.commit();
  }
  float b[6];
  readBack(q, bounds.get(), 0, b, sizeof(b));
  const float extent = std::max({b[3] - b[0], b[4] - b[1], b[5] - b[2]});
  return std::isfinite(extent) ? extent : 0.0f;
}

}  // namespace

DeviceArray<NormalXYZ> estimateNormals(QueueImpl& q, BufferRef xyz, std::size_t count, int neighbours,
                                       const std::array<float, 3>& viewpoint, const char* fn) {
  if (neighbours < 3 || neighbours > DA_NRM_MAX_NEIGHBOURS)
    raise(ErrorCode::InvalidArgument, fn,
          "neighbours is " + std::to_string(neighbours) + "; it must be in [3, " +
              std::to_string(DA_NRM_MAX_NEIGHBOURS) + "]");
  DeviceArray<NormalXYZ> normals = allocateUnorganized<NormalXYZ>(q, count, fn);
  // The cell edge follows the point spacing s: points on a surface fill an occupied cell
  // of edge c with about (c / s)^2 of them, so a coarse grid's occupancy gives s, and the
  // k nearest neighbours lie within about s * sqrt(k / pi), which one ring of cells of
  // that edge covers (a margin over it: the k-th nearest may lie farther).
  const float extent = largestExtent(q, xyz, count, fn);
  float coarse = extent > 0.0f ? extent / 64.0f : 1.0f;
  double spacing = coarse;
  for (int attempt = 0; attempt < 4; ++attempt) {
    const NeighbourGrid probe(q, xyz, count, coarse, fn);
    const double cells = static_cast<double>(probe.occupiedCells(q));
    spacing = coarse * std::sqrt(cells / static_cast<double>(std::max<std::size_t>(count, 1)));
    // Nearly one point per cell says little about the spacing: try coarser cells.
    if (cells * 4 <= static_cast<double>(count) || coarse >= extent) break;
    coarse *= 4.0f;
  }
  const float cell = static_cast<float>(std::max(1.5 * spacing * std::sqrt(neighbours / std::numbers::pi), 1e-3));
  const NeighbourGrid grid(q, xyz, count, cell, fn);
  OrderedUse use(q, {grid.storage(), storageOf(normals)});
  launch<kernels::da_nrm_knn>(q, LaunchGeometry::items(count), i64(count), neighbours, grid.mask(), viewpoint[0],
                              viewpoint[1], viewpoint[2], grid.grid(), grid.sortedXyz(), grid.order(), grid.claims(),
                              grid.slotKeys(), grid.slotRanges(), arg(normals));
  use.commit();
  return normals;
}

}  // namespace detail::pc

DeviceArray<NormalXYZ> PointCloud::deviceNormalsXYZ(int windowSize, StreamOrQueue sq) const {
  constexpr const char* fn = "PointCloud::deviceNormalsXYZ";
  if (windowSize < 3 || windowSize > 15 || windowSize % 2 == 0)
    pc::raise(ErrorCode::InvalidArgument, fn,
              "windowSize is " + std::to_string(windowSize) + "; it must be odd and in [3, 15]");
  const auto q = pc::queueOf(device(), sq, fn);
  DeviceArray<NormalXYZ> normals = pc::allocateOrganized<NormalXYZ>(*q, height_, width_, fn);
  OrderedUse use(*q, {pc::storageOf(xyz_), pc::storageOf(normals)});
  detail::launch<kernels::da_nrm_window>(
      *q, LaunchGeometry::grid(static_cast<std::size_t>(width_), static_cast<std::size_t>(height_)), width_, height_,
      windowSize / 2, transform_[3], transform_[7], transform_[11], pc::arg(xyz_), pc::arg(normals));
  use.commit();
  return normals;
}

void UnorganizedPointCloud::estimateNormals(int neighbours, StreamOrQueue sq) {
  constexpr const char* fn = "UnorganizedPointCloud::estimateNormals";
  const auto q = pc::queueOf(device(), sq, fn);
  if (neighbours < 3 || neighbours > DA_NRM_MAX_NEIGHBOURS)
    pc::raise(ErrorCode::InvalidArgument, fn,
              "neighbours is " + std::to_string(neighbours) + "; it must be in [3, " +
                  std::to_string(DA_NRM_MAX_NEIGHBOURS) + "]");
  if (isEmpty()) return;
  normals_ = pc::estimateNormals(*q, pc::bufferOf(xyz_), size(), neighbours,
                                 {transform_[3], transform_[7], transform_[11]}, fn);
}
void UnorganizedPointCloud::estimateNormals(int neighbours) {
  estimateNormals(neighbours, device().sdkStreamOrQueue());
  pc::finishDeviceQueue(device());
}

}  // namespace devicearray
