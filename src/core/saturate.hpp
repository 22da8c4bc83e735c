// Host-side saturate_cast with OpenCV's semantics (round half to even, clamp to
// the range, NaN -> 0 for integers) and IEEE half conversion; used to build fill
// patterns from a Scalar.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>

#include "devicearray/types.hpp"

namespace devicearray::detail {

/// float -> IEEE 754 binary16 bits, round to nearest even (overflow -> inf, NaN kept).
inline std::uint16_t floatToHalf(float f) {
  std::uint32_t x;
  std::memcpy(&x, &f, 4);
  const std::uint32_t sign = (x >> 16) & 0x8000u;
  const std::uint32_t absx = x & 0x7FFFFFFFu;
  if (absx >= 0x7F800000u) return static_cast<std::uint16_t>(sign | 0x7C00u | (absx > 0x7F800000u ? 0x200u : 0u));
  if (absx >= 0x477FF000u) return static_cast<std::uint16_t>(sign | 0x7C00u);  // rounds past 65504
  if (absx < 0x38800000u) {  // subnormal half or zero: scale into the 2^-24 grid
    float a;
    std::memcpy(&a, &absx, 4);
    const float scaled = std::nearbyint(a * 16777216.0f);  // a / 2^-24, ties to even
    return static_cast<std::uint16_t>(sign | static_cast<std::uint32_t>(scaled));
  }
  const std::uint32_t mant = absx & 0x7FFFFFu;
  const std::uint32_t exp = (absx >> 23) - 127 + 15;
  std::uint32_t h = (exp << 10) | (mant >> 13);
  const std::uint32_t rest = mant & 0x1FFFu;
  if (rest > 0x1000u || (rest == 0x1000u && (h & 1u))) ++h;  // may carry into the exponent: correct
  return static_cast<std::uint16_t>(sign | h);
}

inline float halfToFloat(std::uint16_t h) {
  const std::uint32_t sign = (h & 0x8000u) << 16;
  const std::uint32_t exp = (h >> 10) & 0x1Fu;
  const std::uint32_t mant = h & 0x3FFu;
  float out;
  if (exp == 0) {
    out = std::ldexp(static_cast<float>(mant), -24);
    return sign ? -out : out;
  }
  std::uint32_t bits;
  if (exp == 31)
    bits = sign | 0x7F800000u | (mant << 13);
  else
    bits = sign | ((exp - 15 + 127) << 23) | (mant << 13);
  std::memcpy(&out, &bits, 4);
  return out;
}

template <class T>
T saturateInt(double v) {
  if (std::isnan(v)) return 0;
  const double r = std::nearbyint(v);  // default rounding mode: half to even
  if (r <= static_cast<double>(std::numeric_limits<T>::min())) return std::numeric_limits<T>::min();
  if (r >= static_cast<double>(std::numeric_limits<T>::max())) return std::numeric_limits<T>::max();
  return static_cast<T>(r);
}

/// Writes `v` converted to `depth` at `out` (depthSize(depth) bytes).
inline void storeSaturated(Depth depth, double v, void* out) {
  switch (depth) {
    case Depth::U8: { auto t = saturateInt<std::uint8_t>(v); std::memcpy(out, &t, sizeof t); break; }
    case Depth::S8: { auto t = saturateInt<std::int8_t>(v); std::memcpy(out, &t, sizeof t); break; }
    case Depth::U16: { auto t = saturateInt<std::uint16_t>(v); std::memcpy(out, &t, sizeof t); break; }
    case Depth::S16: { auto t = saturateInt<std::int16_t>(v); std::memcpy(out, &t, sizeof t); break; }
    case Depth::S32: { auto t = saturateInt<std::int32_t>(v); std::memcpy(out, &t, sizeof t); break; }
    case Depth::F32: { auto t = static_cast<float>(v); std::memcpy(out, &t, sizeof t); break; }
    case Depth::F64: { std::memcpy(out, &v, sizeof v); break; }
    case Depth::F16: { auto t = floatToHalf(static_cast<float>(v)); std::memcpy(out, &t, sizeof t); break; }
  }
}

}  // namespace devicearray::detail
