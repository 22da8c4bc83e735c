/* Neighbour search through a voxel-hash grid, written once for CUDA (registered in
 * src/cuda/pointcloud_kernels.cu) and OpenCL.
 *
 * The points are sorted by the key of their cell (the parallel primitives' radix sort),
 * so each occupied cell is one run of consecutive sorted points; an open-addressing hash
 * table maps a cell key to its run. A search visits the (2 rings + 1)^3 cells around the
 * query's cell: with one ring, every point closer than one cell edge is found. The
 * search functions (da_ng_nearest, da_ng_knn_search) are what other kernels call — the
 * normals and the registration — and da_ng_knn exposes the k-nearest search itself. */
#ifndef DEVICEARRAY_KERNELS_POINTCLOUD_NEIGHBOURS_H
#define DEVICEARRAY_KERNELS_POINTCLOUD_NEIGHBOURS_H

#include "prelude.h"
#include "backend/neighbour_grid_signatures.h"
#include "point_validity.h"

/* Key of a cell outside the grid and of a missing point (sorted after every cell). */
#define DA_NG_INVALID_KEY 0x7FFFFFFFFFFFFFFFUL
#define DA_NG_NO_POINT 0xFFFFFFFFu

/* Claims a free hash slot: returns the slot's previous claim (0 when this call got it). */
#if defined(__OPENCL_VERSION__)
#define DA_NG_CLAIM(p) atomic_cmpxchg((volatile DA_GLOBAL da_u32*)(p), 0u, 1u)
#elif defined(__CUDACC__)
#define DA_NG_CLAIM(p) atomicCAS((p), 0u, 1u)
#endif

/* 21 bits per axis: x, then y, then z. */
DA_FN da_u64 da_ng_key(long ix, long iy, long iz) {
  return ((da_u64)ix << 42) | ((da_u64)iy << 21) | (da_u64)iz;
}

/* The finalizer of MurmurHash3: neighbouring cells land in unrelated slots. */
DA_FN da_u32 da_ng_hash(da_u64 key, da_u32 mask) {
  key ^= key >> 33;
  key *= 0xFF51AFD7ED558CCDUL;
  key ^= key >> 33;
  key *= 0xC4CEB9FE1A85EC53UL;
  key ^= key >> 33;
  return (da_u32)key & mask;
}

/* The cells along one axis within `rings` of the cell of coordinate v that exist in the
 * grid: [*lo, *hi] (empty when *lo > *hi). */
DA_FN void da_ng_axis_cells(float v, float origin, float cell, float maxIndex, int rings, long* lo, long* hi) {
  /* Clamped before the conversion: a query far outside the grid must not overflow. */
  const float f = da_fminf(da_fmaxf(da_floorf((v - origin) / cell), -(float)rings - 1.0f), maxIndex + rings + 1.0f);
  *lo = (long)da_fmaxf(f - (float)rings, 0.0f);
  *hi = (long)da_fminf(f + (float)rings, maxIndex);
}

/* The cells of the grid within `rings` of q's cell, as three index ranges. */
typedef struct {
  long x0, x1, y0, y1, z0, z1;
} da_ng_block;

DA_FN da_ng_block da_ng_block_around(float qx, float qy, float qz, int rings, DA_GLOBAL const float* grid) {
  da_ng_block b;
  da_ng_axis_cells(qx, grid[0], grid[3], grid[4], rings, &b.x0, &b.x1);
  da_ng_axis_cells(qy, grid[1], grid[3], grid[5], rings, &b.y0, &b.y1);
  da_ng_axis_cells(qz, grid[2], grid[3], grid[6], rings, &b.z0, &b.z1);
  return b;
}

/* The run [begin, end) of sorted points of cell `key`; 0 when the cell is empty. */
DA_FN int da_ng_find(da_u64 key, da_u32 mask, DA_GLOBAL const da_u32* claims, DA_GLOBAL const da_u64* slotKeys,
                     DA_GLOBAL const da_u32* slotRanges, da_u32* begin, da_u32* end) {
  da_u32 h = da_ng_hash(key, mask);
  for (da_u32 probe = 0; probe <= mask; ++probe) {
    if (claims[h] == 0u) return 0;
    if (slotKeys[h] == key) {
      *begin = slotRanges[2 * h];
      *end = slotRanges[2 * h + 1];
      return 1;
    }
    h = (h + 1u) & mask;
  }
  return 0;
}

/* The number of cells of a block (0 when it is empty). */
DA_FN long da_ng_block_cells(const da_ng_block* b) {
  if (b->x1 < b->x0 || b->y1 < b->y0 || b->z1 < b->z0) return 0;
  return (b->x1 - b->x0 + 1) * (b->y1 - b->y0 + 1) * (b->z1 - b->z0 + 1);
}

/* The run [begin, end) of sorted points of the c-th cell of a block (z fastest); 0 when
 * the cell is empty. A search is then one loop over the block's cells and their runs. */
DA_FN int da_ng_block_run(const da_ng_block* b, long c, da_u32 mask, DA_GLOBAL const da_u32* claims,
                          DA_GLOBAL const da_u64* slotKeys, DA_GLOBAL const da_u32* slotRanges, da_u32* begin,
                          da_u32* end) {
  const long nz = b->z1 - b->z0 + 1, ny = b->y1 - b->y0 + 1;
  const long z = b->z0 + c % nz, y = b->y0 + (c / nz) % ny, x = b->x0 + c / (nz * ny);
  return da_ng_find(da_ng_key(x, y, z), mask, claims, slotKeys, slotRanges, begin, end);
}

/* The sorted position of the point nearest to q closer than sqrt(maxDist2), searching
 * one ring of cells (exact when the cell edge is at least that distance); DA_NG_NO_POINT
 * when there is none. *dist2 receives its squared distance. */
DA_FN da_u32 da_ng_nearest(float qx, float qy, float qz, float maxDist2, da_u32 mask, DA_GLOBAL const float* grid,
                           DA_GLOBAL const float* sortedXyz, DA_GLOBAL const da_u32* claims,
                           DA_GLOBAL const da_u64* slotKeys, DA_GLOBAL const da_u32* slotRanges, float* dist2) {
  da_u32 best = DA_NG_NO_POINT;
  float bestD2 = maxDist2;
  const da_ng_block b = da_ng_block_around(qx, qy, qz, 1, grid);
  for (long c = 0; c < da_ng_block_cells(&b); ++c) {
    da_u32 begin = 0, end = 0;
    if (!da_ng_block_run(&b, c, mask, claims, slotKeys, slotRanges, &begin, &end)) continue;
    for (da_u32 j = begin; j < end; ++j) {
      const float dx = sortedXyz[3 * j] - qx, dy = sortedXyz[3 * j + 1] - qy, dz = sortedXyz[3 * j + 2] - qz;
      const float d2 = dx * dx + dy * dy + dz * dz;
      if (d2 < bestD2) {
        bestD2 = d2;
        best = j;
      }
    }
  }
  *dist2 = bestD2;
  return best;
}

/* The k (<= DA_NG_MAX_K) nearest points to q closer than sqrt(maxDist2) among the cells
 * within `rings` of q's cell: sorted positions in found[], squared distances in d2[],
 * nearest first. Returns how many were found. */
DA_FN int da_ng_knn_search(float qx, float qy, float qz, int k, int rings, float maxDist2, da_u32 mask,
                           DA_GLOBAL const float* grid, DA_GLOBAL const float* sortedXyz,
                           DA_GLOBAL const da_u32* claims, DA_GLOBAL const da_u64* slotKeys,
                           DA_GLOBAL const da_u32* slotRanges, da_u32* found, float* d2) {
  int count = 0;
  const da_ng_block b = da_ng_block_around(qx, qy, qz, rings, grid);
  for (long c = 0; c < da_ng_block_cells(&b); ++c) {
    da_u32 begin = 0, end = 0;
    if (!da_ng_block_run(&b, c, mask, claims, slotKeys, slotRanges, &begin, &end)) continue;
    for (da_u32 j = begin; j < end; ++j) {
      const float dx = sortedXyz[3 * j] - qx, dy = sortedXyz[3 * j + 1] - qy, dz = sortedXyz[3 * j + 2] - qz;
      const float dd = dx * dx + dy * dy + dz * dz;
      if (!(dd < maxDist2) || (count == k && dd >= d2[k - 1])) continue;
      /* Insertion into the sorted list; the farthest falls off a full list. */
      int at = count < k ? count++ : k - 1;
      while (at > 0 && d2[at - 1] > dd) {
        d2[at] = d2[at - 1];
        found[at] = found[at - 1];
        --at;
      }
      d2[at] = dd;
      found[at] = j;
    }
  }
  return count;
}

/* One work item. An empty cloud (bounds +inf..-inf) gets a grid without cells. */
DA_KERNEL(da_ng_setup)(DA_PARAMS(DA_NG_SETUP_PARAMS)) {
  DA_BUFFERS_INIT(DA_NG_SETUP_PARAMS);
  if (DA_ID(0) != 0) return;
  if (!(bounds[0] <= bounds[3])) {
    grid[0] = grid[1] = grid[2] = 0.0f;
    grid[3] = cellSize;
    grid[4] = grid[5] = grid[6] = -1.0f;
    return;
  }
  const float extent = da_fmaxf(da_fmaxf(bounds[3] - bounds[0], bounds[4] - bounds[1]), bounds[5] - bounds[2]);
  /* Below 2^21 - 1 cells per axis, with margin for rounding. */
  const float cell = da_fmaxf(cellSize, extent / 2000000.0f);
  grid[0] = bounds[0];
  grid[1] = bounds[1];
  grid[2] = bounds[2];
  grid[3] = cell;
  for (int a = 0; a < 3; ++a) grid[4 + a] = da_floorf((bounds[3 + a] - bounds[a]) / cell);
  grid[7] = 0.0f;
}

DA_KERNEL(da_ng_keys)(DA_PARAMS(DA_NG_KEYS_PARAMS)) {
  DA_BUFFERS_INIT(DA_NG_KEYS_PARAMS);
  const long i = DA_ID(0);
  if (i >= n) return;
  indices[i] = (da_u32)i;
  const float x = xyz[3 * i], y = xyz[3 * i + 1], z = xyz[3 * i + 2];
  if (!da_pc_valid(x, y, z)) {
    keys[i] = DA_NG_INVALID_KEY;
    return;
  }
  /* Inside the bounds by construction; the clamps only absorb rounding. */
  const long ix = (long)da_fminf(da_fmaxf(da_floorf((x - grid[0]) / grid[3]), 0.0f), grid[4]);
  const long iy = (long)da_fminf(da_fmaxf(da_floorf((y - grid[1]) / grid[3]), 0.0f), grid[5]);
  const long iz = (long)da_fminf(da_fmaxf(da_floorf((z - grid[2]) / grid[3]), 0.0f), grid[6]);
  keys[i] = da_ng_key(ix, iy, iz);
}

DA_KERNEL(da_ng_gather)(DA_PARAMS(DA_NG_GATHER_PARAMS)) {
  DA_BUFFERS_INIT(DA_NG_GATHER_PARAMS);
  const long j = DA_ID(0);
  if (j >= n) return;
  const long i = (long)order[j];
  sortedXyz[3 * j] = xyz[3 * i];
  sortedXyz[3 * j + 1] = xyz[3 * i + 1];
  sortedXyz[3 * j + 2] = xyz[3 * i + 2];
}

DA_KERNEL(da_ng_insert)(DA_PARAMS(DA_NG_INSERT_PARAMS)) {
  DA_BUFFERS_INIT(DA_NG_INSERT_PARAMS);
  const long i = DA_ID(0);
  if (i >= n) return;
  const da_u64 key = sortedKeys[i];
  if (key == DA_NG_INVALID_KEY || (i > 0 && sortedKeys[i - 1] == key)) return;
  da_u32 h = da_ng_hash(key, mask);
  /* The table has more slots than cells, so a free one is always found. */
  while (DA_NG_CLAIM(&claims[h]) != 0u) h = (h + 1u) & mask;
  slotKeys[h] = key;
  slotRanges[2 * h] = (da_u32)i;
}

/* After da_ng_insert (a separate launch, so every cell's slot is complete). */
DA_KERNEL(da_ng_ends)(DA_PARAMS(DA_NG_ENDS_PARAMS)) {
  DA_BUFFERS_INIT(DA_NG_ENDS_PARAMS);
  const long i = DA_ID(0);
  if (i >= n) return;
  const da_u64 key = sortedKeys[i];
  if (key == DA_NG_INVALID_KEY || (i + 1 < n && sortedKeys[i + 1] == key)) return;
  da_u32 h = da_ng_hash(key, mask);
  while (slotKeys[h] != key) h = (h + 1u) & mask;
  slotRanges[2 * h + 1] = (da_u32)(i + 1);
}

DA_KERNEL(da_ng_knn)(DA_PARAMS(DA_NG_KNN_PARAMS)) {
  DA_BUFFERS_INIT(DA_NG_KNN_PARAMS);
  const long i = DA_ID(0);
  if (i >= n) return;
  da_u32 found[DA_NG_MAX_K];
  float d2[DA_NG_MAX_K];
  const float x = queries[3 * i], y = queries[3 * i + 1], z = queries[3 * i + 2];
  int count = 0;
  if (da_pc_valid(x, y, z))
    count = da_ng_knn_search(x, y, z, k, rings, maxDistance * maxDistance, mask, grid, sortedXyz, claims, slotKeys,
                             slotRanges, found, d2);
  for (int m = 0; m < k; ++m) {
    neighbours[i * k + m] = m < count ? order[found[m]] : DA_NG_NO_POINT;
    distances[i * k + m] = m < count ? da_sqrtf(d2[m]) : DA_NAN;
  }
}

#endif /* DEVICEARRAY_KERNELS_POINTCLOUD_NEIGHBOURS_H */
