/* Parameters of the outlier-removal kernels of unorganized clouds
 * (src/kernels/pointcloud_outliers.h), declared once for the kernels and for the host
 * code that launches them (kernel_params.h). The grid buffers are those of a neighbour
 * grid over the same points (neighbour_grid_signatures.h); one work item per sorted
 * point, results written at the point's original index. */
#ifndef DEVICEARRAY_BACKEND_OUTLIER_SIGNATURES_H
#define DEVICEARRAY_BACKEND_OUTLIER_SIGNATURES_H

#include "backend/kernel_params.h"

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
DA_KERNEL_SIGNATURE(da_sor_mean, DA_SOR_MEAN_PARAMS);
DA_KERNEL_SIGNATURE(da_sor_keep, DA_SOR_KEEP_PARAMS);
DA_KERNEL_SIGNATURE(da_ror_flags, DA_ROR_FLAGS_PARAMS);
}  // namespace devicearray::detail::kernels
#endif

#endif /* DEVICEARRAY_BACKEND_OUTLIER_SIGNATURES_H */
