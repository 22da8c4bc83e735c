// Backend interface: depth conversion (DeviceImpl::convert) of all 64 depth pairs,
// scaled and not, against a host model of OpenCV's saturate_cast.
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <functional>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "backend_fixture.hpp"

namespace backendtest {
namespace {

// Independent host model of OpenCV's saturate_cast: integers round half to even
// and clamp, NaN becomes 0; F32 rounds to nearest; F16 goes through float.
std::uint16_t halfBits(float f) {
  std::uint32_t x;
  std::memcpy(&x, &f, 4);
  const std::uint16_t sign = static_cast<std::uint16_t>((x >> 16) & 0x8000u);
  if (std::isnan(f)) return static_cast<std::uint16_t>(sign | 0x7E00u);
  const float a = std::fabs(f);
  if (a >= 65520.0f) return static_cast<std::uint16_t>(sign | 0x7C00u);  // 65520 = 65504 + half an ulp: ties go up
  if (a < std::ldexp(1.0f, -14)) {  // subnormal: multiples of 2^-24
    const double units = std::nearbyint(static_cast<double>(a) * std::ldexp(1.0, 24));
    return static_cast<std::uint16_t>(sign | static_cast<std::uint16_t>(units));
  }
  int exp = 0;
  const double m = std::frexp(static_cast<double>(a), &exp);  // a = m * 2^exp, m in [0.5, 1)
  double mant = std::nearbyint(m * 2048.0);                   // 11 significant bits
  if (mant == 2048.0) {
    mant = 1024.0;
    ++exp;
  }
  const int biased = exp - 1 + 15;
  if (biased >= 31) return static_cast<std::uint16_t>(sign | 0x7C00u);
  return static_cast<std::uint16_t>(sign | (biased << 10) | (static_cast<int>(mant) - 1024));
}

double halfValue(std::uint16_t h) {
  const int exp = (h >> 10) & 31, mant = h & 1023;
  const double s = (h & 0x8000) ? -1.0 : 1.0;
  if (exp == 31) return mant ? std::numeric_limits<double>::quiet_NaN() : s * INFINITY;
  if (exp == 0) return s * std::ldexp(static_cast<double>(mant), -24);
  return s * std::ldexp(1024.0 + mant, exp - 25);
}

std::size_t depthBytes(Depth d) { return devicearray::depthSize(d); }

template <class T>
T saturateTo(double v) {
  if (std::isnan(v)) return 0;
  const double r = std::nearbyint(v);
  if (r < static_cast<double>(std::numeric_limits<T>::lowest())) return std::numeric_limits<T>::lowest();
  if (r > static_cast<double>(std::numeric_limits<T>::max())) return std::numeric_limits<T>::max();
  return static_cast<T>(r);
}

/// Encodes `v` (already representable) as `depth`.
void encode(Depth depth, double v, std::uint8_t* out) {
  switch (depth) {
    case Depth::U8: { auto t = static_cast<std::uint8_t>(v); std::memcpy(out, &t, 1); break; }
    case Depth::S8: { auto t = static_cast<std::int8_t>(v); std::memcpy(out, &t, 1); break; }
    case Depth::U16: { auto t = static_cast<std::uint16_t>(v); std::memcpy(out, &t, 2); break; }
    case Depth::S16: { auto t = static_cast<std::int16_t>(v); std::memcpy(out, &t, 2); break; }
    case Depth::S32: { auto t = static_cast<std::int32_t>(v); std::memcpy(out, &t, 4); break; }
    case Depth::F32: { auto t = static_cast<float>(v); std::memcpy(out, &t, 4); break; }
    case Depth::F64: std::memcpy(out, &v, 8); break;
    case Depth::F16: { auto t = halfBits(static_cast<float>(v)); std::memcpy(out, &t, 2); break; }
  }
}

double decode(Depth depth, const std::uint8_t* p) {
  switch (depth) {
    case Depth::U8: return *p;
    case Depth::S8: { std::int8_t t; std::memcpy(&t, p, 1); return t; }
    case Depth::U16: { std::uint16_t t; std::memcpy(&t, p, 2); return t; }
    case Depth::S16: { std::int16_t t; std::memcpy(&t, p, 2); return t; }
    case Depth::S32: { std::int32_t t; std::memcpy(&t, p, 4); return t; }
    case Depth::F32: { float t; std::memcpy(&t, p, 4); return t; }
    case Depth::F64: { double t; std::memcpy(&t, p, 8); return t; }
    case Depth::F16: { std::uint16_t t; std::memcpy(&t, p, 2); return halfValue(t); }
  }
  return 0;
}

void saturateInto(Depth depth, double v, std::uint8_t* out) {
  switch (depth) {
    case Depth::U8: { auto t = saturateTo<std::uint8_t>(v); std::memcpy(out, &t, 1); break; }
    case Depth::S8: { auto t = saturateTo<std::int8_t>(v); std::memcpy(out, &t, 1); break; }
    case Depth::U16: { auto t = saturateTo<std::uint16_t>(v); std::memcpy(out, &t, 2); break; }
    case Depth::S16: { auto t = saturateTo<std::int16_t>(v); std::memcpy(out, &t, 2); break; }
    case Depth::S32: { auto t = saturateTo<std::int32_t>(v); std::memcpy(out, &t, 4); break; }
    case Depth::F32: { auto t = static_cast<float>(v); std::memcpy(out, &t, 4); break; }
    case Depth::F64: std::memcpy(out, &v, 8); break;
    case Depth::F16: { auto t = halfBits(static_cast<float>(v)); std::memcpy(out, &t, 2); break; }
  }
}

std::vector<double> sampleValues(Depth d) {
  const double inf = std::numeric_limits<double>::infinity(), nan = std::numeric_limits<double>::quiet_NaN();
  const std::vector<double> halfs = {0,     -0.0,   0.5,    1.5,    2.5,      -0.5,   -1.5,    -2.5,   127.5,
                                     128.5, 254.5,  255.5,  256,    -128.5,   -129,   1000.5,  65504,  -65504,
                                     inf,   -inf,   nan,    std::ldexp(1.0, -24), 1.0009765625, -32768, 32767};
  switch (d) {
    case Depth::U8: return {0, 1, 2, 127, 128, 200, 254, 255};
    case Depth::S8: return {-128, -127, -1, 0, 1, 100, 127};
    case Depth::U16: return {0, 1, 255, 256, 1000, 32767, 32768, 65535};
    case Depth::S16: return {-32768, -129, -128, -1, 0, 127, 255, 256, 32767};
    case Depth::S32:
      return {-2147483648.0, -65536, -32769, -129, -1, 0, 1, 255, 256, 65535, 65536, 16777217, 2147483647.0};
    case Depth::F16: return halfs;
    case Depth::F32:
    case Depth::F64: {
      std::vector<double> v = {0,       -0.0,     0.5,      1.5,    2.5,     -0.5,     -1.5,     -2.5,
                               127.5,   128.5,    254.5,    255.5,  256.0,   -128.5,   -129.0,   32767.5,
                               65535.5, -32768.5, 1e10,     -1e10,  3e9,     2147483520.0, inf,  -inf,
                               nan,     65504,    65520,    1e-8,   std::ldexp(1.0, -24), std::ldexp(1.0, -25),
                               1.00048828125, 1.00146484375, 0.1};
      if (d == Depth::F64) {
        // Beyond float: exact int32 edges, double-only magnitudes, and a value
        // that rounds differently to half directly than through float.
        for (double x : {2147483647.5, -2147483648.5, 2147483646.5, 1e300, -1e300, 1e39, 1.00048828125 + std::ldexp(1.0, -40)})
          v.push_back(x);
      }
      return v;
    }
  }
  return {};
}

const Depth kDepths[] = {Depth::U8, Depth::S8, Depth::U16, Depth::S16, Depth::S32, Depth::F32, Depth::F64, Depth::F16};
const char* depthName(Depth d) {
  static const char* names[] = {"U8", "S8", "U16", "S16", "S32", "F32", "F64", "F16"};
  return names[static_cast<int>(d)];
}

bool sameValue(Depth d, const std::uint8_t* expected, const std::uint8_t* got) {
  if (d == Depth::F32 || d == Depth::F64 || d == Depth::F16) {
    const double a = decode(d, expected), b = decode(d, got);
    if (std::isnan(a) || std::isnan(b)) return std::isnan(a) && std::isnan(b);
  }
  return std::memcmp(expected, got, depthBytes(d)) == 0;
}

struct ConvertRun {
  Depth src, dst;
  std::vector<double> values;
  double alpha = 1, beta = 0;
};

/// Runs one conversion over two padded rows (the second row reversed) and
/// compares every value and every padding byte with the host reference.
void checkConversion(DeviceImpl& dev, QueueImpl& q, const ConvertRun& r,
                     const std::function<std::shared_ptr<Allocation>(std::size_t, std::uint32_t, Bytes*)>& allocFilled,
                     const std::function<Bytes(Allocation&, std::size_t, std::size_t)>& read) {
  const std::size_t n = r.values.size();
  const std::size_t sb = depthBytes(r.src), db = depthBytes(r.dst);
  const std::size_t srcStep = (n + 3) * sb, dstStep = (n + 2) * db;
  Bytes srcInit;
  auto src = allocFilled(srcStep * 2 + sb * 8, 7, &srcInit);
  for (std::size_t i = 0; i < n; ++i) {
    encode(r.src, r.values[i], srcInit.data() + sb * 8 + i * sb);
    encode(r.src, r.values[n - 1 - i], srcInit.data() + sb * 8 + srcStep + i * sb);
  }
  Bytes dstInit;
  auto dst = allocFilled(dstStep * 2 + db * 4, 8, &dstInit);
  {
    // Upload the encoded source.
    CopyDesc c;
    c.elemSize = srcInit.size();
    c.dst = MemRef::dev(src.get(), 0);
    c.src = MemRef::hostPtr(srcInit.data());
    dev.copy(c, q);
    q.synchronize();
  }
  Bytes expected = dstInit;
  for (std::size_t row = 0; row < 2; ++row)
    for (std::size_t i = 0; i < n; ++i) {
      const double v = decode(r.src, srcInit.data() + sb * 8 + row * srcStep + i * sb);
      saturateInto(r.dst, r.alpha == 1 && r.beta == 0 ? v : v * r.alpha + r.beta,
                   expected.data() + db * 4 + row * dstStep + i * db);
    }
  ConvertDesc c;
  c.rows = 2;
  c.values = static_cast<std::int64_t>(n);
  c.srcDepth = r.src;
  c.dstDepth = r.dst;
  c.srcStep = static_cast<std::int64_t>(srcStep);
  c.dstStep = static_cast<std::int64_t>(dstStep);
  c.alpha = r.alpha;
  c.beta = r.beta;
  c.src = MemRef::dev(src.get(), sb * 8);
  c.dst = MemRef::dev(dst.get(), db * 4);
  try {
    dev.convert(c, q);
  } catch (const Error& e) {
    // Only a device without double precision may refuse, and only F64 data.
    EXPECT_EQ(e.code(), ErrorCode::Unsupported) << e.what();
    EXPECT_TRUE(r.src == Depth::F64 || r.dst == Depth::F64) << e.what();
    EXPECT_EQ(dev.backend(), ComputeBackend::opencl) << e.what();
    return;
  }
  const Bytes got = read(*dst, 0, expected.size());
  std::size_t reported = 0;
  for (std::size_t off = 0; off < expected.size();) {
    const bool inValue = off >= db * 4 && (off - db * 4) % dstStep < n * db && (off - db * 4) / dstStep < 2;
    const std::size_t w = inValue ? db : 1;
    const bool ok = inValue ? sameValue(r.dst, expected.data() + off, got.data() + off) : expected[off] == got[off];
    if (!ok && reported++ < 5) {
      if (inValue) {
        const std::size_t row = (off - db * 4) / dstStep, i = (off - db * 4) % dstStep / db;
        ADD_FAILURE() << "row " << row << " value " << i << ": source "
                      << decode(r.src, srcInit.data() + sb * 8 + row * srcStep + i * sb) << " gave "
                      << decode(r.dst, got.data() + off) << ", expected " << decode(r.dst, expected.data() + off);
      } else {
        ADD_FAILURE() << "padding byte " << off << " changed";
      }
    }
    off += w;
  }
}

TEST_P(Backend, ConversionsOfAll64DepthPairsSaturateAndRoundLikeOpenCV) {
  auto alloc = [&](std::size_t n, std::uint32_t seed, Bytes* out) { return allocFilled(n, seed, out); };
  auto rd = [&](Allocation& a, std::size_t off, std::size_t n) { return read(a, off, n); };
  for (Depth s : kDepths)
    for (Depth d : kDepths) {
      SCOPED_TRACE(std::string(depthName(s)) + " -> " + depthName(d));
      checkConversion(dev(), q(), {s, d, sampleValues(s)}, alloc, rd);
    }
}

TEST_P(Backend, ScaledConversionsRoundTiesToEven) {
  auto alloc = [&](std::size_t n, std::uint32_t seed, Bytes* out) { return allocFilled(n, seed, out); };
  auto rd = [&](Allocation& a, std::size_t off, std::size_t n) { return read(a, off, n); };
  // v * 0.5 + 0.5: even v land exactly on .5 ties; odd v on integers.
  const std::vector<double> small = {0, 1, 2, 3, 4, 5, 6, 7, 100, 101, 120, 127};
  for (Depth s : {Depth::U8, Depth::S16, Depth::S32, Depth::F32, Depth::F16})
    for (Depth d : {Depth::U8, Depth::S8, Depth::U16, Depth::S32, Depth::F32, Depth::F16}) {
      SCOPED_TRACE(std::string(depthName(s)) + " -> " + depthName(d) + " with alpha 0.5, beta 0.5");
      checkConversion(dev(), q(), {s, d, small, 0.5, 0.5}, alloc, rd);
    }
  SCOPED_TRACE("S16 -> U8 with alpha -2, beta 300");
  checkConversion(dev(), q(), {Depth::S16, Depth::U8, {-1000, -1, 0, 1, 20, 100, 200, 1000}, -2, 300}, alloc, rd);
}

GTEST_ALLOW_UNINSTANTIATED_PARAMETERIZED_TEST(Backend);
INSTANTIATE_TEST_SUITE_P(AllDevices, Backend, testing::ValuesIn(allDevices()), DeviceParamName());

}  // namespace
}  // namespace backendtest
