/* Parameters of the organized-cloud camera filters (src/kernels/camera_filters.h),
 * declared once for the kernels and for the host code that launches them
 * (kernel_params.h). Layouts as in pointcloud_signatures.h: XYZ 3 floats per point,
 * colours 4 u8, SNR 1 float; an attribute the cloud lacks is any valid buffer with its
 * has* flag 0. Every filter reads its input and writes a separate output. */
#ifndef DEVICEARRAY_BACKEND_FILTER_SIGNATURES_H
#define DEVICEARRAY_BACKEND_FILTER_SIGNATURES_H

#include "backend/kernel_params.h"

/* The widest smoothing window radius: a (2 * 15 + 1)^2 window. */
#define DA_CF_MAX_SMOOTHING_RADIUS 15

/* Points whose SNR is not >= threshold become NaN. */
#define DA_CF_SNR_PARAMS(S0, B0, S, B)                                                                              \
  S0(da_i64, n) S(float, threshold) B(const float, snr) B(const float, xyzIn) B(float, xyzOut)

/* Points without a valid 8-neighbour within maxDistance become NaN. */
#define DA_CF_OUTLIER_PARAMS(S0, B0, S, B)                                                                          \
  S0(int, width) S(int, height) S(float, maxDistance) B(const float, xyzIn) B(float, xyzOut)

/* Edge-preserving Gaussian smoothing of depth along each point's ray. */
#define DA_CF_SMOOTH_PARAMS(S0, B0, S, B)                                                                           \
  S0(int, width) S(int, height) S(int, radius) S(float, sigma) S(float, maxDepthDifference) B(const float, xyzIn)   \
  B(float, xyzOut)

/* Missing points inside short row / column gaps filled from the gap's two ends. */
#define DA_CF_FILL_PARAMS(S0, B0, S, B)                                                                             \
  S0(int, width) S(int, height) S(int, maxHoleSize) S(float, maxDepthDifference) S(int, hasColor) S(int, srgb)      \
  S(int, hasSnr) B(const float, xyzIn) B(const da_u8, rgbaIn) B(const float, snrIn) B(float, xyzOut)                \
  B(da_u8, rgbaOut) B(float, snrOut) B(const float, srgbDecode) B(const da_u32, srgbEncode)

#if defined(__cplusplus)
#include "backend/kernel_signature.hpp"

namespace devicearray::detail::kernels {
DA_KERNEL_SIGNATURE(da_cf_snr, DA_CF_SNR_PARAMS);
DA_KERNEL_SIGNATURE(da_cf_outlier, DA_CF_OUTLIER_PARAMS);
DA_KERNEL_SIGNATURE(da_cf_smooth, DA_CF_SMOOTH_PARAMS);
DA_KERNEL_SIGNATURE(da_cf_fill, DA_CF_FILL_PARAMS);
}  // namespace devicearray::detail::kernels
#endif

#endif /* DEVICEARRAY_BACKEND_FILTER_SIGNATURES_H */
