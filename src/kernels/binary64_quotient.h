/* The float that C's (float)(a / b) gives for two doubles a and b, taken as their
 * binary64 bit patterns, so that kernels of OpenCL devices without double precision
 * (no cl_khr_fp64) compute it too, bit for bit: the sums of ParallelPrimitives'
 * reductions are binary64 in device memory on every device (src/opencl/
 * scan_sort_reduce.cl writes their bits with integers there), and a mean divided on the
 * device must equal the one the host divides.
 *
 * Without double precision the quotient is computed with 64-bit integers: a long
 * division of the significands rounded to 53 bits (to nearest, ties to even), then
 * rounded again to the float's 24 bits (or fewer, for a subnormal float) the same way,
 * which is the double rounding that the C expression performs. */
#ifndef DEVICEARRAY_KERNELS_BINARY64_QUOTIENT_H
#define DEVICEARRAY_KERNELS_BINARY64_QUOTIENT_H

#include "prelude.h"

/* x / 2^drop rounded to the nearest integer, ties to even, for drop in [1, 63]; `sticky`
 * says that x itself was rounded down from a value above it. */
DA_FN da_u64 da_binary64_round_shift(da_u64 x, int drop, int sticky) {
  const da_u64 kept = x >> drop;
  const da_u64 rest = x & ((((da_u64)1) << drop) - 1);
  const da_u64 midpoint = ((da_u64)1) << (drop - 1);
  const int up = rest > midpoint || (rest == midpoint && (sticky || (kept & 1)));
  return kept + (up ? 1 : 0);
}

/* The significand (with its leading bit at 2^52) and exponent of a finite, non-zero
 * binary64 value m * 2^e. */
DA_FN void da_binary64_parts(da_u64 bits, da_u64* m, int* e) {
  const int biased = (int)((bits >> 52) & 0x7FF);
  *m = bits & ((((da_u64)1) << 52) - 1);
  *e = biased == 0 ? -1074 : biased - 1075;
  if (biased != 0) *m |= ((da_u64)1) << 52;
  while ((*m >> 52) == 0) {  /* a subnormal value: normalize */
    *m <<= 1;
    *e -= 1;
  }
}

/* (float)(a / b) with integers only, for finite a and b. */
DA_FN float da_binary64_quotient_integer(da_u64 a, da_u64 b) {
  const da_u32 sign = (da_u32)(((a ^ b) >> 63) << 31);
  if ((b << 1) == 0) return da_float_from_bits((a << 1) == 0 ? 0x7FC00000u : sign | 0x7F800000u); /* x / 0 */
  if ((a << 1) == 0) return da_float_from_bits(sign);                                         /* 0 / b */
  da_u64 ma, mb;
  int ea, eb;
  da_binary64_parts(a, &ma, &ea);
  da_binary64_parts(b, &mb, &eb);
  if (ma < mb) {  /* so that the quotient of the significands lies in [1, 2) */
    ma <<= 1;
    ea -= 1;
  }
  /* 55 quotient bits (its leading one and 54 more) and whether a remainder is left. */
  da_u64 q = 0, r = ma;
  for (int i = 0; i < 55; ++i) {
    q <<= 1;
    if (r >= mb) {
      r -= mb;
      q |= 1;
    }
    r <<= 1;
  }
  /* The double: m * 2^e with 53 significant bits (the carry of rounding up to 2^53 is a
   * value of 54 bits that the float rounding below handles as it is). */
  const da_u64 m = da_binary64_round_shift(q, 2, r != 0);
  const int e = ea - eb - 52;
  /* The float: a quantum of 2^(e + 52 - 23) while normal (exponent >= -126), 2^-149
   * below; e + 52 is the exponent of m's leading bit whether or not rounding carried. */
  const int leading = e + 52 + (int)(m >> 53);
  const int drop = leading >= -126 ? 29 + (int)(m >> 53) : -149 - e;
  if (drop >= 63) return da_float_from_bits(sign); /* far below the smallest subnormal */
  const da_u64 kept = da_binary64_round_shift(m, drop, 0);
  if (leading < -126) return da_float_from_bits(sign | (da_u32)kept); /* subnormal or 2^-126 */
  if (leading > 127) return da_float_from_bits(sign | 0x7F800000u);
  /* kept is in [2^23, 2^24]: added to the biased exponent less one, its leading bit
   * makes the exponent, and a rounding up to 2^24 carries into it (up to infinity). */
  return da_float_from_bits(sign | (((da_u32)(leading + 126) << 23) + (da_u32)kept));
}

/* (float)(a / b) for the binary64 bit patterns a and b: native double arithmetic where
 * the device has it, integers otherwise. */
DA_FN float da_binary64_quotient(da_u64 a, da_u64 b) {
#if defined(__OPENCL_VERSION__) && defined(DA_HAS_FP64)
  return (float)(as_double(a) / as_double(b));
#elif defined(__OPENCL_VERSION__)
  return da_binary64_quotient_integer(a, b);
#elif defined(__CUDA_ARCH__)
  return (float)(__longlong_as_double((long long)a) / __longlong_as_double((long long)b));
#else
  double x, y;
  std::memcpy(&x, &a, sizeof x);
  std::memcpy(&y, &b, sizeof y);
  return (float)(x / y);
#endif
}

#endif /* DEVICEARRAY_KERNELS_BINARY64_QUOTIENT_H */
