/* Format conversions of DeviceArray (API.md §6a), written once for CUDA and OpenCL.
 *
 * One work item converts one element; consecutive work items touch consecutive
 * elements, so every access of a warp / sub-group falls in one contiguous span.
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

/* float in [0, 1] (NaN -> 0, saturated outside) -> u8, exactly round(255 * f(x)) where
 * f is the identity or the sRGB encoding. */
DA_FN da_u8 da_cvt_quantize(float x, int srgb, DA_GLOBAL const float* thresholds) {
  x = da_isnan(x) ? 0.0f : da_fminf(da_fmaxf(x, 0.0f), 1.0f);
  float encoded = x;
  if (srgb) encoded = x <= 0.0031308f ? 12.92f * x : 1.055f * da_powf(x, 1.0f / 2.4f) - 0.055f;
  int k = (int)(encoded * 255.0f + 0.5f);
  k = k < 0 ? 0 : (k > 255 ? 255 : k);
  while (k < 255 && x >= thresholds[k]) ++k;
  while (k > 0 && x < thresholds[k - 1]) --k;
  return (da_u8)k;
}

/* Points: dst channel j = src channel map_j, or 1 where map_j < 0 (the w of
 * PointXYZW). Values are copied bit for bit, so NaN coordinates stay NaN. */
DA_KERNEL(da_convert_points)(da_i64 n, DA_BUFFER(const float, src), int srcChannels, DA_BUFFER(float, dst),
                             int dstChannels, int map0, int map1, int map2, int map3) {
  DA_BUFFER_INIT(const float, src);
  DA_BUFFER_INIT(float, dst);
  const da_i64 i = DA_ID(0);
  if (i >= n) return;
  DA_GLOBAL const float* s = src + i * srcChannels;
  DA_GLOBAL float* d = dst + i * dstChannels;
  d[0] = map0 < 0 ? 1.0f : s[map0];
  if (dstChannels > 1) d[1] = map1 < 0 ? 1.0f : s[map1];
  if (dstChannels > 2) d[2] = map2 < 0 ? 1.0f : s[map2];
  if (dstChannels > 3) d[3] = map3 < 0 ? 1.0f : s[map3];
}

/* 8-bit colour -> 8-bit colour: swizzle, alpha kept / added (255) / dropped, and
 * optionally the colour channels (never alpha) mapped through a 256-entry table
 * (sRGB encode or decode). srcWords / dstWords: the side has 4 channels and is 4-byte
 * aligned, so it is accessed as 32-bit words. */
DA_KERNEL(da_convert_color_u8_u8)(da_i64 n, DA_BUFFER(const da_u8, src), int srcChannels, int srcR, int srcG,
                                  int srcB, int srcA, int srcWords, DA_BUFFER(da_u8, dst), int dstChannels,
                                  int dstR, int dstG, int dstB, int dstA, int dstWords, int useTable,
                                  DA_BUFFER(const da_u8, table)) {
  DA_BUFFER_INIT(const da_u8, src);
  DA_BUFFER_INIT(da_u8, dst);
  DA_BUFFER_INIT(const da_u8, table);
  const da_i64 i = DA_ID(0);
  if (i >= n) return;
  da_u8 r, g, b, a = 255;
  if (DA_CVT_LITTLE_ENDIAN && srcWords) {
    const da_u32 word = ((DA_GLOBAL const da_u32*)src)[i];
    r = (da_u8)(word >> (8 * srcR));
    g = (da_u8)(word >> (8 * srcG));
    b = (da_u8)(word >> (8 * srcB));
    a = (da_u8)(word >> (8 * srcA));
  } else {
    DA_GLOBAL const da_u8* s = src + i * srcChannels;
    r = s[srcR];
    g = s[srcG];
    b = s[srcB];
    if (srcA >= 0) a = s[srcA];
  }
  if (useTable) {
    r = table[r];
    g = table[g];
    b = table[b];
  }
  if (DA_CVT_LITTLE_ENDIAN && dstWords) {
    ((DA_GLOBAL da_u32*)dst)[i] = ((da_u32)r << (8 * dstR)) | ((da_u32)g << (8 * dstG)) |
                                  ((da_u32)b << (8 * dstB)) | ((da_u32)a << (8 * dstA));
  } else {
    DA_GLOBAL da_u8* d = dst + i * dstChannels;
    d[dstR] = r;
    d[dstG] = g;
    d[dstB] = b;
    if (dstA >= 0) d[dstA] = a;
  }
}

/* 8-bit colour -> float colour (4 channels): colour channels through colorTable
 * (c / 255 or the sRGB decoding), alpha through alphaTable (c / 255), 1.0 when the
 * source has no alpha. */
DA_KERNEL(da_convert_color_u8_f32)(da_i64 n, DA_BUFFER(const da_u8, src), int srcChannels, int srcR, int srcG,
                                   int srcB, int srcA, DA_BUFFER(float, dst), int dstR, int dstG, int dstB,
                                   int dstA, DA_BUFFER(const float, colorTable), DA_BUFFER(const float, alphaTable)) {
  DA_BUFFER_INIT(const da_u8, src);
  DA_BUFFER_INIT(float, dst);
  DA_BUFFER_INIT(const float, colorTable);
  DA_BUFFER_INIT(const float, alphaTable);
  const da_i64 i = DA_ID(0);
  if (i >= n) return;
  DA_GLOBAL const da_u8* s = src + i * srcChannels;
  DA_GLOBAL float* d = dst + i * 4;
  d[dstR] = colorTable[s[srcR]];
  d[dstG] = colorTable[s[srcG]];
  d[dstB] = colorTable[s[srcB]];
  d[dstA] = srcA >= 0 ? alphaTable[s[srcA]] : 1.0f;
}

/* Float colour (4 channels) -> 8-bit colour: colour channels quantized linearly or
 * sRGB-encoded, alpha quantized linearly (dropped when the destination has none). */
DA_KERNEL(da_convert_color_f32_u8)(da_i64 n, DA_BUFFER(const float, src), int srcR, int srcG, int srcB, int srcA,
                                   DA_BUFFER(da_u8, dst), int dstChannels, int dstR, int dstG, int dstB, int dstA,
                                   int dstWords, int srgb, DA_BUFFER(const float, colorThresholds),
                                   DA_BUFFER(const float, alphaThresholds)) {
  DA_BUFFER_INIT(const float, src);
  DA_BUFFER_INIT(da_u8, dst);
  DA_BUFFER_INIT(const float, colorThresholds);
  DA_BUFFER_INIT(const float, alphaThresholds);
  const da_i64 i = DA_ID(0);
  if (i >= n) return;
  DA_GLOBAL const float* s = src + i * 4;
  const da_u8 r = da_cvt_quantize(s[srcR], srgb, colorThresholds);
  const da_u8 g = da_cvt_quantize(s[srcG], srgb, colorThresholds);
  const da_u8 b = da_cvt_quantize(s[srcB], srgb, colorThresholds);
  if (DA_CVT_LITTLE_ENDIAN && dstWords) {
    const da_u8 a = da_cvt_quantize(s[srcA], 0, alphaThresholds);
    ((DA_GLOBAL da_u32*)dst)[i] = ((da_u32)r << (8 * dstR)) | ((da_u32)g << (8 * dstG)) |
                                  ((da_u32)b << (8 * dstB)) | ((da_u32)a << (8 * dstA));
  } else {
    DA_GLOBAL da_u8* d = dst + i * dstChannels;
    d[dstR] = r;
    d[dstG] = g;
    d[dstB] = b;
    if (dstA >= 0) d[dstA] = da_cvt_quantize(s[srcA], 0, alphaThresholds);
  }
}

#endif /* DEVICEARRAY_KERNELS_CONVERT_FORMATS_H */
