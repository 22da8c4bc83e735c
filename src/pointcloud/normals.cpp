// Plane-fit normals: organized clouds over a window of the grid, unorganized clouds over
// their nearest neighbours (kernels: src/kernels/pointcloud_normals.h).
#include <cmath>

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

namespace {

/// The window kernels' test of the points a later region of interest surely removes
/// (normal_signatures.h): the box's three slab coordinates as affine functions of the
/// untransformed point, and a bound on their rounding. `restricted` 0: no test.
struct KeepTest {
  int restricted = 0;
  float slab[3][4] = {};
  float lenU = 0, lenV = 0, lo = 0, hi = 0;
  float tolerance[4] = {};
};

/// Composes the box test of the ROI kernel with the transform before it, in double: the
/// slab coordinate w . (L p + t - O) is (L^T w) . p + w . (t - O). Both the ROI stage and
/// the kernel round in float, each within a few units in the last place of
/// sum_ij |L_ij p_j| + sum_i |t_i| + |O_i| (|w| = 1); the margin is 1e-5 of that.
KeepTest keepTestOf(const pc::RoiParams& box, const Matrix4x4& m) {
  KeepTest k;
  k.restricted = 1;
  const float* axes[3] = {box.u, box.v, box.n};
  for (int a = 0; a < 3; ++a) {
    double offset = 0;
    for (int i = 0; i < 3; ++i) offset += double(axes[a][i]) * (double(m[4 * i + 3]) - box.o[i]);
    for (int j = 0; j < 3; ++j) {
      double c = 0;
      for (int i = 0; i < 3; ++i) c += double(axes[a][i]) * m[4 * i + j];
      k.slab[a][j] = static_cast<float>(c);
    }
    k.slab[a][3] = static_cast<float>(offset);
  }
  constexpr double kMargin = 1e-5;  // ~170 float epsilons: far above either rounding
  double constant = 0;
  for (int i = 0; i < 3; ++i) constant += std::abs(double(m[4 * i + 3])) + std::abs(double(box.o[i]));
  for (int j = 0; j < 3; ++j) {
    double column = 0;
    for (int i = 0; i < 3; ++i) column += std::abs(double(m[4 * i + j]));
    k.tolerance[j] = static_cast<float>(kMargin * column);
  }
  k.tolerance[3] = static_cast<float>(kMargin * constant);
  k.lenU = box.lenU;
  k.lenV = box.lenV;
  k.lo = box.lo;
  k.hi = box.hi;
  return k;
}

DeviceArray<NormalXYZ> planeFitNormals(const PointCloud& cloud, const DeviceArray<PointXYZ>& xyz, int windowSize,
                                       const KeepTest& keep, StreamOrQueue sq, const char* fn) {
  if (windowSize < 3 || windowSize > 2 * DA_NRM_MAX_RADIUS + 1 || windowSize % 2 == 0)
    pc::raise(ErrorCode::InvalidArgument, fn,
              "windowSize is " + std::to_string(windowSize) + "; it must be odd and in [3, 15]");
  const auto q = pc::queueOf(cloud.device(), sq, fn);
  const int height = cloud.height(), width = cloud.width();
  DeviceArray<NormalXYZ> normals = pc::allocateOrganized<NormalXYZ>(*q, height, width, fn);
  OrderedUse use(*q, {pc::storageOf(xyz), pc::storageOf(normals)});
  const auto tiles = static_cast<std::size_t>((width + DA_NRM_TILE_W - 1) / DA_NRM_TILE_W) *
                     static_cast<std::size_t>((height + DA_NRM_TILE_H - 1) / DA_NRM_TILE_H);
  const LaunchGeometry geometry = LaunchGeometry::groups(tiles, DA_NRM_WINDOW_GROUP);
  const Matrix4x4& pose = cloud.transformationMatrix();
  const float camX = pose[3], camY = pose[7], camZ = pose[11];
  const auto launchWindow = [&]<class Kernel>(Kernel) {
    detail::launch<Kernel>(*q, geometry, width, height, camX, camY, camZ, keep.restricted, keep.slab[0][0],
                           keep.slab[0][1], keep.slab[0][2], keep.slab[0][3], keep.slab[1][0], keep.slab[1][1],
                           keep.slab[1][2], keep.slab[1][3], keep.slab[2][0], keep.slab[2][1], keep.slab[2][2],
                           keep.slab[2][3], keep.lenU, keep.lenV, keep.lo, keep.hi, keep.tolerance[0],
                           keep.tolerance[1], keep.tolerance[2], keep.tolerance[3], pc::arg(xyz), pc::arg(normals));
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

}  // namespace

DeviceArray<NormalXYZ> PointCloud::deviceNormalsXYZ(int windowSize, StreamOrQueue sq) const {
  return planeFitNormals(*this, xyz_, windowSize, KeepTest{}, sq, "PointCloud::deviceNormalsXYZ");
}

DeviceArray<NormalXYZ> PointCloud::deviceNormalsXYZ(int windowSize, const RegionOfInterestBox& keptBy,
                                                    const Matrix4x4& boxFromCloud, StreamOrQueue sq) const {
  constexpr const char* fn = "PointCloud::deviceNormalsXYZ";
  pc::checkAffine(boxFromCloud, fn);
  return planeFitNormals(*this, xyz_, windowSize, keepTestOf(pc::checkBox(keptBy, fn), boxFromCloud), sq, fn);
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
