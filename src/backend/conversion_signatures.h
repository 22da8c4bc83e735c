/* Parameters of the format-conversion kernels (src/kernels/convert_formats.h), declared
 * once for the kernels and for the host code that launches them (kernel_params.h).
 *
 * Each buffer comes with its alignment (`*Align`: 16, 4 or 1 bytes) and, for colours,
 * its channel count and the positions of r, g, b and a (-1 when absent). */
#ifndef DEVICEARRAY_BACKEND_CONVERSION_SIGNATURES_H
#define DEVICEARRAY_BACKEND_CONVERSION_SIGNATURES_H

#include "backend/kernel_params.h"

/* PointXYZ <-> PointXYZW: dst channel j = src channel map_j, or 1 where map_j < 0. */
#define DA_CONVERT_POINTS_PARAMS(S0, B0, S, B)                                                                      \
  S0(da_i64, n) S(int, tile) B(const float, src) S(int, srcChannels) S(int, srcAlign) B(float, dst)                 \
  S(int, dstChannels) S(int, dstAlign) S(int, map0) S(int, map1) S(int, map2) S(int, map3)

/* PointXYZ / PointXYZW -> PointZ; `stride` is the number of work items. */
#define DA_CONVERT_POINTS_Z_PARAMS(S0, B0, S, B)                                                                    \
  S0(da_i64, n) S(da_i64, stride) B(const float, src) S(int, srcChannels) B(float, dst)

/* 8-bit colour -> 8-bit colour, through `table` when useTable is 1 (both kernels). */
#define DA_CONVERT_COLOR_U8_U8_PARAMS(S0, B0, S, B)                                                                 \
  S0(da_i64, n) S(int, tile) B(const da_u8, src) S(int, srcChannels) S(int, srcR) S(int, srcG) S(int, srcB)         \
  S(int, srcA) S(int, srcAlign) B(da_u8, dst) S(int, dstChannels) S(int, dstR) S(int, dstG) S(int, dstB)            \
  S(int, dstA) S(int, dstAlign) S(int, useTable) B(const da_u8, table)

/* 8-bit colour -> ColorRGBAf, through 256-entry tables. */
#define DA_CONVERT_COLOR_U8_F32_PARAMS(S0, B0, S, B)                                                                \
  S0(da_i64, n) S(int, tile) B(const da_u8, src) S(int, srcChannels) S(int, srcR) S(int, srcG) S(int, srcB)         \
  S(int, srcA) S(int, srcAlign) B(float, dst) S(int, dstR) S(int, dstG) S(int, dstB) S(int, dstA)                   \
  S(int, dstAlign) B(const float, colorTable) B(const float, alphaTable)

/* ColorRGBAf -> 8-bit colour, through the quantization bucket tables. */
#define DA_CONVERT_COLOR_F32_U8_PARAMS(S0, B0, S, B)                                                                \
  S0(da_i64, n) S(int, tile) B(const float, src) S(int, srcR) S(int, srcG) S(int, srcB) S(int, srcA)                \
  S(int, srcAlign) B(da_u8, dst) S(int, dstChannels) S(int, dstR) S(int, dstG) S(int, dstB) S(int, dstA)            \
  S(int, dstAlign) B(const da_u32, colorBuckets) B(const da_u32, alphaBuckets)

#if defined(__cplusplus)
#include "backend/kernel_signature.hpp"

namespace devicearray::detail::kernels {
DA_KERNEL_SIGNATURE(da_convert_points, DA_CONVERT_POINTS_PARAMS);
DA_KERNEL_SIGNATURE(da_convert_points_z, DA_CONVERT_POINTS_Z_PARAMS);
DA_KERNEL_SIGNATURE(da_convert_color_u8_u8, DA_CONVERT_COLOR_U8_U8_PARAMS);
DA_KERNEL_SIGNATURE(da_convert_color_u8_u8_items, DA_CONVERT_COLOR_U8_U8_PARAMS);
DA_KERNEL_SIGNATURE(da_convert_color_u8_f32, DA_CONVERT_COLOR_U8_F32_PARAMS);
DA_KERNEL_SIGNATURE(da_convert_color_f32_u8, DA_CONVERT_COLOR_F32_U8_PARAMS);
}  // namespace devicearray::detail::kernels
#endif

#endif /* DEVICEARRAY_BACKEND_CONVERSION_SIGNATURES_H */
