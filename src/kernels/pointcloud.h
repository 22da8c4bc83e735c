/* Per-point kernels of PointCloud / UnorganizedPointCloud, written once for CUDA
 * (registered in src/cuda/pointcloud_kernels.cu) and OpenCL (embedded with the rest
 * of src/kernels/).
 *
 * Storage the kernels see: XYZ as 3 floats per point (NaN = missing), colour as 4
 * u8 per point (linear ColorRGBA, or sRGB-encoded ColorRGBA_SRGB codes when srgb is
 * set; alpha is linear in both), SNR as 1 float per point. Attributes a cloud
 * does not have are passed as any valid buffer together with a has* flag of 0, so
 * every kernel has one fixed signature on both backends.
 *
 * Accumulations are float: a block or voxel mixes points of similar magnitude, and
 * float keeps the kernels fast on every device (the host reference uses double and
 * the tests state the tolerance). */
#ifndef DEVICEARRAY_KERNELS_POINTCLOUD_H
#define DEVICEARRAY_KERNELS_POINTCLOUD_H

#include "prelude.h"
#include "backend/pointcloud_signatures.h"
#include "binary64_quotient.h"
#include "group_scan.h"
#include "point_validity.h"
#include "linear_light.h"

/* Sentinel voxel key of an invalid point: above every packed key (each axis < 2^21 - 1). */
#define DA_VOXEL_INVALID_KEY 0x7FFFFFFFFFFFFFFFUL
#define DA_VOXEL_AXIS_LIMIT 2097151 /* 2^21 - 1: coordinates must stay below it */

/* Weight of a point in the SNR^2-weighted means: SNR^2, or 0 for a non-finite SNR. */
DA_FN float da_pc_weight(float snr) { return da_pc_finite(snr) ? snr * snr : 0.0f; }

/* Writes point i of an XYZ buffer. */
DA_FN void da_pc_store(DA_GLOBAL float* xyz, long i, float x, float y, float z) {
  xyz[3 * i] = x;
  xyz[3 * i + 1] = y;
  xyz[3 * i + 2] = z;
}
DA_FN void da_pc_load(DA_GLOBAL const float* xyz, long i, float* p) {
  p[0] = xyz[3 * i];
  p[1] = xyz[3 * i + 1];
  p[2] = xyz[3 * i + 2];
}

/* Running sums of a point set's SNR^2-weighted mean (w*) and plain mean (u*), shared by
 * the block downsampling and the voxel reduction so both define "mean" the same way. */
typedef struct {
  float wx, wy, wz, wsum, ux, uy, uz;
} da_pc_mean;

DA_FN void da_pc_mean_add(da_pc_mean* m, float x, float y, float z, float w) {
  m->wx += w * x;
  m->wy += w * y;
  m->wz += w * z;
  m->wsum += w;
  m->ux += x;
  m->uy += y;
  m->uz += z;
}

/* Stores the weighted mean as point o, or the plain mean of `count` points when all
 * weights are 0. */
DA_FN void da_pc_mean_store(const da_pc_mean* m, float count, DA_GLOBAL float* xyz, long o) {
  if (m->wsum > 0.0f)
    da_pc_store(xyz, o, m->wx / m->wsum, m->wy / m->wsum, m->wz / m->wsum);
  else
    da_pc_store(xyz, o, m->ux / count, m->uy / count, m->uz / count);
}

/* Output pixel (ox, oy) of the downsampling by k x k blocks (da_pc_downsample). */
DA_FN_INLINE void da_pc_downsample_pixel(long ox, long oy, int k, int inW, int outW, int hasColor, int srgb,
                                         int hasSnr, DA_GLOBAL const float* xyzIn, DA_GLOBAL const da_u8* rgbaIn,
                                         DA_GLOBAL const float* snrIn, DA_GLOBAL float* xyzOut,
                                         DA_GLOBAL da_u8* rgbaOut, DA_GLOBAL float* snrOut,
                                         DA_GLOBAL const float* srgbDecode, DA_GLOBAL const da_u32* srgbEncode) {
  da_pc_mean mean = {0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f};
  int valid = 0;
  da_u32 cr = 0, cg = 0, cb = 0, ca = 0;
  for (int dy = 0; dy < k; ++dy) {
    const long row = (oy * k + dy) * (long)inW;
    for (int dx = 0; dx < k; ++dx) {
      const long i = row + ox * k + dx;
      const float x = xyzIn[3 * i], y = xyzIn[3 * i + 1], z = xyzIn[3 * i + 2];
      if (hasColor) {
        cr += da_color_term(rgbaIn[4 * i], srgb, srgbDecode);
        cg += da_color_term(rgbaIn[4 * i + 1], srgb, srgbDecode);
        cb += da_color_term(rgbaIn[4 * i + 2], srgb, srgbDecode);
        ca += rgbaIn[4 * i + 3];
      }
      if (!da_pc_valid(x, y, z)) continue;
      da_pc_mean_add(&mean, x, y, z, hasSnr ? da_pc_weight(snrIn[i]) : 1.0f);
      ++valid;
    }
  }
  const long o = oy * (long)outW + ox;
  if (valid == 0)
    da_pc_store(xyzOut, o, DA_NAN, DA_NAN, DA_NAN);
  else
    da_pc_mean_store(&mean, (float)valid, xyzOut, o);
  if (hasSnr) snrOut[o] = da_sqrtf(hasSnr && valid ? mean.wsum : 0.0f);
  if (hasColor) {
    /* k * k <= 16 terms of at most 2^24 each: the sums fit in 32 bits */
    const da_u32 n = (da_u32)(k * k);
    rgbaOut[4 * o] = da_color_mean_few(cr, n, srgb, srgbEncode);
    rgbaOut[4 * o + 1] = da_color_mean_few(cg, n, srgb, srgbEncode);
    rgbaOut[4 * o + 2] = da_color_mean_few(cb, n, srgb, srgbEncode);
    rgbaOut[4 * o + 3] = da_color_mean_few(ca, n, 0, srgbEncode);
  }
}

/* Downsampling by k x k blocks; one work item per output pixel (global size outW x outH).
 * XYZ: SNR^2-weighted mean of the valid points (plain mean when they all weigh 0 or the
 * cloud has no SNR), NaN when the block has none. Colour: mean of all k*k pixels, rounded
 * half up (sRGB codes: their mean in linear light, encoded back). SNR: sqrt of the sum of
 * the valid points' SNR^2 (0 when none). 2 x 2, the common block, is its own inlined
 * copy: a constant k unrolls the block's loads and turns the divisions into shifts. */
DA_KERNEL(da_pc_downsample)(DA_PARAMS(DA_PC_DOWNSAMPLE_PARAMS)) {
  DA_BUFFERS_INIT(DA_PC_DOWNSAMPLE_PARAMS);
  const long ox = DA_ID(0);
  const long oy = DA_ID(1);
  if (ox >= outW || oy >= outH) return;
  if (k == 2)
    da_pc_downsample_pixel(ox, oy, 2, inW, outW, hasColor, srgb, hasSnr, xyzIn, rgbaIn, snrIn, xyzOut, rgbaOut, snrOut,
                           srgbDecode, srgbEncode);
  else
    da_pc_downsample_pixel(ox, oy, k, inW, outW, hasColor, srgb, hasSnr, xyzIn, rgbaIn, snrIn, xyzOut, rgbaOut, snrOut,
                           srgbDecode, srgbEncode);
}

/* p' = R p + t (row-major affine matrix rows m0..m2) of a valid point; an invalid one
 * stays as it is. The one expression of every kernel that moves points, so that a fused
 * kernel moves them bit for bit as da_pc_transform does. */
DA_FN void da_pc_moved(float* p, float m00, float m01, float m02, float m03, float m10, float m11, float m12,
                       float m13, float m20, float m21, float m22, float m23) {
  const float x = p[0], y = p[1], z = p[2];
  if (!da_pc_valid(x, y, z)) return;
  p[0] = m00 * x + m01 * y + m02 * z + m03;
  p[1] = m10 * x + m11 * y + m12 * z + m13;
  p[2] = m20 * x + m21 * y + m22 * z + m23;
}

/* In place when xyzIn and xyzOut are the same memory. */
DA_KERNEL(da_pc_transform)(DA_PARAMS(DA_PC_TRANSFORM_PARAMS)) {
  DA_BUFFERS_INIT(DA_PC_TRANSFORM_PARAMS);
  const long i = DA_ID(0);
  if (i >= n) return;
  float p[3];
  da_pc_load(xyzIn, i, p);
  da_pc_moved(p, m00, m01, m02, m03, m10, m11, m12, m13, m20, m21, m22, m23);
  da_pc_store(xyzOut, i, p[0], p[1], p[2]);
}

/* The centroid from the reduction's sums: one work item per coordinate. Divided as the
 * host divides them, (float)(sum / count), on every device. */
DA_KERNEL(da_pc_centroid)(DA_PARAMS(DA_PC_CENTROID_PARAMS)) {
  DA_BUFFERS_INIT(DA_PC_CENTROID_PARAMS);
  const long k = DA_ID(0);
  if (k >= 3) return;
  const int none = (sums[3] << 1) == 0; /* a count of 0: no valid point */
  centroid[k] = none ? DA_NAN : da_binary64_quotient(sums[k], sums[3]);
}

/* Moves the valid points by minus the centroid that da_pc_centroid wrote. */
DA_KERNEL(da_pc_center)(DA_PARAMS(DA_PC_CENTER_PARAMS)) {
  DA_BUFFERS_INIT(DA_PC_CENTER_PARAMS);
  const long i = DA_ID(0);
  if (i >= n) return;
  const float x = xyz[3 * i], y = xyz[3 * i + 1], z = xyz[3 * i + 2];
  if (!da_pc_valid(x, y, z)) return;
  da_pc_store(xyz, i, x - centroid[0], y - centroid[1], z - centroid[2]);
}

/* Pixels whose mask byte is 0 become NaN (global size W x H). The mask has its own row
 * step in bytes, so a strided GpuMatND / GpuMat region works without a copy. */
DA_KERNEL(da_pc_mask)(DA_PARAMS(DA_PC_MASK_PARAMS)) {
  DA_BUFFERS_INIT(DA_PC_MASK_PARAMS);
  const long x = DA_ID(0);
  const long y = DA_ID(1);
  if (x >= width || y >= height) return;
  const long i = y * (long)width + x;
  const int keep = mask[y * maskStep + x] != 0;
  if (keep)
    da_pc_store(xyzOut, i, xyzIn[3 * i], xyzIn[3 * i + 1], xyzIn[3 * i + 2]);
  else
    da_pc_store(xyzOut, i, DA_NAN, DA_NAN, DA_NAN);
}

/* Oriented-box region of interest. With d = p - O: inside when
 *   0 <= d.u <= lenU, 0 <= d.v <= lenV (u, v: unit vectors along A-O and B-O) and
 *   lo <= d.n <= hi (n: unit base normal). Comparisons with NaN are false, so a missing
 *   point is never inside. The one test of every kernel that masks by a box. */
DA_FN int da_pc_in_box(float x, float y, float z, float ox, float oy, float oz, float ux, float uy, float uz,
                       float lenU, float vx, float vy, float vz, float lenV, float nx, float ny, float nz, float lo,
                       float hi) {
  const float dx = x - ox, dy = y - oy, dz = z - oz;
  const float pu = dx * ux + dy * uy + dz * uz;
  const float pv = dx * vx + dy * vy + dz * vz;
  const float pn = dx * nx + dy * ny + dz * nz;
  return pu >= 0.0f && pu <= lenU && pv >= 0.0f && pv <= lenV && pn >= lo && pn <= hi;
}

/* Points outside the box become NaN. */
DA_KERNEL(da_pc_roi)(DA_PARAMS(DA_PC_ROI_PARAMS)) {
  DA_BUFFERS_INIT(DA_PC_ROI_PARAMS);
  const long i = DA_ID(0);
  if (i >= n) return;
  const float x = xyzIn[3 * i], y = xyzIn[3 * i + 1], z = xyzIn[3 * i + 2];
  if (da_pc_in_box(x, y, z, ox, oy, oz, ux, uy, uz, lenU, vx, vy, vz, lenV, nx, ny, nz, lo, hi))
    da_pc_store(xyzOut, i, x, y, z);
  else
    da_pc_store(xyzOut, i, DA_NAN, DA_NAN, DA_NAN);
}

/* da_pc_transform, then da_pc_roi: one read and one write of the points instead of two
 * of each (a frame loop's transform is followed by its ROI). */
DA_KERNEL(da_pc_transform_roi)(DA_PARAMS(DA_PC_TRANSFORM_ROI_PARAMS)) {
  DA_BUFFERS_INIT(DA_PC_TRANSFORM_ROI_PARAMS);
  const long i = DA_ID(0);
  if (i >= n) return;
  float p[3];
  da_pc_load(xyzIn, i, p);
  da_pc_moved(p, m00, m01, m02, m03, m10, m11, m12, m13, m20, m21, m22, m23);
  if (da_pc_in_box(p[0], p[1], p[2], ox, oy, oz, ux, uy, uz, lenU, vx, vy, vz, lenV, nx, ny, nz, lo, hi))
    da_pc_store(xyzOut, i, p[0], p[1], p[2]);
  else
    da_pc_store(xyzOut, i, DA_NAN, DA_NAN, DA_NAN);
}

/* Difference along one grid axis at point (r, c) with value p: central when both
 * neighbours are valid, one-sided when only one is, not available (returns 0) when none. */
DA_FN int da_pc_axis_difference(DA_GLOBAL const float* xyz, long before, long after, int hasBefore, int hasAfter,
                                float px, float py, float pz, float* d) {
  int b = 0, a = 0;
  float bx = 0.0f, by = 0.0f, bz = 0.0f, ax = 0.0f, ay = 0.0f, az = 0.0f;
  if (hasBefore) {
    bx = xyz[3 * before];
    by = xyz[3 * before + 1];
    bz = xyz[3 * before + 2];
    b = da_pc_valid(bx, by, bz);
  }
  if (hasAfter) {
    ax = xyz[3 * after];
    ay = xyz[3 * after + 1];
    az = xyz[3 * after + 2];
    a = da_pc_valid(ax, ay, az);
  }
  if (a && b) {
    d[0] = ax - bx;
    d[1] = ay - by;
    d[2] = az - bz;
  } else if (a) {
    d[0] = ax - px;
    d[1] = ay - py;
    d[2] = az - pz;
  } else if (b) {
    d[0] = px - bx;
    d[1] = py - by;
    d[2] = pz - bz;
  } else {
    return 0;
  }
  return 1;
}

/* Unit normals of an organized cloud (global size W x H): cross product of the
 * horizontal and vertical differences, flipped so that n . (p - camera) < 0, where the
 * camera position is where the accumulated transformation moved the sensor origin (so
 * transforming a cloud rotates its normals instead of re-orienting them). NaN where the
 * point is missing, an axis has no valid neighbour, or the cross product vanishes. */
DA_KERNEL(da_pc_normals)(DA_PARAMS(DA_PC_NORMALS_PARAMS)) {
  DA_BUFFERS_INIT(DA_PC_NORMALS_PARAMS);
  const long c = DA_ID(0);
  const long r = DA_ID(1);
  if (c >= width || r >= height) return;
  const long i = r * (long)width + c;
  const float px = xyz[3 * i], py = xyz[3 * i + 1], pz = xyz[3 * i + 2];
  float h[3], v[3];
  int ok = da_pc_valid(px, py, pz);
  ok = ok && da_pc_axis_difference(xyz, i - 1, i + 1, c > 0, c + 1 < width, px, py, pz, h);
  ok = ok && da_pc_axis_difference(xyz, i - width, i + width, r > 0, r + 1 < height, px, py, pz, v);
  float nx = DA_NAN, ny = DA_NAN, nz = DA_NAN;
  if (ok) {
    const float cx = h[1] * v[2] - h[2] * v[1];
    const float cy = h[2] * v[0] - h[0] * v[2];
    const float cz = h[0] * v[1] - h[1] * v[0];
    const float len = da_sqrtf(cx * cx + cy * cy + cz * cz);
    if (len > 0.0f && da_pc_finite(len)) {
      const float s = ((cx * (px - camX) + cy * (py - camY) + cz * (pz - camZ)) > 0.0f ? -1.0f : 1.0f) / len;
      nx = cx * s;
      ny = cy * s;
      nz = cz * s;
    }
  }
  da_pc_store(normals, i, nx, ny, nz);
}

/* flags[i] = 1 for a valid point, 0 otherwise; flags[n] = 0, so an exclusive scan of the
 * n + 1 flags ends with the number of valid points (global size n + 1). */
DA_KERNEL(da_pc_valid_flags)(DA_PARAMS(DA_PC_VALID_FLAGS_PARAMS)) {
  DA_BUFFERS_INIT(DA_PC_VALID_FLAGS_PARAMS);
  const long i = DA_ID(0);
  if (i > n) return;
  flags[i] = i < n ? (da_u32)da_pc_valid(xyz[3 * i], xyz[3 * i + 1], xyz[3 * i + 2]) : 0u;
}

/* Order-preserving compaction: point i is kept when offsets[i + 1] != offsets[i] (the
 * exclusive scan of the keep flags) and goes to position offsets[i]. The dropped points
 * fill the positions past the kept count with missing points, so the whole output is a
 * cloud of n points that operations ignoring missing points can take as it is, before
 * the host knows the count. Work item 0 writes the kept count to countOut[0] (the
 * launch has at least one work item, also for n = 0). */
DA_KERNEL(da_pc_compact)(DA_PARAMS(DA_PC_COMPACT_PARAMS)) {
  DA_BUFFERS_INIT(DA_PC_COMPACT_PARAMS);
  const long i = DA_ID(0);
  if (i == 0) countOut[0] = offsets[n];
  if (i >= n) return;
  const da_u32 o = offsets[i];
  if (offsets[i + 1] == o) {
    da_pc_store(xyzOut, (long)offsets[n] + (i - (long)o), DA_NAN, DA_NAN, DA_NAN);
    return;
  }
  da_pc_store(xyzOut, o, xyzIn[3 * i], xyzIn[3 * i + 1], xyzIn[3 * i + 2]);
  if (hasColor) {
    rgbaOut[4 * o] = rgbaIn[4 * i];
    rgbaOut[4 * o + 1] = rgbaIn[4 * i + 1];
    rgbaOut[4 * o + 2] = rgbaIn[4 * i + 2];
    rgbaOut[4 * o + 3] = rgbaIn[4 * i + 3];
  }
  if (hasSnr) snrOut[o] = snrIn[i];
  if (hasNormal) {
    normalOut[3 * o] = normalIn[3 * i];
    normalOut[3 * o + 1] = normalIn[3 * i + 1];
    normalOut[3 * o + 2] = normalIn[3 * i + 2];
  }
}

/* Voxels along an axis whose valid points span [lo, hi]: the max corner's index + 1,
 * computed as the points' indices are, so every point's index is below it. Clamped to
 * DA_VOXEL_AXIS_LIMIT (a point past it raises the overflow flag instead); 1 when no
 * point is valid (lo > hi). */
DA_FN da_u64 da_vx_axis_voxels(float lo, float hi, float voxelSize) {
  if (!(lo <= hi)) return 1UL;
  const float top = da_floorf((hi - lo) / voxelSize);
  return top < (float)DA_VOXEL_AXIS_LIMIT ? (da_u64)top + 1UL : (da_u64)DA_VOXEL_AXIS_LIMIT;
}

#if defined(__OPENCL_VERSION__)
#define da_vx_atomic_max(p, v) atomic_max((volatile DA_GLOBAL da_u32*)(p), (v))
#else
#define da_vx_atomic_max(p, v) atomicMax((p), (v))
#endif
DA_FN da_u32 da_vx_max_u32(da_u32 a, da_u32 b) { return a > b ? a : b; }

/* A float as a u32 whose unsigned order is the floats' order, so an atomic max of
 * words finds a min or max of floats. Finite values never map to 0 or to all ones
 * (only NaNs do), which leaves 0 free to mean "no value yet". */
DA_FN da_u32 da_vx_ordered(float x) {
  const da_u32 b = da_float_bits(x);
  return (b & 0x80000000u) ? ~b : (b | 0x80000000u);
}
DA_FN float da_vx_from_ordered(da_u32 w) { return da_float_from_bits((w & 0x80000000u) ? (w & 0x7FFFFFFFu) : ~w); }

/* The min corner's coordinate c (0..2) and the max corner's (3..5) from the words of
 * da_vx_bounds: +infinity and -infinity when no point is valid, which
 * da_vx_axis_voxels reads as a grid of one voxel. */
DA_FN float da_vx_bound(DA_GLOBAL const da_u32* bounds, int c) {
  const da_u32 w = bounds[c];
  if (c < 3) return w == 0u ? (float)INFINITY : da_vx_from_ordered(~w);
  return w == 0u ? -(float)INFINITY : da_vx_from_ordered(w);
}

/* The DA_VX_BOUNDS_ITEMS points of a work item of da_vx_bounds and da_vx_keys_packed:
 * point first + k * DA_VX_BOUNDS_GROUP for each k (neighbouring work items, neighbouring
 * points), NaN past n. All are loaded before any is used: one wait for memory instead
 * of one per point (a loop that tests each point as it loads it waits for each). */
DA_FN void da_vx_load_items(DA_GLOBAL const float* xyz, long n, long first, float* p) {
  DA_UNROLL
  for (int k = 0; k < DA_VX_BOUNDS_ITEMS; ++k) {
    const long i = first + (long)k * DA_VX_BOUNDS_GROUP;
    const int inside = i < n;
    p[3 * k] = inside ? xyz[3 * i] : DA_NAN;
    p[3 * k + 1] = inside ? xyz[3 * i + 1] : DA_NAN;
    p[3 * k + 2] = inside ? xyz[3 * i + 2] : DA_NAN;
  }
}

/* One pass instead of a device-wide reduction: each work-group folds its points'
 * corners (and its last valid point's position) in local memory and adds them to the
 * zeroed words with one atomic max per word. A reduction would need a second launch
 * (or a second level) to combine the groups; the atomics make the grid's bounds one
 * launch of the voxel grid. */
DA_KERNEL_GROUP(da_vx_bounds, DA_VX_BOUNDS_GROUP, 1)(DA_PARAMS(DA_VX_BOUNDS_PARAMS)) {
  DA_BUFFERS_INIT(DA_VX_BOUNDS_PARAMS);
  /* The bounds' words, then the valid points' count. */
  DA_LOCAL_ARRAY(da_u32, lanes, (DA_VX_BOUNDS_WORDS + 1) * DA_VX_BOUNDS_GROUP);
  const int lane = DA_LOCAL_ID();
  da_u32 m[DA_VX_BOUNDS_WORDS] = {0u}; /* all zero */
  da_u32 valid = 0u;
  const long first = DA_GROUP_ID() * (long)(DA_VX_BOUNDS_GROUP * DA_VX_BOUNDS_ITEMS) + lane;
  float p[3 * DA_VX_BOUNDS_ITEMS];
  da_vx_load_items(xyz, n, first, p);
  DA_UNROLL
  for (int k = 0; k < DA_VX_BOUNDS_ITEMS; ++k) {
    const float x = p[3 * k], y = p[3 * k + 1], z = p[3 * k + 2];
    if (!da_pc_valid(x, y, z)) continue;
    ++valid;
    const da_u32 o[3] = {da_vx_ordered(x), da_vx_ordered(y), da_vx_ordered(z)};
    for (int c = 0; c < 3; ++c) {
      m[c] = da_vx_max_u32(m[c], ~o[c]);
      m[3 + c] = da_vx_max_u32(m[3 + c], o[c]);
    }
    m[DA_VX_KEYED_END] = (da_u32)(first + (long)k * DA_VX_BOUNDS_GROUP + 1); /* k ascends: the last is the largest */
  }
  for (int c = 0; c < DA_VX_BOUNDS_WORDS; ++c) lanes[c * DA_VX_BOUNDS_GROUP + lane] = m[c];
  DA_LOCAL da_u32* counts = lanes + DA_VX_BOUNDS_WORDS * DA_VX_BOUNDS_GROUP;
  counts[lane] = valid;
  for (int step = DA_VX_BOUNDS_GROUP / 2; step > 0; step /= 2) {
    DA_BARRIER();
    if (lane < step) {
      for (int c = 0; c < DA_VX_BOUNDS_WORDS; ++c)
        lanes[c * DA_VX_BOUNDS_GROUP + lane] =
            da_vx_max_u32(lanes[c * DA_VX_BOUNDS_GROUP + lane], lanes[c * DA_VX_BOUNDS_GROUP + lane + step]);
      counts[lane] += counts[lane + step];
    }
  }
  DA_BARRIER();
  if (lane < DA_VX_BOUNDS_WORDS) {
    const da_u32 folded = lanes[lane * DA_VX_BOUNDS_GROUP];
    if (folded != 0u) da_vx_atomic_max(bounds + lane, folded);
  }
  if (lane == 0) groupValid[DA_GROUP_ID()] = counts[0];
}

/* Voxel keys: the rank of the point's voxel in the grid anchored at the cloud's min
 * corner (bounds[0..2], from da_vx_bounds; bounds[3..5] the max corner), x-major,
 * then y, then z: ((ix * ny) + iy) * nz + iz, with the point index as the sort value.
 * Missing points get DA_VOXEL_INVALID_KEY (63 bits of ones: sorted last, and dropped).
 * status[2] = the key width: the bits of the grid's cell count, so every key of a valid
 * point is below 2^width - 1 and the sort needs no pass above it (a frame's grid of 10
 * mm voxels needs about 17 bits, not the 63 of three 21-bit indices). status[0] = 1
 * when an index does not fit 21 bits (the voxel size is too small for the extent; the
 * point's key is then missing). */
typedef struct {
  float lo[3];
  da_u64 ny, nz;
} da_vx_grid;

DA_FN da_vx_grid da_vx_grid_of(DA_GLOBAL const da_u32* bounds, float voxelSize) {
  da_vx_grid g;
  for (int c = 0; c < 3; ++c) g.lo[c] = da_vx_bound(bounds, c);
  g.ny = da_vx_axis_voxels(g.lo[1], da_vx_bound(bounds, 4), voxelSize);
  g.nz = da_vx_axis_voxels(g.lo[2], da_vx_bound(bounds, 5), voxelSize);
  return g;
}

/* status[2] = the key width of the grid. */
DA_FN void da_vx_write_width(DA_GLOBAL const da_u32* bounds, da_vx_grid g, float voxelSize,
                             DA_GLOBAL da_u32* status) {
  /* At most (2^21 - 1)^3 cells: below 2^63, so the width stays within the sort's 63 bits. */
  const da_u64 cells = da_vx_axis_voxels(g.lo[0], da_vx_bound(bounds, 3), voxelSize) * g.ny * g.nz;
  da_u32 width = 1u;
  while (width < 63u && (cells >> width) != 0UL) ++width;
  status[2] = width;
}

/* The key of a valid point; missing (and status[0] = 1) when an index does not fit. */
DA_FN da_u64 da_vx_key(float x, float y, float z, da_vx_grid g, float voxelSize, DA_GLOBAL da_u32* status) {
  const float fx = da_floorf((x - g.lo[0]) / voxelSize);
  const float fy = da_floorf((y - g.lo[1]) / voxelSize);
  const float fz = da_floorf((z - g.lo[2]) / voxelSize);
  const float limit = (float)DA_VOXEL_AXIS_LIMIT;
  if (!(fx < limit && fy < limit && fz < limit)) {
    status[0] = 1u;
    return DA_VOXEL_INVALID_KEY;
  }
  /* fx >= 0 since x >= min; the max() guards against -0 rounding. */
  const da_u64 ix = (da_u64)da_fmaxf(fx, 0.0f), iy = (da_u64)da_fmaxf(fy, 0.0f), iz = (da_u64)da_fmaxf(fz, 0.0f);
  return (ix * g.ny + iy) * g.nz + iz;
}

DA_KERNEL(da_vx_keys)(DA_PARAMS(DA_VX_KEYS_PARAMS)) {
  DA_BUFFERS_INIT(DA_VX_KEYS_PARAMS);
  const long i = DA_ID(0);
  if (i >= n) return;
  const da_vx_grid g = da_vx_grid_of(bounds, voxelSize);
  if (i == 0) da_vx_write_width(bounds, g, voxelSize, status);
  const float x = xyz[3 * i], y = xyz[3 * i + 1], z = xyz[3 * i + 2];
  indices[i] = (da_u32)i;
  keys[i] = da_pc_valid(x, y, z) ? da_vx_key(x, y, z, g, voxelSize, status) : DA_VOXEL_INVALID_KEY;
}

/* The packed keys (an organized frame after a region of interest keeps a tenth of its
 * points, anywhere in the grid: the sort and the reduction then need only the first
 * `count` positions). Point i's slot: the valid points of the work-groups before its
 * own (summed from groupValid by the work-group) plus those before it in its own (a
 * local scan of the rows of DA_VX_BOUNDS_GROUP points its work items load together).
 * The positions from the count up to `fill` (the host's guess of it, for a sort that
 * takes more positions than the count) get missing keys. */
DA_KERNEL_GROUP(da_vx_keys_packed, DA_VX_BOUNDS_GROUP, 1)(DA_PARAMS(DA_VX_KEYS_PACKED_PARAMS)) {
  DA_BUFFERS_INIT(DA_VX_KEYS_PACKED_PARAMS);
  DA_LOCAL_ARRAY(da_u32, rows, DA_VX_BOUNDS_ITEMS * DA_VX_BOUNDS_GROUP);
  const int lane = DA_LOCAL_ID();
  const long group = DA_GROUP_ID();
  const long perGroup = DA_VX_BOUNDS_GROUP * DA_VX_BOUNDS_ITEMS;
  const long groups = (n + perGroup - 1) / perGroup;
  /* The valid points before this work-group's, and all of them: two sums over the
   * work-groups' counts, which every work-group reads from cache. That is (n / 2048)^2
   * words in all: fewer bytes than the 12 a point that a scan of the points reads, up to
   * about 12 M points (a 12 MP frame). */
  da_u32 before = 0u, all = 0u;
  for (long h = lane; h < groups; h += DA_VX_BOUNDS_GROUP) {
    const da_u32 c = groupValid[h];
    all += c;
    if (h < group) before += c;
  }
  rows[lane] = before;
  rows[DA_VX_BOUNDS_GROUP + lane] = all;
  da_group_inclusive_scan(rows, 2, DA_VX_BOUNDS_GROUP);
  const da_u32 first = rows[DA_VX_BOUNDS_GROUP - 1], count = rows[2 * DA_VX_BOUNDS_GROUP - 1];
  const da_vx_grid g = da_vx_grid_of(bounds, voxelSize);
  DA_BARRIER(); /* every work item has read the sums before the rows are written */
  const long base = group * perGroup + lane;
  float p[3 * DA_VX_BOUNDS_ITEMS];
  da_vx_load_items(xyz, n, base, p);
  DA_UNROLL
  for (int k = 0; k < DA_VX_BOUNDS_ITEMS; ++k)
    rows[k * DA_VX_BOUNDS_GROUP + lane] = da_pc_valid(p[3 * k], p[3 * k + 1], p[3 * k + 2]) ? 1u : 0u;
  da_group_inclusive_scan(rows, DA_VX_BOUNDS_ITEMS, DA_VX_BOUNDS_GROUP);
  if (group == 0 && lane == 0) {
    da_vx_write_width(bounds, g, voxelSize, status);
    bounds[DA_VX_KEYED_END] = count;
  }
  da_u32 rowStart = first; /* the valid points before row k */
  for (int k = 0; k < DA_VX_BOUNDS_ITEMS; ++k) {
    const long i = base + (long)k * DA_VX_BOUNDS_GROUP;
    const float x = p[3 * k], y = p[3 * k + 1], z = p[3 * k + 2];
    if (da_pc_valid(x, y, z)) {
      const long slot = (long)rowStart + (long)rows[k * DA_VX_BOUNDS_GROUP + lane] - 1;
      indices[slot] = (da_u32)i;
      keys[slot] = da_vx_key(x, y, z, g, voxelSize, status);
    }
    /* Position i (as a sort position, not a point) past the count but inside the guess. */
    if (i < n && i >= (long)count && i < fill) {
      keys[i] = DA_VOXEL_INVALID_KEY;
      indices[i] = (da_u32)i; /* sorted with the keys: written, though no voxel reads it */
    }
    rowStart += rows[k * DA_VX_BOUNDS_GROUP + DA_VX_BOUNDS_GROUP - 1];
  }
}

/* How many sorted positions the voxel kernels read: those before keyedEnd[0] (one past
 * the last valid point, or their count when da_vx_keys packs them). Every key past it
 * is missing, and the sort orders only the positions before it, so the keys after
 * them may be anything. */
DA_FN long da_vx_keyed_count(long n, DA_GLOBAL const da_u32* keyedEnd) {
  const long end = (long)keyedEnd[0];
  return end < n ? end : n;
}

/* Sorted position j starts a kept voxel: a run of valid keys starts there, with at
 * least minPoints positions. */
DA_FN int da_vx_kept_head(long n, int minPoints, DA_GLOBAL const da_u64* keys, long j) {
  const da_u64 key = keys[j];
  if (key == DA_VOXEL_INVALID_KEY || (j > 0 && keys[j - 1] == key)) return 0;
  const long last = j + (long)minPoints - 1;
  return last < n && keys[last] == key;
}

/* Work-group g takes tiles g, g + groups, ... in that order, and stops after the first
 * that starts with a missing key: missing keys sort last, so no later tile holds a
 * voxel. A frame's grid at a compaction's capacity has a few hundred tiles of valid
 * points among thousands; the groups past them meet one key each. (The group leaves
 * the loop after the tile's barriers, not before them: PoCL, which runs a group's work
 * items in loops between barriers, failed a group leaving a loop that has barriers
 * ahead of them.) */
DA_KERNEL_GROUP(da_vx_tile_heads, DA_VX_TILE, 1)(DA_PARAMS(DA_VX_TILE_HEADS_PARAMS)) {
  DA_BUFFERS_INIT(DA_VX_TILE_HEADS_PARAMS);
  DA_LOCAL_ARRAY(da_u32, heads, DA_VX_TILE);
  const int lane = DA_LOCAL_ID();
  const long keyed = da_vx_keyed_count(n, keyedEnd);
  const long tiles = (keyed + DA_VX_TILE - 1) / DA_VX_TILE;
  for (long tile = DA_GROUP_ID(); tile < tiles; tile += DA_GROUPS()) {
    const long j = tile * DA_VX_TILE + lane;
    const int live = keys[tile * DA_VX_TILE] != DA_VOXEL_INVALID_KEY; /* the same for every work item */
    const da_u32 head = live && j < keyed ? (da_u32)da_vx_kept_head(keyed, minPoints, keys, j) : 0u;
    heads[lane] = head;
    da_group_inclusive_scan(heads, 1, DA_VX_TILE);
    if (live && j < keyed) rank[j] = heads[lane] - head;
    if (lane == DA_VX_TILE - 1) tileHeads[tile] = heads[lane];
    if (!live) break;
    DA_BARRIER(); /* every work item has read heads before the next tile writes it */
  }
}

/* The tiles in chunks of DA_VX_SCAN_GROUP, each scanned in local memory on top of the
 * chunks before, up to the chunk whose last tile starts with a missing key: no later
 * tile holds a voxel (a frame's grid at a compaction's capacity has a few hundred tiles
 * of valid points among thousands), and no later tile's offset is read. */
DA_KERNEL_GROUP(da_vx_tile_offsets, DA_VX_SCAN_GROUP, 1)(DA_PARAMS(DA_VX_TILE_OFFSETS_PARAMS)) {
  DA_BUFFERS_INIT(DA_VX_TILE_OFFSETS_PARAMS);
  DA_LOCAL_ARRAY(da_u32, sums, DA_VX_SCAN_GROUP);
  const int lane = DA_LOCAL_ID();
  const long tiles = (da_vx_keyed_count(n, keyedEnd) + DA_VX_TILE - 1) / DA_VX_TILE;
  da_u32 carried = 0u;
  for (long base = 0; base < tiles; base += DA_VX_SCAN_GROUP) {
    const long t = base + lane;
    /* A tile past the first that starts with a missing key may have no count. */
    const da_u32 heads = t < tiles && keys[t * DA_VX_TILE] != DA_VOXEL_INVALID_KEY ? tileHeads[t] : 0u;
    sums[lane] = heads;
    da_group_inclusive_scan(sums, 1, DA_VX_SCAN_GROUP);
    if (t < tiles) tileOffsets[t] = carried + sums[lane] - heads;
    carried += sums[DA_VX_SCAN_GROUP - 1];
    /* The same word for every work item: the whole group leaves the loop together. */
    const long last = (base + DA_VX_SCAN_GROUP < tiles ? base + DA_VX_SCAN_GROUP : tiles) - 1;
    if (keys[last * DA_VX_TILE] == DA_VOXEL_INVALID_KEY) break;
    DA_BARRIER(); /* every work item has read sums before the next chunk writes it */
  }
  if (lane == 0) status[1] = carried;
}

/* Running sums of a voxel's points: f[] the weighted and plain position sums, the sum
 * of weights and the normal sums; w[] the point count and the colour terms (a voxel may
 * hold millions of points). */
/* f[0..6] as da_pc_mean: wx, wy, wz, wsum, ux, uy, uz */
#define DA_VX_NX 7 /* f[7..9]: normal sums */
#define DA_VX_COUNT 0 /* w[0]: points; w[1..4]: colour terms r, g, b, a */
typedef struct {
  float f[DA_VX_SUM_FLOATS];
  da_u64 w[DA_VX_SUM_WORDS];
} da_vx_sums;

DA_FN void da_vx_sums_clear(da_vx_sums* t) {
  for (int c = 0; c < DA_VX_SUM_FLOATS; ++c) t->f[c] = 0.0f;
  for (int c = 0; c < DA_VX_SUM_WORDS; ++c) t->w[c] = 0;
}

/* t = the sums of point p alone (its normal only when valid). */
DA_FN void da_vx_sums_of_point(da_vx_sums* t, long p, int hasColor, int srgb, int hasSnr, int hasNormals,
                               DA_GLOBAL const float* xyzIn, DA_GLOBAL const da_u8* rgbaIn,
                               DA_GLOBAL const float* snrIn, DA_GLOBAL const float* normalsIn,
                               DA_GLOBAL const float* srgbDecode) {
  const float x = xyzIn[3 * p], y = xyzIn[3 * p + 1], z = xyzIn[3 * p + 2];
  const float w = hasSnr ? da_pc_weight(snrIn[p]) : 1.0f;
  t->f[0] = w * x, t->f[1] = w * y, t->f[2] = w * z, t->f[3] = w;
  t->f[4] = x, t->f[5] = y, t->f[6] = z;
  if (hasNormals) {
    const float nx = normalsIn[3 * p], ny = normalsIn[3 * p + 1], nz = normalsIn[3 * p + 2];
    if (da_pc_valid(nx, ny, nz)) t->f[DA_VX_NX] = nx, t->f[DA_VX_NX + 1] = ny, t->f[DA_VX_NX + 2] = nz;
  }
  t->w[DA_VX_COUNT] = 1;
  if (hasColor) {
    t->w[1] = da_color_term(rgbaIn[4 * p], srgb, srgbDecode);
    t->w[2] = da_color_term(rgbaIn[4 * p + 1], srgb, srgbDecode);
    t->w[3] = da_color_term(rgbaIn[4 * p + 2], srgb, srgbDecode);
    t->w[4] = rgbaIn[4 * p + 3];
  }
}

/* Slot `slot` of tile k's shares (see DA_VX_REDUCE_TILES_PARAMS). */
DA_FN void da_vx_sums_store_share(const da_vx_sums* t, long k, int slot, DA_GLOBAL float* tileFloats,
                                  DA_GLOBAL da_u64* tileWords) {
  const long at = 2 * k + slot;
  for (int c = 0; c < DA_VX_SUM_FLOATS; ++c) tileFloats[DA_VX_SUM_FLOATS * at + c] = t->f[c];
  for (int c = 0; c < DA_VX_SUM_WORDS; ++c) tileWords[DA_VX_SUM_WORDS * at + c] = t->w[c];
}
DA_FN void da_vx_sums_add_share(da_vx_sums* t, long k, int slot, DA_GLOBAL const float* tileFloats,
                                DA_GLOBAL const da_u64* tileWords) {
  const long at = 2 * k + slot;
  for (int c = 0; c < DA_VX_SUM_FLOATS; ++c) t->f[c] += tileFloats[DA_VX_SUM_FLOATS * at + c];
  for (int c = 0; c < DA_VX_SUM_WORDS; ++c) t->w[c] += tileWords[DA_VX_SUM_WORDS * at + c];
}

/* Lane `lane` of a tile's sums in local memory (da_vx_reduce_tiles: laneF holds
 * DA_VX_SUM_FLOATS rows of DA_VX_TILE floats, laneW DA_VX_SUM_WORDS rows of words). */
DA_FN void da_vx_sums_store_lane(const da_vx_sums* t, int lane, DA_LOCAL float* laneF, DA_LOCAL da_u64* laneW) {
  for (int c = 0; c < DA_VX_SUM_FLOATS; ++c) laneF[c * DA_VX_TILE + lane] = t->f[c];
  for (int c = 0; c < DA_VX_SUM_WORDS; ++c) laneW[c * DA_VX_TILE + lane] = t->w[c];
}
DA_FN void da_vx_sums_add_lane(da_vx_sums* t, int lane, DA_LOCAL const float* laneF, DA_LOCAL const da_u64* laneW) {
  for (int c = 0; c < DA_VX_SUM_FLOATS; ++c) t->f[c] += laneF[c * DA_VX_TILE + lane];
  for (int c = 0; c < DA_VX_SUM_WORDS; ++c) t->w[c] += laneW[c * DA_VX_TILE + lane];
}

/* Output voxel o from its sums: SNR^2-weighted mean position (plain mean when the
 * weights are all 0 or there is no SNR), mean colour rounded half up (sRGB codes: their
 * mean in linear light, encoded back), sqrt(sum SNR^2), the sum of the valid normals
 * scaled to unit length (NaN when there is none or they cancel). */
DA_FN void da_vx_store_voxel(const da_vx_sums* t, long o, int hasColor, int srgb, int hasSnr, int hasNormals,
                             DA_GLOBAL float* xyzOut, DA_GLOBAL da_u8* rgbaOut, DA_GLOBAL float* snrOut,
                             DA_GLOBAL float* normalsOut, DA_GLOBAL const da_u32* srgbEncode) {
  const da_pc_mean mean = {t->f[0], t->f[1], t->f[2], t->f[3], t->f[4], t->f[5], t->f[6]};
  const da_u64 count = t->w[DA_VX_COUNT];
  da_pc_mean_store(&mean, (float)count, xyzOut, o);
  if (hasSnr) snrOut[o] = da_sqrtf(mean.wsum);
  if (hasNormals) {
    const float nx = t->f[DA_VX_NX], ny = t->f[DA_VX_NX + 1], nz = t->f[DA_VX_NX + 2];
    const float len = da_sqrtf(nx * nx + ny * ny + nz * nz);
    if (len > 0.0f)
      da_pc_store(normalsOut, o, nx / len, ny / len, nz / len);
    else
      da_pc_store(normalsOut, o, DA_NAN, DA_NAN, DA_NAN);
  }
  if (hasColor) {
    rgbaOut[4 * o] = da_color_mean(t->w[1], count, srgb, srgbEncode);
    rgbaOut[4 * o + 1] = da_color_mean(t->w[2], count, srgb, srgbEncode);
    rgbaOut[4 * o + 2] = da_color_mean(t->w[3], count, srgb, srgbEncode);
    rgbaOut[4 * o + 3] = da_color_mean(t->w[4], count, 0, srgbEncode);
  }
}

/* The output slot of the voxel that starts at sorted position h (in tile h /
 * DA_VX_TILE), or -1 when it has fewer than minPoints points. */
DA_FN long da_vx_slot_of(long n, int minPoints, DA_GLOBAL const da_u64* keys, DA_GLOBAL const da_u32* rank,
                         DA_GLOBAL const da_u32* tileOffsets, long h) {
  if (!da_vx_kept_head(n, minPoints, keys, h)) return -1L;
  return (long)tileOffsets[h / DA_VX_TILE] + (long)rank[h];
}

/* One work-group per tile of DA_VX_TILE sorted positions. Each work item loads its
 * point's terms into local memory, all of the tile's gathers at once; each work item
 * then adds its run's terms within its block of DA_VX_SUB positions, and the work item
 * at the last position of each run adds those blocks' sums, always in the same order,
 * so results are deterministic. One work item reducing a voxel's points from global
 * memory would wait on two dependent loads per point, and one walking a long run in
 * local memory adds hundreds of terms in a row; this way none adds more than
 * DA_VX_SUB + DA_VX_TILE / DA_VX_SUB, for three barriers. Runs that lie within the
 * tile are written out as voxels; a run that enters the tile from the one before or
 * leaves it for the next is stored as the tile's share of its voxel
 * (da_vx_reduce_spanning adds the shares). Work item j also writes output slot j as a
 * missing point when it is past the kept voxels (the capacity past the count, see
 * da_pc_compact). */
DA_KERNEL_GROUP(da_vx_reduce_tiles, DA_VX_TILE, 1)(DA_PARAMS(DA_VX_REDUCE_TILES_PARAMS)) {
  DA_BUFFERS_INIT(DA_VX_REDUCE_TILES_PARAMS);
  DA_LOCAL_ARRAY(float, laneF, DA_VX_SUM_FLOATS * DA_VX_TILE);
  DA_LOCAL_ARRAY(da_u64, laneW, DA_VX_SUM_WORDS * DA_VX_TILE);
  DA_LOCAL_ARRAY(int, laneStarts, DA_VX_TILE);
  DA_LOCAL_ARRAY(int, laneFrom, DA_VX_TILE);
  const int lane = DA_LOCAL_ID();
  const long tile = DA_GROUP_ID(), first = tile * DA_VX_TILE, j = first + lane;
  if (j < n && j >= (long)status[1]) da_pc_store(xyzOut, j, DA_NAN, DA_NAN, DA_NAN);
  /* Keys sort missing points last: a tile that starts with one holds nothing else, and
   * the whole work-group leaves before the barriers. */
  const long keyed = da_vx_keyed_count(n, keyedEnd);
  if (first >= keyed || keys[first] == DA_VOXEL_INVALID_KEY) return;
  const da_u64 key = j < keyed ? keys[j] : DA_VOXEL_INVALID_KEY;
  da_vx_sums t;
  da_vx_sums_clear(&t);
  if (key != DA_VOXEL_INVALID_KEY)
    da_vx_sums_of_point(&t, (long)order[j], hasColor, srgb, hasSnr, hasNormals, xyzIn, rgbaIn, snrIn, normalsIn,
                        srgbDecode);
  da_vx_sums_store_lane(&t, lane, laneF, laneW);
  /* A run starts at the tile's first position and wherever the key changes. */
  laneStarts[lane] = lane == 0 || j >= keyed || keys[j - 1] != key;
  DA_BARRIER();
  /* Each work item sums its run's terms in its block of DA_VX_SUB positions up to
   * itself; then a run's last work item adds those partial sums of the blocks the run
   * covers: at most DA_VX_SUB terms and DA_VX_TILE / DA_VX_SUB partial sums, where one
   * work item walking a tile-long run would add DA_VX_TILE terms one after another. */
  const int block = lane & ~(DA_VX_SUB - 1);
  int from = lane;
  while (from > block && !laneStarts[from]) --from;
  da_vx_sums_clear(&t);
  for (int at = from; at <= lane; ++at) da_vx_sums_add_lane(&t, at, laneF, laneW);
  DA_BARRIER(); /* every work item has read the terms it sums */
  da_vx_sums_store_lane(&t, lane, laneF, laneW);
  laneFrom[lane] = from;
  DA_BARRIER();
  if (key == DA_VOXEL_INVALID_KEY) return;
  if (lane != DA_VX_TILE - 1 && j != keyed - 1 && keys[j + 1] == key) return; /* not the run's last position */
  /* `begin`: the run's first position covered so far. At a block's first position that
   * starts no run, the run goes on in the block before, whose last work item's partial
   * sum starts at the run's start or at that block's first position. */
  int begin = from;
  while (begin > 0 && begin % DA_VX_SUB == 0 && !laneStarts[begin]) {
    const int end = begin - 1;
    da_vx_sums_add_lane(&t, end, laneF, laneW);
    begin = laneFrom[end];
  }
  /* The run entered from the tile before when the key before the tile's start is its
   * own (keys are sorted: every key between is too). */
  const int entered = first > 0 && keys[first - 1] == key;
  const int leaves = lane == DA_VX_TILE - 1 && j + 1 < keyed && keys[j + 1] == key;
  if (entered) {
    da_vx_sums_store_share(&t, tile, 0, tileFloats, tileWords);
    return;
  }
  const long o = da_vx_slot_of(keyed, minPoints, keys, rank, tileOffsets, first + begin);
  if (leaves) {
    da_vx_sums_store_share(&t, tile, 1, tileFloats, tileWords);
    tileVoxel[tile] = o >= 0 ? (da_u32)o : ~0u;
    return;
  }
  if (o >= 0) da_vx_store_voxel(&t, o, hasColor, srgb, hasSnr, hasNormals, xyzOut, rgbaOut, snrOut, normalsOut, srgbEncode);
}

/* One work item per tile: the voxel that starts in tile k and leaves it, when there is
 * one, from its share in tile k, then the share of each later tile it runs into, in
 * that order. The kernel is a chain of dependent loads, so each step loads all it can
 * at once: the three keys that decide whether a voxel leaves tile k, then its slot and
 * the first two shares (written whenever it leaves, kept or not) together. */
DA_KERNEL(da_vx_reduce_spanning)(DA_PARAMS(DA_VX_REDUCE_SPANNING_PARAMS)) {
  DA_BUFFERS_INIT(DA_VX_REDUCE_SPANNING_PARAMS);
  const long k = DA_ID(0);
  const long keyed = da_vx_keyed_count(n, keyedEnd);
  const long first = k * DA_VX_TILE, next = first + DA_VX_TILE;
  if (next >= keyed) return;
  const da_u64 key = keys[next - 1], following = keys[next];
  const da_u64 preceding = first > 0 ? keys[first - 1] : DA_VOXEL_INVALID_KEY;
  if (key == DA_VOXEL_INVALID_KEY || following != key) return; /* missing points, or the run ends with the tile */
  if (preceding == key) return;                                  /* entered from an earlier tile */
  const da_u32 slot = tileVoxel[k];                              /* ~0: fewer than minPoints points */
  da_vx_sums t;
  da_vx_sums_clear(&t);
  da_vx_sums_add_share(&t, k, 1, tileFloats, tileWords);
  for (long m = k + 1;; ++m) {
    da_vx_sums_add_share(&t, m, 0, tileFloats, tileWords);
    const long after = (m + 1) * DA_VX_TILE;
    if (after >= keyed || keys[after] != key) break;
  }
  if (slot != ~0u)
    da_vx_store_voxel(&t, (long)slot, hasColor, srgb, hasSnr, hasNormals, xyzOut, rgbaOut, snrOut, normalsOut,
                      srgbEncode);
}

#endif /* DEVICEARRAY_KERNELS_POINTCLOUD_H */
