// Outlier removal on unorganized clouds: statistical (mean distance to the k nearest
// points) and radius (points within a radius), through a neighbour grid (kernels:
// src/kernels/pointcloud_outliers.h); the kept points are compacted in their order.
#include <algorithm>
#include <cmath>
#include <cstdio>

#include "pointcloud/neighbour_grid.hpp"
#include "pointcloud/pointcloud_internal.hpp"
#include "pointcloud/scratch_layout.hpp"

namespace devicearray {

namespace kernels = detail::kernels;
namespace pc = detail::pc;
using detail::LaunchGeometry;

namespace {

std::string text(float v) {
  char s[32];  // %g: std::to_string prints 1e-9 as 0.000000
  std::snprintf(s, sizeof s, "%g", static_cast<double>(v));
  return s;
}

/// The points of `cloud` whose keep flag (flags[0..n), flags[n] = 0, in `scratch`) is set,
/// in their order, with their attributes (the caller gives the result the cloud's
/// transformation, which may still be on the device); blocks once for the count.
UnorganizedPointCloud keptPoints(detail::QueueImpl& q, const UnorganizedPointCloud& cloud,
                                 const std::shared_ptr<detail::Allocation>& scratch, std::size_t flagsAt,
                                 std::size_t offsetsAt, const char* fn) {
  const std::size_t n = cloud.size();
  const auto& xyz = cloud.storedXYZ();
  const auto& colors = cloud.storedColors();
  const auto& snrs = cloud.storedSNRs();
  const auto& normals = cloud.storedNormals();
  const pc::CompactResult cap =
      pc::allocateAttributes(q, n, cloud.hasColors(), cloud.hasSNRs(), cloud.hasNormals(), fn, 1);
  {
    detail::OrderedUse use(q, {pc::storageOf(xyz), pc::storageOf(colors), pc::storageOf(snrs), pc::storageOf(normals),
                       scratch.get(), pc::storageOf(cap.xyz)});
    q.device()->primitives().exclusiveScanU32(q, {scratch.get(), flagsAt}, {scratch.get(), offsetsAt}, n + 1);
    pc::enqueueCompaction(q, n, {scratch.get(), offsetsAt}, xyz, colors, snrs, normals, cap);
    use.commit();
  }
  std::uint32_t count = 0;
  pc::readBack(q, cap.block.get(), cap.countAt, &count, sizeof(count));
  const pc::CompactResult r = pc::trimmed(q, cap, n, count, fn);
  return UnorganizedPointCloud::fromParts(cloud.device(), r.xyz, r.colors, r.snrs, identityMatrix4x4(), r.normals,
                                          cloud.colorSpace());
}

}  // namespace

// ------------------------------------------------------------ statistical ----

UnorganizedPointCloud UnorganizedPointCloud::statisticalOutliersRemoved(int neighbours, float stdRatio,
                                                                        StreamOrQueue sq) const {
  constexpr const char* fn = "UnorganizedPointCloud::statisticalOutliersRemoved";
  if (neighbours < 1 || neighbours > DA_NG_MAX_K)
    pc::raise(ErrorCode::InvalidArgument, fn,
              "neighbours is " + std::to_string(neighbours) + "; it must be in [1, " + std::to_string(DA_NG_MAX_K) +
                  "]");
  if (!(std::isfinite(stdRatio) && stdRatio >= 0.0f))
    pc::raise(ErrorCode::InvalidArgument, fn, "stdRatio is " + text(stdRatio) + "; it must be finite and >= 0");
  const auto q = pc::queueOf(device(), sq, fn);
  if (isEmpty()) return fromParts(device_, {}, {}, {}, transform_).withTransformationOf(*this);
  const std::size_t n = size();
  pc::ScratchLayout layout;
  const std::size_t sumsAt = layout.add(4, sizeof(double), fn);
  const std::size_t pendingAt = layout.add(n + 1, sizeof(std::uint32_t), fn);  // then the keep flags
  const std::size_t offsetsAt = layout.add(n + 1, sizeof(std::uint32_t), fn);
  const std::size_t statsAt = layout.add(3 * n, sizeof(float), fn);
  const auto scratch = layout.allocate(*q);
  detail::Allocation* const t = scratch.get();
  {
    detail::OrderedUse use(*q, {t});
    pc::fillU32(*q, t, pendingAt, n, 1u);
    pc::fillU32(*q, t, pendingAt + n * sizeof(std::uint32_t), 1, 0u);
    use.commit();
  }
  // Exact k nearest: a point is settled once k points lie within one cell edge of it
  // (one ring then holds them all). The first grid's cells follow the point spacing, so
  // nearly every point settles there; each further grid has cells 4 times larger for the
  // points left (isolated ones), until a cell spans the cloud and the search sees every
  // point. Each round but the last blocks once to count the points left.
  float extent = 0.0f;
  float cell = pc::neighbourCellSize(*q, pc::bufferOf(xyz_), n, neighbours, 1.2f, &extent, fn);
  for (;;) {
    const bool complete = !(cell < extent);
    const pc::NeighbourGrid grid(*q, pc::bufferOf(xyz_), n, cell, fn);
    {
      detail::OrderedUse use(*q, {grid.storage(), t});
      detail::launch<kernels::da_sor_mean>(*q, LaunchGeometry::items(n), pc::i64(n), neighbours, complete ? 1 : 0,
                                           grid.mask(), grid.grid(), grid.sortedXyz(), grid.order(), grid.claims(),
                                           grid.slotKeys(), grid.slotRanges(), pc::arg(scratch, pendingAt),
                                           pc::arg(scratch, statsAt));
      if (!complete)
        q->device()->primitives().exclusiveScanU32(*q, {t, pendingAt}, {t, offsetsAt}, n + 1);
      use.commit();
    }
    if (complete) break;
    std::uint32_t left = 0;
    pc::readBack(*q, t, offsetsAt + n * sizeof(std::uint32_t), &left, sizeof(left));
    if (left == 0) break;
    cell = std::min(cell * 4.0f, extent);
  }
  // The mean and the sample standard deviation of the points' mean distances: sums of
  // (mean, mean^2) in double on the device, read back (a blocking read).
  {
    detail::OrderedUse use(*q, {t});
    q->device()->primitives().sumValidXYZ(*q, {t, statsAt}, n, {t, sumsAt});
    use.commit();
  }
  double sums[4] = {0, 0, 0, 0};
  pc::readBack(*q, t, sumsAt, sums, sizeof(sums));
  const double count = sums[3];
  double threshold = -1.0;  // no valid point: none is kept
  if (count > 0.0) {
    const double mean = sums[0] / count;
    const double variance = count > 1.0 ? std::max(0.0, (sums[1] - count * mean * mean) / (count - 1.0)) : 0.0;
    threshold = mean + static_cast<double>(stdRatio) * std::sqrt(variance);
  }
  {
    detail::OrderedUse use(*q, {t});
    detail::launch<kernels::da_sor_keep>(*q, LaunchGeometry::items(n + 1), pc::i64(n), static_cast<float>(threshold),
                                         pc::arg(scratch, statsAt), pc::arg(scratch, pendingAt));
    use.commit();
  }
  return keptPoints(*q, *this, scratch, pendingAt, offsetsAt, fn).withTransformationOf(*this);
}

UnorganizedPointCloud UnorganizedPointCloud::statisticalOutliersRemoved(int neighbours, float stdRatio) const {
  UnorganizedPointCloud out = statisticalOutliersRemoved(neighbours, stdRatio, device().sdkStreamOrQueue());
  pc::finishDeviceQueue(device());
  return out;
}
void UnorganizedPointCloud::removeStatisticalOutliers(int neighbours, float stdRatio, StreamOrQueue sq) {
  *this = statisticalOutliersRemoved(neighbours, stdRatio, sq);
}
void UnorganizedPointCloud::removeStatisticalOutliers(int neighbours, float stdRatio) {
  *this = statisticalOutliersRemoved(neighbours, stdRatio);
}

// ----------------------------------------------------------------- radius ----

UnorganizedPointCloud UnorganizedPointCloud::radiusOutliersRemoved(float radius, int minPoints,
                                                                   StreamOrQueue sq) const {
  constexpr const char* fn = "UnorganizedPointCloud::radiusOutliersRemoved";
  if (!(std::isfinite(radius) && radius > 0.0f))
    pc::raise(ErrorCode::InvalidArgument, fn, "radius is " + text(radius) + "; it must be finite and > 0");
  if (minPoints < 1)
    pc::raise(ErrorCode::InvalidArgument, fn, "minPoints is " + std::to_string(minPoints) + "; it must be >= 1");
  const auto q = pc::queueOf(device(), sq, fn);
  if (isEmpty()) return fromParts(device_, {}, {}, {}, transform_).withTransformationOf(*this);
  const std::size_t n = size();
  pc::ScratchLayout layout;
  const std::size_t flagsAt = layout.add(n + 1, sizeof(std::uint32_t), fn);
  const std::size_t offsetsAt = layout.add(n + 1, sizeof(std::uint32_t), fn);
  const auto scratch = layout.allocate(*q);
  // Cells of edge `radius`: the points within the radius lie in the cells around the
  // point's own (the kernel takes the exact span of cells the radius reaches).
  const pc::NeighbourGrid grid(*q, pc::bufferOf(xyz_), n, radius, fn);
  {
    detail::OrderedUse use(*q, {grid.storage(), scratch.get()});
    detail::launch<kernels::da_ror_flags>(*q, LaunchGeometry::items(n), pc::i64(n), radius, minPoints, grid.mask(),
                                          grid.grid(), grid.sortedXyz(), grid.order(), grid.claims(),
                                          grid.slotKeys(), grid.slotRanges(), pc::arg(scratch, flagsAt));
    use.commit();
  }
  return keptPoints(*q, *this, scratch, flagsAt, offsetsAt, fn).withTransformationOf(*this);
}

UnorganizedPointCloud UnorganizedPointCloud::radiusOutliersRemoved(float radius, int minPoints) const {
  UnorganizedPointCloud out = radiusOutliersRemoved(radius, minPoints, device().sdkStreamOrQueue());
  pc::finishDeviceQueue(device());
  return out;
}
void UnorganizedPointCloud::removeRadiusOutliers(float radius, int minPoints, StreamOrQueue sq) {
  *this = radiusOutliersRemoved(radius, minPoints, sq);
}
void UnorganizedPointCloud::removeRadiusOutliers(float radius, int minPoints) {
  *this = radiusOutliersRemoved(radius, minPoints);
}

}  // namespace devicearray
