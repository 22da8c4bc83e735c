// convert<To, From> / convertInto: every meaningful pair against an independent host
// reference (sRGB exhaustively over all 256 codes, float quantization exactly at and
// around every rounding boundary), NaN points, stream ordering and bad input.
#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <string>
#include <span>
#include <utility>
#include <vector>

#include "backend/conversion_geometry.h"
#include "devicearray/devicearray.hpp"
#include "test_support.hpp"

#if defined(DEVICEARRAY_HAS_OPENCL)
#include <CL/cl.h>
#endif

namespace da = devicearray;
using da::ComputeBackend;
using da::ComputeDevice;
using da::DeviceArray;
using da::ErrorCode;

// Meaningless pairs do not compile: convert<> static_asserts on isConvertible.
static_assert(da::isConvertible<da::PointXYZW, da::PointXYZ>);
static_assert(da::isConvertible<da::PointZ, da::PointXYZW>);
static_assert(da::isConvertible<da::ColorBGR_SRGB, da::ColorRGBAf>);
static_assert(da::isConvertible<da::SNR, da::SNR>);
static_assert(!da::isConvertible<da::PointXYZ, da::PointZ>);
static_assert(!da::isConvertible<da::NormalXYZ, da::PointXYZ>);
static_assert(!da::isConvertible<da::PointXYZ, da::NormalXYZ>);
static_assert(!da::isConvertible<da::SNR, da::PointZ>);
static_assert(!da::isConvertible<da::ColorRGBA, da::PointXYZW>);
static_assert(!da::isConvertible<da::PointXYZW, da::ColorRGBAf>);
static_assert(!da::isConvertible<int, da::PointXYZ>);

namespace {

// ------------------------------------------------- independent host reference --
// IEC 61966-2-1, evaluated in double.
double decodeSrgb(double v) { return v <= 0.04045 ? v / 12.92 : std::pow((v + 0.055) / 1.055, 2.4); }
double encodeSrgb(double l) { return l <= 0.0031308 ? 12.92 * l : 1.055 * std::pow(l, 1.0 / 2.4) - 0.055; }

/// round(255 * v) (half away from zero) of v saturated to [0, 1]; NaN -> 0.
std::uint8_t toByte(double v) {
  if (std::isnan(v)) return 0;
  v = std::min(1.0, std::max(0.0, v));
  return static_cast<std::uint8_t>(std::floor(255.0 * v + 0.5));
}

/// A colour value of any format: channels in r, g, b, a order, in the format's own
/// encoding, plus whether the format is sRGB / float / has alpha.
struct Rgba {
  double c[4];
};

template <class F>
constexpr bool hasAlpha = F::channels == 4;

template <class F>
constexpr bool isSrgb = std::is_same_v<F, da::ColorRGBA_SRGB> || std::is_same_v<F, da::ColorBGRA_SRGB> ||
                        std::is_same_v<F, da::ColorRGB_SRGB> || std::is_same_v<F, da::ColorBGR_SRGB>;

template <class F>
Rgba read(const F& p) {
  Rgba out{{static_cast<double>(p.r), static_cast<double>(p.g), static_cast<double>(p.b), 0}};
  if constexpr (hasAlpha<F>) out.c[3] = static_cast<double>(p.a);
  return out;
}

/// The expected result of converting `src` (format From) to format To.
template <class To, class From>
To reference(const From& src) {
  if constexpr (std::is_same_v<To, From>) return src;
  const Rgba in = read(src);
  constexpr bool fromFloat = std::is_same_v<From, da::ColorRGBAf>;
  constexpr bool toFloat = std::is_same_v<To, da::ColorRGBAf>;
  To out{};
  double v[3];
  for (int i = 0; i < 3; ++i) {
    const double x = in.c[i];
    if constexpr (fromFloat) {  // float linear -> u8 (linear or sRGB)
      const double clamped = std::isnan(x) ? 0.0 : std::min(1.0, std::max(0.0, x));
      v[i] = toByte(isSrgb<To> ? encodeSrgb(clamped) : clamped);
    } else if constexpr (toFloat) {  // u8 -> float linear
      v[i] = static_cast<float>(isSrgb<From> ? decodeSrgb(x / 255.0) : x / 255.0);
    } else if constexpr (isSrgb<From> == isSrgb<To>) {
      v[i] = x;
    } else if constexpr (isSrgb<From>) {
      v[i] = toByte(decodeSrgb(x / 255.0));
    } else {
      v[i] = toByte(encodeSrgb(x / 255.0));
    }
  }
  using V = typename To::ValueType;
  out.r = static_cast<V>(v[0]);
  out.g = static_cast<V>(v[1]);
  out.b = static_cast<V>(v[2]);
  if constexpr (hasAlpha<To>) {
    double a;
    if constexpr (!hasAlpha<From>) a = toFloat ? 1.0 : 255.0;
    else if constexpr (fromFloat && !toFloat) a = toByte(in.c[3]);
    else if constexpr (!fromFloat && toFloat) a = static_cast<float>(in.c[3] / 255.0);
    else a = in.c[3];
    out.a = static_cast<V>(a);
  }
  return out;
}

template <class F>
bool sameBytes(const F& a, const F& b) {
  return std::memcmp(&a, &b, sizeof(F)) == 0;
}

template <class F>
std::string describe(const F& p) {
  std::string s = "(";
  const auto* v = reinterpret_cast<const typename F::ValueType*>(&p);
  for (int i = 0; i < F::channels; ++i) s += (i ? ", " : "") + std::to_string(+v[i]);
  return s + ")";
}

/// Smallest non-negative float x with toByte(f(x)) > k: the reference's own rounding
/// boundary (binary search over the ordered bit patterns of non-negative floats).
float boundary(int k, bool srgb) {
  std::uint32_t lo = 0, hi = 0x3F800000u;
  auto value = [&](std::uint32_t bits) {
    float x;
    std::memcpy(&x, &bits, 4);
    return toByte(srgb ? encodeSrgb(x) : static_cast<double>(x));
  };
  while (lo < hi) {
    const std::uint32_t mid = lo + (hi - lo) / 2;
    if (value(mid) > k) hi = mid;
    else lo = mid + 1;
  }
  float x;
  std::memcpy(&x, &hi, 4);
  return x;
}

/// Inputs for an 8-bit source: 259 elements whose channels each run through all 256
/// codes (in different orders, so channel mix-ups show); 259 is not a multiple of the
/// elements each work item converts, so the ragged end is covered too.
template <class F>
std::vector<F> byteInputs(int count = 259) {
  std::vector<F> v(static_cast<std::size_t>(count));
  for (int i = 0; i < count; ++i) {
    v[i].r = static_cast<std::uint8_t>(i & 255);
    v[i].g = static_cast<std::uint8_t>((i * 7 + 3) & 255);
    v[i].b = static_cast<std::uint8_t>(255 - (i & 255));
    if constexpr (hasAlpha<F>) v[i].a = static_cast<std::uint8_t>((i * 13 + 5) & 255);
  }
  return v;
}

/// Float inputs: every k / 255, both sides of every rounding boundary (linear and sRGB),
/// a dense sweep, and NaN / infinities / out-of-range values.
std::vector<float> floatSamples() {
  std::vector<float> s;
  for (int k = 0; k <= 255; ++k) s.push_back(static_cast<float>(k / 255.0));
  for (int k = 0; k < 255; ++k)
    for (bool srgb : {false, true}) {
      const float b = boundary(k, srgb);
      s.push_back(b);
      s.push_back(std::nextafter(b, 0.0f));
      s.push_back(std::nextafter(std::nextafter(b, 0.0f), 0.0f));
      s.push_back(std::nextafter(b, 2.0f));
    }
  for (int i = 0; i <= 4096; ++i) s.push_back(static_cast<float>(i) / 4096.0f);
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const float inf = std::numeric_limits<float>::infinity();
  for (float x : {nan, -nan, inf, -inf, -0.0f, -1e-30f, -0.5f, 1.0f + 1e-7f, 1.5f, 1e30f, 1e-45f, 1e-38f})
    s.push_back(x);
  return s;
}

std::vector<da::ColorRGBAf> floatInputs() {
  const std::vector<float> s = floatSamples();
  std::vector<da::ColorRGBAf> v(s.size());
  const std::size_t n = s.size();
  for (std::size_t i = 0; i < n; ++i)  // each channel sees every sample, at different positions
    v[i] = {s[i], s[(i + 1) % n], s[(i + 2) % n], s[(i + 3) % n]};
  return v;
}

template <class F>
std::vector<F> colorInputs() {
  if constexpr (std::is_same_v<F, da::ColorRGBAf>) return floatInputs();
  else return byteInputs<F>();
}

class ConvertTest : public testing::TestWithParam<ComputeDevice> {};

/// convert<To, From> of an unorganized array and convertInto an organized view,
/// compared element by element with the reference.
template <class To, class From>
void checkColorPair(const ComputeDevice& device, const da::Stream& stream) {
  SCOPED_TRACE(std::string(da::formatInfo<From>().name) + " -> " + std::string(da::formatInfo<To>().name));
  const std::vector<From> input = colorInputs<From>();
  const auto src = DeviceArray<From>::fromHost(input.data(), input.size(), device);
  const DeviceArray<To> dst = da::convert<To>(src, stream);
  EXPECT_FALSE(dst.isOrganized());
  ASSERT_EQ(dst.size(), input.size());
  const std::vector<To> out = dst.toHost();  // blocking, on another queue: must see the conversion
  int failures = 0;
  for (std::size_t i = 0; i < input.size() && failures < 5; ++i) {
    const To expected = reference<To>(input[i]);
    if (!sameBytes(out[i], expected)) {
      ++failures;
      ADD_FAILURE() << "element " << i << ": input " << describe(input[i]) << " gave " << describe(out[i])
                    << ", expected " << describe(expected);
    }
  }
}

TEST_P(ConvertTest, EveryColourPairMatchesTheReferenceExactly) {
  const ComputeDevice device = GetParam();
  const da::Stream stream(device);
  da::ColorFormats::forEach([&]<class From>() {
    da::ColorFormats::forEach([&]<class To>() { checkColorPair<To, From>(device, stream); });
  });
}

/// `n` elements of format F at `byteOffset` into the bytes of `whole` (wrapped as external
/// memory: a CUDA pointer, or the cl_mem with an offset). `whole` must outlive the view.
template <class F>
DeviceArray<F> viewAt(const da::GpuMatND& whole, std::size_t byteOffset, std::size_t n, const ComputeDevice& device) {
  const int type = da::makeType(F::depth, F::channels);
  const da::GpuMatND::SizeArray size = {static_cast<int>(n)};
  if (device.backend() == ComputeBackend::cuda)
    return DeviceArray<F>::fromGpuMatND(da::GpuMatND(size, type, whole.getDevicePtr() + byteOffset));
  da::OpenCLBufferPtr buffer = whole.getOpenCLBuffer();
  buffer.offset += byteOffset;
  return DeviceArray<F>::fromGpuMatND(da::GpuMatND(size, type, buffer, device));
}

/// convertInto between views at byte offsets into larger buffers: the kernels convert
/// consecutive elements per work-group (in tiles, or element-wise for PointZ, float ->
/// 8-bit and 8-bit conversions below DA_CVT_U8_ITEMS_MAX_ELEMENTS) and pick 16-, 4- or
/// 1-byte global accesses by each side's alignment, so
/// every pair is run over several work-groups with a ragged end, with
/// source and destination at offsets that give each alignment. The bytes around the
/// destination must keep their values.
template <class To, class From, class Reference>
void checkAcrossTilesAndAlignments(const ComputeDevice& device, const da::StreamOrQueue& sq,
                                   const std::vector<From>& input, Reference reference, std::size_t srcOffset,
                                   std::size_t dstOffset) {
  SCOPED_TRACE(std::string(da::formatInfo<From>().name) + " at byte " + std::to_string(srcOffset) + " -> " +
               std::string(da::formatInfo<To>().name) + " at byte " + std::to_string(dstOffset));
  const std::size_t n = input.size();
  constexpr std::size_t kSpare = 64;  // bytes after the views
  std::vector<unsigned char> srcHost(srcOffset + n * sizeof(From) + kSpare, 0x5A);
  std::memcpy(srcHost.data() + srcOffset, input.data(), n * sizeof(From));
  const std::vector<unsigned char> guard(dstOffset + n * sizeof(To) + kSpare, 0xA5);

  const auto bytesType = da::makeType(da::Depth::U8, 1);
  da::GpuMatND srcWhole({static_cast<int>(srcHost.size())}, bytesType, device);
  da::GpuMatND dstWhole({static_cast<int>(guard.size())}, bytesType, device);
  srcWhole.upload(da::HostMat({static_cast<int>(srcHost.size())}, bytesType, srcHost.data()));
  dstWhole.upload(da::HostMat({static_cast<int>(guard.size())}, bytesType, const_cast<unsigned char*>(guard.data())));
  const auto src = viewAt<From>(srcWhole, srcOffset, n, device);
  const auto dst = viewAt<To>(dstWhole, dstOffset, n, device);
  da::convertInto(dst.view(), src, sq);
  // The views wrap the buffers as external memory (allocations of their own), so the
  // download is ordered by waiting for the queue, not by the library's tracking.
  da::synchronizeStream(sq);
  std::vector<unsigned char> out(guard.size());
  da::HostMat outMat({static_cast<int>(out.size())}, bytesType, out.data());
  dstWhole.download(outMat);
  int failures = 0;
  for (std::size_t b = 0; b < dstOffset && failures < 5; ++b)
    if (out[b] != guard[b]) ADD_FAILURE() << "byte " << b << " before the destination changed" << (++failures, "");
  for (std::size_t b = dstOffset + n * sizeof(To); b < out.size() && failures < 5; ++b)
    if (out[b] != guard[b]) ADD_FAILURE() << "byte " << b << " after the destination changed" << (++failures, "");
  for (std::size_t i = 0; i < n && failures < 5; ++i) {
    To got;
    std::memcpy(&got, out.data() + dstOffset + i * sizeof(To), sizeof(To));
    const To expected = reference(input[i]);
    if (!sameBytes(got, expected)) {
      ++failures;
      ADD_FAILURE() << "element " << i << " is " << describe(got) << ", expected " << describe(expected);
    }
  }
}

/// Source / destination byte offsets: 16-byte aligned, 4-byte aligned (also for 3- and
/// 16-byte elements), and, where the element's own alignment allows it, 1-byte aligned.
constexpr std::pair<std::size_t, std::size_t> kFloatOffsets[] = {{0, 0}, {4, 8}, {12, 4}, {16, 36}};
constexpr std::pair<std::size_t, std::size_t> kByteOffsets[] = {{0, 0}, {4, 8}, {1, 3}, {12, 5}, {7, 16}};

template <class F>
constexpr std::span<const std::pair<std::size_t, std::size_t>> offsetsFor() {
  if constexpr (std::is_same_v<typename F::ValueType, float>) return kFloatOffsets;
  else return kByteOffsets;
}

TEST_P(ConvertTest, EveryColourPairIsExactAcrossTilesAndAlignments) {
  const ComputeDevice device = GetParam();
  const da::StreamOrQueue sq = device.sdkStreamOrQueue();
  da::ColorFormats::forEach([&]<class From>() {
    std::vector<From> input;
    if constexpr (std::is_same_v<From, da::ColorRGBAf>) input = floatInputs();  // 6,405 elements
    else input = byteInputs<From>(5 * 1024 + 37);
    da::ColorFormats::forEach([&]<class To>() {
      if constexpr (!std::is_same_v<To, From>)
        for (const auto& [srcOffset, dstOffset] : offsetsFor<From>()) {
          // Float elements must stay 4-byte aligned.
          const std::size_t d = std::is_same_v<typename To::ValueType, float> ? (dstOffset + 3) / 4 * 4 : dstOffset;
          checkAcrossTilesAndAlignments<To>(device, sq, input, [](const From& c) { return reference<To>(c); },
                                            srcOffset, d);
        }
    });
  });
}

// 8-bit -> 8-bit conversions of DA_CVT_U8_ITEMS_MAX_ELEMENTS elements and more take
// the tiled kernel, smaller ones the element-wise kernel that every other colour test
// runs. Just past the switch: a swizzle that drops alpha (16-byte aligned) and an sRGB
// decode that keeps a varying alpha (1-byte aligned), so neither the alpha byte's place
// nor the table's channels can go wrong unseen. Just below it: the decode again, with a
// ragged end of two elements.
TEST_P(ConvertTest, ByteColourConversionsAreExactOnBothSidesOfTheKernelSwitch) {
  const ComputeDevice device = GetParam();
  const da::StreamOrQueue sq = device.sdkStreamOrQueue();
  const int tiled = DA_CVT_U8_ITEMS_MAX_ELEMENTS + 4 * 1024 + 37;
  const int items = DA_CVT_U8_ITEMS_MAX_ELEMENTS - 2;
  const auto decode = [](const da::ColorRGBA_SRGB& c) { return reference<da::ColorBGRA>(c); };
  checkAcrossTilesAndAlignments<da::ColorBGR>(device, sq, byteInputs<da::ColorRGBA>(tiled),
                                              [](const da::ColorRGBA& c) { return reference<da::ColorBGR>(c); }, 0, 0);
  checkAcrossTilesAndAlignments<da::ColorBGRA>(device, sq, byteInputs<da::ColorRGBA_SRGB>(tiled), decode, 1, 3);
  checkAcrossTilesAndAlignments<da::ColorBGRA>(device, sq, byteInputs<da::ColorRGBA_SRGB>(items), decode, 4, 8);
}

TEST_P(ConvertTest, SrgbDecodeAndEncodeAreExactForAll256Codes) {
  // The headline tables, checked on their own so a failure names the code.
  const ComputeDevice device = GetParam();
  std::vector<da::ColorRGB_SRGB> codes(256);
  std::vector<da::ColorRGB> linear(256);
  for (int i = 0; i < 256; ++i) {
    const auto c = static_cast<std::uint8_t>(i);
    codes[i] = {c, c, c};
    linear[i] = {c, c, c};
  }
  const da::StreamOrQueue sq = device.sdkStreamOrQueue();
  const auto decodedU8 = da::convert<da::ColorRGB>(DeviceArray<da::ColorRGB_SRGB>::fromHost(codes.data(), 16, 16, device), sq).toHost();
  const auto decodedF = da::convert<da::ColorRGBAf>(DeviceArray<da::ColorRGB_SRGB>::fromHost(codes.data(), 16, 16, device), sq).toHost();
  const auto encoded = da::convert<da::ColorRGB_SRGB>(DeviceArray<da::ColorRGB>::fromHost(linear.data(), 16, 16, device), sq).toHost();
  for (int i = 0; i < 256; ++i) {
    SCOPED_TRACE("code " + std::to_string(i));
    EXPECT_EQ(decodedU8[i].g, toByte(decodeSrgb(i / 255.0)));
    EXPECT_EQ(decodedF[i].g, static_cast<float>(decodeSrgb(i / 255.0)));
    EXPECT_EQ(decodedF[i].a, 1.0f);
    EXPECT_EQ(encoded[i].g, toByte(encodeSrgb(i / 255.0)));
  }
  // Spot values of the standard: 0 and 255 are fixed points, sRGB 128 is ~21.6% linear.
  EXPECT_EQ(decodedU8[0].r, 0);
  EXPECT_EQ(decodedU8[255].r, 255);
  EXPECT_EQ(decodedU8[128].r, 55);
  EXPECT_NEAR(decodedF[128].r, 0.2158605f, 1e-6f);
  EXPECT_EQ(encoded[55].r, 128);
}

TEST_P(ConvertTest, FloatToSrgbIsCorrectlyRoundedOnADenseSweep) {
  // 2^16 + 1 evenly spaced linear values plus every float in [0, 2^-12): the region
  // where the linear segment of the curve and the steep start of the power law meet.
  const ComputeDevice device = GetParam();
  std::vector<da::ColorRGBAf> in;
  for (int i = 0; i <= 65536; ++i) {
    const float x = static_cast<float>(i) / 65536.0f;
    in.push_back({x, x, x, x});
  }
  for (std::uint32_t bits = 0x39000000u; bits < 0x39800000u; bits += 97) {
    float x;
    std::memcpy(&x, &bits, 4);
    in.push_back({x, x, x, x});
  }
  const auto out =
      da::convert<da::ColorBGRA_SRGB>(DeviceArray<da::ColorRGBAf>::fromHost(in.data(), in.size(), device),
                                      device.sdkStreamOrQueue())
          .toHost();
  int failures = 0;
  for (std::size_t i = 0; i < in.size() && failures < 5; ++i) {
    const std::uint8_t expectedColour = toByte(encodeSrgb(in[i].r));
    const std::uint8_t expectedAlpha = toByte(in[i].a);
    if (out[i].r != expectedColour || out[i].b != expectedColour || out[i].a != expectedAlpha) {
      ++failures;
      ADD_FAILURE() << "x = " << in[i].r << ": got r " << +out[i].r << " a " << +out[i].a << ", expected "
                    << +expectedColour << " / " << +expectedAlpha;
    }
  }
}

/// Whether `device` is a CPU (an OpenCL CPU device such as PoCL's): sweeps that take
/// seconds on a GPU take many minutes there.
bool isCpuDevice(const ComputeDevice& device) {
#if defined(DEVICEARRAY_HAS_OPENCL)
  if (device.backend() == ComputeBackend::opencl) {
    cl_device_type type = 0;
    clGetDeviceInfo(static_cast<cl_device_id>(device.nativeDevice()), CL_DEVICE_TYPE, sizeof type, &type, nullptr);
    return (type & CL_DEVICE_TYPE_CPU) != 0;
  }
#endif
  return false;
}

TEST_P(ConvertTest, FloatToU8IsExactForEveryFloatInTheUnitInterval) {
  // Float -> 8-bit is a lookup by the float's bits (bucket tables built on the host),
  // so every float in [0, 1] is checked through both transfer functions (on a CPU
  // device, every 4,099th). The expected code of x is the number of rounding
  // boundaries at or below it, counted while the floats are walked in increasing
  // order: no transfer function is evaluated per float.
  const ComputeDevice device = GetParam();
  const std::uint32_t stride = isCpuDevice(device) ? 4099 : 1;
  constexpr std::uint32_t kLast = 0x3F800000u;  // 1.0f
  constexpr std::size_t kChunk = std::size_t{1} << 25;
  std::vector<float> srgbSteps, linearSteps;
  for (int k = 0; k < 255; ++k) {
    srgbSteps.push_back(boundary(k, true));
    linearSteps.push_back(boundary(k, false));
  }
  const da::StreamOrQueue sq = device.sdkStreamOrQueue();
  std::vector<da::ColorRGBAf> in;
  std::size_t srgbCode = 0, linearCode = 0;  // boundaries passed so far
  int failures = 0;
  std::uint64_t checked = 0;
  for (std::uint64_t first = 0; first <= kLast && failures == 0; first += kChunk * stride) {
    in.clear();
    for (std::uint64_t bits = first; bits <= kLast && in.size() < kChunk; bits += stride) {
      float x;
      const auto b = static_cast<std::uint32_t>(bits);
      std::memcpy(&x, &b, 4);
      in.push_back({x, x, x, x});
    }
    const auto out =
        da::convert<da::ColorRGBA_SRGB>(DeviceArray<da::ColorRGBAf>::fromHost(in.data(), in.size(), device), sq)
            .toHost();
    for (std::size_t i = 0; i < in.size() && failures < 5; ++i) {
      const float x = in[i].r;
      while (srgbCode < srgbSteps.size() && srgbSteps[srgbCode] <= x) ++srgbCode;
      while (linearCode < linearSteps.size() && linearSteps[linearCode] <= x) ++linearCode;
      if (out[i].r != srgbCode || out[i].g != srgbCode || out[i].b != srgbCode || out[i].a != linearCode) {
        ++failures;
        ADD_FAILURE() << "x = " << x << " (0x" << std::hex << std::bit_cast<std::uint32_t>(x) << std::dec
                      << "): got sRGB " << +out[i].r << " linear " << +out[i].a << ", expected " << srgbCode
                      << " / " << linearCode;
      }
    }
    checked += in.size();
  }
  EXPECT_EQ(srgbCode, 255u);
  EXPECT_EQ(linearCode, 255u);
  EXPECT_EQ(checked, (std::uint64_t{kLast} + stride) / stride);
}

// ------------------------------------------------------------------- points --

std::vector<da::PointXYZ> pointsWithHoles() {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  std::vector<da::PointXYZ> p;
  for (int i = 0; i < 24; ++i) {
    if (i % 5 == 2) p.push_back({nan, nan, nan});
    else p.push_back({0.5f * i - 3.0f, -1.25f * i, 100.0f + i * 0.75f});
  }
  return p;
}

bool sameFloat(float a, float b) { return (std::isnan(a) && std::isnan(b)) || a == b; }

TEST_P(ConvertTest, PointXYZToXYZWAddsWOfOneAndKeepsNaNPoints) {
  const ComputeDevice device = GetParam();
  const auto points = pointsWithHoles();
  const auto xyz = DeviceArray<da::PointXYZ>::fromHost(points.data(), 4, 6, device);
  const da::Stream stream(device);
  const auto xyzw = da::convert<da::PointXYZW>(xyz, stream);
  EXPECT_EQ(xyzw.shape(), (std::vector<int>{4, 6, 4}));
  const auto out = xyzw.toHost();
  for (std::size_t i = 0; i < points.size(); ++i) {
    SCOPED_TRACE(i);
    EXPECT_TRUE(sameFloat(out[i].x, points[i].x));
    EXPECT_TRUE(sameFloat(out[i].y, points[i].y));
    EXPECT_TRUE(sameFloat(out[i].z, points[i].z));
    EXPECT_EQ(out[i].w, 1.0f);
  }
  // And back: bit-identical to the original.
  const auto back = da::convert<da::PointXYZ>(xyzw, stream).toHost();
  EXPECT_EQ(std::memcmp(back.data(), points.data(), points.size() * sizeof(da::PointXYZ)), 0);
}

TEST_P(ConvertTest, PointsToPointZKeepOnlyZ) {
  const ComputeDevice device = GetParam();
  const auto points = pointsWithHoles();
  const auto xyz = DeviceArray<da::PointXYZ>::fromHost(points.data(), points.size(), device);
  const da::StreamOrQueue sq = device.sdkStreamOrQueue();
  const auto z1 = da::convert<da::PointZ>(xyz, sq);
  EXPECT_EQ(z1.shape(), (std::vector<int>{24}));
  const auto z2 = da::convert<da::PointZ>(da::convert<da::PointXYZW>(xyz, sq), sq);
  const auto a = z1.toHost();
  const auto b = z2.toHost();
  for (std::size_t i = 0; i < points.size(); ++i) {
    EXPECT_TRUE(sameFloat(a[i].z, points[i].z)) << i;
    EXPECT_TRUE(sameFloat(b[i].z, points[i].z)) << i;
  }
}

TEST_P(ConvertTest, EveryPointPairIsExactAcrossTilesAndAlignments) {
  const ComputeDevice device = GetParam();
  const da::StreamOrQueue sq = device.sdkStreamOrQueue();
  const float nan = std::numeric_limits<float>::quiet_NaN();
  std::vector<da::PointXYZ> xyz(3 * 1024 + 29);
  std::vector<da::PointXYZW> xyzw(xyz.size());
  for (std::size_t i = 0; i < xyz.size(); ++i) {
    const float f = static_cast<float>(i);
    xyz[i] = i % 7 == 3 ? da::PointXYZ{nan, nan, nan} : da::PointXYZ{f, -0.5f * f, 1000.0f + f};
    xyzw[i] = {xyz[i].x, xyz[i].y, xyz[i].z, 2.0f + f};  // a w that must not leak into the result
  }
  for (const auto& [srcOffset, dstOffset] : kFloatOffsets) {
    checkAcrossTilesAndAlignments<da::PointXYZW>(
        device, sq, xyz, [](const da::PointXYZ& p) { return da::PointXYZW{p.x, p.y, p.z, 1.0f}; }, srcOffset,
        dstOffset);
    checkAcrossTilesAndAlignments<da::PointXYZ>(
        device, sq, xyzw, [](const da::PointXYZW& p) { return da::PointXYZ{p.x, p.y, p.z}; }, srcOffset, dstOffset);
    checkAcrossTilesAndAlignments<da::PointZ>(
        device, sq, xyz, [](const da::PointXYZ& p) { return da::PointZ{p.z}; }, srcOffset, dstOffset);
    checkAcrossTilesAndAlignments<da::PointZ>(
        device, sq, xyzw, [](const da::PointXYZW& p) { return da::PointZ{p.z}; }, srcOffset, dstOffset);
  }
}

TEST_P(ConvertTest, IdentityConversionIsAnIndependentCopy) {
  const ComputeDevice device = GetParam();
  const std::vector<da::SNR> snr = {{1}, {2}, {3}, {4}, {5}, {6}};
  const auto a = DeviceArray<da::SNR>::fromHost(snr.data(), 2, 3, device);
  const auto b = da::convert<da::SNR>(a, device.sdkStreamOrQueue());
  EXPECT_NE(a.devicePointer(), b.devicePointer());
  EXPECT_EQ(b.shape(), (std::vector<int>{2, 3}));
  const auto out = b.toHost();
  for (std::size_t i = 0; i < snr.size(); ++i) EXPECT_EQ(out[i].value, snr[i].value);
}

// ---------------------------------------------------------------- convertInto --

TEST_P(ConvertTest, ConvertIntoWritesAnExistingArrayInPlaceOfItsData) {
  const ComputeDevice device = GetParam();
  const auto in = byteInputs<da::ColorBGRA_SRGB>(256);
  const auto src = DeviceArray<da::ColorBGRA_SRGB>::fromHost(in.data(), 16, 16, device);
  const auto dst = DeviceArray<da::ColorRGB>::allocate(16, 16, device);
  const void* before = dst.devicePointer();
  const da::Stream stream(device);
  da::convertInto(dst.view(), src, stream);
  EXPECT_EQ(dst.devicePointer(), before);
  const auto out = dst.toHost();
  for (int i = 0; i < 256; ++i) EXPECT_TRUE(sameBytes(out[i], reference<da::ColorRGB>(in[i]))) << i;
}

TEST_P(ConvertTest, ConvertIntoTheSameMemorySwizzlesInPlace) {
  const ComputeDevice device = GetParam();
  const auto in = byteInputs<da::ColorRGBA>();
  const auto rgba = DeviceArray<da::ColorRGBA>::fromHost(in.data(), in.size(), device);
  // Same bytes seen as BGRA (same type code U8C4): convert RGBA -> BGRA into it.
  const auto asBgra = DeviceArray<da::ColorBGRA>::fromGpuMatND(rgba.toGpuMatND());
  da::convertInto(asBgra.view(), rgba, device.sdkStreamOrQueue());
  const auto out = asBgra.toHost();
  for (int i = 0; i < 256; ++i) {
    EXPECT_EQ(out[i].r, in[i].r);
    EXPECT_EQ(out[i].b, in[i].b);
    EXPECT_EQ(out[i].a, in[i].a);
  }
}

TEST_P(ConvertTest, ConvertIntoRejectsSizeMismatchOverlapAndOtherBackend) {
  const ComputeDevice device = GetParam();
  const da::StreamOrQueue sq = device.sdkStreamOrQueue();
  const auto src = DeviceArray<da::ColorRGBA>::allocate(4, 4, device);
  const auto wrongShape = DeviceArray<da::ColorBGRA>::allocate(2, 8, device);
  datest::expectError(ErrorCode::InvalidArgument, [&] { da::convertInto(wrongShape.view(), src, sq); });
  const auto wrongCount = DeviceArray<da::ColorBGRA>::allocate(std::size_t{15}, device);
  datest::expectError(ErrorCode::InvalidArgument, [&] { da::convertInto(wrongCount.view(), src, sq); });
  datest::expectError(ErrorCode::InvalidArgument, [&] { da::convertInto(da::DeviceArrayView<da::ColorBGRA>(), src, sq); });

  da::GpuMatND shared({8}, da::makeType(da::Depth::U8, 4), device);
  const auto front = DeviceArray<da::ColorRGBA>::fromGpuMatND(shared({da::Range(0, 4)}));
  const auto middle = DeviceArray<da::ColorBGRA>::fromGpuMatND(shared({da::Range(2, 6)}));
  datest::expectError(ErrorCode::InvalidArgument, [&] { da::convertInto(middle.view(), front, sq); });

  const da::StreamOrQueue other = device.backend() == ComputeBackend::cuda ? da::StreamOrQueue(da::OpenCLCommandQueuePtr{})
                                                                           : da::StreamOrQueue(da::CUDAStreamPtr{});
  datest::expectError(ErrorCode::InvalidArgument, [&] { (void)da::convert<da::ColorBGRA>(src, other); });
  const auto dst = DeviceArray<da::ColorBGRA>::allocate(4, 4, device);
  datest::expectError(ErrorCode::InvalidArgument, [&] { da::convertInto(dst.view(), src, other); });
}

TEST_P(ConvertTest, ConvertOfAnEmptyArrayIsEmpty) {
  EXPECT_TRUE(da::convert<da::ColorRGB>(DeviceArray<da::ColorRGBA>(), GetParam().sdkStreamOrQueue()).isEmpty());
}

TEST_P(ConvertTest, ChainedConversionsOnOneStreamNeedNoHostSync) {
  // Several conversions enqueued back to back on a user stream; only the final blocking
  // toHost() waits. u8 linear -> float -> u8 linear is the identity.
  const ComputeDevice device = GetParam();
  const auto in = byteInputs<da::ColorBGR>(256);
  const da::Stream stream(device);
  const auto src = DeviceArray<da::ColorBGR>::fromHost(in.data(), 8, 32, device);
  const auto f = da::convert<da::ColorRGBAf>(src, stream);
  const auto back = da::convert<da::ColorBGR>(f, stream);
  const auto out = back.toHost();
  EXPECT_EQ(std::memcmp(out.data(), in.data(), in.size() * sizeof(da::ColorBGR)), 0);
  EXPECT_EQ(back.shape(), (std::vector<int>{8, 32, 3}));
}

}  // namespace

DATEST_INSTANTIATE_OVER_DEVICES(ConvertTest);
