/* Format conversions of DeviceArray (the formats of docs/data-layout.md), written
 * once for CUDA and OpenCL.
 *
 * Memory access: a work-group converts one tile of consecutive elements in three
 * steps (float -> 8-bit colour and small 8-bit -> 8-bit conversions excepted, see
 * da_convert_color_f32_u8 and da_convert_color_u8_u8_items): it copies the
 * tile's source bytes into local memory in 16-byte words, each work item converts
 * elements of the tile from local to local memory, and the group copies the converted
 * bytes out, again in 16-byte words. Element sizes of 3, 12 or 4 bytes never line up
 * with a warp's 16-byte lanes, so one element per work item would split every store
 * (and many loads) into partial sectors. Only the widths of the global accesses
 * depend on alignment: the host passes each buffer's alignment (16, 4 or 1 bytes).
 * Measurements: docs/PERFORMANCE.md, "Design notes moved from the source".
 *
 * Channel layouts are kernel arguments (channel count and the index of r, g, b, a,
 * -1 when absent) so that one kernel serves every pair of formats of a family
 * without a branch that differs between work items.
 *
 * Exactness: every transfer-function value comes from tables the host computes in
 * double (src/core/device_array.cpp):
 *  - u8 -> u8 and u8 -> float are 256-entry lookups;
 *  - float -> u8 must equal round(255 * f(x)) evaluated in double for every float x,
 *    which single-precision arithmetic cannot guarantee near the rounding boundaries.
 *    The kernel looks the answer up instead (da_cvt_quantize, linear_light.h): x's bit pattern picks one
 *    of DA_CVT_BUCKETS buckets (an exponent and the top 7 mantissa bits), and a bucket
 *    holds the code of its first float and the low bits of the one rounding boundary
 *    it may contain. No bucket holds two boundaries: the steepest part of either curve
 *    puts fewer than one code into a bucket (0.996 codes for linear at [0.5, 1)). One
 *    cached 4-byte load per channel, no pow, no loop. */
#ifndef DEVICEARRAY_KERNELS_CONVERT_FORMATS_H
#define DEVICEARRAY_KERNELS_CONVERT_FORMATS_H

#include "prelude.h"
#include "backend/conversion_geometry.h"
#include "backend/conversion_signatures.h"
#include "linear_light.h"

/* Little-endian word access lets 4-byte colours move as one 32-bit load/store; a
 * big-endian OpenCL device falls back to byte access. */
#if defined(__OPENCL_VERSION__) && !defined(__ENDIAN_LITTLE__)
#define DA_CVT_LITTLE_ENDIAN 0
#else
#define DA_CVT_LITTLE_ENDIAN 1
#endif


/* The launch geometry (DA_CVT_GROUP, tiles, buckets) is in
 * backend/conversion_geometry.h, which the host code that launches these kernels
 * includes too. */

#if defined(__OPENCL_VERSION__) || defined(__CUDACC__)

/* The work-group copies `bytes` bytes from global to local memory (load) or back
 * (store), in the widest words the global address allows: `align` is 16, 4 or 1 (the
 * alignment of the global buffer; tiles start at multiples of 16 bytes from it). The
 * local side is always 16-byte aligned. */
DA_FN void da_cvt_tile_load(DA_GLOBAL const da_u8* g, DA_LOCAL da_u8* l, int bytes, int align) {
  const int t = DA_LOCAL_ID();
  int done = 0;
  if (align >= 16) {
    /* All loads of a batch are issued before the first local store. */
    DA_GLOBAL const da_u32x4* from = (DA_GLOBAL const da_u32x4*)g;
    DA_LOCAL da_u32x4* to = (DA_LOCAL da_u32x4*)l;
    const int words = bytes >> 4;
    for (int w = t; w < words; w += DA_CVT_BATCH * DA_CVT_GROUP) {
      da_u32x4 r[DA_CVT_BATCH];
DA_UNROLL
      for (int k = 0; k < DA_CVT_BATCH; ++k)
        if (w + k * DA_CVT_GROUP < words) r[k] = from[w + k * DA_CVT_GROUP];
DA_UNROLL
      for (int k = 0; k < DA_CVT_BATCH; ++k)
        if (w + k * DA_CVT_GROUP < words) to[w + k * DA_CVT_GROUP] = r[k];
    }
    done = words << 4;
  } else if (align >= 4) {
    const int words = bytes >> 2;
    for (int w = t; w < words; w += DA_CVT_GROUP) ((DA_LOCAL da_u32*)l)[w] = ((DA_GLOBAL const da_u32*)g)[w];
    done = words << 2;
  }
  for (int b = done + t; b < bytes; b += DA_CVT_GROUP) l[b] = g[b];
}

DA_FN void da_cvt_tile_store(DA_LOCAL const da_u8* l, DA_GLOBAL da_u8* g, int bytes, int align) {
  const int t = DA_LOCAL_ID();
  int done = 0;
  if (align >= 16) {
    const int words = bytes >> 4;
    for (int w = t; w < words; w += DA_CVT_GROUP) ((DA_GLOBAL da_u32x4*)g)[w] = ((DA_LOCAL const da_u32x4*)l)[w];
    done = words << 4;
  } else if (align >= 4) {
    const int words = bytes >> 2;
    for (int w = t; w < words; w += DA_CVT_GROUP) ((DA_GLOBAL da_u32*)g)[w] = ((DA_LOCAL const da_u32*)l)[w];
    done = words << 2;
  }
  for (int b = done + t; b < bytes; b += DA_CVT_GROUP) g[b] = l[b];
}

/* Component `i` (0..3) of v; i is uniform across the work-group, so this is a select,
 * not a private array indexed at run time (which would spill to memory). */
DA_FN float da_cvt_component(float4 v, int i) { return i == 0 ? v.x : (i == 1 ? v.y : (i == 2 ? v.z : v.w)); }

/* The float4 whose components at positions pr, pg, pb are r, g, b (distinct, in
 * 0..3) and whose remaining component is a. */
DA_FN float4 da_cvt_place(float r, float g, float b, float a, int pr, int pg, int pb) {
  return da_make_float4(pr == 0 ? r : (pg == 0 ? g : (pb == 0 ? b : a)), pr == 1 ? r : (pg == 1 ? g : (pb == 1 ? b : a)),
                        pr == 2 ? r : (pg == 2 ? g : (pb == 2 ? b : a)), pr == 3 ? r : (pg == 3 ? g : (pb == 3 ? b : a)));
}

/* How many elements the tile starting at `first` converts. */
DA_FN int da_cvt_tile_count(da_i64 n, da_i64 first, int tile) {
  const da_i64 left = n - first;
  return left < tile ? (int)left : tile;
}

/* Points: dst channel j = src channel map_j, or 1 where map_j < 0 (the w of
 * PointXYZW). Values are moved bit for bit, so NaN coordinates stay NaN.
 * `tile`: DA_CVT_TILE of the two element sizes. */
DA_KERNEL_GROUP(da_convert_points, DA_CVT_GROUP, DA_CVT_POINT_MIN_GROUPS)(DA_PARAMS(DA_CONVERT_POINTS_PARAMS)) {
  DA_BUFFERS_INIT(DA_CONVERT_POINTS_PARAMS);
  DA_LOCAL_ARRAY(da_u32x4, staging, DA_CVT_LOCAL_BYTES / 16);
  const da_i64 first = DA_GROUP_ID() * tile;
  if (first >= n) return; /* the whole group leaves: no barrier is skipped by part of it */
  const int count = da_cvt_tile_count(n, first, tile);
  DA_LOCAL float* in = (DA_LOCAL float*)staging;
  DA_LOCAL float* out = in + tile * srcChannels;
  da_cvt_tile_load((DA_GLOBAL const da_u8*)(src + first * srcChannels), (DA_LOCAL da_u8*)in, count * srcChannels * 4,
                   srcAlign);
  DA_BARRIER();
  for (int e = DA_LOCAL_ID(); e < count; e += DA_CVT_GROUP) {
    DA_LOCAL const float* s = in + e * srcChannels;
    float v0, v1, v2, v3;
    if (srcChannels == 4) { /* one 16-byte local load instead of four conflicting ones */
      const float4 p = *(DA_LOCAL const float4*)s;
      v0 = map0 < 0 ? 1.0f : da_cvt_component(p, map0);
      v1 = map1 < 0 ? 1.0f : da_cvt_component(p, map1);
      v2 = map2 < 0 ? 1.0f : da_cvt_component(p, map2);
      v3 = map3 < 0 ? 1.0f : da_cvt_component(p, map3);
    } else {
      v0 = map0 < 0 ? 1.0f : s[map0];
      v1 = map1 < 0 ? 1.0f : s[map1];
      v2 = map2 < 0 ? 1.0f : s[map2];
      v3 = map3 < 0 ? 1.0f : s[map3];
    }
    DA_LOCAL float* d = out + e * dstChannels;
    if (dstChannels == 4) {
      *(DA_LOCAL float4*)d = da_make_float4(v0, v1, v2, v3);
    } else {
      d[0] = v0;
      if (dstChannels > 1) d[1] = v1;
      if (dstChannels > 2) d[2] = v2;
    }
  }
  DA_BARRIER();
  da_cvt_tile_store((DA_LOCAL const da_u8*)out, (DA_GLOBAL da_u8*)(dst + first * dstChannels), count * dstChannels * 4,
                    dstAlign);
}

/* PointXYZ / PointXYZW -> PointZ, element-wise rather than tiled: the 4-byte
 * destination is contiguous, so a warp's stores are whole sectors already and a tile
 * would only add a pass through local memory. Each work item converts DA_CVT_Z_ITEMS
 * elements `stride` apart (stride = the number of work items), issuing all loads
 * before any store. */
DA_KERNEL(da_convert_points_z)(DA_PARAMS(DA_CONVERT_POINTS_Z_PARAMS)) {
  DA_BUFFERS_INIT(DA_CONVERT_POINTS_Z_PARAMS);
  const da_i64 first = DA_ID(0);
  if (first >= stride) return; /* backends may round the launch up: extra items would alias others */
  float z[DA_CVT_Z_ITEMS];
DA_UNROLL
  for (int k = 0; k < DA_CVT_Z_ITEMS; ++k) {
    const da_i64 i = first + k * stride;
    if (i < n) z[k] = src[i * srcChannels + 2];
  }
DA_UNROLL
  for (int k = 0; k < DA_CVT_Z_ITEMS; ++k) {
    const da_i64 i = first + k * stride;
    if (i < n) dst[i] = z[k];
  }
}

/* Reads channel codes r, g, b, a (a = 255 when absent) of 8-bit element e of a tile. */
DA_FN void da_cvt_load_u8(DA_LOCAL const da_u8* tile, int e, int channels, int ri, int gi, int bi, int ai,
                          da_u8* out) {
  if (DA_CVT_LITTLE_ENDIAN && channels == 4) { /* tiles are 16-byte aligned: 4-byte pixels are words */
    const da_u32 word = ((DA_LOCAL const da_u32*)tile)[e];
    out[0] = (da_u8)(word >> (8 * ri));
    out[1] = (da_u8)(word >> (8 * gi));
    out[2] = (da_u8)(word >> (8 * bi));
    out[3] = (da_u8)(word >> (8 * ai));
  } else {
    DA_LOCAL const da_u8* s = tile + e * channels;
    out[0] = s[ri];
    out[1] = s[gi];
    out[2] = s[bi];
    out[3] = ai >= 0 ? s[ai] : (da_u8)255;
  }
}

/* Colour codes r, g, b at byte positions ri, gi, bi of a word: an 8-bit element's
 * colour bytes in memory order on a little-endian device (the callers add alpha). */
DA_FN da_u32 da_cvt_pack_rgb(da_u32 r, da_u32 g, da_u32 b, int ri, int gi, int bi) {
  return r << (8 * ri) | g << (8 * gi) | b << (8 * bi);
}

/* Writes channel codes r, g, b, a (a dropped when absent) of 8-bit element e of a tile. */
DA_FN void da_cvt_store_u8(DA_LOCAL da_u8* tile, int e, int channels, int ri, int gi, int bi, int ai,
                           const da_u8* c) {
  if (DA_CVT_LITTLE_ENDIAN && channels == 4) {
    ((DA_LOCAL da_u32*)tile)[e] = da_cvt_pack_rgb(c[0], c[1], c[2], ri, gi, bi) | (da_u32)c[3] << (8 * ai);
  } else {
    DA_LOCAL da_u8* d = tile + e * channels;
    d[ri] = c[0];
    d[gi] = c[1];
    d[bi] = c[2];
    if (ai >= 0) d[ai] = c[3];
  }
}

/* 8-bit colour -> 8-bit colour: swizzle, alpha kept / added (255) / dropped, and
 * optionally the colour channels (never alpha) mapped through a 256-entry table
 * (sRGB encode or decode). */
DA_KERNEL_GROUP(da_convert_color_u8_u8, DA_CVT_GROUP, DA_CVT_COLOR_MIN_GROUPS)(
    DA_PARAMS(DA_CONVERT_COLOR_U8_U8_PARAMS)) {
  DA_BUFFERS_INIT(DA_CONVERT_COLOR_U8_U8_PARAMS);
  DA_LOCAL_ARRAY(da_u32x4, staging, DA_CVT_LOCAL_BYTES / 16);
  DA_LOCAL_ARRAY(da_u8, lut, 256);
  const da_i64 first = DA_GROUP_ID() * tile;
  if (first >= n) return;
  const int count = da_cvt_tile_count(n, first, tile);
  DA_LOCAL da_u8* in = (DA_LOCAL da_u8*)staging;
  DA_LOCAL da_u8* out = in + tile * srcChannels;
  if (useTable)
    for (int i = DA_LOCAL_ID(); i < 256; i += DA_CVT_GROUP) lut[i] = table[i];
  da_cvt_tile_load(src + first * srcChannels, in, count * srcChannels, srcAlign);
  DA_BARRIER();
  for (int e = DA_LOCAL_ID(); e < count; e += DA_CVT_GROUP) {
    da_u8 c[4];
    da_cvt_load_u8(in, e, srcChannels, srcR, srcG, srcB, srcA, c);
    if (useTable) {
      c[0] = lut[c[0]];
      c[1] = lut[c[1]];
      c[2] = lut[c[2]];
    }
    da_cvt_store_u8(out, e, dstChannels, dstR, dstG, dstB, dstA, c);
  }
  DA_BARRIER();
  da_cvt_tile_store(out, dst + first * dstChannels, count * dstChannels, dstAlign);
}

/* Writes the `count` (at most DA_CVT_ITEMS) consecutive 8-bit elements of one work
 * item, element k's bytes in destination order in the low bytes of word[k], to `d`:
 * one 16-byte store (4 channels) or 4-byte stores (3 or 4 channels) where the address
 * allows, bytes otherwise. `d` is a multiple of 16 (4 channels) or 12 (3
 * channels) bytes from the start of the buffer, whose alignment the host passes. */
DA_FN void da_cvt_store_items_u8(DA_GLOBAL da_u8* d, int count, int channels, int align, const da_u32* word) {
  if (DA_CVT_LITTLE_ENDIAN && count == DA_CVT_ITEMS && channels == 4 && align >= 16) {
    *(DA_GLOBAL da_u32x4*)d = da_make_u32x4(word[0], word[1], word[2], word[3]);
  } else if (DA_CVT_LITTLE_ENDIAN && channels == 4 && align >= 4) {
DA_UNROLL
    for (int k = 0; k < DA_CVT_ITEMS; ++k)
      if (k < count) ((DA_GLOBAL da_u32*)d)[k] = word[k];
  } else if (DA_CVT_LITTLE_ENDIAN && count == DA_CVT_ITEMS && channels == 3 && align >= 4) {
    DA_GLOBAL da_u32* d32 = (DA_GLOBAL da_u32*)d;
    d32[0] = word[0] | word[1] << 24;
    d32[1] = word[1] >> 8 | word[2] << 16;
    d32[2] = word[2] >> 16 | word[3] << 8;
  } else {
DA_UNROLL
    for (int k = 0; k < DA_CVT_ITEMS; ++k)
      if (k < count)
        for (int j = 0; j < channels; ++j) d[k * channels + j] = (da_u8)(word[k] >> (8 * j));
  }
}

/* Reads the `count` (at most DA_CVT_ITEMS) consecutive 8-bit elements of one work
 * item from `s` into word[k] (element k's bytes in memory order, from the low byte;
 * unused high bytes are 0), the mirror of da_cvt_store_items_u8. */
DA_FN void da_cvt_load_items_u8(DA_GLOBAL const da_u8* s, int count, int channels, int align, da_u32* word) {
  if (DA_CVT_LITTLE_ENDIAN && count == DA_CVT_ITEMS && channels == 4 && align >= 16) {
    const da_u32x4 v = *(DA_GLOBAL const da_u32x4*)s;
    word[0] = v.x;
    word[1] = v.y;
    word[2] = v.z;
    word[3] = v.w;
  } else if (DA_CVT_LITTLE_ENDIAN && channels == 4 && align >= 4) {
DA_UNROLL
    for (int k = 0; k < DA_CVT_ITEMS; ++k) word[k] = k < count ? ((DA_GLOBAL const da_u32*)s)[k] : 0u;
  } else if (DA_CVT_LITTLE_ENDIAN && count == DA_CVT_ITEMS && channels == 3 && align >= 4) {
    DA_GLOBAL const da_u32* s32 = (DA_GLOBAL const da_u32*)s;
    const da_u32 a = s32[0], b = s32[1], c = s32[2];
    word[0] = a & 0xffffffu;
    word[1] = (a >> 24 | b << 8) & 0xffffffu;
    word[2] = (b >> 16 | c << 16) & 0xffffffu;
    word[3] = c >> 8;
  } else {
DA_UNROLL
    for (int k = 0; k < DA_CVT_ITEMS; ++k) {
      word[k] = 0;
      if (k < count)
        for (int j = 0; j < channels; ++j) word[k] |= (da_u32)s[k * channels + j] << (8 * j);
    }
  }
}

/* 8-bit colour -> 8-bit colour, as da_convert_color_u8_u8, for conversions too small
 * to fill the GPU with tiles: each work item converts DA_CVT_ITEMS consecutive
 * elements straight from and to global memory (da_cvt_load_items_u8,
 * da_cvt_store_items_u8), with no local memory and no barrier, so a work-group's
 * stores need not wait for its slowest load. The table, when used, is read through
 * the cache. `tile` is DA_CVT_ITEMS_TILE (the elements of one work-group). */
DA_KERNEL_GROUP(da_convert_color_u8_u8_items, DA_CVT_GROUP, DA_CVT_COLOR_MIN_GROUPS)(
    DA_PARAMS(DA_CONVERT_COLOR_U8_U8_PARAMS)) {
  DA_BUFFERS_INIT(DA_CONVERT_COLOR_U8_U8_PARAMS);
  const da_i64 first = DA_GROUP_ID() * tile + DA_CVT_ITEMS * DA_LOCAL_ID();
  if (first >= n) return;
  const int count = da_cvt_tile_count(n, first, DA_CVT_ITEMS);
  da_u32 word[DA_CVT_ITEMS];
  da_cvt_load_items_u8(src + first * srcChannels, count, srcChannels, srcAlign, word);
DA_UNROLL
  for (int k = 0; k < DA_CVT_ITEMS; ++k) {
    const da_u32 w = word[k];
    da_u32 r = (w >> (8 * srcR)) & 0xffu, g = (w >> (8 * srcG)) & 0xffu, b = (w >> (8 * srcB)) & 0xffu;
    const da_u32 a = srcA >= 0 ? (w >> (8 * srcA)) & 0xffu : 0xffu;
    if (useTable) {
      r = table[r];
      g = table[g];
      b = table[b];
    }
    word[k] = da_cvt_pack_rgb(r, g, b, dstR, dstG, dstB) | (dstA >= 0 ? a << (8 * dstA) : 0u);
  }
  da_cvt_store_items_u8(dst + first * dstChannels, count, dstChannels, dstAlign, word);
}

/* 8-bit colour -> float colour (4 channels): colour channels through colorTable
 * (c / 255 or the sRGB decoding), alpha through alphaTable (c / 255), 1.0 when the
 * source has no alpha. */
DA_KERNEL_GROUP(da_convert_color_u8_f32, DA_CVT_GROUP, DA_CVT_COLOR_MIN_GROUPS)(
    DA_PARAMS(DA_CONVERT_COLOR_U8_F32_PARAMS)) {
  DA_BUFFERS_INIT(DA_CONVERT_COLOR_U8_F32_PARAMS);
  DA_LOCAL_ARRAY(da_u32x4, staging, DA_CVT_LOCAL_BYTES / 16);
  DA_LOCAL_ARRAY(float, colorLut, 256);
  DA_LOCAL_ARRAY(float, alphaLut, 256);
  const da_i64 first = DA_GROUP_ID() * tile;
  if (first >= n) return;
  const int count = da_cvt_tile_count(n, first, tile);
  DA_LOCAL da_u8* in = (DA_LOCAL da_u8*)staging;
  DA_LOCAL float4* out = (DA_LOCAL float4*)(in + tile * srcChannels);
  for (int i = DA_LOCAL_ID(); i < 256; i += DA_CVT_GROUP) {
    colorLut[i] = colorTable[i];
    alphaLut[i] = alphaTable[i];
  }
  da_cvt_tile_load(src + first * srcChannels, in, count * srcChannels, srcAlign);
  DA_BARRIER();
  for (int e = DA_LOCAL_ID(); e < count; e += DA_CVT_GROUP) {
    da_u8 c[4];
    da_cvt_load_u8(in, e, srcChannels, srcR, srcG, srcB, srcA, c);
    out[e] = da_cvt_place(colorLut[c[0]], colorLut[c[1]], colorLut[c[2]], srcA >= 0 ? alphaLut[c[3]] : 1.0f, dstR,
                          dstG, dstB);
  }
  DA_BARRIER();
  da_cvt_tile_store((DA_LOCAL const da_u8*)out, (DA_GLOBAL da_u8*)(dst + first * 4), count * 16, dstAlign);
}

/* Float colour (4 channels) -> 8-bit colour: colour channels quantized linearly or
 * sRGB-encoded, alpha quantized linearly (dropped when the destination has none).
 *
 * Not tiled: each work item converts DA_CVT_ITEMS consecutive elements, loads
 * their 16-byte sources straight into registers and writes its results with one
 * 16-byte store (4-channel destination) or three 4-byte stores (3 channels), with no
 * local memory and no barrier. The bucket lookups (three or four per element, at
 * data-dependent addresses) make this kernel the slowest to issue, and a work-group
 * waiting at a barrier stops issuing them. Across a warp, the loads of one element
 * index read every fourth 16-byte word of 2 KiB; the other three indices find the rest
 * of those cache lines in the cache. `tile` is DA_CVT_ITEMS_TILE (the elements of one
 * work-group). */
DA_KERNEL_GROUP(da_convert_color_f32_u8, DA_CVT_GROUP, DA_CVT_F32_U8_MIN_GROUPS)(
    DA_PARAMS(DA_CONVERT_COLOR_F32_U8_PARAMS)) {
  DA_BUFFERS_INIT(DA_CONVERT_COLOR_F32_U8_PARAMS);
  const da_i64 first = DA_GROUP_ID() * tile + DA_CVT_ITEMS * DA_LOCAL_ID();
  if (first >= n) return;
  const int count = da_cvt_tile_count(n, first, DA_CVT_ITEMS);
  DA_GLOBAL const float* s = src + first * 4;
  float4 v[DA_CVT_ITEMS];
DA_UNROLL
  for (int k = 0; k < DA_CVT_ITEMS; ++k)
    if (k < count)
      v[k] = srcAlign >= 16 ? ((DA_GLOBAL const float4*)s)[k]
                            : da_make_float4(s[4 * k], s[4 * k + 1], s[4 * k + 2], s[4 * k + 3]);
  /* Element k's bytes in destination order, in the low bytes of word[k]. */
  da_u32 word[DA_CVT_ITEMS];
DA_UNROLL
  for (int k = 0; k < DA_CVT_ITEMS; ++k) {
    word[k] = 0;
    if (k < count) {
      const da_u32 r = da_cvt_quantize(da_cvt_component(v[k], srcR), colorBuckets);
      const da_u32 g = da_cvt_quantize(da_cvt_component(v[k], srcG), colorBuckets);
      const da_u32 b = da_cvt_quantize(da_cvt_component(v[k], srcB), colorBuckets);
      word[k] = da_cvt_pack_rgb(r, g, b, dstR, dstG, dstB);
      if (dstA >= 0) word[k] |= (da_u32)da_cvt_quantize(da_cvt_component(v[k], srcA), alphaBuckets) << (8 * dstA);
    }
  }
  da_cvt_store_items_u8(dst + first * dstChannels, count, dstChannels, dstAlign, word);
}

#endif /* OpenCL or CUDA */

#endif /* DEVICEARRAY_KERNELS_CONVERT_FORMATS_H */
