/* OpenCV's saturate_cast to each depth, written once for the depth-conversion
 * kernels of both backends (convert_depth.h) and the host (core/saturate.hpp, fill
 * values; scripts/check-layering.py lets core include exactly this kernel header):
 * integers round half to even, clamp to the destination's range and map NaN to 0;
 * F16 rounds to nearest even and overflows to infinity. da_sat_<depth>_f takes a
 * float, da_sat_<depth>_d a double (OpenCL C has no overloads; the double forms exist
 * in OpenCL only under DA_HAS_FP64).
 *
 * The range checks compare in the source's floating type before the conversion, so
 * no out-of-range value is ever converted to an integer type: (Real)hi of S32 in
 * float is 2^31, and every float below it fits in int32. */
#ifndef DEVICEARRAY_KERNELS_SATURATE_H
#define DEVICEARRAY_KERNELS_SATURATE_H

#include "prelude.h"

#if defined(__OPENCL_VERSION__)
#define da_rintf(x) rint(x)
#define da_rint(x) rint(x)
#else
#define da_rintf(x) rintf(x)
#define da_rint(x) rint(x)
#endif

#define DA_SATURATE_INT(name, T, Real, roundHalfEven, lo, hi)                            \
  DA_FN T name(Real v) {                                                                \
    if (da_isnan(v)) return (T)0;                                                       \
    const Real r = roundHalfEven(v);                                                    \
    return r <= (Real)(lo) ? (T)(lo) : (r >= (Real)(hi) ? (T)(hi) : (T)r);              \
  }

#define DA_SATURATE_INTEGER_DEPTHS(suffix, Real, roundHalfEven)                          \
  DA_SATURATE_INT(da_sat_u8_##suffix, da_u8, Real, roundHalfEven, 0, 255)              \
  DA_SATURATE_INT(da_sat_s8_##suffix, da_i8, Real, roundHalfEven, -128, 127)           \
  DA_SATURATE_INT(da_sat_u16_##suffix, da_u16, Real, roundHalfEven, 0, 65535)          \
  DA_SATURATE_INT(da_sat_s16_##suffix, da_i16, Real, roundHalfEven, -32768, 32767)     \
  DA_SATURATE_INT(da_sat_s32_##suffix, da_i32, Real, roundHalfEven, (-2147483647 - 1), 2147483647)

DA_SATURATE_INTEGER_DEPTHS(f, float, da_rintf)
#if !defined(__OPENCL_VERSION__) || defined(DA_HAS_FP64)
DA_SATURATE_INTEGER_DEPTHS(d, double, da_rint)
#endif

#if !defined(__OPENCL_VERSION__) && !defined(__CUDACC__)
/* float -> IEEE 754 binary16 bits, round to nearest even (overflow -> inf, NaN kept).
 * The devices convert with their own instruction (CUDA: __float2half_rn; OpenCL:
 * vstore_half_rte), which rounds the same way; this is the host's. */
DA_FN da_u16 da_f32_to_f16_bits(float f) {
  const da_u32 x = da_float_bits(f);
  const da_u32 sign = (x >> 16) & 0x8000u;
  const da_u32 absx = x & 0x7FFFFFFFu;
  if (absx >= 0x7F800000u) return (da_u16)(sign | 0x7C00u | (absx > 0x7F800000u ? 0x200u : 0u));
  if (absx >= 0x477FF000u) return (da_u16)(sign | 0x7C00u); /* rounds past 65504 */
  if (absx < 0x38800000u) {                                 /* subnormal half or zero: the 2^-24 grid */
    float a;
    std::memcpy(&a, &absx, 4);
    const float scaled = da_rintf(a * 16777216.0f); /* a / 2^-24, ties to even */
    return (da_u16)(sign | (da_u32)scaled);
  }
  const da_u32 mant = absx & 0x7FFFFFu;
  const da_u32 exp = (absx >> 23) - 127 + 15;
  da_u32 h = (exp << 10) | (mant >> 13);
  const da_u32 rest = mant & 0x1FFFu;
  if (rest > 0x1000u || (rest == 0x1000u && (h & 1u))) ++h; /* may carry into the exponent: correct */
  return (da_u16)(sign | h);
}
#endif

#endif /* DEVICEARRAY_KERNELS_SATURATE_H */
