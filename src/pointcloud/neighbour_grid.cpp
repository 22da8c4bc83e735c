#include "pointcloud/neighbour_grid.hpp"

#include <algorithm>
#include <bit>
#include <cmath>
#include <numbers>
#include <string>

#include "pointcloud/pointcloud_internal.hpp"
#include "pointcloud/scratch_layout.hpp"

namespace devicearray::detail::pc {

NeighbourGrid::NeighbourGrid(QueueImpl& q, BufferRef xyz, std::size_t count, float cellSize, const char* fn)
    : count_(count), cellSize_(cellSize) {
  if (!(std::isfinite(cellSize) && cellSize > 0.0f))
    raise(ErrorCode::InvalidArgument, fn, "the neighbour grid's cell size " + std::to_string(cellSize) +
                                              " must be finite and > 0");
  checkPointCount(count, fn);
  // Twice as many slots as points (hence cells), so probe sequences stay short.
  slots_ = std::bit_ceil(std::max<std::size_t>(2 * count, 16));
  mask_ = static_cast<std::uint32_t>(slots_ - 1);
  const std::size_t n = std::max<std::size_t>(count, 1);
  ScratchLayout layout;
  gridAt_ = layout.add(DA_NG_GRID_FLOATS, sizeof(float), fn);
  const std::size_t boundsAt = layout.add(6, sizeof(float), fn);
  const std::size_t keysAt = layout.add(n, sizeof(std::uint64_t), fn);
  const std::size_t indicesAt = layout.add(n, sizeof(std::uint32_t), fn);
  const std::size_t sortedKeysAt = layout.add(n, sizeof(std::uint64_t), fn);
  orderAt_ = layout.add(n, sizeof(std::uint32_t), fn);
  sortedXyzAt_ = layout.add(3 * n, sizeof(float), fn);
  claimsAt_ = layout.add(slots_ + 1, sizeof(std::uint32_t), fn);  // + 1: a 0 that ends the occupancy scan
  slotKeysAt_ = layout.add(slots_, sizeof(std::uint64_t), fn);
  slotRangesAt_ = layout.add(2 * slots_, sizeof(std::uint32_t), fn);
  memory_ = layout.allocate(q);
  Allocation* const t = memory_.get();

  OrderedUse use(q, {xyz.allocation, t});
  fillU32(q, t, claimsAt_, slots_ + 1, 0u);
  auto& primitives = q.device()->primitives();
  primitives.boundsValidXYZ(q, xyz, count, {t, boundsAt});
  launch<kernels::da_ng_setup>(q, LaunchGeometry::items(1), cellSize, arg(memory_, boundsAt), arg(memory_, gridAt_));
  if (count > 0) {
    launch<kernels::da_ng_keys>(q, LaunchGeometry::items(count), i64(count), arg(memory_, gridAt_), xyz,
                                arg(memory_, keysAt), arg(memory_, indicesAt));
    // Cell keys use 63 bits (21 per axis).
    primitives.sortPairsU64U32(q, {t, keysAt}, {t, indicesAt}, {t, sortedKeysAt}, {t, orderAt_}, count, 63);
    launch<kernels::da_ng_gather>(q, LaunchGeometry::items(count), i64(count), arg(memory_, orderAt_), xyz,
                                  arg(memory_, sortedXyzAt_));
    launch<kernels::da_ng_insert>(q, LaunchGeometry::items(count), i64(count), mask_, arg(memory_, sortedKeysAt),
                                  arg(memory_, claimsAt_), arg(memory_, slotKeysAt_), arg(memory_, slotRangesAt_));
    launch<kernels::da_ng_ends>(q, LaunchGeometry::items(count), i64(count), mask_, arg(memory_, sortedKeysAt),
                                arg(memory_, claimsAt_), arg(memory_, slotKeysAt_), arg(memory_, slotRangesAt_));
  }
  use.commit();
}

void NeighbourGrid::nearest(QueueImpl& q, BufferRef queries, std::size_t count, int k, int rings, float maxDistance,
                            BufferRef neighbours, BufferRef distances) const {
  if (count == 0) return;
  OrderedUse use(q, {queries.allocation, memory_.get(), neighbours.allocation, distances.allocation});
  launch<kernels::da_ng_knn>(q, LaunchGeometry::items(count), i64(count), k, rings, maxDistance, mask_, queries,
                             grid(), sortedXyz(), order(), claims(), slotKeys(), slotRanges(), neighbours, distances);
  use.commit();
}

void NeighbourGrid::gatherSorted(QueueImpl& q, BufferRef values, BufferRef sorted) const {
  if (count_ == 0) return;
  OrderedUse use(q, {values.allocation, memory_.get(), sorted.allocation});
  launch<kernels::da_ng_gather>(q, LaunchGeometry::items(count_), i64(count_), order(), values, sorted);
  use.commit();
}

std::size_t NeighbourGrid::occupiedCells(QueueImpl& q) const {
  const auto offsets = scratch(q, slots_ + 1, sizeof(std::uint32_t), "NeighbourGrid::occupiedCells");
  {
    OrderedUse use(q, {memory_.get(), offsets.get()});
    q.device()->primitives().exclusiveScanU32(q, claims(), {offsets.get(), 0}, slots_ + 1);
    use.commit();
  }
  std::uint32_t cells = 0;
  readBack(q, offsets.get(), slots_ * sizeof(std::uint32_t), &cells, sizeof(cells));
  return cells;
}

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

float neighbourCellSize(QueueImpl& q, BufferRef xyz, std::size_t count, int neighbours, float margin,
                        float* extent, const char* fn) {
  // The cell edge follows the point spacing s: points on a surface fill an occupied cell
  // of edge c with about (c / s)^2 of them, so a coarse grid's occupancy gives s, and the
  // k nearest neighbours lie within about s * sqrt(k / pi), which one ring of cells of
  // that edge covers.
  const float largest = largestExtent(q, xyz, count, fn);
  if (extent) *extent = largest;
  float coarse = largest > 0.0f ? largest / 64.0f : 1.0f;
  double spacing = coarse;
  for (int attempt = 0; attempt < 4; ++attempt) {
    const NeighbourGrid probe(q, xyz, count, coarse, fn);
    const double cells = static_cast<double>(probe.occupiedCells(q));
    spacing = coarse * std::sqrt(cells / static_cast<double>(std::max<std::size_t>(count, 1)));
    // Nearly one point per cell says little about the spacing: try coarser cells.
    if (cells * 4 <= static_cast<double>(count) || coarse >= largest) break;
    coarse *= 4.0f;
  }
  return static_cast<float>(std::max(margin * spacing * std::sqrt(neighbours / std::numbers::pi), 1e-3));
}

}  // namespace devicearray::detail::pc
