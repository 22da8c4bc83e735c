// Host-side saturate_cast with OpenCV's semantics, used to build fill patterns from
// a Scalar: the conversions of the depth-conversion kernels (kernels/saturate.h).
#pragma once

#include <cstdint>
#include <cstring>

#include "devicearray/types.hpp"
#include "kernels/saturate.h"

namespace devicearray::detail {

/// Writes `v` converted to `depth` at `out` (depthSize(depth) bytes).
inline void storeSaturated(Depth depth, double v, void* out) {
  const auto store = [out](auto t) { std::memcpy(out, &t, sizeof t); };
  switch (depth) {
    case Depth::U8: store(da_sat_u8_d(v)); break;
    case Depth::S8: store(da_sat_s8_d(v)); break;
    case Depth::U16: store(da_sat_u16_d(v)); break;
    case Depth::S16: store(da_sat_s16_d(v)); break;
    case Depth::S32: store(da_sat_s32_d(v)); break;
    case Depth::F32: store(static_cast<float>(v)); break;
    case Depth::F64: store(v); break;
    case Depth::F16: store(da_f32_to_f16_bits(static_cast<float>(v))); break;
  }
}

}  // namespace devicearray::detail
