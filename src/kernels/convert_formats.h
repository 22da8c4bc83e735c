/* Format conversions of DeviceArray (API.md §6a), written once for CUDA and OpenCL.
 *
 * Consecutive work items touch consecutive elements (or groups of elements), so every
 * access of a warp / sub-group falls in one contiguous span (see DA_CVT_ITEMS and
 * DA_CVT_GROUP below).
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
#define DA_CVT_FLOAT4(a, b, c, d) ((float4)((a), (b), (c), (d)))
#elif defined(__CUDACC__)
#define DA_CVT_FLOAT4(a, b, c, d) make_float4((a), (b), (c), (d))
#endif
#define DA_CVT_STORE_FLOAT4(p, a, b, c, d) (*(DA_GLOBAL float4*)(p) = DA_CVT_FLOAT4((a), (b), (c), (d)))

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

/* Group path, used by the host when both sides are aligned for it (device_array.cpp):
 * work item g converts the DA_CVT_GROUP consecutive elements of group g, so that a
 * group of 3-byte pixels is exactly three 32-bit words and a group of 12-byte points
 * exactly three float4. Every access of a work item is then a whole word / vector and
 * consecutive work items touch consecutive groups, whereas the per-element path above
 * reads and writes such elements byte by byte or float by float, leaving sectors partly
 * used per instruction (55-78% of the copy bandwidth on H200). The n % DA_CVT_GROUP
 * elements after the last whole group go to one extra work item (g == groups), which
 * converts them one by one like the per-element path. */
#define DA_CVT_GROUP 4

/* PointXYZ <-> PointXYZW by groups; both sides 16-byte aligned (the host launches it
 * only for 3 <-> 4 channels). Values are copied bit for bit, w = 1 is written for
 * PointXYZW. */
DA_KERNEL(da_convert_points_x4)(da_i64 n, da_i64 groups, DA_BUFFER(const float, src), int srcChannels,
                                DA_BUFFER(float, dst), int dstChannels) {
  DA_BUFFER_INIT(const float, src);
  DA_BUFFER_INIT(float, dst);
  const da_i64 g = DA_ID(0);
  if (g > groups) return; /* backends may round the launch up */
  if (g < groups) {
    float4 p0, p1, p2, p3; /* x, y, z of the four points; w is 1 or the source's (dropped) */
    if (srcChannels == 3) {
      DA_GLOBAL const float4* s = (DA_GLOBAL const float4*)src + 3 * g;
      const float4 a = s[0];
      const float4 b = s[1];
      const float4 c = s[2];
      p0 = DA_CVT_FLOAT4(a.x, a.y, a.z, 1.0f);
      p1 = DA_CVT_FLOAT4(a.w, b.x, b.y, 1.0f);
      p2 = DA_CVT_FLOAT4(b.z, b.w, c.x, 1.0f);
      p3 = DA_CVT_FLOAT4(c.y, c.z, c.w, 1.0f);
    } else {
      DA_GLOBAL const float4* s = (DA_GLOBAL const float4*)src + 4 * g;
      p0 = s[0];
      p1 = s[1];
      p2 = s[2];
      p3 = s[3];
    }
    if (dstChannels == 3) {
      DA_GLOBAL float4* d = (DA_GLOBAL float4*)dst + 3 * g;
      d[0] = DA_CVT_FLOAT4(p0.x, p0.y, p0.z, p1.x);
      d[1] = DA_CVT_FLOAT4(p1.y, p1.z, p2.x, p2.y);
      d[2] = DA_CVT_FLOAT4(p2.z, p3.x, p3.y, p3.z);
    } else {
      DA_GLOBAL float4* d = (DA_GLOBAL float4*)dst + 4 * g;
      d[0] = p0;
      d[1] = p1;
      d[2] = p2;
      d[3] = p3;
    }
    return;
  }
  for (da_i64 i = g * DA_CVT_GROUP; i < n; ++i) { /* the tail: fewer than DA_CVT_GROUP points */
    DA_GLOBAL const float* s = src + i * srcChannels;
    DA_GLOBAL float* d = dst + i * dstChannels;
    const float x = s[0];
    const float y = s[1];
    const float z = s[2];
    d[0] = x;
    d[1] = y;
    d[2] = z;
    if (dstChannels == 4) d[3] = 1.0f;
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

/* Loads the pixels of group g as one 32-bit word each, channel k in byte k (byte 3 of a
 * 3-channel pixel is left over from its neighbour and never read). Little-endian only.
 * vector: a 4-channel side that is 16-byte aligned, read as one uint4. */
DA_FN void da_cvt_load_group_u8(DA_GLOBAL const da_u8* src, da_i64 g, int channels, int vector, da_u32* px) {
  if (channels == 3) {
    DA_GLOBAL const da_u32* w = (DA_GLOBAL const da_u32*)src + 3 * g;
    const da_u32 w0 = w[0];
    const da_u32 w1 = w[1];
    const da_u32 w2 = w[2];
    px[0] = w0;
    px[1] = (w0 >> 24) | (w1 << 8);
    px[2] = (w1 >> 16) | (w2 << 16);
    px[3] = w2 >> 8;
  } else if (vector) {
    const uint4 v = ((DA_GLOBAL const uint4*)src)[g];
    px[0] = v.x;
    px[1] = v.y;
    px[2] = v.z;
    px[3] = v.w;
  } else {
    DA_GLOBAL const da_u32* w = (DA_GLOBAL const da_u32*)src + 4 * g;
    px[0] = w[0];
    px[1] = w[1];
    px[2] = w[2];
    px[3] = w[3];
  }
}

/* Stores the pixels of group g from words laid out as da_cvt_load_group_u8 reads them;
 * byte 3 of a 3-channel pixel must be 0 (it is packed into the neighbour's word). */
DA_FN void da_cvt_store_group_u8(DA_GLOBAL da_u8* dst, da_i64 g, int channels, int vector, const da_u32* px) {
  if (channels == 3) {
    DA_GLOBAL da_u32* w = (DA_GLOBAL da_u32*)dst + 3 * g;
    w[0] = px[0] | (px[1] << 24);
    w[1] = (px[1] >> 8) | (px[2] << 16);
    w[2] = (px[2] >> 16) | (px[3] << 8);
  } else if (vector) {
#if defined(__OPENCL_VERSION__)
    ((DA_GLOBAL uint4*)dst)[g] = (uint4)(px[0], px[1], px[2], px[3]);
#else
    ((uint4*)dst)[g] = make_uint4(px[0], px[1], px[2], px[3]);
#endif
  } else {
    DA_GLOBAL da_u32* w = (DA_GLOBAL da_u32*)dst + 4 * g;
    w[0] = px[0];
    w[1] = px[1];
    w[2] = px[2];
    w[3] = px[3];
  }
}

/* da_convert_color_u8_u8 by groups (see DA_CVT_GROUP), same arguments except: both
 * sides 4-byte aligned; srcVector / dstVector: a 4-channel side that is 16-byte aligned.
 * A big-endian device converts every group one pixel at a time, bytewise. */
DA_KERNEL(da_convert_color_u8_u8_x4)(da_i64 n, da_i64 groups, DA_BUFFER(const da_u8, src), int srcChannels,
                                     int srcR, int srcG, int srcB, int srcA, int srcVector, DA_BUFFER(da_u8, dst),
                                     int dstChannels, int dstR, int dstG, int dstB, int dstA, int dstVector,
                                     int useTable, DA_BUFFER(const da_u8, table)) {
  DA_BUFFER_INIT(const da_u8, src);
  DA_BUFFER_INIT(da_u8, dst);
  DA_BUFFER_INIT(const da_u8, table);
  const da_i64 g = DA_ID(0);
  if (g > groups) return; /* backends may round the launch up */
  if (DA_CVT_LITTLE_ENDIAN && g < groups) {
    da_u32 px[DA_CVT_GROUP];
    da_cvt_load_group_u8(src, g, srcChannels, srcVector, px);
    for (int k = 0; k < DA_CVT_GROUP; ++k) {
      da_u8 r = (da_u8)(px[k] >> (8 * srcR));
      da_u8 gr = (da_u8)(px[k] >> (8 * srcG));
      da_u8 b = (da_u8)(px[k] >> (8 * srcB));
      const da_u8 a = srcA >= 0 ? (da_u8)(px[k] >> (8 * srcA)) : (da_u8)255;
      if (useTable) {
        r = table[r];
        gr = table[gr];
        b = table[b];
      }
      px[k] = ((da_u32)r << (8 * dstR)) | ((da_u32)gr << (8 * dstG)) | ((da_u32)b << (8 * dstB)) |
              (dstA >= 0 ? (da_u32)a << (8 * dstA) : 0u);
    }
    da_cvt_store_group_u8(dst, g, dstChannels, dstVector, px);
    return;
  }
  /* The tail (g == groups; big-endian: every group). Both sides are 4-byte aligned, so a
   * 4-channel side may use word access. */
  const da_i64 end = g * DA_CVT_GROUP + DA_CVT_GROUP < n ? g * DA_CVT_GROUP + DA_CVT_GROUP : n;
  for (da_i64 i = g * DA_CVT_GROUP; i < end; ++i) {
    da_u8 c[4];
    da_cvt_load_u8(src, i, srcChannels, srcR, srcG, srcB, srcA, srcChannels == 4, c);
    if (useTable) {
      c[0] = table[c[0]];
      c[1] = table[c[1]];
      c[2] = table[c[2]];
    }
    da_cvt_store_u8(dst, i, dstChannels, dstR, dstG, dstB, dstA, dstChannels == 4, c);
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
