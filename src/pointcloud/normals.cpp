// Plane-fit normals: organized clouds over a window of the grid, unorganized clouds over
// their nearest neighbours (kernels: src/kernels/pointcloud_normals.h).
#include "pointcloud/neighbour_grid.hpp"
#include "pointcloud/normal_estimation.hpp"
#include "pointcloud/pointcloud_internal.hpp"

namespace devicearray {

using detail::LaunchGeometry;
using detail::OrderedUse;
namespace kernels = detail::kernels;
namespace pc = detail::pc;

namespace detail::pc {

DeviceArray<NormalXYZ> estimateNormals(QueueImpl& q, BufferRef xyz, std::size_t count, int neighbours,
                                       const std::array<float, 3>& viewpoint, const char* fn) {
  if (neighbours < 3 || neighbours > DA_NRM_MAX_NEIGHBOURS)
    raise(ErrorCode::InvalidArgument, fn,
          "neighbours is " + std::to_string(neighbours) + "; it must be in [3, " +
              std::to_string(DA_NRM_MAX_NEIGHBOURS) + "]");
  DeviceArray<NormalXYZ> normals = allocateUnorganized<NormalXYZ>(q, count, fn);
  // A margin over the typical k-th nearest distance: the plane fit wants every one of the
  // k nearest inside the searched ring.
  const float cell = neighbourCellSize(q, xyz, count, neighbours, 1.5f, nullptr, fn);
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
  if (windowSize < 3 || windowSize > 2 * DA_NRM_MAX_RADIUS + 1 || windowSize % 2 == 0)
    pc::raise(ErrorCode::InvalidArgument, fn,
              "windowSize is " + std::to_string(windowSize) + "; it must be odd and in [3, 15]");
  const auto q = pc::queueOf(device(), sq, fn);
  DeviceArray<NormalXYZ> normals = pc::allocateOrganized<NormalXYZ>(*q, height_, width_, fn);
  OrderedUse use(*q, {pc::storageOf(xyz_), pc::storageOf(normals)});
  const auto tiles = static_cast<std::size_t>((width_ + DA_NRM_TILE_W - 1) / DA_NRM_TILE_W) *
                     static_cast<std::size_t>((height_ + DA_NRM_TILE_H - 1) / DA_NRM_TILE_H);
  const LaunchGeometry geometry = LaunchGeometry::groups(tiles, DA_NRM_WINDOW_GROUP);
  const float camX = transform_[3], camY = transform_[7], camZ = transform_[11];
  const auto launchWindow = [&]<class Kernel>(Kernel) {
    detail::launch<Kernel>(*q, geometry, width_, height_, camX, camY, camZ, pc::arg(xyz_), pc::arg(normals));
  };
  static_assert(DA_NRM_MAX_RADIUS == 7, "one case per kernel instance");
  switch (windowSize / 2) {
    case 1: launchWindow(kernels::da_nrm_window_1{}); break;
    case 2: launchWindow(kernels::da_nrm_window_2{}); break;
    case 3: launchWindow(kernels::da_nrm_window_3{}); break;
    case 4: launchWindow(kernels::da_nrm_window_4{}); break;
    case 5: launchWindow(kernels::da_nrm_window_5{}); break;
    case 6: launchWindow(kernels::da_nrm_window_6{}); break;
    default: launchWindow(kernels::da_nrm_window_7{}); break;
  }
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
  settleSize();  // the new normals have the exact size
  if (isEmpty()) return;
  const Matrix4x4& pose = transformationMatrix();  // reads a centring still on the device
  normals_ = pc::estimateNormals(*q, pc::bufferOf(xyz_), size(), neighbours, {pose[3], pose[7], pose[11]}, fn);
}
void UnorganizedPointCloud::estimateNormals(int neighbours) {
  estimateNormals(neighbours, device().sdkStreamOrQueue());
  pc::finishDeviceQueue(device());
}

}  // namespace devicearray
