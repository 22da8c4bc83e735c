// Host-built tables of the colour conversion kernels (see color_tables.hpp).
#include "core/color_tables.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>

#include "backend/conversion_geometry.h"

namespace devicearray::detail {

namespace {

double srgbDecode(double v) { return v <= 0.04045 ? v / 12.92 : std::pow((v + 0.055) / 1.055, 2.4); }
double srgbEncode(double l) { return l <= 0.0031308 ? l * 12.92 : 1.055 * std::pow(l, 1.0 / 2.4) - 0.055; }
int quantize(double v) { return static_cast<int>(std::round(255.0 * std::clamp(v, 0.0, 1.0))); }

/// The exact float -> u8 result the kernels must reproduce (NaN -> 0, saturating).
int quantizeFloat(float x, bool srgb) {
  if (std::isnan(x)) return 0;
  const double v = std::clamp(static_cast<double>(x), 0.0, 1.0);
  return quantize(srgb ? srgbEncode(v) : v);
}


/// Least float x in [0, 1] with quantizeFloat(x) > k: a binary search over the bit
/// patterns of non-negative floats, which are ordered like their values.
float threshold(int k, bool srgb) {
  std::uint32_t lo = 0;
  std::uint32_t hi = 0x3F800000u;  // 1.0f: quantizes to 255 > k
  while (lo < hi) {
    const std::uint32_t mid = lo + (hi - lo) / 2;
    float x;
    std::memcpy(&x, &mid, sizeof x);
    if (quantizeFloat(x, srgb) > k) hi = mid;
    else lo = mid + 1;
  }
  float x;
  std::memcpy(&x, &hi, sizeof x);
  return x;
}

/// The bucket table of da_cvt_quantize (convert_formats.h) for quantizeFloat(., srgb):
/// bucket b covers the floats whose bit patterns are first + b * 2^16 ... + 2^16 - 1;
/// its entry is the code of its first float << 17 | the low 16 bits of the least float
/// in it with a greater code (0x10000 when there is none).
void bucketTable(bool srgb, std::uint32_t* table) {
  float thresholds[255];  // [k]: least float x with quantizeFloat(x) > k
  for (int k = 0; k < 255; ++k) thresholds[k] = threshold(k, srgb);
  constexpr std::uint32_t kFirst = static_cast<std::uint32_t>(127 - DA_CVT_BUCKET_OCTAVES) << 23;
  constexpr std::uint32_t kWidth = 1u << (23 - DA_CVT_BUCKET_BITS);
  static_assert(kWidth == 0x10000u, "an entry keeps 16 bits of the boundary");
  for (std::uint32_t b = 0; b < DA_CVT_BUCKETS; ++b) {
    const std::uint32_t lo = kFirst + b * kWidth;
    float x;
    std::memcpy(&x, &lo, sizeof x);
    const int code = quantizeFloat(x, srgb);
    std::uint32_t low = 0x10000u;
    if (code < 255) {
      std::uint32_t boundary;
      std::memcpy(&boundary, &thresholds[code], sizeof boundary);
      if (boundary < lo + kWidth) low = boundary - lo;
      // One boundary per bucket at most: the next one must lie beyond it.
      if (code < 254) {
        std::uint32_t next;
        std::memcpy(&next, &thresholds[code + 1], sizeof next);
        if (next < lo + kWidth) throw std::logic_error("colour tables: two rounding boundaries in one bucket");
      }
    }
    table[b] = static_cast<std::uint32_t>(code) << 17 | low;
  }
}

}  // namespace

const ColorTables& hostColorTables() {
  static const ColorTables tables = [] {
    ColorTables t{};
    for (int c = 0; c < 256; ++c) {
      const double v = c / 255.0;
      t.linearToFloat[c] = static_cast<float>(v);
      t.srgbToFloat[c] = static_cast<float>(srgbDecode(v));
      t.srgbToLinear[c] = static_cast<std::uint8_t>(quantize(srgbDecode(v)));
      t.linearToSrgb[c] = static_cast<std::uint8_t>(quantize(srgbEncode(v)));
    }
    bucketTable(false, t.linearBuckets);
    bucketTable(true, t.srgbBuckets);
    return t;
  }();
  return tables;
}

std::shared_ptr<Allocation> deviceColorTables(const std::shared_ptr<DeviceImpl>& device, QueueImpl& q) {
  static const char key = 0;  // identifies this cache entry among the device's
  return device->cachedAllocation(&key, [&] {
    const ColorTables& host = hostColorTables();
    std::shared_ptr<Allocation> storage = device->allocate(sizeof(ColorTables), q);
    OrderedUse use(q, {storage.get()});
    CopyDesc copy;
    copy.elemSize = sizeof(ColorTables);
    copy.dst = MemRef::dev(storage.get(), 0);
    copy.src = MemRef::hostPtr(const_cast<ColorTables*>(&host));  // static storage: outlives the copy
    device->copy(copy, q);
    use.commit();
    return storage;
  });
}

}  // namespace devicearray::detail
