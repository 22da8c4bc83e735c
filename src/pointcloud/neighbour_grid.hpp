// A voxel-hash grid over the points of an XYZ buffer, for neighbour searches on the
// device: the points sorted by cell, and a hash table from a cell to its run of sorted
// points (kernels: src/kernels/pointcloud_neighbours.h). The building block of the
// normals of unorganized clouds, the registration's correspondences and the
// neighbourhood filters.
//
// Building and searching only enqueue work on the given queue; nothing waits for the
// device. A search visits the cells within `rings` of the query's cell, so with one ring
// every point closer than cellSize() is found.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>

#include "backend/backend.hpp"
#include "backend/neighbour_grid_signatures.h"

namespace devicearray::detail::pc {

class NeighbourGrid {
 public:
  /// Enqueues the grid of the `count` points of `xyz` (3 floats each; missing points
  /// are left out) with cells of edge `cellSize` (> 0; grown where an axis would need
  /// 2^21 - 1 or more cells). The caller orders `xyz` (OrderedUse) around the call and
  /// keeps it unchanged until the grid is built on `q`.
  NeighbourGrid(QueueImpl& q, BufferRef xyz, std::size_t count, float cellSize, const char* fn);

  std::size_t size() const noexcept { return count_; }
  /// The requested cell edge.
  float cellSize() const noexcept { return cellSize_; }
  /// The memory of the grid, for OrderedUse.
  Allocation* storage() const noexcept { return memory_.get(); }

  /// Kernel arguments of the grid (see neighbour_grid_signatures.h).
  ///@{
  std::uint32_t mask() const noexcept { return mask_; }
  BufferRef grid() const noexcept { return {memory_.get(), gridAt_}; }
  BufferRef sortedXyz() const noexcept { return {memory_.get(), sortedXyzAt_}; }
  BufferRef order() const noexcept { return {memory_.get(), orderAt_}; }
  BufferRef claims() const noexcept { return {memory_.get(), claimsAt_}; }
  BufferRef slotKeys() const noexcept { return {memory_.get(), slotKeysAt_}; }
  BufferRef slotRanges() const noexcept { return {memory_.get(), slotRangesAt_}; }
  ///@}

  /// Enqueues the k (1..DA_NG_MAX_K) nearest grid points closer than maxDistance of
  /// each of `count` query points: neighbours[i * k + m] the original index of the m-th
  /// nearest (0xFFFFFFFF for none), distances[i * k + m] its distance (NaN for none).
  void nearest(QueueImpl& q, BufferRef queries, std::size_t count, int k, int rings, float maxDistance,
               BufferRef neighbours, BufferRef distances) const;

  /// Enqueues sorted[j] = values[order[j]] for a buffer of 3 floats per point (such as
  /// the points' normals), so that kernels read them in the grid's order.
  void gatherSorted(QueueImpl& q, BufferRef values, BufferRef sorted) const;

  /// The number of occupied cells; blocks until the grid is built.
  std::size_t occupiedCells(QueueImpl& q) const;

 private:
  std::size_t count_ = 0;
  float cellSize_ = 0;
  std::uint32_t mask_ = 0;
  std::size_t slots_ = 0;
  std::shared_ptr<Allocation> memory_;
  std::size_t gridAt_ = 0, sortedXyzAt_ = 0, orderAt_ = 0, claimsAt_ = 0, slotKeysAt_ = 0, slotRangesAt_ = 0;
};

/// A cell edge with which one ring of cells around a point usually holds its `neighbours`
/// nearest points: `margin` times their typical distance on a surface, from the points'
/// spacing (which the occupancy of coarse grids gives; blocks a few times). `extent`,
/// when given, receives the largest extent of the valid points along an axis (0 for
/// fewer than two distinct points).
float neighbourCellSize(QueueImpl& q, BufferRef xyz, std::size_t count, int neighbours, float margin, float* extent,
                        const char* fn);

}  // namespace devicearray::detail::pc
