/* Format conversions of DeviceArray (API.md §6a), written once for CUDA and OpenCL.
 *
 * Consecutive work items touch consecutive elements, so every access of a warp /
 * sub-group falls in one contiguous span (see DA_CVT_ITEMS below).
 * Channel layouts are kernel arguments (channel count and the index of r, g, b, a,
 * -1 when absent) so that one kernel serves every pair of formats of a family
 * without a branch that differs between work items.
 *
 * Exactness: every transfer-function value comes from tables the host computes in
 * double (src/core/device_array.cpp):
 *  - u8 -> u8 and u8 -> float are 256-entry lookups;
 *  - float -> u8 must equal round(255 * f(x)) evaluated in double for every float x,
 *    which single-precision arithmetic cannot guarantee near the rounding boundaries.
 *    The kernel makes a float estimate and then steps to the exact answer using
 *    `thresholds[k]` = the least float x whose exact result is > k (255 entries). The
 *    estimate is off by at most one, so this costs one or two cached loads. */
#ifndef DEVICEARRAY_KERNELS_CONVERT_FORMATS_H
#define DEVICEARRAY_KERNELS_CONVERT_FORMATS_H

#include "prelude.h"

/* Little-endian word access lets 4-byte colours move as one 32-bit load/store; a
 * big-endian OpenCL device falls back to byte access. */
#if defined(__OPENCL_VERSION__) && !defined(__ENDIAN_LITTLE__)
#define DA_CVT_LITTLE_ENDIAN 0
#else
#define DA_CVT_LITTLE_ENDIAN 1
#endif

/* The estimate below only has to land within a few codes of the answer (the threshold
 * steps make it exact), so the hardware approximation of pow is enough; full-precision
 * powf made the float -> sRGB kernel compute-bound. */
#if defined(__OPENCL_VERSION__)
#define DA_CVT_FAST_POW(x, y) native_powr((x), (y))
#elif defined(__CUDA_ARCH__)
#define DA_CVT_FAST_POW(x, y) __powf((x), (y))
#else
#define DA_CVT_FAST_POW(x, y) powf((x), (y))
#endif

/* float in [0, 1] (NaN -> 0, saturated outside) -> u8, exactly round(255 * f(x)) where
 * f is the identity or the sRGB encoding. */
DA_FN da_u8 da_cvt_quantize(float x, int srgb, DA_GLOBAL const float* thresholds) {
  x = da_isnan(x) ? 0.0f : da_fminf(da_fmaxf(x, 0.0f), 1.0f);
  float encoded = x;
  if (srgb) encoded = x <= 0.0031308f ? 12.92f * x : 1.055f * DA_CVT_FAST_POW(x, 1.0f / 2.4f) - 0.055f;
  int k = (int)(encoded * 255.0f + 0.5f);
  k = k < 0 ? 0 : (k > 255 ? 255 : k);
  while (k < 255 && x >= thresholds[k]) ++k;
  while (k > 0 && x < thresholds[k - 1]) --k;
  return (da_u8)k;
}

/* Each work item converts DA_CVT_ITEMS elements, `stride` apart (stride = the
 * number of work items), so a warp's accesses stay contiguous. All loads of a work
 * item are issued before any store: with only 3 to 16 bytes per element, one element
 * per work item keeps too few bytes in flight to saturate HBM (measured on H200:
 * about half the copy bandwidth), and the compiler may not move loads above stores
 * through pointers that might alias. */
#define DA_CVT_ITEMS 4

/* Points: dst channel j = src channel map_j, or 1 where map_j < 0 (the w of
 * PointXYZW). Values are copied bit for bit, so NaN coordinates stay NaN. */
/* Full 16-byte stores of 4-channel points: storing one float of each point per
 * instruction leaves every sector partly written, which halved the throughput of
 * PointXYZ -> PointXYZW on H200. */
#if defined(__OPENCL_VERSION__)
#define DA_CVT_STORE_FLOAT4(p, a, b, c, d) (*(DA_GLOBAL float4*)(p) = (float4)((a), (b), (c), (d)))
#elif defined(__CUDACC__)
#define DA_CVT_STORE_FLOAT4(p, a, b, c, d) (*(float4*)(p) = make_float4((a), (b), (c), (d)))
#endif

DA_KERNEL(da_convert_points)(da_i64 n, da_i64 stride, DA_BUFFER(const float, src), int srcChannels,
                             DA_BUFFER(float, dst), int dstChannels, int dstVector, int map0, int map1, int map2,
                             int map3) {
  DA_BUFFER_INIT(const float, src);
  DA_BUFFER_INIT(float, dst);
  const da_i64 first = DA_ID(0);
  if (first >= stride) return; /* backends may round the launch up: extra items would alias others */
  float v[DA_CVT_ITEMS][4];
  for (int k = 0; k < DA_CVT_ITEMS; ++k) {
    const da_i64 i = first + k * stride;
    if (i < n) {
      DA_GLOBAL const float* s = src + i * srcChannels;
      v[k][0] = map0 < 0 ? 1.0f : s[map0];
      v[k][1] = (dstChannels > 1 && map1 >= 0) ? s[map1] : 1.0f;
      v[k][2] = (dstChannels > 2 && map2 >= 0) ? s[map2] : 1.0f;
      v[k][3] = (dstChannels > 3 && map3 >= 0) ? s[map3] : 1.0f;
    }
  }
  for (int k = 0; k < DA_CVT_ITEMS; ++k) {
    const da_i64 i = first + k * stride;
    if (i < n) {
      DA_GLOBAL float* d = dst + i * dstChannels;
      if (dstVector) {
        DA_CVT_STORE_FLOAT4(d, v[k][0], v[k][1], v[k][2], v[k][3]);
        continue;
      }
      d[0] = v[k][0];
      if (dstChannels > 1) d[1] = v[k][1];
      if (dstChannels > 2) d[2] = v[k][2];
      if (dstChannels > 3) d[3] = v[k][3];
    }
  }
}

/* Reads channel codes r, g, b, a (a = 255 when absent) of 8-bit element i. */
DA_FN void da_cvt_load_u8(DA_GLOBAL const da_u8* src, da_i64 i, int channels, int ri, int gi, int bi, int ai,
                          int words, da_u8* out) {
  if (DA_CVT_LITTLE_ENDIAN && words) {
    const da_u32 word = ((DA_GLOBAL const da_u32*)src)[i];
    out[0] = (da_u8)(word >> (8 * ri));
    out[1] = (da_u8)(word >> (8 * gi));
    out[2] = (da_u8)(word >> (8 * bi));
    out[3] = (da_u8)(word >> (8 * ai));
  } else {
    DA_GLOBAL const da_u8* s = src + i * channels;
    out[0] = s[ri];
    out[1] = s[gi];
    out[2] = s[bi];
    out[3] = ai >= 0 ? s[ai] : (da_u8)255;
  }
}

/* Writes channel codes r, g, b, a (a dropped when absent) of 8-bit element i. */
DA_FN void da_cvt_store_u8(DA_GLOBAL da_u8* dst, da_i64 i, int channels, int ri, int gi, int bi, int ai, int words,
                           const da_u8* c) {
  if (DA_CVT_LITTLE_ENDIAN && words) {
    ((DA_GLOBAL da_u32*)dst)[i] = ((da_u32)c[0] << (8 * ri)) | ((da_u32)c[1] << (8 * gi)) |
                                  ((da_u32)c[2] << (8 * bi)) | ((da_u32)c[3] << (8 * ai));
  } else {
    DA_GLOBAL da_u8* d = dst + i * channels;
    d[ri] = c[0];
    d[gi] = c[1];
    d[bi] = c[2];
    if (ai >= 0) d[ai] = c[3];
  }
}

/* 8-bit colour -> 8-bit colour: swizzle, alpha kept / added (255) / dropped, and
 * optionally the colour channels (never alpha) mapped through a 256-entry table
 * (sRGB encode or decode). srcWords / dstWords: the side has 4 channels and is 4-byte
 * aligned, so it is accessed as 32-bit words. */
DA_KERNEL(da_convert_color_u8_u8)(da_i64 n, da_i64 stride, DA_BUFFER(const da_u8, src), int srcChannels, int srcR,
                                  int srcG, int srcB, int srcA, int srcWords, DA_BUFFER(da_u8, dst), int dstChannels,
                                  int dstR, int dstG, int dstB, int dstA, int dstWords, int useTable,
                                  DA_BUFFER(const da_u8, table)) {
  DA_BUFFER_INIT(const da_u8, src);
  DA_BUFFER_INIT(da_u8, dst);
  DA_BUFFER_INIT(const da_u8, table);
  const da_i64 first = DA_ID(0);
  if (first >= stride) return; /* backends may round the launch up: extra items would alias others */
  da_u8 c[DA_CVT_ITEMS][4];
  for (int k = 0; k < DA_CVT_ITEMS; ++k) {
    const da_i64 i = first + k * stride;
    if (i < n) da_cvt_load_u8(src, i, srcChannels, srcR, srcG, srcB, srcA, srcWords, c[k]);
  }
  if (useTable) {
    for (int k = 0; k < DA_CVT_ITEMS; ++k) {
      if (first + k * stride < n) {
        c[k][0] = table[c[k][0]];
        c[k][1] = table[c[k][1]];
        c[k][2] = table[c[k][2]];
      }
    }
  }
  for (int k = 0; k < DA_CVT_ITEMS; ++k) {
    const da_i64 i = first + k * stride;
    if (i < n) da_cvt_store_u8(dst, i, dstChannels, dstR, dstG, dstB, dstA, dstWords, c[k]);
  }
}

/* 8-bit colour -> float colour (4 channels): colour channels through colorTable
 * (c / 255 or the sRGB decoding), alpha through alphaTable (c / 255), 1.0 when the
 * source has no alpha. */
DA_KERNEL(da_convert_color_u8_f32)(da_i64 n, da_i64 stride, DA_BUFFER(const da_u8, src), int srcChannels, int srcR,
                                   int srcG, int srcB, int srcA, int srcWords, DA_BUFFER(float, dst), int dstR,
                                   int dstG, int dstB, int dstA, DA_BUFFER(const float, colorTable),
                                   DA_BUFFER(const float, alphaTable)) {
  DA_BUFFER_INIT(const da_u8, src);
  DA_BUFFER_INIT(float, dst);
  DA_BUFFER_INIT(const float, colorTable);
  DA_BUFFER_INIT(const float, alphaTable);
  const da_i64 first = DA_ID(0);
  if (first >= stride) return; /* backends may round the launch up: extra items would alias others */
  da_u8 c[DA_CVT_ITEMS][4];
  float v[DA_CVT_ITEMS][4];
  for (int k = 0; k < DA_CVT_ITEMS; ++k) {
    const da_i64 i = first + k * stride;
    if (i < n) da_cvt_load_u8(src, i, srcChannels, srcR, srcG, srcB, srcA, srcWords, c[k]);
  }
  for (int k = 0; k < DA_CVT_ITEMS; ++k) {
    if (first + k * stride < n) {
      v[k][0] = colorTable[c[k][0]];
      v[k][1] = colorTable[c[k][1]];
      v[k][2] = colorTable[c[k][2]];
      v[k][3] = srcA >= 0 ? alphaTable[c[k][3]] : 1.0f;
    }
  }
  for (int k = 0; k < DA_CVT_ITEMS; ++k) {
    const da_i64 i = first + k * stride;
    if (i < n) {
      DA_GLOBAL float* d = dst + i * 4;
      d[dstR] = v[k][0];
      d[dstG] = v[k][1];
      d[dstB] = v[k][2];
      d[dstA] = v[k][3];
    }
  }
}

/* Float colour (4 channels) -> 8-bit colour: colour channels quantized linearly or
 * sRGB-encoded, alpha quantized linearly (dropped when the destination has none). */
DA_KERNEL(da_convert_color_f32_u8)(da_i64 n, da_i64 stride, DA_BUFFER(const float, src), int srcR, int srcG,
                                   int srcB, int srcA, DA_BUFFER(da_u8, dst), int dstChannels, int dstR, int dstG,
                                   int dstB, int dstA, int dstWords, int srgb, DA_BUFFER(const float, colorThresholds),
                                   DA_BUFFER(const float, alphaThresholds)) {
  DA_BUFFER_INIT(const float, src);
  DA_BUFFER_INIT(da_u8, dst);
  DA_BUFFER_INIT(const float, colorThresholds);
  DA_BUFFER_INIT(const float, alphaThresholds);
  const da_i64 first = DA_ID(0);
  if (first >= stride) return; /* backends may round the launch up: extra items would alias others */
  float v[DA_CVT_ITEMS][4];
  da_u8 c[DA_CVT_ITEMS][4];
  for (int k = 0; k < DA_CVT_ITEMS; ++k) {
    const da_i64 i = first + k * stride;
    if (i < n) {
      DA_GLOBAL const float* s = src + i * 4;
      v[k][0] = s[srcR];
      v[k][1] = s[srcG];
      v[k][2] = s[srcB];
      v[k][3] = s[srcA];
    }
  }
  for (int k = 0; k < DA_CVT_ITEMS; ++k) {
    if (first + k * stride < n) {
      c[k][0] = da_cvt_quantize(v[k][0], srgb, colorThresholds);
      c[k][1] = da_cvt_quantize(v[k][1], srgb, colorThresholds);
      c[k][2] = da_cvt_quantize(v[k][2], srgb, colorThresholds);
      c[k][3] = dstA >= 0 ? da_cvt_quantize(v[k][3], 0, alphaThresholds) : (da_u8)255;
    }
  }
  for (int k = 0; k < DA_CVT_ITEMS; ++k) {
    const da_i64 i = first + k * stride;
    if (i < n) da_cvt_store_u8(dst, i, dstChannels, dstR, dstG, dstB, dstA, dstWords, c[k]);
  }
}

#endif /* DEVICEARRAY_KERNELS_CONVERT_FORMATS_H */
