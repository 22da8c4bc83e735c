/* Normals by a neighbourhood plane fit, written once for CUDA (registered in
 * src/cuda/pointcloud_kernels.cu) and OpenCL: the normal of the plane that best fits a
 * point's neighbours is the eigenvector of their 3x3 covariance with the smallest
 * eigenvalue, oriented towards the viewpoint. Organized clouds take the neighbours from
 * a window on the grid, unorganized ones their k nearest neighbours in a neighbour grid
 * (pointcloud_neighbours.h). */
#ifndef DEVICEARRAY_KERNELS_POINTCLOUD_NORMALS_H
#define DEVICEARRAY_KERNELS_POINTCLOUD_NORMALS_H

#include "prelude.h"
#include "backend/normal_signatures.h"
#include "point_validity.h"
#include "pointcloud_neighbours.h"

/* Sums of the offsets d = p - reference of a point set and of their products: the
 * reference (the point whose normal is wanted) keeps the float sums small. */
typedef struct {
  float x, y, z, xx, xy, xz, yy, yz, zz;
  int count;
} da_nrm_moments;

/* Adds the offsets of one neighbour when `take`, else zeros: a select instead of a
 * branch, so that a warp never splits over which neighbours it takes (the window kernels
 * spend most of their instructions here), and the NaN offsets of missing points never
 * reach a sum. */
DA_FN void da_nrm_add_if(da_nrm_moments* m, int take, float dx, float dy, float dz) {
  dx = take ? dx : 0.0f;
  dy = take ? dy : 0.0f;
  dz = take ? dz : 0.0f;
  m->x += dx;
  m->y += dy;
  m->z += dz;
  m->xx += dx * dx;
  m->xy += dx * dy;
  m->xz += dx * dz;
  m->yy += dy * dy;
  m->yz += dy * dz;
  m->zz += dz * dz;
  m->count += take ? 1 : 0;
}
DA_FN void da_nrm_add(da_nrm_moments* m, float dx, float dy, float dz) { da_nrm_add_if(m, 1, dx, dy, dz); }

DA_FN float da_nrm_length2(float x, float y, float z) { return x * x + y * y + z * z; }

/* The unit eigenvector of the smallest eigenvalue of the symmetric matrix
 * [a00 a01 a02; a01 a11 a12; a02 a12 a22]: eigenvalue from the closed form of a
 * symmetric 3x3 matrix, eigenvector as the longest cross product of two rows of
 * A - lambda I (each is orthogonal to both rows, hence in the null space). Returns 0
 * when the matrix has no preferred direction (zero or isotropic). */
DA_FN int da_nrm_smallest_eigenvector(float a00, float a01, float a02, float a11, float a12, float a22, float* n) {
  const float scale = da_fmaxf(da_fmaxf(da_fmaxf(da_fabsf(a00), da_fabsf(a01)), da_fmaxf(da_fabsf(a02), da_fabsf(a11))),
                               da_fmaxf(da_fabsf(a12), da_fabsf(a22)));
  if (!(scale > 0.0f) || !da_pc_finite(scale)) return 0;
  /* Products by reciprocals, not quotients: each IEEE division is a dozen instructions,
   * and these only bring the entries near 1. */
  const float inverseScale = 1.0f / scale;
  a00 *= inverseScale;
  a01 *= inverseScale;
  a02 *= inverseScale;
  a11 *= inverseScale;
  a12 *= inverseScale;
  a22 *= inverseScale;
  const float q = (a00 + a11 + a22) * (1.0f / 3.0f);
  const float b00 = a00 - q, b11 = a11 - q, b22 = a22 - q;
  const float p2 = (b00 * b00 + b11 * b11 + b22 * b22 + 2.0f * (a01 * a01 + a02 * a02 + a12 * a12)) * (1.0f / 6.0f);
  if (!(p2 > 0.0f)) return 0;
  const float p = da_sqrtf(p2);
  const float det = b00 * (b11 * b22 - a12 * a12) - a01 * (a01 * b22 - a12 * a02) + a02 * (a01 * a12 - b11 * a02);
  const float r = da_fminf(da_fmaxf(det / (2.0f * p2 * p), -1.0f), 1.0f);
  const float lambda = q + 2.0f * p * da_cosf(da_acosf(r) * (1.0f / 3.0f) + 2.0943951f); /* + 2 pi / 3: the smallest */
  const float r0x = a00 - lambda, r0y = a01, r0z = a02;
  const float r1x = a01, r1y = a11 - lambda, r1z = a12;
  const float r2x = a02, r2y = a12, r2z = a22 - lambda;
  const float c0x = r0y * r1z - r0z * r1y, c0y = r0z * r1x - r0x * r1z, c0z = r0x * r1y - r0y * r1x;
  const float c1x = r0y * r2z - r0z * r2y, c1y = r0z * r2x - r0x * r2z, c1z = r0x * r2y - r0y * r2x;
  const float c2x = r1y * r2z - r1z * r2y, c2y = r1z * r2x - r1x * r2z, c2z = r1x * r2y - r1y * r2x;
  const float l0 = da_nrm_length2(c0x, c0y, c0z), l1 = da_nrm_length2(c1x, c1y, c1z),
              l2 = da_nrm_length2(c2x, c2y, c2z);
  float bx = c0x, by = c0y, bz = c0z, bl = l0;
  if (l1 > bl) {
    bx = c1x;
    by = c1y;
    bz = c1z;
    bl = l1;
  }
  if (l2 > bl) {
    bx = c2x;
    by = c2y;
    bz = c2z;
    bl = l2;
  }
  if (!(bl > 0.0f) || !da_pc_finite(bl)) return 0;
  const float inv = 1.0f / da_sqrtf(bl);
  n[0] = bx * inv;
  n[1] = by * inv;
  n[2] = bz * inv;
  return 1;
}

/* The plane-fit normal n of a point set given as moments about the point p, oriented so
 * that n . (p - cam) < 0. Returns 0 (n untouched) for fewer than 3 points or a set
 * without a plane (all on a line). */
DA_FN int da_nrm_fit(const da_nrm_moments* m, float px, float py, float pz, float camX, float camY, float camZ,
                     float* n) {
  if (m->count < 3) return 0;
  const float inverseCount = 1.0f / (float)m->count;
  const float mx = m->x * inverseCount, my = m->y * inverseCount, mz = m->z * inverseCount;
  float e[3];
  if (!da_nrm_smallest_eigenvector(m->xx * inverseCount - mx * mx, m->xy * inverseCount - mx * my,
                                   m->xz * inverseCount - mx * mz, m->yy * inverseCount - my * my,
                                   m->yz * inverseCount - my * mz, m->zz * inverseCount - mz * mz, e))
    return 0;
  const float s = e[0] * (px - camX) + e[1] * (py - camY) + e[2] * (pz - camZ) > 0.0f ? -1.0f : 1.0f;
  n[0] = s * e[0];
  n[1] = s * e[1];
  n[2] = s * e[2];
  return 1;
}

DA_FN void da_nrm_store(DA_GLOBAL float* out, long i, const float* n) {
  out[3 * i] = n[0];
  out[3 * i + 1] = n[1];
  out[3 * i + 2] = n[2];
}

/* The squared grid step at a point: the squared distance to its nearest valid
 * 4-neighbour, +inf when it has none (fmin passes over the NaN of a missing one). */
DA_FN float da_nrm_step2(float4 p, float4 west, float4 east, float4 north, float4 south) {
  const float4 side[4] = {west, east, north, south};
  float step2 = DA_INFINITY;
  for (int k = 0; k < 4; ++k) {
    const float dx = side[k].x - p.x, dy = side[k].y - p.y, dz = side[k].z - p.z;
    step2 = da_fminf(step2, dx * dx + dy * dy + dz * dz);
  }
  return step2;
}

/* The squared reach of window ring k: 3 k grid steps, clamped to the largest float so
 * that a NaN or infinite distance is never within it. */
DA_FN float da_nrm_reach2(int k, float step2) { return da_fminf((float)(9 * k * k) * step2, 3.402823466e38f); }

/* Raises a work-group's flag in local memory: an atomic, so that the work items that
 * raise it together do not race (the sanitizers' race checks flag plain stores). */
#if defined(__OPENCL_VERSION__)
#define DA_NRM_RAISE_FLAG(p) atomic_or((volatile DA_LOCAL int*)(p), 1)
#elif defined(__CUDACC__)
#define DA_NRM_RAISE_FLAG(p) atomicOr((p), 1)
#endif

/* Whether the region of interest that a later stage applies surely removes the point
 * (x, y, z): one of its three slab coordinates (affine in the point, the stage's transform
 * folded in; normal_signatures.h) lies outside its bounds by more than the rounding of
 * either computation. A point within that margin is fitted anyway; so is a NaN point
 * (every comparison is false), which the fit then leaves NaN. */
DA_FN int da_nrm_surely_removed(float x, float y, float z, float u0, float u1, float u2, float u3, float v0, float v1,
                                float v2, float v3, float n0, float n1, float n2, float n3, float lenU, float lenV,
                                float lo, float hi, float tol0, float tol1, float tol2, float tol3) {
  const float margin = tol0 * da_fabsf(x) + tol1 * da_fabsf(y) + tol2 * da_fabsf(z) + tol3;
  const float pu = u0 * x + u1 * y + u2 * z + u3, pv = v0 * x + v1 * y + v2 * z + v3,
              pn = n0 * x + n1 * y + n2 * z + n3;
  return pu < -margin || pu > lenU + margin || pv < -margin || pv > lenV + margin || pn < lo - margin ||
         pn > hi + margin;
}

/* The points of a tile and its halo of `radius`, staged in local memory as float4 (one
 * load per neighbour instead of three): every point of the grid is read by up to
 * (2 radius + 1)^2 work items, which then read it from the work-group's copy instead of
 * global memory. Points outside the grid are NaN.
 *
 * The neighbours are the valid points of the window that lie on the point's surface:
 * within 3 grid steps' worth of distance per window ring, a step being the distance to
 * the nearest valid 4-neighbour, so that a window straddling a depth edge does not mix
 * two surfaces. When they are fewer than 3 or lie on a line, all valid ones count. A
 * point without a valid 4-neighbour has no step: its reach is unbounded, which takes all
 * valid ones at once.
 *
 * One instance per radius (da_nrm_window_<radius>): with the window a constant, the
 * loops unroll, each column's reach is a register and the tile holds only the halo it
 * needs. The kernel is bound by its instructions, not by memory, so the loop body is
 * kept branch-free: the ring's reach is the larger of its row's and its column's (the
 * reach grows with the ring), the limits are clamped to the largest float (so that a
 * NaN or infinite distance is never within reach without a test of its own) and the
 * neighbour is added through a select. The point itself is counted once, outside.
 *
 * Restricted to what a later region of interest keeps, each work item first tests its
 * own point, and a work-group without a valid point that the region may keep writes its
 * NaNs without loading a tile. Every work item reaches every barrier (no return before
 * the last one, no barrier in a branch), which PoCL needs even where a condition is the
 * same for the whole group. */
#define DA_NRM_WINDOW_KERNEL(R)                                                                                        \
  DA_KERNEL_GROUP(da_nrm_window_##R, DA_NRM_WINDOW_GROUP, 6)(DA_PARAMS(DA_NRM_WINDOW_PARAMS)) {                        \
    DA_BUFFERS_INIT(DA_NRM_WINDOW_PARAMS);                                                                             \
    enum { spanW = DA_NRM_TILE_W + 2 * (R), spanH = DA_NRM_TILE_H + 2 * (R) };                                         \
    DA_LOCAL_ARRAY(float4, tile, spanW * spanH);                                                                       \
    DA_LOCAL_ARRAY(int, groupFits, 1);                                                                                 \
    const int tilesPerRow = (width + DA_NRM_TILE_W - 1) / DA_NRM_TILE_W;                                               \
    const int group = (int)DA_GROUP_ID();                                                                              \
    const int left = (group % tilesPerRow) * DA_NRM_TILE_W - (R), top = (group / tilesPerRow) * DA_NRM_TILE_H - (R);  \
    const int lx = DA_LOCAL_ID() % DA_NRM_TILE_W, ly = DA_LOCAL_ID() / DA_NRM_TILE_W;                                  \
    const int c = left + (R) + lx, r = top + (R) + ly;                                                                 \
    const int onGrid = c < width && r < height;                                                                        \
    const long i = (long)r * width + c;                                                                                \
    int fits = onGrid; /* restricted: a valid point that the region of interest may keep */                          \
    if (restricted && onGrid) {                                                                                        \
      const float x = xyz[3 * i], y = xyz[3 * i + 1], z = xyz[3 * i + 2];                                              \
      fits = da_pc_valid(x, y, z) &&                                                                                   \
             !da_nrm_surely_removed(x, y, z, keepU0, keepU1, keepU2, keepU3, keepV0, keepV1, keepV2, keepV3, keepN0,   \
                                    keepN1, keepN2, keepN3, keepLenU, keepLenV, keepLo, keepHi, keepTol0, keepTol1,    \
                                    keepTol2, keepTol3);                                                               \
    }                                                                                                                  \
    if (DA_LOCAL_ID() == 0) groupFits[0] = !restricted;                                                                \
    DA_BARRIER();                                                                                                      \
    if (restricted && fits) DA_NRM_RAISE_FLAG(groupFits);                                                              \
    DA_BARRIER();                                                                                                      \
    if (groupFits[0]) {                                                                                                \
      for (int t = DA_LOCAL_ID(); t < spanW * spanH; t += DA_NRM_WINDOW_GROUP) {                                      \
        const int x = left + t % spanW, y = top + t / spanW;                                                           \
        const long j = (long)y * width + x;                                                                            \
        tile[t] = x >= 0 && y >= 0 && x < width && y < height                                                          \
                      ? da_make_float4(xyz[3 * j], xyz[3 * j + 1], xyz[3 * j + 2], 0.0f)                               \
                      : da_make_float4(DA_NAN, DA_NAN, DA_NAN, DA_NAN);                                                \
      }                                                                                                                \
    }                                                                                                                  \
    DA_BARRIER();                                                                                                      \
    if (!onGrid) return;                                                                                               \
    const int centre = (ly + (R)) * spanW + lx + (R);                                                                  \
    const float4 p = fits ? tile[centre] : da_make_float4(DA_NAN, DA_NAN, DA_NAN, DA_NAN);                             \
    if (!da_pc_valid(p.x, p.y, p.z)) {                                                                                 \
      normals[3 * i] = normals[3 * i + 1] = normals[3 * i + 2] = DA_NAN;                                               \
      return;                                                                                                          \
    }                                                                                                                  \
    float step2 = da_nrm_step2(p, tile[centre - 1], tile[centre + 1], tile[centre - spanW], tile[centre + spanW]);     \
    float reach2[(R) + 1]; /* squared reach of each ring, indexed by the unrolled column */                            \
    DA_UNROLL for (int k = 0; k <= (R); ++k) reach2[k] = da_nrm_reach2(k, step2);                                      \
    da_nrm_moments near = {0, 0, 0, 0, 0, 0, 0, 0, 0, 1};                                                             \
    for (int dy = -(R); dy <= (R); ++dy) {                                                                             \
      const float rowReach2 = da_nrm_reach2(dy, step2);                                                                \
      const int row = centre + dy * spanW;                                                                             \
      DA_UNROLL for (int dx = -(R); dx <= (R); ++dx) {                                                                 \
        const float4 q = tile[row + dx];                                                                               \
        const float ox = q.x - p.x, oy = q.y - p.y, oz = q.z - p.z;                                                    \
        const float d2 = ox * ox + oy * oy + oz * oz;                                                                  \
        const int within = d2 <= da_fmaxf(rowReach2, reach2[dx < 0 ? -dx : dx]) && (dx != 0 || dy != 0);              \
        da_nrm_add_if(&near, within, ox, oy, oz);                                                                      \
      }                                                                                                                \
    }                                                                                                                  \
    float n[3] = {DA_NAN, DA_NAN, DA_NAN};                                                                             \
    if (!da_nrm_fit(&near, p.x, p.y, p.z, camX, camY, camZ, n) && da_pc_finite(step2)) {                              \
      /* Rare (isolated points, lines): all valid points of the window. */                                             \
      da_nrm_moments all = {0, 0, 0, 0, 0, 0, 0, 0, 0, 1};                                                            \
      for (int dy = -(R); dy <= (R); ++dy) {                                                                           \
        for (int dx = -(R); dx <= (R); ++dx) {                                                                         \
          const float4 q = tile[centre + dy * spanW + dx];                                                             \
          const float ox = q.x - p.x, oy = q.y - p.y, oz = q.z - p.z;                                                  \
          da_nrm_add_if(&all, da_pc_finite(ox * ox + oy * oy + oz * oz) && (dx != 0 || dy != 0), ox, oy, oz);          \
        }                                                                                                              \
      }                                                                                                                \
      da_nrm_fit(&all, p.x, p.y, p.z, camX, camY, camZ, n);                                                            \
    }                                                                                                                  \
    da_nrm_store(normals, i, n);                                                                                       \
  }

DA_NRM_WINDOW_KERNEL(1)
DA_NRM_WINDOW_KERNEL(2)
DA_NRM_WINDOW_KERNEL(3)
DA_NRM_WINDOW_KERNEL(4)
DA_NRM_WINDOW_KERNEL(5)
DA_NRM_WINDOW_KERNEL(6)
DA_NRM_WINDOW_KERNEL(7)

/* One pass over the points closer than sqrt(reach2) to p in the cells around it. The
 * first pass (moments == 0) counts them by squared distance in DA_NRM_DISTANCE_BINS
 * equal bins; the second adds to the moments every point of the bins below `lastBin`
 * and the first *quota points of bin `lastBin`: the k nearest, up to the order of the
 * points within the bin of the k-th distance. A histogram instead of a sorted list keeps
 * the work per point constant for any k. */
DA_FN void da_nrm_neighbourhood(float px, float py, float pz, float reach2, da_u32 mask, DA_GLOBAL const float* grid,
                                DA_GLOBAL const float* sortedXyz, DA_GLOBAL const da_u32* claims,
                                DA_GLOBAL const da_u64* slotKeys, DA_GLOBAL const da_u32* slotRanges, int* bins,
                                int lastBin, int* quota, da_nrm_moments* moments) {
  const da_ng_block b = da_ng_block_around(px, py, pz, 1, grid);
  for (long c = 0; c < da_ng_block_cells(&b); ++c) {
    da_u32 begin = 0, end = 0;
    if (!da_ng_block_run(&b, c, mask, claims, slotKeys, slotRanges, &begin, &end)) continue;
    for (da_u32 j = begin; j < end; ++j) {
      const float dx = sortedXyz[3 * j] - px, dy = sortedXyz[3 * j + 1] - py, dz = sortedXyz[3 * j + 2] - pz;
      const float d2 = dx * dx + dy * dy + dz * dz;
      if (!(d2 < reach2)) continue;
      const int bin = (int)da_fminf(d2 / reach2 * (float)DA_NRM_DISTANCE_BINS, (float)(DA_NRM_DISTANCE_BINS - 1));
      if (moments == 0) {
        ++bins[bin];
      } else if (bin < lastBin || (bin == lastBin && *quota > 0)) {
        if (bin == lastBin) --*quota;
        da_nrm_add(moments, dx, dy, dz);
      }
    }
  }
}

/* One work item per sorted point j of the grid; the normal goes to its original index.
 * The neighbours are the k nearest points closer than one cell edge (all of those when
 * there are fewer), the point itself included. */
DA_KERNEL(da_nrm_knn)(DA_PARAMS(DA_NRM_KNN_PARAMS)) {
  DA_BUFFERS_INIT(DA_NRM_KNN_PARAMS);
  const long j = DA_ID(0);
  if (j >= n) return;
  const long i = (long)order[j];
  const float px = sortedXyz[3 * j], py = sortedXyz[3 * j + 1], pz = sortedXyz[3 * j + 2];
  float nrm[3] = {DA_NAN, DA_NAN, DA_NAN};
  if (da_pc_valid(px, py, pz)) {
    const float reach2 = grid[3] * grid[3];
    int bins[DA_NRM_DISTANCE_BINS];
    for (int b = 0; b < DA_NRM_DISTANCE_BINS; ++b) bins[b] = 0;
    int quota = 0;
    da_nrm_neighbourhood(px, py, pz, reach2, mask, grid, sortedXyz, claims, slotKeys, slotRanges, bins, 0, &quota, 0);
    /* The bin that holds the k-th nearest point, and how many of its points to take. */
    int lastBin = DA_NRM_DISTANCE_BINS, below = 0;
    for (int b = 0; b < DA_NRM_DISTANCE_BINS && lastBin == DA_NRM_DISTANCE_BINS; ++b) {
      if (below + bins[b] >= k) {
        lastBin = b;
        quota = k - below;
      }
      below += bins[b];
    }
    da_nrm_moments m = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0};
    da_nrm_neighbourhood(px, py, pz, reach2, mask, grid, sortedXyz, claims, slotKeys, slotRanges, bins, lastBin,
                         &quota, &m);
    da_nrm_fit(&m, px, py, pz, camX, camY, camZ, nrm);
  }
  da_nrm_store(normals, i, nrm);
}

DA_KERNEL(da_nrm_rotate)(DA_PARAMS(DA_NRM_ROTATE_PARAMS)) {
  DA_BUFFERS_INIT(DA_NRM_ROTATE_PARAMS);
  const long i = DA_ID(0);
  if (i >= n) return;
  const float x = normalsIn[3 * i], y = normalsIn[3 * i + 1], z = normalsIn[3 * i + 2];
  normalsOut[3 * i] = r00 * x + r01 * y + r02 * z;
  normalsOut[3 * i + 1] = r10 * x + r11 * y + r12 * z;
  normalsOut[3 * i + 2] = r20 * x + r21 * y + r22 * z;
}

#endif /* DEVICEARRAY_KERNELS_POINTCLOUD_NORMALS_H */
