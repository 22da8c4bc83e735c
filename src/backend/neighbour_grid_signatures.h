/* Parameters of the neighbour-grid kernels (src/kernels/pointcloud_neighbours.h) and of
 * the outlier removal built on them (src/kernels/pointcloud_outliers.h), declared
 * once for the kernels and for the host code that launches them (kernel_params.h).
 *
 * The grid's geometry lives on the device, in a small `grid` buffer of DA_NG_GRID_FLOATS
 * floats written by da_ng_setup: the origin (min corner, 0..2), the cell edge (3) and
 * the largest cell index per axis (4..6). Building and searching therefore never wait
 * for the host. The hash table maps a cell key to the range of its points in the sorted
 * order: `claims` (0 = free slot), `slotKeys`, `slotRanges` (begin, end per slot). */
#ifndef DEVICEARRAY_BACKEND_NEIGHBOUR_GRID_SIGNATURES_H
#define DEVICEARRAY_BACKEND_NEIGHBOUR_GRID_SIGNATURES_H

#include "backend/kernel_params.h"

/* Floats of the grid geometry buffer. */
#define DA_NG_GRID_FLOATS 8
/* Most neighbours one k-nearest-neighbour search keeps (its private lists' length). */
#define DA_NG_MAX_K 32

/* Grid geometry from the bounds of the valid points (min xyz, max xyz) and the asked-for
 * cell edge, grown where needed so that every axis has fewer than 2^21 - 1 cells. */
#define DA_NG_SETUP_PARAMS(S0, B0, S, B) S0(float, cellSize) B(const float, bounds) B(float, grid)

/* Cell key of each point (the invalid key for a missing point) and its index. */
#define DA_NG_KEYS_PARAMS(S0, B0, S, B)                                                                             \
  S0(da_i64, n) B(const float, grid) B(const float, xyz) B(da_u64, keys) B(da_u32, indices)

/* Claims a hash slot for each cell (at the first sorted point of each run of equal keys)
 * and records where the run begins. */
#define DA_NG_INSERT_PARAMS(S0, B0, S, B)                                                                           \
  S0(da_i64, n) S(da_u32, mask) B(const da_u64, sortedKeys) B(da_u32, claims) B(da_u64, slotKeys)                   \
  B(da_u32, slotRanges)

/* sortedXyz[j] = xyz[order[j]]: the points in cell order, so a cell's points are read
 * from consecutive memory. */
#define DA_NG_GATHER_PARAMS(S0, B0, S, B)                                                                           \
  S0(da_i64, n) B(const da_u32, order) B(const float, xyz) B(float, sortedXyz)

/* Records where each cell's run ends (at the last sorted point of each run). */
#define DA_NG_ENDS_PARAMS(S0, B0, S, B)                                                                             \
  S0(da_i64, n) S(da_u32, mask) B(const da_u64, sortedKeys) B(const da_u32, claims) B(const da_u64, slotKeys)       \
  B(da_u32, slotRanges)

/* The k nearest points (at most maxDistance away, searching `rings` cells around the
 * query's cell) of each query point: indices (of the grid's points; 0xFFFFFFFF for
 * none) and distances (NaN for none), k per query, nearest first. */
#define DA_NG_KNN_PARAMS(S0, B0, S, B)                                                                              \
  S0(da_i64, n) S(int, k) S(int, rings) S(float, maxDistance) S(da_u32, mask) B(const float, queries)               \
  B(const float, grid) B(const float, sortedXyz) B(const da_u32, order) B(const da_u32, claims)                        \
  B(const da_u64, slotKeys) B(const da_u32, slotRanges) B(da_u32, neighbours) B(float, distances)

/* The outlier removal of unorganized clouds (src/kernels/pointcloud_outliers.h): one work
 * item per sorted point of a grid over the cloud itself, results at the point's original
 * index. */

/* Mean distance to the k nearest points (the point itself included) of each point still
 * pending (pending[i] != 0): stats[3i..3i+2] = (mean, mean^2, 0) and pending[i] = 0 once
 * the k nearest are certain, that is when k points lie within one cell edge (less a
 * rounding margin) or when `complete` says the search sees every point. Missing points
 * get NaN statistics. */
#define DA_SOR_MEAN_PARAMS(S0, B0, S, B)                                                                            \
  S0(da_i64, n) S(int, k) S(int, complete) S(da_u32, mask) B(const float, grid) B(const float, sortedXyz)          \
  B(const da_u32, order) B(const da_u32, claims) B(const da_u64, slotKeys) B(const da_u32, slotRanges)             \
  B(da_u32, pending) B(float, stats)

/* flags[i] = 1 where stats[3i] (a point's mean neighbour distance) <= threshold, for
 * i < n; flags[n] = 0 (the scan's total). */
#define DA_SOR_KEEP_PARAMS(S0, B0, S, B) S0(da_i64, n) S(float, threshold) B(const float, stats) B(da_u32, flags)

/* flags[i] = 1 where more than minPoints points (the point itself included) lie within
 * `radius` of point i; flags[n] = 0 (the scan's total). */
#define DA_ROR_FLAGS_PARAMS(S0, B0, S, B)                                                                           \
  S0(da_i64, n) S(float, radius) S(int, minPoints) S(da_u32, mask) B(const float, grid) B(const float, sortedXyz)  \
  B(const da_u32, order) B(const da_u32, claims) B(const da_u64, slotKeys) B(const da_u32, slotRanges)             \
  B(da_u32, flags)

#if defined(__cplusplus)
#include "backend/kernel_signature.hpp"

namespace devicearray::detail::kernels {
DA_KERNEL_SIGNATURE(da_ng_setup, DA_NG_SETUP_PARAMS);
DA_KERNEL_SIGNATURE(da_ng_keys, DA_NG_KEYS_PARAMS);
DA_KERNEL_SIGNATURE(da_ng_insert, DA_NG_INSERT_PARAMS);
DA_KERNEL_SIGNATURE(da_ng_gather, DA_NG_GATHER_PARAMS);
DA_KERNEL_SIGNATURE(da_ng_ends, DA_NG_ENDS_PARAMS);
DA_KERNEL_SIGNATURE(da_ng_knn, DA_NG_KNN_PARAMS);
DA_KERNEL_SIGNATURE(da_sor_mean, DA_SOR_MEAN_PARAMS);
DA_KERNEL_SIGNATURE(da_sor_keep, DA_SOR_KEEP_PARAMS);
DA_KERNEL_SIGNATURE(da_ror_flags, DA_ROR_FLAGS_PARAMS);
}  // namespace devicearray::detail::kernels
#endif

#endif /* DEVICEARRAY_BACKEND_NEIGHBOUR_GRID_SIGNATURES_H */
