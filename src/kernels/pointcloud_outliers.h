/* Outlier removal on unorganized clouds through a neighbour grid
 * (pointcloud_neighbours.h), written once for CUDA (registered in
 * src/cuda/pointcloud_kernels.cu) and OpenCL. Statistical removal: each point's mean
 * distance to its k nearest points; radius removal: how many points lie within a radius.
 * The compaction of the kept points is da_pc_compact (pointcloud.h). */
#ifndef DEVICEARRAY_KERNELS_POINTCLOUD_OUTLIERS_H
#define DEVICEARRAY_KERNELS_POINTCLOUD_OUTLIERS_H

#include "prelude.h"
#include "backend/neighbour_grid_signatures.h"
#include "point_validity.h"
#include "pointcloud_neighbours.h"

/* Each work item is one sorted point, so neighbouring items read neighbouring cells. */
DA_KERNEL(da_sor_mean)(DA_PARAMS(DA_SOR_MEAN_PARAMS)) {
  DA_BUFFERS_INIT(DA_SOR_MEAN_PARAMS);
  const long j = DA_ID(0);
  if (j >= n) return;
  const long i = (long)order[j];
  if (pending[i] == 0u) return;
  const float x = sortedXyz[3 * j], y = sortedXyz[3 * j + 1], z = sortedXyz[3 * j + 2];
  if (!da_pc_valid(x, y, z)) {
    stats[3 * i] = stats[3 * i + 1] = stats[3 * i + 2] = DA_NAN;
    pending[i] = 0u;
    return;
  }
  /* One ring finds every point closer than a cell edge, up to the rounding of the cell
   * index, which grows with the index (float: about 2^-23 of it per operation). */
  const float maxIndex = da_fmaxf(da_fmaxf(grid[4], grid[5]), grid[6]);
  const float margin = 1.0e-3f + 4.0e-7f * (maxIndex + 2.0f);
  const float reach = (1.0f - margin) * grid[3];
  const float maxDist2 = complete ? 3.0e38f : reach * reach;
  da_u32 found[DA_NG_MAX_K];
  float d2[DA_NG_MAX_K];
  const int count =
      da_ng_knn_search(x, y, z, k, 1, maxDist2, mask, grid, sortedXyz, claims, slotKeys, slotRanges, found, d2);
  /* Fewer than k within reach: the k-th may lie beyond the searched cells. */
  if (count < k && !complete) return;
  float sum = 0.0f;
  for (int m = 0; m < count; ++m) sum += da_sqrtf(d2[m]);
  const float mean = sum / (float)count;
  stats[3 * i] = mean;
  stats[3 * i + 1] = mean * mean;
  stats[3 * i + 2] = 0.0f;
  pending[i] = 0u;
}

DA_KERNEL(da_sor_keep)(DA_PARAMS(DA_SOR_KEEP_PARAMS)) {
  DA_BUFFERS_INIT(DA_SOR_KEEP_PARAMS);
  const long i = DA_ID(0);
  if (i > n) return;
  flags[i] = i < n && stats[3 * i] <= threshold ? 1u : 0u; /* NaN (missing point): dropped */
}

/* The cells [*lo, *hi] along one axis that hold every point within r of v: the points'
 * cell index, floor((p - origin) / cell), never decreases with p, so the cells of v - r
 * and v + r bound them (r padded by a few units in the last place of the sums). */
DA_FN void da_ror_span(float v, float r, float origin, float cell, float maxIndex, long* lo, long* hi) {
  const float pad = r * 1.0001f + (da_fabsf(v) + da_fabsf(origin)) * 5.0e-7f;
  *lo = (long)da_fminf(da_fmaxf(da_floorf((v - pad - origin) / cell), 0.0f), maxIndex);
  *hi = (long)da_fminf(da_fmaxf(da_floorf((v + pad - origin) / cell), 0.0f), maxIndex);
}

DA_KERNEL(da_ror_flags)(DA_PARAMS(DA_ROR_FLAGS_PARAMS)) {
  DA_BUFFERS_INIT(DA_ROR_FLAGS_PARAMS);
  const long j = DA_ID(0);
  if (j == 0) flags[n] = 0u;
  if (j >= n) return;
  const long i = (long)order[j];
  const float x = sortedXyz[3 * j], y = sortedXyz[3 * j + 1], z = sortedXyz[3 * j + 2];
  if (!da_pc_valid(x, y, z)) {
    flags[i] = 0u;
    return;
  }
  long x0, x1, y0, y1, z0, z1;
  da_ror_span(x, radius, grid[0], grid[3], grid[4], &x0, &x1);
  da_ror_span(y, radius, grid[1], grid[3], grid[5], &y0, &y1);
  da_ror_span(z, radius, grid[2], grid[3], grid[6], &z0, &z1);
  const float r2 = radius * radius;
  int count = 0;
  /* Counting stops as soon as the point is known to stay. */
  for (long cx = x0; cx <= x1 && count <= minPoints; ++cx) {
    for (long cy = y0; cy <= y1 && count <= minPoints; ++cy) {
      for (long cz = z0; cz <= z1 && count <= minPoints; ++cz) {
        da_u32 begin = 0, end = 0;
        if (!da_ng_find(da_ng_key(cx, cy, cz), mask, claims, slotKeys, slotRanges, &begin, &end)) continue;
        for (da_u32 m = begin; m < end && count <= minPoints; ++m) {
          const float dx = sortedXyz[3 * m] - x, dy = sortedXyz[3 * m + 1] - y, dz = sortedXyz[3 * m + 2] - z;
          if (dx * dx + dy * dy + dz * dz < r2) ++count;
        }
      }
    }
  }
  flags[i] = count > minPoints ? 1u : 0u;
}

#endif /* DEVICEARRAY_KERNELS_POINTCLOUD_OUTLIERS_H */
