/* 8-bit colour codes as linear light and back, shared by the conversion kernels
 * (convert_formats.h) and the kernels that average colours (pointcloud.h,
 * camera_filters.h). Both directions use the conversion tables the host computes
 * (src/core/color_tables.hpp), so a mean of sRGB codes is decoded and encoded exactly
 * as convert<>() decodes and encodes them. */
#ifndef DEVICEARRAY_KERNELS_LINEAR_LIGHT_H
#define DEVICEARRAY_KERNELS_LINEAR_LIGHT_H

#include "prelude.h"
#include "backend/conversion_geometry.h"

#if defined(__OPENCL_VERSION__) || defined(__CUDACC__)

/* float (NaN -> 0, saturated to [0, 1]) -> u8, exactly round(255 * f(x)) where f is the
 * identity or the sRGB encoding, from the bucket table of f: entry = code << 17 | t,
 * where t is the low 16 bits of the bucket's rounding boundary, or 0x10000 when the
 * bucket has none. Non-negative floats order like their bit patterns. */
DA_FN da_u8 da_cvt_quantize(float x, DA_GLOBAL const da_u32* buckets) {
  const da_u32 bits = da_float_bits(x);
  /* >= 1 and +inf -> 255; NaN, -0 and negative numbers (sign bit set) -> 0 */
  if (bits >= 0x3F800000u) return (da_u8)(bits <= 0x7F800000u ? 255 : 0);
  const da_u32 first = (da_u32)(127 - DA_CVT_BUCKET_OCTAVES) << 23;
  if (bits < first) return 0;
  const da_u32 entry = buckets[(bits - first) >> (23 - DA_CVT_BUCKET_BITS)];
  return (da_u8)((entry >> 17) + ((bits & 0xFFFFu) >= (entry & 0x1FFFFu) ? 1u : 0u));
}

/* Linear light of sRGB code c as a fraction of 2^24: decode[c] (the table of sRGB code
 * -> float) scaled by a power of two is exact, so integer sums of these values are
 * exact and the same on every device. */
DA_FN da_u32 da_srgb_light(da_u8 c, DA_GLOBAL const float* decode) { return (da_u32)(decode[c] * 16777216.0f); }

/* The sRGB code of linear light given as a fraction of 2^24 (at most 2^24, so the
 * float is exact), rounded as convert<>() rounds a float colour. */
DA_FN da_u8 da_srgb_code(da_u32 light, DA_GLOBAL const da_u32* encode) {
  return da_cvt_quantize((float)light * (1.0f / 16777216.0f), encode);
}

/* What a colour mean sums for a colour channel's code c: the code itself for linear
 * codes (integer means, as they always were), its linear light for sRGB codes. */
DA_FN da_u32 da_color_term(da_u8 c, int srgb, DA_GLOBAL const float* decode) {
  return srgb ? da_srgb_light(c, decode) : (da_u32)c;
}

/* The code of the mean of `count` terms summing to `sum`, rounded half up. */
DA_FN da_u8 da_color_mean(da_u64 sum, da_u64 count, int srgb, DA_GLOBAL const da_u32* encode) {
  const da_u64 mean = (sum + count / 2) / count;
  return srgb ? da_srgb_code((da_u32)mean, encode) : (da_u8)mean;
}

/* The same for at most 16 terms (a block mean), whose sums stay below 2^29: a 32-bit
 * division, which GPUs do in a fraction of the instructions of a 64-bit one. */
DA_FN da_u8 da_color_mean_few(da_u32 sum, da_u32 count, int srgb, DA_GLOBAL const da_u32* encode) {
  const da_u32 mean = (sum + count / 2u) / count;
  return srgb ? da_srgb_code(mean, encode) : (da_u8)mean;
}

#endif

#endif /* DEVICEARRAY_KERNELS_LINEAR_LIGHT_H */
