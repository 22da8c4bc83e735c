/* Parameters of the depth conversions (src/kernels/convert_depth.h), declared once for
 * the kernels and for the host code that launches them (kernel_params.h):
 *
 *   dst(r, v) = saturate_cast<dst depth>(alpha * src(r, v) + beta)
 *
 * over rows x values, rows `*Step` bytes apart, for every pair of OpenCV's depths (codes
 * 0..7, in the kernels' names u8 s8 u16 s16 s32 f32 f64 f16). `scale` is 0 when alpha
 * is 1 and beta 0: the value then converts as it is (keeps -0.0, as OpenCV's convertTo). */
#ifndef DEVICEARRAY_BACKEND_DEPTH_CONVERSION_SIGNATURES_H
#define DEVICEARRAY_BACKEND_DEPTH_CONVERSION_SIGNATURES_H

#include "backend/kernel_params.h"

/* CUDA: one kernel per pair, da_convert_depth_<src>_<dst>, in blocks of
 * DA_CONVERT_DEPTH_GROUP work items, one value each. Below 2^31 values (`small`) a work
 * item splits its index into row and value with the fast-division constants of
 * `values` (da_fast_div_magic). alpha and beta come in the pair's work type: Work f
 * (float) or d (double). */
#define DA_CONVERT_DEPTH_GROUP 256
#define DA_CONVERT_DEPTH_PARAMS(S0, B0, S, B, Work)                                                             \
  B0(const da_u8, src) S(da_i64, srcStep) B(da_u8, dst) S(da_i64, dstStep) S(da_i64, rows) S(da_i64, values)   \
  S(da_u32, valuesMultiplier) S(da_u32, valuesShift) S(int, small) S(int, scale) S(Work, alpha) S(Work, beta)
#define DA_CONVERT_DEPTH_PARAMS_f(S0, B0, S, B) DA_CONVERT_DEPTH_PARAMS(S0, B0, S, B, float)
#define DA_CONVERT_DEPTH_PARAMS_d(S0, B0, S, B) DA_CONVERT_DEPTH_PARAMS(S0, B0, S, B, double)

/* X(src, dst, work) for the 64 pairs, in the order of the depth codes. As OpenCV's
 * convertTo, the work type is float, double for S32 and F64 sources and F64
 * destinations (float cannot hold every int32 or double). */
#define DA_CONVERT_DEPTH_ROW(X, s, w) \
  X(s, u8, w) X(s, s8, w) X(s, u16, w) X(s, s16, w) X(s, s32, w) X(s, f32, w) X(s, f64, d) X(s, f16, w)
#define DA_CONVERT_DEPTH_PAIRS(X)                                                                                \
  DA_CONVERT_DEPTH_ROW(X, u8, f) DA_CONVERT_DEPTH_ROW(X, s8, f) DA_CONVERT_DEPTH_ROW(X, u16, f)                \
  DA_CONVERT_DEPTH_ROW(X, s16, f) DA_CONVERT_DEPTH_ROW(X, s32, d) DA_CONVERT_DEPTH_ROW(X, f32, f)              \
  DA_CONVERT_DEPTH_ROW(X, f64, d) DA_CONVERT_DEPTH_ROW(X, f16, f)

/* OpenCL: one kernel for every pair, the depths chosen at run time, over the index
 * space (value, row). Its arithmetic is double on devices with double precision
 * (da_convert_depths_d), else float (da_convert_depths_f); `integerCopy` selects exact
 * 64-bit integer arithmetic, for integer depths without scaling (S32 needs it without
 * double). */
#define DA_CONVERT_DEPTHS_PARAMS(S0, B0, S, B, Real)                                                           \
  B0(const da_u8, src) S(da_i64, srcStep) S(int, srcDepth) B(da_u8, dst) S(da_i64, dstStep) S(int, dstDepth)   \
  S(da_i64, rows) S(da_i64, values) S(int, scale) S(int, integerCopy) S(Real, alpha) S(Real, beta)
#define DA_CONVERT_DEPTHS_PARAMS_f(S0, B0, S, B) DA_CONVERT_DEPTHS_PARAMS(S0, B0, S, B, float)
#define DA_CONVERT_DEPTHS_PARAMS_d(S0, B0, S, B) DA_CONVERT_DEPTHS_PARAMS(S0, B0, S, B, double)

#if defined(__cplusplus)
#include "backend/kernel_signature.hpp"

namespace devicearray::detail::kernels {
/* Every CUDA pair kernel has one of these two parameter lists (the names stand for
 * the work types; the kernels are launched by pointer, not by name). */
DA_KERNEL_SIGNATURE(da_convert_depth_f, DA_CONVERT_DEPTH_PARAMS_f);
DA_KERNEL_SIGNATURE(da_convert_depth_d, DA_CONVERT_DEPTH_PARAMS_d);
/// The position of the pair of depth codes (src, dst) in DA_CONVERT_DEPTH_PAIRS.
constexpr int depthPairIndex(int srcDepth, int dstDepth) { return srcDepth * 8 + dstDepth; }
/* The OpenCL kernel of a device without and with double precision. */
DA_KERNEL_SIGNATURE(da_convert_depths_f, DA_CONVERT_DEPTHS_PARAMS_f);
DA_KERNEL_SIGNATURE(da_convert_depths_d, DA_CONVERT_DEPTHS_PARAMS_d);
}  // namespace devicearray::detail::kernels
#endif

#endif /* DEVICEARRAY_BACKEND_DEPTH_CONVERSION_SIGNATURES_H */
