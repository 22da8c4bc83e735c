/* Camera filters of organized clouds (PointCloud::filterNoise, filterOutliers,
 * smoothDepth, fillHoles), written once for CUDA (registered in
 * src/cuda/camera_filter_kernels.cu) and OpenCL. One work item per pixel; every filter
 * reads its input cloud and writes a separate output, so a neighbourhood never sees
 * values the same pass has already changed. */
#ifndef DEVICEARRAY_KERNELS_CAMERA_FILTERS_H
#define DEVICEARRAY_KERNELS_CAMERA_FILTERS_H

#include "prelude.h"
#include "backend/filter_signatures.h"
#include "point_validity.h"
#include "linear_light.h"

#if defined(__OPENCL_VERSION__)
#define da_cf_expf(x) exp(x)
#else
#define da_cf_expf(x) expf(x)
#endif

DA_FN void da_cf_store(DA_GLOBAL float* xyz, long i, float x, float y, float z) {
  xyz[3 * i] = x;
  xyz[3 * i + 1] = y;
  xyz[3 * i + 2] = z;
}

/* Writes point i: (x, y, z) when `keep`, a missing point otherwise. */
DA_FN void da_cf_store_if(DA_GLOBAL float* xyz, long i, int keep, float x, float y, float z) {
  if (keep)
    da_cf_store(xyz, i, x, y, z);
  else
    da_cf_store(xyz, i, DA_NAN, DA_NAN, DA_NAN);
}

DA_FN int da_cf_valid_at(DA_GLOBAL const float* xyz, long i) {
  return da_pc_valid(xyz[3 * i], xyz[3 * i + 1], xyz[3 * i + 2]);
}

/* SNR noise removal: a point is kept when snr >= threshold (a NaN SNR removes it). */
DA_KERNEL(da_cf_snr)(DA_PARAMS(DA_CF_SNR_PARAMS)) {
  DA_BUFFERS_INIT(DA_CF_SNR_PARAMS);
  const long i = DA_ID(0);
  if (i >= n) return;
  da_cf_store_if(xyzOut, i, snr[i] >= threshold, xyzIn[3 * i], xyzIn[3 * i + 1], xyzIn[3 * i + 2]);
}

/* Outlier removal: a valid point is kept when at least one valid point of its 8-grid
 * neighbourhood lies within maxDistance (squared distances compared, so no sqrt). */
DA_KERNEL(da_cf_outlier)(DA_PARAMS(DA_CF_OUTLIER_PARAMS)) {
  DA_BUFFERS_INIT(DA_CF_OUTLIER_PARAMS);
  const long c = DA_ID(0);
  const long r = DA_ID(1);
  if (c >= width || r >= height) return;
  const long i = r * (long)width + c;
  const float px = xyzIn[3 * i], py = xyzIn[3 * i + 1], pz = xyzIn[3 * i + 2];
  int keep = 0;
  if (da_pc_valid(px, py, pz)) {
    const float limit = maxDistance * maxDistance;
    for (int dy = -1; dy <= 1 && !keep; ++dy) {
      const long rr = r + dy;
      if (rr < 0 || rr >= height) continue;
      for (int dx = -1; dx <= 1; ++dx) {
        const long cc = c + dx;
        if ((dx == 0 && dy == 0) || cc < 0 || cc >= width) continue;
        const long j = rr * (long)width + cc;
        const float qx = xyzIn[3 * j], qy = xyzIn[3 * j + 1], qz = xyzIn[3 * j + 2];
        if (!da_pc_valid(qx, qy, qz)) continue;
        const float ex = qx - px, ey = qy - py, ez = qz - pz;
        if (ex * ex + ey * ey + ez * ez <= limit) {
          keep = 1;
          break;
        }
      }
    }
  }
  da_cf_store_if(xyzOut, i, keep, px, py, pz);
}

/* Depth smoothing: z' = sum(w z_q) / sum(w) over the valid points q of the
 * (2 radius + 1)^2 window whose depth is within maxDepthDifference of the centre's,
 * w = exp(-(dx^2 + dy^2) / (2 sigma^2)); the point moves along its ray (p' = p z' / z),
 * so x and y keep their ratio to z. Missing points and points with z == 0 (no ray
 * scale) are copied. */
DA_KERNEL(da_cf_smooth)(DA_PARAMS(DA_CF_SMOOTH_PARAMS)) {
  DA_BUFFERS_INIT(DA_CF_SMOOTH_PARAMS);
  const long c = DA_ID(0);
  const long r = DA_ID(1);
  if (c >= width || r >= height) return;
  const long i = r * (long)width + c;
  const float px = xyzIn[3 * i], py = xyzIn[3 * i + 1], pz = xyzIn[3 * i + 2];
  if (!da_pc_valid(px, py, pz) || pz == 0.0f) {
    da_cf_store(xyzOut, i, px, py, pz);
    return;
  }
  const float inverseTwoSigmaSquared = 1.0f / (2.0f * sigma * sigma);
  float weightSum = 0.0f, depthSum = 0.0f;
  for (int dy = -radius; dy <= radius; ++dy) {
    const long rr = r + dy;
    if (rr < 0 || rr >= height) continue;
    for (int dx = -radius; dx <= radius; ++dx) {
      const long cc = c + dx;
      if (cc < 0 || cc >= width) continue;
      const long j = rr * (long)width + cc;
      const float qz = xyzIn[3 * j + 2];
      if (!da_cf_valid_at(xyzIn, j) || da_fabsf(qz - pz) > maxDepthDifference) continue;
      const float w = da_cf_expf(-(float)(dx * dx + dy * dy) * inverseTwoSigmaSquared);
      weightSum += w;
      depthSum += w * qz;
    }
  }
  /* The centre itself always contributes weight 1, so weightSum > 0. */
  const float s = (depthSum / weightSum) / pz;
  da_cf_store(xyzOut, i, px * s, py * s, pz * s);
}

/* Searches from pixel i in steps of `stride` (at most `limit` steps, `room` steps before
 * the border) for the nearest valid point with z != 0; returns its step count, 0 if none. */
DA_FN int da_cf_nearest_valid(DA_GLOBAL const float* xyz, long i, long stride, int limit, long room) {
  for (int s = 1; s <= limit && s <= room; ++s) {
    const long j = i + s * stride;
    if (da_cf_valid_at(xyz, j)) return xyz[3 * j + 2] != 0.0f ? s : 0;
  }
  return 0;
}

/* Running sums of the weighted ends of the gaps a missing point is filled from. */
typedef struct {
  float sx, sy, z, snr, r, g, b, a;
} da_cf_fill_sum;

/* The colours of a gap's ends: sRGB codes (srgb) are interpolated in linear light,
 * decoded through srgbDecode; linear codes as they are. */
typedef struct {
  int hasColor, srgb;
  DA_GLOBAL const da_u8* rgba;
  DA_GLOBAL const float* srgbDecode;
} da_cf_colors;

DA_FN void da_cf_fill_add(da_cf_fill_sum* f, DA_GLOBAL const float* xyz, da_cf_colors colors,
                          DA_GLOBAL const float* snr, int hasSnr, long j, float w) {
  DA_GLOBAL const da_u8* rgba = colors.rgba;
  const float z = xyz[3 * j + 2];
  f->sx += w * (xyz[3 * j] / z);
  f->sy += w * (xyz[3 * j + 1] / z);
  f->z += w * z;
  if (hasSnr) f->snr += w * snr[j];
  if (colors.hasColor && colors.srgb) {
    f->r += w * colors.srgbDecode[rgba[4 * j]];
    f->g += w * colors.srgbDecode[rgba[4 * j + 1]];
    f->b += w * colors.srgbDecode[rgba[4 * j + 2]];
    f->a += w * (float)rgba[4 * j + 3];
  } else if (colors.hasColor) {
    f->r += w * (float)rgba[4 * j];
    f->g += w * (float)rgba[4 * j + 1];
    f->b += w * (float)rgba[4 * j + 2];
    f->a += w * (float)rgba[4 * j + 3];
  }
}

/* Whether the gap through pixel i along `stride` can be filled: both ends found (`before`
 * steps back, `after` steps ahead), at most maxHoleSize missing points between them
 * (before + after - 1) and the ends' depths within maxDepthDifference. */
DA_FN int da_cf_gap_fillable(DA_GLOBAL const float* xyz, long i, long stride, int before, int after, int maxHoleSize,
                             float maxDepthDifference) {
  if (before == 0 || after == 0 || before + after - 1 > maxHoleSize) return 0;
  return da_fabsf(xyz[3 * (i + after * stride) + 2] - xyz[3 * (i - before * stride) + 2]) <= maxDepthDifference;
}

/* Adds the linear interpolation at i between the gap's ends (the nearer end weighs
 * more), scaled by `share`. */
DA_FN void da_cf_fill_gap(da_cf_fill_sum* f, DA_GLOBAL const float* xyz, da_cf_colors colors,
                          DA_GLOBAL const float* snr, int hasSnr, long i, long stride, int before,
                          int after, float share) {
  const float span = (float)(before + after);
  da_cf_fill_add(f, xyz, colors, snr, hasSnr, i - before * stride, share * ((float)after / span));
  da_cf_fill_add(f, xyz, colors, snr, hasSnr, i + after * stride, share * ((float)before / span));
}

DA_FN da_u8 da_cf_round_u8(float v) {
  const float r = da_floorf(v + 0.5f);
  return (da_u8)(r < 0.0f ? 0.0f : (r > 255.0f ? 255.0f : r));
}

/* Hole repair. A missing point is filled from the gap along its row and the gap along
 * its column (each when both of its ends are valid, it holds at most maxHoleSize
 * missing points and the ends' depths differ by at most maxDepthDifference): linear
 * interpolation of depth and of the ray slopes x/z, y/z between the ends, the two gaps
 * averaged when both qualify. Colour and SNR are interpolated with the same weights
 * (sRGB codes in linear light, encoded back). */
DA_KERNEL(da_cf_fill)(DA_PARAMS(DA_CF_FILL_PARAMS)) {
  DA_BUFFERS_INIT(DA_CF_FILL_PARAMS);
  const long c = DA_ID(0);
  const long r = DA_ID(1);
  if (c >= width || r >= height) return;
  const long i = r * (long)width + c;
  const float px = xyzIn[3 * i], py = xyzIn[3 * i + 1], pz = xyzIn[3 * i + 2];
  int filled = 0;
  da_cf_fill_sum f = {0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f};
  if (!da_pc_valid(px, py, pz)) {
    const int left = da_cf_nearest_valid(xyzIn, i, -1, maxHoleSize, c);
    const int right = da_cf_nearest_valid(xyzIn, i, 1, maxHoleSize, width - 1 - c);
    const int up = da_cf_nearest_valid(xyzIn, i, -(long)width, maxHoleSize, r);
    const int down = da_cf_nearest_valid(xyzIn, i, (long)width, maxHoleSize, height - 1 - r);
    const int rowGap = da_cf_gap_fillable(xyzIn, i, 1, left, right, maxHoleSize, maxDepthDifference);
    const int columnGap = da_cf_gap_fillable(xyzIn, i, (long)width, up, down, maxHoleSize, maxDepthDifference);
    const float share = rowGap && columnGap ? 0.5f : 1.0f;
    da_cf_colors colors;
    colors.hasColor = hasColor;
    colors.srgb = srgb;
    colors.rgba = rgbaIn;
    colors.srgbDecode = srgbDecode;
    if (rowGap) da_cf_fill_gap(&f, xyzIn, colors, snrIn, hasSnr, i, 1, left, right, share);
    if (columnGap) da_cf_fill_gap(&f, xyzIn, colors, snrIn, hasSnr, i, (long)width, up, down, share);
    filled = rowGap || columnGap;
  }
  if (filled) {
    da_cf_store(xyzOut, i, f.sx * f.z, f.sy * f.z, f.z);
    if (hasSnr) snrOut[i] = f.snr;
    if (hasColor && srgb) {
      rgbaOut[4 * i] = da_cvt_quantize(f.r, srgbEncode);
      rgbaOut[4 * i + 1] = da_cvt_quantize(f.g, srgbEncode);
      rgbaOut[4 * i + 2] = da_cvt_quantize(f.b, srgbEncode);
      rgbaOut[4 * i + 3] = da_cf_round_u8(f.a);
    } else if (hasColor) {
      rgbaOut[4 * i] = da_cf_round_u8(f.r);
      rgbaOut[4 * i + 1] = da_cf_round_u8(f.g);
      rgbaOut[4 * i + 2] = da_cf_round_u8(f.b);
      rgbaOut[4 * i + 3] = da_cf_round_u8(f.a);
    }
    return;
  }
  da_cf_store(xyzOut, i, px, py, pz);
  if (hasSnr) snrOut[i] = snrIn[i];
  if (hasColor) {
    rgbaOut[4 * i] = rgbaIn[4 * i];
    rgbaOut[4 * i + 1] = rgbaIn[4 * i + 1];
    rgbaOut[4 * i + 2] = rgbaIn[4 * i + 2];
    rgbaOut[4 * i + 3] = rgbaIn[4 * i + 3];
  }
}

#endif /* DEVICEARRAY_KERNELS_CAMERA_FILTERS_H */
