// The lookup tables of the colour conversion kernels: computed once on the host from
// the exact sRGB transfer function, and uploaded once per device.
#pragma once

#include <cstdint>
#include <memory>

#include "backend/backend.hpp"
#include "backend/conversion_geometry.h"

namespace devicearray::detail {

/// Host-computed tables for the colour kernels, uploaded once per device. Layout is
/// what the kernels index (see convert_formats.h).
struct ColorTables {
  float linearToFloat[256];     ///< c / 255
  float srgbToFloat[256];       ///< decode(c / 255)
  std::uint32_t linearBuckets[DA_CVT_BUCKETS];  ///< quantizeFloat(x, false) by buckets (da_cvt_quantize)
  std::uint32_t srgbBuckets[DA_CVT_BUCKETS];    ///< quantizeFloat(x, true) by buckets
  std::uint8_t srgbToLinear[256];
  std::uint8_t linearToSrgb[256];
};

/// The tables, computed on first use (thread-safe) and kept for the process lifetime.
const ColorTables& hostColorTables();

/// The device copy of the colour tables for `device` (the layout the kernels in
/// src/kernels/convert_formats.h index), uploaded on `q` at first use and kept for the
/// device's lifetime: the device frees it when it is destroyed, or at exit
/// (DeviceImpl::cachedAllocation). Throws as DeviceImpl::allocate and copy.
std::shared_ptr<Allocation> deviceColorTables(const std::shared_ptr<DeviceImpl>& device, QueueImpl& q);

}  // namespace devicearray::detail
