// GpuMat (the 2-D counterpart) on every device: construction, transfers, views,
// copyTo, setTo and convertTo. setTo/convertTo results are checked against a host
// implementation of OpenCV's saturate_cast written here: round half to even,
// clamp to the destination range, NaN -> 0 for integer depths (as OpenCV's CUDA
// path does), IEEE rounding with overflow to infinity for floating depths.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <functional>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "test_support.hpp"

namespace {

using devicearray::ComputeBackend;
using devicearray::ComputeDevice;
using devicearray::Depth;
using devicearray::ErrorCode;
using devicearray::GpuMat;
using devicearray::GpuMatND;
using devicearray::HostMat;
using devicearray::makeType;
using devicearray::OpenCLBufferPtr;
using devicearray::Range;
using devicearray::uchar;
using devicearray::Scalar;
using devicearray::Stream;

// ------------------------------------------------------- host reference math --

std::uint16_t doubleToHalf(double v) {
  if (std::isnan(v)) return 0x7E00;
  const std::uint16_t sign = std::signbit(v) ? 0x8000 : 0;
  const double a = std::fabs(v);
  if (a == 0) return sign;
  if (std::isinf(a)) return static_cast<std::uint16_t>(sign | 0x7C00);
  int e = 0;
  (void)std::frexp(a, &e);
  int exponent = e - 1;  // a = 1.m * 2^exponent
  if (exponent < -14) {  // subnormal: multiples of 2^-24 (1024 rounds up to the smallest normal)
    return static_cast<std::uint16_t>(sign | static_cast<std::uint16_t>(std::nearbyint(std::ldexp(a, 24))));
  }
  double mantissa = std::nearbyint(std::ldexp(a, 10 - exponent));  // [1024, 2048], ties to even
  if (mantissa == 2048) {
    mantissa = 1024;
    ++exponent;
  }
  if (exponent > 15) return static_cast<std::uint16_t>(sign | 0x7C00);
  return static_cast<std::uint16_t>(sign | ((exponent + 15) << 10) | (static_cast<int>(mantissa) - 1024));
}

double halfToDouble(std::uint16_t h) {
  const int exponent = (h >> 10) & 0x1F;
  const int mantissa = h & 0x3FF;
  double v = 0;
  if (exponent == 0)
    v = std::ldexp(mantissa, -24);
  else if (exponent == 31)
    v = mantissa ? std::numeric_limits<double>::quiet_NaN() : std::numeric_limits<double>::infinity();
  else
    v = std::ldexp(mantissa + 1024, exponent - 25);
  return (h & 0x8000) ? -v : v;
}

double saturateInt(double x, double lo, double hi) {
  if (std::isnan(x)) return 0;
  const double r = std::nearbyint(x);  // round half to even (default rounding mode)
  return r < lo ? lo : (r > hi ? hi : r);
}

// The value a destination channel of `depth` holds after saturate_cast(x), as double.
double saturateTo(Depth depth, double x) {
  switch (depth) {
    case Depth::U8: return saturateInt(x, 0, 255);
    case Depth::S8: return saturateInt(x, -128, 127);
    case Depth::U16: return saturateInt(x, 0, 65535);
    case Depth::S16: return saturateInt(x, -32768, 32767);
    case Depth::S32: return saturateInt(x, std::numeric_limits<std::int32_t>::min(), std::numeric_limits<std::int32_t>::max());
    case Depth::F32: return static_cast<double>(static_cast<float>(x));
    case Depth::F64: return x;
    case Depth::F16: return halfToDouble(doubleToHalf(x));
  }
  return 0;
}

void encode(Depth depth, double v, std::uint8_t* out) {
  auto put = [&](auto value) { std::memcpy(out, &value, sizeof(value)); };
  switch (depth) {
    case Depth::U8: put(static_cast<std::uint8_t>(v)); break;
    case Depth::S8: put(static_cast<std::int8_t>(v)); break;
    case Depth::U16: put(static_cast<std::uint16_t>(v)); break;
    case Depth::S16: put(static_cast<std::int16_t>(v)); break;
    case Depth::S32: put(static_cast<std::int32_t>(v)); break;
    case Depth::F32: put(static_cast<float>(v)); break;
    case Depth::F64: put(v); break;
    case Depth::F16: put(doubleToHalf(v)); break;
  }
}

double decode(Depth depth, const std::uint8_t* in) {
  auto get = [&](auto value) {
    std::memcpy(&value, in, sizeof(value));
    return static_cast<double>(value);
  };
  switch (depth) {
    case Depth::U8: return get(std::uint8_t{});
    case Depth::S8: return get(std::int8_t{});
    case Depth::U16: return get(std::uint16_t{});
    case Depth::S16: return get(std::int16_t{});
    case Depth::S32: return get(std::int32_t{});
    case Depth::F32: return get(float{});
    case Depth::F64: return get(double{});
    case Depth::F16: {
      std::uint16_t h = 0;
      std::memcpy(&h, in, 2);
      return halfToDouble(h);
    }
  }
  return 0;
}

bool isFloating(Depth d) { return d == Depth::F32 || d == Depth::F64 || d == Depth::F16; }

// Equality of a device result with the reference: exact for integer depths;
// NaN matches NaN; finite floats may differ by one unit in the last place of the
// destination (OpenCV itself computes some pairs in float and others in double).
testing::AssertionResult sameValue(Depth depth, double expected, double actual) {
  if (std::isnan(expected) || std::isnan(actual)) {
    if (std::isnan(expected) && std::isnan(actual)) return testing::AssertionSuccess();
    return testing::AssertionFailure() << "got " << actual << ", expected " << expected;
  }
  if (expected == actual) return testing::AssertionSuccess();
  if (isFloating(depth) && std::isfinite(expected) && std::isfinite(actual)) {
    const int bits = depth == Depth::F32 ? 23 : depth == Depth::F64 ? 52 : 10;
    const double ulp = std::ldexp(1.0, std::ilogb(expected == 0 ? 1e-300 : expected) - bits);
    if (std::fabs(expected - actual) <= ulp) return testing::AssertionSuccess();
  }
  return testing::AssertionFailure() << "got " << actual << ", expected " << expected;
}

// Source values per depth: pseudo-random values covering the whole range, ties
// (x.5 after scaling), and for floats quarters, huge values, infinities and NaN.
// Every value times the alphas used below stays exact in float, so a float or a
// double pipeline gives the same result.
std::vector<double> sourceValues(Depth depth, std::size_t count, std::uint32_t seed) {
  std::mt19937 rng(seed);
  const double inf = std::numeric_limits<double>::infinity();
  const double nan = std::numeric_limits<double>::quiet_NaN();
  std::vector<double> specials;
  auto uniformInt = [&](double lo, double hi) {
    return lo + static_cast<double>(rng() % static_cast<std::uint32_t>(hi - lo + 1));
  };
  auto quarter = [&](double limit) { return (static_cast<double>(rng() % static_cast<std::uint32_t>(8 * limit + 1)) - 4 * limit) / 4; };
  std::function<double()> draw;
  switch (depth) {
    case Depth::U8: specials = {0, 255, 1, 128}; draw = [&] { return uniformInt(0, 255); }; break;
    case Depth::S8: specials = {-128, 127, -1, 0}; draw = [&] { return uniformInt(-128, 127); }; break;
    case Depth::U16: specials = {0, 65535, 255, 256}; draw = [&] { return uniformInt(0, 65535); }; break;
    case Depth::S16: specials = {-32768, 32767, -129, 128}; draw = [&] { return uniformInt(-32768, 32767); }; break;
    case Depth::S32:
      specials = {-(1 << 20), 1 << 20, -40000, 70000, 0};
      draw = [&] { return uniformInt(-(1 << 20), 1 << 20); };
      break;
    case Depth::F32:
      specials = {nan, inf, -inf, 1e10, -1e10, 70000, -70000, 3e38, 2.5, -2.5, 0.5, 255.5, -128.5};
      draw = [&] { return quarter(300); };
      break;
    case Depth::F64:
      specials = {nan, inf, -inf, 1e10, -1e10, 1e300, -1e300, 4e9, 70000, 2.5, -0.5, 65535.5};
      draw = [&] { return quarter(300); };
      break;
    case Depth::F16:
      specials = {nan, inf, -inf, 65504, -65504, 1000, 2.5, -2.5, 255.5};
      draw = [&] { return quarter(255); };
      break;
  }
  std::vector<double> v = specials;
  while (v.size() < count) v.push_back(draw());
  v.resize(count);
  std::shuffle(v.begin(), v.end(), rng);
  // The reference must start from the value the source depth actually stores.
  for (double& x : v) {
    std::uint8_t bytes[8];
    encode(depth, x, bytes);
    x = decode(depth, bytes);
  }
  return v;
}

HostMat hostFromValues(int rows, int cols, int type, const std::vector<double>& values) {
  HostMat h({rows, cols}, type);
  const Depth d = devicearray::depthOf(type);
  const std::size_t es1 = devicearray::depthSize(d);
  for (std::size_t i = 0; i < values.size(); ++i) encode(d, values[i], h.data() + i * es1);
  return h;
}

std::vector<double> valuesOf(const HostMat& h) {
  const Depth d = devicearray::depthOf(h.type());
  const std::size_t es1 = devicearray::depthSize(d);
  const std::vector<std::uint8_t> packed = datest::packedBytes(h);
  std::vector<double> out(packed.size() / es1);
  for (std::size_t i = 0; i < out.size(); ++i) out[i] = decode(d, packed.data() + i * es1);
  return out;
}

std::string depthName(Depth d) {
  static const char* names[] = {"U8", "S8", "U16", "S16", "S32", "F32", "F64", "F16"};
  return names[static_cast<int>(d)];
}

datest::DeviceAddress addressOf(const GpuMat& m) {
  if (m.backend() == ComputeBackend::cuda) return {m.data, 0};
  const auto b = m.getOpenCLBuffer();
  return {b.buffer, b.offset};
}

std::vector<std::uint8_t> downloadPacked(const GpuMat& m) {
  HostMat h;
  m.download(h);
  return datest::packedBytes(h);
}

class DeviceTest : public datest::DeviceTest {
 protected:
  GpuMat uploaded(const HostMat& h) const {
    GpuMat g(h.size[0], h.size[1], h.type(), device());
    g.upload(h);
    return g;
  }
};

// ===================================================== construction, transfers

class GpuMatBasics : public DeviceTest {};

TEST_P(GpuMatBasics, DefaultIsEmpty) {
  const GpuMat m;
  EXPECT_TRUE(m.empty());
  EXPECT_FALSE(m.external());
  EXPECT_EQ(m.rows, 0);
  EXPECT_EQ(m.cols, 0);
  EXPECT_EQ(m.data, nullptr);
}

TEST_P(GpuMatBasics, ConstructorAllocatesOnTheDevice) {
  const int type = makeType(Depth::F32, 3);
  const GpuMat m(5, 7, type, device());
  EXPECT_FALSE(m.empty());
  EXPECT_FALSE(m.external()) << "an owning GpuMat is not external";
  EXPECT_EQ(m.rows, 5);
  EXPECT_EQ(m.cols, 7);
  EXPECT_EQ(m.type(), type);
  EXPECT_EQ(m.depth(), static_cast<int>(Depth::F32));
  EXPECT_EQ(m.channels(), 3);
  EXPECT_EQ(m.elemSize(), 12u);
  EXPECT_EQ(m.elemSize1(), 4u);
  EXPECT_GE(m.step, 7u * 12u);
  EXPECT_EQ(m.isContinuous(), m.step == 7u * 12u);
  EXPECT_FALSE(m.isSubmatrix());
  EXPECT_EQ(m.device(), device());
  EXPECT_EQ(m.backend(), device().backend());
  if (isCuda())
    EXPECT_NE(m.data, nullptr);
  else
    EXPECT_EQ(m.data, nullptr) << "documented: data is nullptr on OpenCL";
}

TEST_P(GpuMatBasics, UploadDownloadRoundTripsEveryDepthAndChannels) {
  std::uint32_t seed = 1;
  Stream stream(device());
  for (Depth d : datest::allDepths()) {
    for (int cn : {1, 2, 3, 4, 7}) {
      const int type = makeType(d, cn);
      SCOPED_TRACE(depthName(d) + "C" + std::to_string(cn));
      const HostMat h = datest::randomHostMat({5, 13}, type, seed++);
      const GpuMat g = uploaded(h);
      HostMat out;
      g.download(out);
      ASSERT_EQ(out.size, (std::vector<int>{5, 13}));
      ASSERT_EQ(out.type(), type);
      ASSERT_TRUE(datest::bytesEqual(datest::packedBytes(h), datest::packedBytes(out), h.elemSize()));

      GpuMat g2(5, 13, type, device());
      g2.upload(h, stream);
      HostMat out2({5, 13}, type);
      g2.download(out2, stream);
      stream.waitForCompletion();
      ASSERT_TRUE(datest::bytesEqual(datest::packedBytes(h), datest::packedBytes(out2), h.elemSize()));
    }
  }
}

TEST_P(GpuMatBasics, UploadOfAnotherSizeRecreatesOnTheSameDevice) {
  GpuMat g(2, 2, makeType(Depth::U8, 1), device());
  const HostMat h = datest::randomHostMat({4, 9}, makeType(Depth::S16, 2), 3);
  g.upload(h);
  EXPECT_EQ(g.rows, 4);
  EXPECT_EQ(g.cols, 9);
  EXPECT_EQ(g.type(), makeType(Depth::S16, 2));
  EXPECT_EQ(g.device(), device());
  EXPECT_TRUE(datest::bytesEqual(datest::packedBytes(h), downloadPacked(g), 4));
}

TEST_P(GpuMatBasics, CloneIsContinuousIndependentAndEqual) {
  const HostMat h = datest::randomHostMat({6, 10}, makeType(Depth::U16, 3), 4);
  const GpuMat g = uploaded(h);
  const GpuMat view = g(Range(1, 5), Range(2, 9));
  for (bool withStream : {false, true}) {
    Stream stream(device());
    GpuMat c = withStream ? view.clone(stream) : view.clone();
    if (withStream) stream.waitForCompletion();
    EXPECT_EQ(c.rows, 4);
    EXPECT_EQ(c.cols, 7);
    EXPECT_TRUE(c.isContinuous());
    EXPECT_FALSE(c.isSubmatrix());
    EXPECT_FALSE(c.external());
    EXPECT_EQ(c.step, 7u * 6u);
    EXPECT_TRUE(datest::bytesEqual(datest::subArrayBytes(datest::packedBytes(h), {6, 10}, 6, {1, 2}, {4, 7}),
                                   downloadPacked(c), 6));
    c.setTo(Scalar(0, 0, 0));
    EXPECT_TRUE(datest::bytesEqual(datest::packedBytes(h), downloadPacked(g), 6)) << "the clone shares memory";
  }
}

TEST_P(GpuMatBasics, WrapsExternalMemoryOfAnotherMatrix) {
  const int type = makeType(Depth::U8, 1);
  const HostMat h = datest::randomHostMat({6, 16}, type, 5);
  const GpuMat owner = uploaded(h);
  // Rows 1..4, bytes 2..13 of the owner, as 4 x 4 RGB.
  const int rgb = makeType(Depth::U8, 3);
  const std::size_t pitch = owner.step;
  GpuMat ext;
  if (isCuda()) {
    ext = GpuMat(4, 4, rgb, static_cast<void*>(owner.data + pitch + 2), pitch);
  } else {
    OpenCLBufferPtr p = owner.getOpenCLBuffer();
    p.offset += pitch + 2;
    ext = GpuMat(4, 4, rgb, p, device(), pitch);
  }
  EXPECT_TRUE(ext.external());
  EXPECT_EQ(ext.step, pitch);
  EXPECT_FALSE(ext.isContinuous());
  EXPECT_TRUE(datest::bytesEqual(datest::subArrayBytes(datest::packedBytes(h), {6, 16}, 1, {1, 2}, {4, 12}),
                                 downloadPacked(ext), 3));
  ext.setTo(Scalar(1, 2, 3));
  std::vector<std::uint8_t> expected = datest::packedBytes(h);
  for (int r = 1; r < 5; ++r)
    for (int b = 2; b < 14; ++b) expected[static_cast<std::size_t>(r * 16 + b)] = static_cast<std::uint8_t>(1 + (b - 2) % 3);
  EXPECT_TRUE(datest::bytesEqual(expected, downloadPacked(owner)));
  ext.release();
  EXPECT_TRUE(datest::bytesEqual(expected, downloadPacked(owner))) << "release of external memory frees nothing";
}

TEST_P(GpuMatBasics, AsGpuMatNDSharesStorage) {
  const HostMat h = datest::randomHostMat({3, 8}, makeType(Depth::F32, 1), 6);
  const GpuMat g = uploaded(h);
  const GpuMatND nd = g.asGpuMatND();
  EXPECT_EQ(nd.size, (std::vector<int>{3, 8}));
  EXPECT_EQ(nd.step[0], g.step);
  EXPECT_EQ(nd.type(), g.type());
  EXPECT_TRUE(datest::bytesEqual(datest::packedBytes(h), datest::downloadPacked(nd), 4));
}

// ======================================================================= views

class GpuMatViews : public DeviceTest {};

TEST_P(GpuMatViews, RectangleViewSharesMemoryAndKeepsStep) {
  const int type = makeType(Depth::S16, 2);
  const HostMat h = datest::randomHostMat({7, 9}, type, 7);
  const GpuMat g = uploaded(h);
  const GpuMat v = g(Range(2, 6), Range(3, 8));
  EXPECT_EQ(v.rows, 4);
  EXPECT_EQ(v.cols, 5);
  EXPECT_EQ(v.step, g.step);
  EXPECT_EQ(v.type(), type);
  EXPECT_FALSE(v.isContinuous());
  EXPECT_TRUE(v.isSubmatrix());
  EXPECT_FALSE(v.external());
  datest::DeviceAddress expected = addressOf(g);
  const std::size_t offset = 2 * g.step + 3 * 4;
  if (isCuda())
    expected.base = static_cast<const std::uint8_t*>(expected.base) + offset;
  else
    expected.offset += offset;
  EXPECT_EQ(addressOf(v), expected);
  EXPECT_TRUE(datest::bytesEqual(datest::subArrayBytes(datest::packedBytes(h), {7, 9}, 4, {2, 3}, {4, 5}),
                                 downloadPacked(v), 4));

  const GpuMat vv = v(Range(1, 3), Range::all());
  EXPECT_EQ(vv.rows, 2);
  EXPECT_EQ(vv.cols, 5);
  EXPECT_TRUE(vv.isSubmatrix());
  EXPECT_TRUE(datest::bytesEqual(datest::subArrayBytes(datest::packedBytes(h), {7, 9}, 4, {3, 3}, {2, 5}),
                                 downloadPacked(vv), 4));
}

TEST_P(GpuMatViews, ContinuityOfViewsLikeOpenCV) {
  const GpuMat g(6, 8, makeType(Depth::U8, 1), device());
  if (!g.isContinuous()) GTEST_SKIP() << "this backend pads rows; continuity of views is then never set";
  EXPECT_TRUE(g(Range(1, 4), Range::all()).isContinuous()) << "whole rows";
  EXPECT_TRUE(g(Range(2, 3), Range(1, 5)).isContinuous()) << "a single row";
  EXPECT_FALSE(g(Range(1, 4), Range(0, 7)).isContinuous());
  EXPECT_FALSE(g(Range::all(), Range::all()).isSubmatrix());
  EXPECT_TRUE(g(Range::all(), Range::all()).isContinuous());
}

TEST_P(GpuMatViews, ViewKeepsMemoryAliveAfterParentRelease) {
  const HostMat h = datest::randomHostMat({5, 6}, makeType(Depth::S32, 1), 8);
  GpuMat g = uploaded(h);
  const GpuMat v = g(Range(1, 4), Range(2, 6));
  g.release();
  EXPECT_TRUE(g.empty());
  EXPECT_TRUE(datest::bytesEqual(datest::subArrayBytes(datest::packedBytes(h), {5, 6}, 4, {1, 2}, {3, 4}),
                                 downloadPacked(v), 4));
}

// ===================================================================== copyTo

class GpuMatCopyTo : public DeviceTest {};

TEST_P(GpuMatCopyTo, SameSizeAndTypeWritesInPlace) {
  const int type = makeType(Depth::F64, 2);
  const HostMat h = datest::randomHostMat({4, 5}, type, 9);
  const GpuMat src = uploaded(h);
  GpuMat dst(4, 5, type, device());
  const auto where = addressOf(dst);
  src.copyTo(dst);
  EXPECT_EQ(addressOf(dst), where);
  EXPECT_TRUE(datest::bytesEqual(datest::packedBytes(h), downloadPacked(dst), 16));

  Stream stream(device());
  GpuMat dst2(4, 5, type, device());
  src.copyTo(dst2, stream);
  stream.waitForCompletion();
  EXPECT_TRUE(datest::bytesEqual(datest::packedBytes(h), downloadPacked(dst2), 16));
}

TEST_P(GpuMatCopyTo, OtherSizeOrTypeRecreatesTheDestination) {
  const int type = makeType(Depth::U8, 3);
  const HostMat h = datest::randomHostMat({4, 5}, type, 10);
  const GpuMat src = uploaded(h);
  GpuMat empty;
  src.copyTo(empty);
  EXPECT_EQ(empty.rows, 4);
  EXPECT_EQ(empty.cols, 5);
  EXPECT_EQ(empty.type(), type);
  EXPECT_EQ(empty.device(), device());
  EXPECT_TRUE(datest::bytesEqual(datest::packedBytes(h), downloadPacked(empty), 3));

  const HostMat other = datest::randomHostMat({2, 2}, makeType(Depth::F32, 1), 11);
  GpuMat wrongType = uploaded(other);
  GpuMat keep = wrongType;
  src.copyTo(wrongType);
  EXPECT_EQ(wrongType.type(), type);
  EXPECT_EQ(wrongType.rows, 4);
  EXPECT_TRUE(datest::bytesEqual(datest::packedBytes(h), downloadPacked(wrongType), 3));
  EXPECT_TRUE(datest::bytesEqual(datest::packedBytes(other), downloadPacked(keep), 4)) << "old memory untouched";
}

TEST_P(GpuMatCopyTo, IntoAViewChangesOnlyThatRegion) {
  const int type = makeType(Depth::U16, 1);
  const HostMat hb = datest::randomHostMat({6, 9}, type, 12);
  const HostMat hs = datest::randomHostMat({3, 4}, type, 13);
  const GpuMat big = uploaded(hb);
  const GpuMat small = uploaded(hs);
  GpuMat view = big(Range(2, 5), Range(4, 8));
  small.copyTo(view);
  std::vector<std::uint8_t> expected = datest::packedBytes(hb);
  const std::vector<std::uint8_t> s = datest::packedBytes(hs);
  for (int r = 0; r < 3; ++r)
    std::memcpy(expected.data() + ((r + 2) * 9 + 4) * 2, s.data() + r * 4 * 2, 4 * 2);
  EXPECT_TRUE(datest::bytesEqual(expected, downloadPacked(big), 2));
}

// ====================================================================== setTo

class GpuMatSetTo : public DeviceTest {};

TEST_P(GpuMatSetTo, SaturatesEachValueToTheDepth) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  struct Case {
    Depth depth;
    Scalar value;
  };
  const std::vector<Case> cases = {
      {Depth::U8, Scalar(300, -3, 2.5, 3.5)},       {Depth::U8, Scalar(254.5, 0.5, nan, 17)},
      {Depth::S8, Scalar(200, -200, -0.5, -1.5)},   {Depth::U16, Scalar(70000, -1, 65534.5, 1.5)},
      {Depth::S16, Scalar(-40000, 40000, -2.5, 7)}, {Depth::S32, Scalar(3e9, -3e9, 2.5, -3.5)},
      {Depth::S32, Scalar(nan, 1e300, -1e300, 0)},  {Depth::F32, Scalar(0.1, 1e40, -1e40, -2.5)},
      {Depth::F64, Scalar(0.1, -1e300, 1e-300, nan)}, {Depth::F16, Scalar(0.1, 1e5, -70000, 65519)},
      {Depth::F16, Scalar(1e-7, -0.0, 2049, 65520)},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(depthName(c.depth));
    GpuMat m(3, 5, makeType(c.depth, 4), device());
    GpuMat& returned = m.setTo(c.value);
    EXPECT_EQ(&returned, &m) << "setTo returns *this";
    HostMat out;
    m.download(out);
    const std::vector<double> got = valuesOf(out);
    ASSERT_EQ(got.size(), 3u * 5 * 4);
    for (std::size_t i = 0; i < got.size(); ++i) {
      const double expected = saturateTo(c.depth, c.value[static_cast<int>(i % 4)]);
      ASSERT_TRUE(sameValue(c.depth, expected, got[i])) << "channel " << i % 4 << " of element " << i / 4
                                                         << " for value " << c.value[static_cast<int>(i % 4)];
    }
  }
}

TEST_P(GpuMatSetTo, PartialScalarsFillMissingChannelsWithZeroAndExtraValuesAreIgnored) {
  GpuMat four(2, 3, makeType(Depth::U8, 4), device());
  four.setTo(Scalar{9, 8});
  GpuMat three(2, 3, makeType(Depth::S16, 3), device());
  three.setTo(Scalar(1, 2, 3, 4));
  GpuMat one(2, 3, makeType(Depth::F32, 1), device());
  one.setTo(Scalar(5, 6, 7, 8));
  HostMat out;
  four.download(out);
  std::vector<double> got = valuesOf(out);
  for (std::size_t i = 0; i < got.size(); ++i) EXPECT_EQ(got[i], (std::vector<double>{9, 8, 0, 0})[i % 4]) << i;
  three.download(out);
  got = valuesOf(out);
  for (std::size_t i = 0; i < got.size(); ++i) EXPECT_EQ(got[i], static_cast<double>(i % 3 + 1)) << i;
  one.download(out);
  got = valuesOf(out);
  for (std::size_t i = 0; i < got.size(); ++i) EXPECT_EQ(got[i], 5.0) << i;
}

TEST_P(GpuMatSetTo, OnAViewChangesOnlyTheView) {
  const int type = makeType(Depth::S32, 2);
  const HostMat h = datest::randomHostMat({6, 7}, type, 14);
  const GpuMat g = uploaded(h);
  GpuMat v = g(Range(1, 5), Range(2, 4));
  Stream stream(device());
  v.setTo(Scalar(-5, 123456), stream);
  stream.waitForCompletion();
  std::vector<std::uint8_t> expected = datest::packedBytes(h);
  for (int r = 1; r < 5; ++r)
    for (int c = 2; c < 4; ++c) {
      const std::int32_t pair[2] = {-5, 123456};
      std::memcpy(expected.data() + (r * 7 + c) * 8, pair, 8);
    }
  EXPECT_TRUE(datest::bytesEqual(expected, downloadPacked(g), 8));
}

// ================================================================== convertTo

class GpuMatConvertTo : public DeviceTest {};

struct Scaling {
  double alpha;
  double beta;
};
const std::vector<Scaling> kScalings = {{1, 0}, {0.5, 3}, {-1.5, 0.75}};

// The first value of `out` that differs from saturate_cast(alpha * src + beta).
testing::AssertionResult matchesConversion(const std::vector<double>& src, Depth dstDepth, Scaling s,
                                           const HostMat& out) {
  const std::vector<double> got = valuesOf(out);
  if (got.size() != src.size())
    return testing::AssertionFailure() << got.size() << " values, expected " << src.size();
  for (std::size_t i = 0; i < src.size(); ++i) {
    const double expected = saturateTo(dstDepth, s.alpha * src[i] + s.beta);
    const testing::AssertionResult same = sameValue(dstDepth, expected, got[i]);
    if (!same)
      return testing::AssertionFailure() << "value " << i << " = " << src[i] << " * " << s.alpha << " + " << s.beta
                                         << ": " << same.message();
  }
  return testing::AssertionSuccess();
}

TEST_P(GpuMatConvertTo, EveryDepthPairWithScalingMatchesSaturateCast) {
  constexpr int kRows = 4, kCols = 24;
  std::uint32_t seed = 1;
  for (Depth from : datest::allDepths()) {
    const std::vector<double> values = sourceValues(from, kRows * kCols, seed++);
    const GpuMat src = uploaded(hostFromValues(kRows, kCols, makeType(from, 1), values));
    for (Depth to : datest::allDepths()) {
      for (const Scaling& s : kScalings) {
        const std::string what = depthName(from) + " -> " + depthName(to) + " alpha " + std::to_string(s.alpha) +
                                 " beta " + std::to_string(s.beta);
        GpuMat dst;
        src.convertTo(dst, makeType(to, 1), s.alpha, s.beta);
        ASSERT_EQ(dst.rows, kRows) << what;
        ASSERT_EQ(dst.cols, kCols) << what;
        ASSERT_EQ(dst.type(), makeType(to, 1)) << what;
        ASSERT_EQ(dst.device(), device()) << what;
        HostMat out;
        dst.download(out);
        EXPECT_TRUE(matchesConversion(values, to, s, out)) << what;  // one report per failing pair
      }
    }
  }
}

TEST_P(GpuMatConvertTo, MultiChannelViewsConvertPerChannelIntoExistingDestinationInPlace) {
  const Depth from = Depth::F32;
  const Depth to = Depth::S16;
  const std::vector<double> values = sourceValues(from, 6 * 8 * 3, 77);
  const GpuMat big = uploaded(hostFromValues(6, 8, makeType(from, 3), values));
  const GpuMat srcView = big(Range(1, 5), Range(2, 7));  // 4 x 5 x 3, gapped

  std::vector<double> viewValues;
  for (int r = 1; r < 5; ++r)
    for (int c = 2; c < 7; ++c)
      for (int ch = 0; ch < 3; ++ch) viewValues.push_back(values[static_cast<std::size_t>((r * 8 + c) * 3 + ch)]);

  // Destination: a 4 x 5 view of a larger S16C3 matrix filled with a sentinel.
  GpuMat dstBig(7, 9, makeType(to, 3), device());
  dstBig.setTo(Scalar(-999, -999, -999));
  GpuMat dstView = dstBig(Range(2, 6), Range(1, 6));
  const auto where = addressOf(dstView);
  const Scaling s{-1.5, 0.75};
  srcView.convertTo(dstView, makeType(to, 3), s.alpha, s.beta);
  EXPECT_EQ(addressOf(dstView), where) << "right size and type: written in place";
  HostMat out;
  dstView.download(out);
  EXPECT_TRUE(matchesConversion(viewValues, to, s, out)) << "F32C3 view -> S16C3 view";

  HostMat whole;
  dstBig.download(whole);
  const std::vector<double> all = valuesOf(whole);
  for (int r = 0; r < 7; ++r)
    for (int c = 0; c < 9; ++c) {
      if (r >= 2 && r < 6 && c >= 1 && c < 6) continue;
      for (int ch = 0; ch < 3; ++ch)
        ASSERT_EQ(all[static_cast<std::size_t>((r * 9 + c) * 3 + ch)], -999) << "outside the view at " << r << "," << c;
    }
}

TEST_P(GpuMatConvertTo, NegativeRtypeKeepsDepthAndDepthOnlyRtypeKeepsChannels) {
  const std::vector<double> values = sourceValues(Depth::U8, 3 * 4 * 3, 78);
  const GpuMat src = uploaded(hostFromValues(3, 4, makeType(Depth::U8, 3), values));
  GpuMat same;
  src.convertTo(same, -1, 0.5, 3);
  EXPECT_EQ(same.type(), makeType(Depth::U8, 3));
  HostMat out;
  same.download(out);
  EXPECT_TRUE(matchesConversion(values, Depth::U8, {0.5, 3}, out)) << "rtype -1";

  GpuMat f;
  src.convertTo(f, static_cast<int>(Depth::F32));  // a bare depth: channels follow the source
  EXPECT_EQ(f.type(), makeType(Depth::F32, 3));
  f.download(out);
  EXPECT_TRUE(matchesConversion(values, Depth::F32, {1, 0}, out)) << "bare depth rtype";

  Stream stream(device());
  GpuMat g;
  src.convertTo(g, makeType(Depth::S32, 3), 2, -1, stream);
  GpuMat h;
  src.convertTo(h, makeType(Depth::F16, 3), stream);
  stream.waitForCompletion();
  g.download(out);
  EXPECT_TRUE(matchesConversion(values, Depth::S32, {2, -1}, out)) << "stream with scaling";
  h.download(out);
  EXPECT_TRUE(matchesConversion(values, Depth::F16, {1, 0}, out)) << "stream without scaling";
}

TEST_P(GpuMatConvertTo, BadRtypeIsInvalidArgumentAndLeavesDestinationUnchanged) {
  const GpuMat src(3, 4, makeType(Depth::U8, 3), device());
  const HostMat h = datest::randomHostMat({2, 2}, makeType(Depth::F32, 1), 79);
  GpuMat dst = uploaded(h);
  const auto where = addressOf(dst);
  datest::expectError(ErrorCode::InvalidArgument, [&] { src.convertTo(dst, makeType(Depth::F32, 2)); },
                      "2-channel rtype for a 3-channel source");
  datest::expectError(ErrorCode::InvalidArgument, [&] { src.convertTo(dst, 1 << 20); }, "stray bits");
  datest::expectError(ErrorCode::InvalidArgument, [&] { src.convertTo(dst, 4096); }, "past the type mask");
  EXPECT_EQ(addressOf(dst), where);
  EXPECT_EQ(dst.rows, 2);
  EXPECT_EQ(dst.type(), makeType(Depth::F32, 1));
  EXPECT_TRUE(datest::bytesEqual(datest::packedBytes(h), downloadPacked(dst), 4));
}

// ===================================================================== errors

class GpuMatErrors : public DeviceTest {};

TEST_P(GpuMatErrors, BadSizesTypesAndOverflowThrow) {
  const int t = makeType(Depth::U8, 1);
  datest::expectError(ErrorCode::InvalidArgument, [&] { GpuMat(0, 5, t, device()); }, "zero rows");
  datest::expectError(ErrorCode::InvalidArgument, [&] { GpuMat(5, 0, t, device()); }, "zero cols");
  datest::expectError(ErrorCode::InvalidArgument, [&] { GpuMat(-1, 5, t, device()); }, "negative rows");
  datest::expectError(ErrorCode::InvalidArgument, [&] { GpuMat(2, 2, -1, device()); }, "negative type");
  datest::expectError(ErrorCode::InvalidArgument, [&] { GpuMat(2, 2, 1 << 20, device()); }, "stray bits");
  datest::expectError(ErrorCode::OutOfRange, [&] { GpuMat(1 << 30, 1 << 30, makeType(Depth::F64, 512), device()); },
                      "2^72 bytes");
  datest::expectError(ErrorCode::InvalidArgument, [&] { GpuMat(2, 2, t, static_cast<void*>(nullptr), 2); },
                      "null external pointer");
  datest::expectError(ErrorCode::InvalidArgument, [&] { GpuMat(2, 2, t, OpenCLBufferPtr{}, device(), 2); },
                      "null cl_mem");
}

TEST_P(GpuMatErrors, BadRangesAreOutOfRangeAndLeaveTheMatrixUnchanged) {
  const GpuMat g(4, 5, makeType(Depth::F32, 1), device());
  const auto where = addressOf(g);
  datest::expectError(ErrorCode::OutOfRange, [&] { (void)g(Range(0, 5), Range::all()); }, "rows past the end");
  datest::expectError(ErrorCode::OutOfRange, [&] { (void)g(Range::all(), Range(-1, 3)); }, "negative start");
  datest::expectError(ErrorCode::OutOfRange, [&] { (void)g(Range(3, 1), Range::all()); }, "reversed");
  EXPECT_EQ(addressOf(g), where);
  EXPECT_EQ(g.rows, 4);
  EXPECT_EQ(g.cols, 5);
}

TEST_P(GpuMatErrors, OperationsOnAnEmptyMatrixAreInvalidState) {
  const GpuMat empty;
  GpuMat dst;
  HostMat host;
  datest::expectError(ErrorCode::InvalidState, [&] { empty.copyTo(dst); }, "copyTo");
  datest::expectError(ErrorCode::InvalidState, [&] { (void)empty.clone(); }, "clone");
  datest::expectError(ErrorCode::InvalidState, [&] { empty.download(host); }, "download");
  datest::expectError(ErrorCode::InvalidState, [&] { empty.convertTo(dst, makeType(Depth::F32, 1)); }, "convertTo");
  GpuMat e2;
  datest::expectError(ErrorCode::InvalidState, [&] { e2.setTo(Scalar(1)); }, "setTo");
  EXPECT_TRUE(dst.empty());
  EXPECT_TRUE(host.empty());
}

TEST_P(GpuMatErrors, UploadOfEmptyHostMatIsInvalidArgument) {
  const HostMat h = datest::randomHostMat({2, 3}, makeType(Depth::U8, 1), 80);
  GpuMat g = uploaded(h);
  datest::expectError(ErrorCode::InvalidArgument, [&] { g.upload(HostMat()); });
  HostMat threeD({2, 3, 4}, makeType(Depth::U8, 1));
  datest::expectError(ErrorCode::InvalidArgument, [&] { g.upload(threeD); }, "a 3-D host array into a GpuMat");
  EXPECT_EQ(g.rows, 2);
  EXPECT_TRUE(datest::bytesEqual(datest::packedBytes(h), downloadPacked(g)));
}

DATEST_INSTANTIATE_OVER_DEVICES(GpuMatBasics);
DATEST_INSTANTIATE_OVER_DEVICES(GpuMatViews);
DATEST_INSTANTIATE_OVER_DEVICES(GpuMatCopyTo);
DATEST_INSTANTIATE_OVER_DEVICES(GpuMatSetTo);
DATEST_INSTANTIATE_OVER_DEVICES(GpuMatConvertTo);
DATEST_INSTANTIATE_OVER_DEVICES(GpuMatErrors);

}  // namespace
