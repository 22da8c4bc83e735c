// DeviceArray<Format> / DeviceArrayView<Format>: the layout of docs/data-layout.md
// (worked examples and every format), host round trips, GpuMatND sharing, lifetime, user-memory views
// and input validation, on every device.
#include <gtest/gtest.h>

#include <climits>
#include <cstring>
#include <limits>
#include <type_traits>
#include <vector>

#include "devicearray/devicearray.hpp"
#include "test_support.hpp"

namespace da = devicearray;
using da::ComputeBackend;
using da::ComputeDevice;
using da::DeviceArray;
using da::ErrorCode;

namespace {

/// The stream/queue handle of the other backend than `device`'s.
da::StreamOrQueue otherBackendHandle(const ComputeDevice& device) {
  if (device.backend() == ComputeBackend::cuda) return da::OpenCLCommandQueuePtr{};
  return da::CUDAStreamPtr{};
}

/// `count` elements of Format with deterministic pseudo-random bytes.
template <class Format>
std::vector<Format> randomElements(std::size_t count, std::uint32_t seed) {
  const std::vector<std::uint8_t> bytes = datest::randomBytes(count * sizeof(Format), seed);
  std::vector<Format> out(count);
  std::memcpy(out.data(), bytes.data(), bytes.size());
  return out;
}

template <class Format>
bool sameBytes(const std::vector<Format>& a, const std::vector<Format>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(Format)) == 0;
}

/// Raw bytes of the array as stored on the device, read through its GpuMatND.
template <class Format>
std::vector<unsigned char> rawBytes(const DeviceArray<Format>& array) {
  da::HostMat host;
  array.toGpuMatND().download(host);
  EXPECT_TRUE(host.isContinuous());
  const auto* p = host.data();
  return std::vector<unsigned char>(p, p + array.sizeInBytes());
}

class DeviceArrayTest : public testing::TestWithParam<ComputeDevice> {};

// ----------------------------------------- the worked examples of data-layout.md --

TEST_P(DeviceArrayTest, SeedExamplePointXYZ2x3HasShapeStridesAndInterleavedFlatOrder) {
  const ComputeDevice device = GetParam();
  // Pixel (r, c) = (X, Y, Z) = (100 r + 10 c + 1, ... + 2, ... + 3): every float is distinct.
  std::vector<da::PointXYZ> host;
  for (int r = 0; r < 2; ++r)
    for (int c = 0; c < 3; ++c) {
      const float base = 100.0f * r + 10.0f * c;
      host.push_back({base + 1, base + 2, base + 3});
    }
  const auto array = DeviceArray<da::PointXYZ>::fromHost(host.data(), 2, 3, device);
  EXPECT_EQ(array.shape(), (std::vector<int>{2, 3, 3}));
  EXPECT_EQ(array.strides(), (std::vector<int>{9, 3, 1}));
  EXPECT_EQ(array.stridesInBytes(), (std::vector<int>{36, 12, 4}));
  EXPECT_EQ(array.size(), 6u);
  EXPECT_EQ(array.sizeInBytes(), 72u);
  EXPECT_TRUE(array.isOrganized());
  EXPECT_EQ(array.height(), 2);
  EXPECT_EQ(array.width(), 3);
  EXPECT_EQ(array.backend(), device.backend());

  // The diagram's flat memory: X00 Y00 Z00 X01 Y01 Z01 X02 Y02 Z02 X10 Y10 Z10 ...
  const std::vector<float> expected = {1, 2, 3, 11, 12, 13, 21, 22, 23, 101, 102, 103, 111, 112, 113, 121, 122, 123};
  const std::vector<unsigned char> raw = rawBytes(array);
  ASSERT_EQ(raw.size(), expected.size() * sizeof(float));
  std::vector<float> flat(expected.size());
  std::memcpy(flat.data(), raw.data(), raw.size());
  EXPECT_EQ(flat, expected);
}

TEST_P(DeviceArrayTest, SeedExamplePointZ2x3IsPlainMatrix) {
  const std::vector<da::PointZ> host = {{0.5f}, {1.5f}, {2.5f}, {10.5f}, {11.5f}, {12.5f}};
  const auto array = DeviceArray<da::PointZ>::fromHost(host.data(), 2, 3, GetParam());
  EXPECT_EQ(array.shape(), (std::vector<int>{2, 3}));
  EXPECT_EQ(array.strides(), (std::vector<int>{3, 1}));
  EXPECT_EQ(array.stridesInBytes(), (std::vector<int>{12, 4}));
  const std::vector<unsigned char> raw = rawBytes(array);
  std::vector<float> flat(6);
  std::memcpy(flat.data(), raw.data(), raw.size());
  EXPECT_EQ(flat, (std::vector<float>{0.5f, 1.5f, 2.5f, 10.5f, 11.5f, 12.5f}));
}

TEST_P(DeviceArrayTest, SeedExampleUnorganizedPointXYZAndSNR) {
  const ComputeDevice device = GetParam();
  const std::vector<da::PointXYZ> points = {{1, 2, 3}, {4, 5, 6}, {7, 8, 9}, {10, 11, 12}};
  const auto xyz = DeviceArray<da::PointXYZ>::fromHost(points.data(), points.size(), device);
  EXPECT_EQ(xyz.shape(), (std::vector<int>{4, 3}));
  EXPECT_EQ(xyz.strides(), (std::vector<int>{3, 1}));
  EXPECT_EQ(xyz.stridesInBytes(), (std::vector<int>{12, 4}));
  EXPECT_FALSE(xyz.isOrganized());
  EXPECT_EQ(xyz.height(), 1);  // documented choice: unorganized arrays are 1 x N
  EXPECT_EQ(xyz.width(), 4);
  EXPECT_EQ(xyz.size(), 4u);
  std::vector<float> flat(12);
  const auto raw = rawBytes(xyz);
  std::memcpy(flat.data(), raw.data(), raw.size());
  EXPECT_EQ(flat, (std::vector<float>{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12}));
  EXPECT_EQ(xyz.toGpuMatND().dims, 1);

  const std::vector<da::SNR> snr = {{0.25f}, {1}, {2}, {3}, {4}};
  const auto s = DeviceArray<da::SNR>::fromHost(snr.data(), snr.size(), device);
  EXPECT_EQ(s.shape(), (std::vector<int>{5}));
  EXPECT_EQ(s.strides(), (std::vector<int>{1}));
  EXPECT_EQ(s.stridesInBytes(), (std::vector<int>{4}));
  EXPECT_EQ(s.sizeInBytes(), 20u);
  EXPECT_TRUE(sameBytes(s.toHost(), snr));
}

// ------------------------------------------------------------- every format --

template <class Format>
class DeviceArrayFormatTest : public testing::Test {};
using AllFormatTypes = testing::Types<da::PointXYZ, da::PointXYZW, da::PointZ, da::SNR, da::NormalXYZ, da::ColorRGBA,
                                      da::ColorBGRA, da::ColorRGBA_SRGB, da::ColorBGRA_SRGB, da::ColorRGBAf,
                                      da::ColorRGB, da::ColorBGR, da::ColorRGB_SRGB, da::ColorBGR_SRGB>;
TYPED_TEST_SUITE(DeviceArrayFormatTest, AllFormatTypes);

/// The format catalog of docs/data-layout.md, written out by hand: element type,
/// channels, bytes/element.
template <class F> struct Catalog;
template <> struct Catalog<da::PointXYZ> { using T = float; static constexpr int c = 3, bytes = 12; };
template <> struct Catalog<da::PointXYZW> { using T = float; static constexpr int c = 4, bytes = 16; };
template <> struct Catalog<da::PointZ> { using T = float; static constexpr int c = 1, bytes = 4; };
template <> struct Catalog<da::SNR> { using T = float; static constexpr int c = 1, bytes = 4; };
template <> struct Catalog<da::NormalXYZ> { using T = float; static constexpr int c = 3, bytes = 12; };
template <> struct Catalog<da::ColorRGBA> { using T = std::uint8_t; static constexpr int c = 4, bytes = 4; };
template <> struct Catalog<da::ColorBGRA> { using T = std::uint8_t; static constexpr int c = 4, bytes = 4; };
template <> struct Catalog<da::ColorRGBA_SRGB> { using T = std::uint8_t; static constexpr int c = 4, bytes = 4; };
template <> struct Catalog<da::ColorBGRA_SRGB> { using T = std::uint8_t; static constexpr int c = 4, bytes = 4; };
template <> struct Catalog<da::ColorRGBAf> { using T = float; static constexpr int c = 4, bytes = 16; };
template <> struct Catalog<da::ColorRGB> { using T = std::uint8_t; static constexpr int c = 3, bytes = 3; };
template <> struct Catalog<da::ColorBGR> { using T = std::uint8_t; static constexpr int c = 3, bytes = 3; };
template <> struct Catalog<da::ColorRGB_SRGB> { using T = std::uint8_t; static constexpr int c = 3, bytes = 3; };
template <> struct Catalog<da::ColorBGR_SRGB> { using T = std::uint8_t; static constexpr int c = 3, bytes = 3; };

TYPED_TEST(DeviceArrayFormatTest, TraitsMatchTheSeedCatalog) {
  using F = TypeParam;
  using C = Catalog<F>;
  static_assert(std::is_same_v<typename F::ValueType, typename C::T>);
  static_assert(F::channels == C::c);
  static_assert(sizeof(F) == C::bytes);
  static_assert(std::is_standard_layout_v<F>);
  const da::FormatInfo& info = da::formatInfo<F>();
  EXPECT_EQ(info.channels, C::c);
  EXPECT_EQ(info.bytes, static_cast<std::size_t>(C::bytes));
  EXPECT_EQ(info.depth, (std::is_same_v<typename C::T, float> ? da::Depth::F32 : da::Depth::U8));
  ASSERT_TRUE(da::formatFromName(info.name).has_value());
  EXPECT_EQ(*da::formatFromName(info.name), F::id);
}

TYPED_TEST(DeviceArrayFormatTest, ShapeStridesAndBytesFollowTheSeedRules) {
  using F = TypeParam;
  constexpr int c = Catalog<F>::c;
  constexpr int s = static_cast<int>(sizeof(typename Catalog<F>::T));
  const int h = 3, w = 5;
  const std::size_t n = 7;
  const std::vector<int> orgShape = c > 1 ? std::vector<int>{h, w, c} : std::vector<int>{h, w};
  const std::vector<int> orgStrides = c > 1 ? std::vector<int>{w * c, c, 1} : std::vector<int>{w, 1};
  const std::vector<int> unShape = c > 1 ? std::vector<int>{7, c} : std::vector<int>{7};
  const std::vector<int> unStrides = c > 1 ? std::vector<int>{c, 1} : std::vector<int>{1};
  auto times = [&](std::vector<int> v) {
    for (int& x : v) x *= s;
    return v;
  };
  for (const ComputeDevice& device : datest::testDevices()) {
    SCOPED_TRACE(device.toString());
    const auto org = DeviceArray<F>::allocate(h, w, device);
    EXPECT_EQ(org.shape(), orgShape);
    EXPECT_EQ(org.strides(), orgStrides);
    EXPECT_EQ(org.stridesInBytes(), times(orgStrides));
    EXPECT_EQ(org.size(), static_cast<std::size_t>(h * w));
    EXPECT_EQ(org.sizeInBytes(), static_cast<std::size_t>(h * w * Catalog<F>::bytes));
    EXPECT_EQ(org.toGpuMatND().type(), da::makeType(F::depth, c));
    EXPECT_EQ(org.toGpuMatND().size, (std::vector<int>{h, w}));
    EXPECT_TRUE(org.toGpuMatND().isContinuous());

    const auto un = DeviceArray<F>::allocate(n, device);
    EXPECT_EQ(un.shape(), unShape);
    EXPECT_EQ(un.strides(), unStrides);
    EXPECT_EQ(un.stridesInBytes(), times(unStrides));
    EXPECT_EQ(un.sizeInBytes(), n * Catalog<F>::bytes);
    EXPECT_EQ(un.toGpuMatND().size, (std::vector<int>{7}));

    const auto v = org.view();
    EXPECT_EQ(v.shape(), orgShape);
    EXPECT_EQ(v.strides(), orgStrides);
    EXPECT_EQ(v.stridesInBytes(), times(orgStrides));
    EXPECT_EQ(v.devicePointer(), org.devicePointer());
  }
  const da::ArrayLayout layout = da::organizedLayout(F::id, h, w);
  EXPECT_EQ(layout.shape, orgShape);
  EXPECT_EQ(layout.strides, orgStrides);
  EXPECT_EQ(layout.stridesInBytes, times(orgStrides));
  EXPECT_EQ(da::unorganizedLayout(F::id, n).shape, unShape);
}

TYPED_TEST(DeviceArrayFormatTest, FromHostToHostRoundTripsEveryByte) {
  using F = TypeParam;
  for (const ComputeDevice& device : datest::testDevices()) {
    SCOPED_TRACE(device.toString());
    const auto organized = randomElements<F>(4 * 7, 11);
    EXPECT_TRUE(sameBytes(DeviceArray<F>::fromHost(organized.data(), 4, 7, device).toHost(), organized));
    const auto unorganized = randomElements<F>(13, 12);
    const auto array = DeviceArray<F>::fromHost(unorganized.data(), unorganized.size(), device);
    EXPECT_TRUE(sameBytes(array.toHost(), unorganized));
    EXPECT_TRUE(sameBytes(array.view().toHost(), unorganized));
  }
}

// ---------------------------------------------------------------- transfers --

TEST_P(DeviceArrayTest, CopyToHostOnUserStreamIsReadyAfterSynchronizeStream) {
  const ComputeDevice device = GetParam();
  const auto host = randomElements<da::ColorRGB>(9 * 5, 3);
  const auto array = DeviceArray<da::ColorRGB>::fromHost(host.data(), 9, 5, device);
  da::Stream stream(device);
  std::vector<da::ColorRGB> out(host.size() + 2);  // larger capacity is fine
  const std::vector<da::ColorRGB> sentinel = {{7, 7, 7}, {9, 9, 9}};
  out[host.size()] = sentinel[0];
  out[host.size() + 1] = sentinel[1];
  array.copyToHost(out.data(), out.size() * sizeof(da::ColorRGB), stream);
  da::synchronizeStream(stream);
  EXPECT_EQ(std::memcmp(out.data(), host.data(), host.size() * sizeof(da::ColorRGB)), 0);
  EXPECT_EQ(out[host.size()].r, 7);  // bytes past sizeInBytes() are untouched
  EXPECT_EQ(out[host.size() + 1].b, 9);

  std::vector<da::ColorRGB> viaSdk(host.size());
  array.view().copyToHost(viaSdk.data(), array.sizeInBytes(), device.sdkStreamOrQueue());
  da::synchronizeStream(device.sdkStreamOrQueue());
  EXPECT_TRUE(sameBytes(viaSdk, host));
}

TEST_P(DeviceArrayTest, DevicePointerIsTheGpuMatNDStorage) {
  const ComputeDevice device = GetParam();
  const auto array = DeviceArray<da::PointXYZW>::allocate(2, 2, device);
  const da::GpuMatND mat = array.toGpuMatND();
  if (device.backend() == ComputeBackend::cuda) {
    EXPECT_EQ(array.devicePointer(), static_cast<void*>(mat.getDevicePtr()));
  } else {
    EXPECT_EQ(array.devicePointer(), mat.getOpenCLBuffer().buffer);
    EXPECT_EQ(array.byteOffset(), 0u);  // owning arrays start at offset 0 of their cl_mem
    EXPECT_EQ(array.openCLBuffer().buffer, array.devicePointer());
  }
  EXPECT_NE(array.devicePointer(), nullptr);
  EXPECT_EQ(array.device(), device);
}

// --------------------------------------------------------- GpuMatND sharing --

TEST_P(DeviceArrayTest, ToGpuMatNDSharesMemoryBothWays) {
  const ComputeDevice device = GetParam();
  const auto first = randomElements<da::PointXYZ>(6, 21);
  const auto array = DeviceArray<da::PointXYZ>::fromHost(first.data(), 2, 3, device);
  da::GpuMatND mat = array.toGpuMatND();
  EXPECT_EQ(mat.size, (std::vector<int>{2, 3}));
  EXPECT_EQ(mat.type(), da::makeType(da::Depth::F32, 3));

  // Write through the GpuMatND (same size and type: in place), read through the array.
  auto second = randomElements<da::PointXYZ>(6, 22);
  mat.upload(da::HostMat({2, 3}, mat.type(), second.data()));
  EXPECT_TRUE(sameBytes(array.toHost(), second));

  // Write through the array's view (a conversion into it), read through the GpuMatND.
  const auto third = randomElements<da::PointXYZ>(6, 23);
  const auto source = DeviceArray<da::PointXYZ>::fromHost(third.data(), 2, 3, device);
  da::convertInto(array.view(), source, device.sdkStreamOrQueue());
  da::HostMat back;
  mat.download(back);
  EXPECT_EQ(std::memcmp(back.data(), third.data(), 6 * sizeof(da::PointXYZ)), 0);
}

TEST_P(DeviceArrayTest, FromGpuMatNDSharesMemoryAndOutlivesTheGpuMatND) {
  const ComputeDevice device = GetParam();
  const auto values = randomElements<da::ColorBGRA>(4 * 6, 31);
  DeviceArray<da::ColorBGRA> array;
  {
    da::GpuMatND mat({4, 6}, da::makeType(da::Depth::U8, 4), device);
    mat.upload(da::HostMat({4, 6}, mat.type(), const_cast<da::ColorBGRA*>(values.data())));
    array = DeviceArray<da::ColorBGRA>::fromGpuMatND(mat);
    EXPECT_EQ(array.shape(), (std::vector<int>{4, 6, 4}));
    EXPECT_TRUE(array.isOrganized());
    // Shared, not copied: a write through the GpuMatND shows in the array.
    auto changed = values;
    changed[5] = {1, 2, 3, 4};
    mat.upload(da::HostMat({4, 6}, mat.type(), changed.data()));
    EXPECT_TRUE(sameBytes(array.toHost(), changed));
    mat.upload(da::HostMat({4, 6}, mat.type(), const_cast<da::ColorBGRA*>(values.data())));
  }  // the GpuMatND is gone; the array keeps the memory alive
  EXPECT_TRUE(sameBytes(array.toHost(), values));

  const auto unorganized = DeviceArray<da::ColorBGRA>::fromGpuMatND(
      da::GpuMatND({5}, da::makeType(da::Depth::U8, 4), device));
  EXPECT_FALSE(unorganized.isOrganized());
  EXPECT_EQ(unorganized.shape(), (std::vector<int>{5, 4}));
}

TEST_P(DeviceArrayTest, FromGpuMatNDOfAContinuousSubArrayKeepsItsOffset) {
  const ComputeDevice device = GetParam();
  const auto values = randomElements<da::SNR>(10, 41);
  da::GpuMatND mat({10}, da::makeType(da::Depth::F32, 1), device);
  mat.upload(da::HostMat({10}, mat.type(), const_cast<da::SNR*>(values.data())));
  const auto tail = DeviceArray<da::SNR>::fromGpuMatND(mat({da::Range(4, 10)}));
  EXPECT_EQ(tail.size(), 6u);
  EXPECT_TRUE(sameBytes(tail.toHost(), std::vector<da::SNR>(values.begin() + 4, values.end())));
  if (device.backend() == ComputeBackend::opencl) EXPECT_EQ(tail.byteOffset(), 16u);
}

TEST_P(DeviceArrayTest, FromGpuMatNDRejectsWhatIsNotADeviceArray) {
  const ComputeDevice device = GetParam();
  const da::GpuMatND wrongType({2, 3}, da::makeType(da::Depth::F32, 4), device);
  datest::expectError(ErrorCode::InvalidArgument, [&] { DeviceArray<da::PointXYZ>::fromGpuMatND(wrongType); });
  const da::GpuMatND threeD({2, 3, 4}, da::makeType(da::Depth::F32, 3), device);
  datest::expectError(ErrorCode::InvalidArgument, [&] { DeviceArray<da::PointXYZ>::fromGpuMatND(threeD); });
  const da::GpuMatND big({4, 6}, da::makeType(da::Depth::F32, 3), device);
  const da::GpuMatND columns = big({da::Range::all(), da::Range(1, 3)});
  ASSERT_FALSE(columns.isContinuous());
  datest::expectError(ErrorCode::InvalidArgument, [&] { DeviceArray<da::PointXYZ>::fromGpuMatND(columns); });
  EXPECT_TRUE(DeviceArray<da::PointXYZ>::fromGpuMatND(da::GpuMatND()).isEmpty());
}

TEST_P(DeviceArrayTest, FromGpuMatNDChecksTheStepsAndTheMemoryNotTheFlags) {
  // The header's fields are public (as OpenCV's): flags, sizes and steps edited by hand
  // must not let a DeviceArray reach past its memory or read a strided view as packed.
  const ComputeDevice device = GetParam();
  constexpr int kTypeMask = 0xFFF;
  da::GpuMatND bytes({1000}, da::makeType(da::Depth::U8, 1), device);
  da::GpuMatND claimsColors = bytes;
  claimsColors.flags = (claimsColors.flags & ~kTypeMask) | da::makeType(da::Depth::U8, 4);
  ASSERT_EQ(claimsColors.type(), da::makeType(da::Depth::U8, 4));
  datest::expectError(ErrorCode::InvalidArgument,
                      [&] { DeviceArray<da::ColorRGBA>::fromGpuMatND(claimsColors); }, "steps");

  const da::GpuMatND big({4, 6}, da::makeType(da::Depth::F32, 3), device);
  da::GpuMatND columns = big({da::Range(1, 3), da::Range(2, 5)});
  ASSERT_FALSE(columns.isContinuous());
  columns.flags |= da::GpuMatND::CONTINUOUS_FLAG;
  datest::expectError(ErrorCode::InvalidArgument, [&] { DeviceArray<da::PointXYZ>::fromGpuMatND(columns); }, "steps");

  // Packed steps, but more rows than the memory holds.
  da::GpuMatND tall = big;
  tall.size[0] = 5;
  datest::expectError(ErrorCode::OutOfRange, [&] { DeviceArray<da::PointXYZ>::fromGpuMatND(tall); },
                      "up to 360 of a 288-byte buffer");
  // The untouched header still wraps, and so does one row of it: continuous, whatever
  // its row step.
  EXPECT_EQ(DeviceArray<da::PointXYZ>::fromGpuMatND(big).size(), 24u);
  const da::GpuMatND oneRow = big({da::Range(1, 2), da::Range(0, 4)});
  ASSERT_TRUE(oneRow.isContinuous());
  ASSERT_EQ(oneRow.step[0], 72u);
  EXPECT_EQ(DeviceArray<da::PointXYZ>::fromGpuMatND(oneRow).size(), 4u);
}

// ------------------------------------------------------------------- views --

TEST_P(DeviceArrayTest, DestroyingAViewLeavesTheOwnerIntact) {
  const ComputeDevice device = GetParam();
  const auto values = randomElements<da::NormalXYZ>(12, 51);
  const auto array = DeviceArray<da::NormalXYZ>::fromHost(values.data(), 3, 4, device);
  {
    const auto v = array.view();
    EXPECT_TRUE(v.isValid());
    EXPECT_EQ(v.size(), 12u);
    EXPECT_EQ(v.height(), 3);
    EXPECT_EQ(v.device(), device);
    auto copy = v;  // copies of views are views too
    EXPECT_TRUE(sameBytes(copy.toHost(), values));
  }
  EXPECT_TRUE(sameBytes(array.toHost(), values));
}

TEST_P(DeviceArrayTest, ViewDoesNotKeepItsOwnerAliveAndReportsIt) {
  const ComputeDevice device = GetParam();
  da::DeviceArrayView<da::PointZ> v;
  EXPECT_TRUE(v.isEmpty());
  {
    const auto array = DeviceArray<da::PointZ>::allocate(2, 2, device);
    v = array.view();
    EXPECT_TRUE(v.isValid());
  }
  EXPECT_FALSE(v.isValid());
  EXPECT_FALSE(v.isEmpty());
  datest::expectError(ErrorCode::InvalidState, [&] { (void)v.toHost(); });
}

TEST_P(DeviceArrayTest, CreateDeviceArrayViewWrapsUserMemoryWithoutOwningIt) {
  const ComputeDevice device = GetParam();
  const auto values = randomElements<da::ColorRGBA>(3 * 4, 61);
  da::GpuMatND user({3, 4}, da::makeType(da::Depth::U8, 4), device);
  user.upload(da::HostMat({3, 4}, user.type(), const_cast<da::ColorRGBA*>(values.data())));
  da::DeviceArrayView<da::ColorRGBA> v;
  if (device.backend() == ComputeBackend::cuda)
    v = device.createDeviceArrayView<da::ColorRGBA>(da::CUDADevicePointer{user.getDevicePtr()}, 4, 3,
                                                      device.sdkStreamOrQueue());
  else
    v = device.createDeviceArrayView<da::ColorRGBA>(user.getOpenCLBuffer(), 4, 3, device.sdkStreamOrQueue());
  EXPECT_EQ(v.shape(), (std::vector<int>{3, 4, 4}));
  EXPECT_EQ(v.width(), 4);
  EXPECT_EQ(v.height(), 3);
  EXPECT_TRUE(sameBytes(v.toHost(), values));

  // Write through the view; the user's GpuMatND sees it; dropping the view frees nothing.
  const auto other = randomElements<da::ColorRGBA>(12, 62);
  da::convertInto(v, DeviceArray<da::ColorRGBA>::fromHost(other.data(), 3, 4, device), device.sdkStreamOrQueue());
  v = {};
  da::HostMat back;
  user.download(back);
  EXPECT_EQ(std::memcmp(back.data(), other.data(), 12 * sizeof(da::ColorRGBA)), 0);
}

TEST_P(DeviceArrayTest, CreateDeviceArrayViewRejectsBadArguments) {
  const ComputeDevice device = GetParam();
  const da::StreamOrQueue sq = device.sdkStreamOrQueue();
  if (device.backend() == ComputeBackend::cuda) {
    datest::expectError(ErrorCode::InvalidArgument,
                        [&] { (void)device.createDeviceArrayView<da::PointXYZ>(da::CUDADevicePointer{}, 4, 3, sq); });
    datest::expectError(ErrorCode::InvalidArgument, [&] {
      (void)device.createDeviceArrayView<da::PointXYZ>(da::OpenCLBufferPtr{reinterpret_cast<void*>(0x1000), 0}, 4, 3,
                                                       sq);
    });
  } else {
    datest::expectError(ErrorCode::InvalidArgument,
                        [&] { (void)device.createDeviceArrayView<da::PointXYZ>(da::OpenCLBufferPtr{}, 4, 3, sq); });
    datest::expectError(ErrorCode::InvalidArgument, [&] {
      (void)device.createDeviceArrayView<da::PointXYZ>(da::CUDADevicePointer{reinterpret_cast<void*>(0x1000)}, 4, 3,
                                                       sq);
    });
    const da::GpuMatND user({2, 2}, da::makeType(da::Depth::F32, 3), device);
    datest::expectError(ErrorCode::InvalidArgument, [&] {
      (void)device.createDeviceArrayView<da::PointXYZ>(user.getOpenCLBuffer(), 0, 2, sq);
    });
    datest::expectError(ErrorCode::InvalidArgument, [&] {
      (void)device.createDeviceArrayView<da::PointXYZ>(user.getOpenCLBuffer(), 2, -1, sq);
    });
    datest::expectError(ErrorCode::InvalidArgument, [&] {  // not aligned to the 4-byte floats
      (void)device.createDeviceArrayView<da::PointXYZ>(da::OpenCLBufferPtr{user.getOpenCLBuffer().buffer, 2}, 1, 1,
                                                       sq);
    });
    datest::expectError(ErrorCode::InvalidArgument, [&] {
      (void)device.createDeviceArrayView<da::PointXYZ>(user.getOpenCLBuffer(), 2, 2, otherBackendHandle(device));
    });
  }
}

// ------------------------------------------------------------- bad input --

TEST_P(DeviceArrayTest, AllocateRejectsBadSizesWithTheRightCode) {
  const ComputeDevice device = GetParam();
  using A = DeviceArray<da::PointXYZ>;
  datest::expectError(ErrorCode::InvalidArgument, [&] { (void)A::allocate(-1, 3, device); });
  datest::expectError(ErrorCode::InvalidArgument, [&] { (void)A::allocate(3, 0, device); });
  datest::expectError(ErrorCode::InvalidArgument, [&] { (void)A::allocate(std::size_t{0}, device); });
  // One row of INT_MAX / 4 points is more than INT_MAX bytes: stridesInBytes cannot hold it.
  datest::expectError(ErrorCode::OutOfRange, [&] { (void)A::allocate(1, INT_MAX / 4, device); });
  // Fits size_t (about 2^62 bytes) but no device has that much: OutOfMemory, not a crash.
  datest::expectError(ErrorCode::OutOfMemory, [&] { (void)A::allocate(INT_MAX, INT_MAX / 12, device); });
  datest::expectError(ErrorCode::OutOfRange,
                      [&] { (void)A::allocate(static_cast<std::size_t>(INT_MAX) + 1, device); });
  datest::expectError(ErrorCode::OutOfRange,
                      [&] { (void)A::allocate(std::numeric_limits<std::size_t>::max(), device); });
  datest::expectError(ErrorCode::InvalidArgument, [&] { (void)A::allocate(2, 2, ComputeDevice()); });
}

TEST_P(DeviceArrayTest, FromHostRejectsNullDataAndBadSizes) {
  const ComputeDevice device = GetParam();
  using A = DeviceArray<da::ColorRGB>;
  datest::expectError(ErrorCode::InvalidArgument, [&] { (void)A::fromHost(nullptr, 2, 2, device); });
  datest::expectError(ErrorCode::InvalidArgument, [&] { (void)A::fromHost(nullptr, std::size_t{4}, device); });
  const da::ColorRGB one{1, 2, 3};
  datest::expectError(ErrorCode::InvalidArgument, [&] { (void)A::fromHost(&one, 0, 1, device); });
  datest::expectError(ErrorCode::InvalidArgument, [&] { (void)A::fromHost(&one, std::size_t{0}, device); });
}

TEST_P(DeviceArrayTest, CopyToHostRejectsNullSmallCapacityAndOtherBackend) {
  const ComputeDevice device = GetParam();
  const auto array = DeviceArray<da::PointXYZW>::allocate(std::size_t{5}, device);
  std::vector<da::PointXYZW> out(5);
  const da::StreamOrQueue sq = device.sdkStreamOrQueue();
  datest::expectError(ErrorCode::InvalidArgument, [&] { array.copyToHost(nullptr, array.sizeInBytes(), sq); });
  datest::expectError(ErrorCode::InvalidArgument,
                      [&] { array.copyToHost(out.data(), array.sizeInBytes() - 1, sq); });
  datest::expectError(ErrorCode::InvalidArgument,
                      [&] { array.copyToHost(out.data(), array.sizeInBytes(), otherBackendHandle(device)); });
}

TEST(DeviceArrayEmpty, EmptyArrayReportsNothingAndRefusesDeviceQueries) {
  const DeviceArray<da::PointXYZ> empty;
  EXPECT_TRUE(empty.isEmpty());
  EXPECT_FALSE(empty.isValid());
  EXPECT_FALSE(empty.isOrganized());
  EXPECT_TRUE(empty.shape().empty());
  EXPECT_TRUE(empty.strides().empty());
  EXPECT_EQ(empty.size(), 0u);
  EXPECT_EQ(empty.sizeInBytes(), 0u);
  EXPECT_EQ(empty.height(), 0);
  EXPECT_EQ(empty.width(), 0);
  EXPECT_EQ(empty.devicePointer(), nullptr);
  EXPECT_TRUE(empty.toHost().empty());
  EXPECT_TRUE(empty.toGpuMatND().empty());
  datest::expectError(ErrorCode::InvalidState, [&] { (void)empty.device(); });
  datest::expectError(ErrorCode::InvalidState, [&] { (void)empty.backend(); });
  datest::expectError(ErrorCode::InvalidState, [&] { (void)empty.view(); });
}

TEST(FormatTable, NamesChannelsAndBytesForTheCli) {
  EXPECT_EQ(da::formatInfos().size(), 14u);
  EXPECT_EQ(da::formatFromName("ColorBGRA_SRGB"), da::FormatId::ColorBGRA_SRGB);
  EXPECT_FALSE(da::formatFromName("colorbgra").has_value());
  EXPECT_EQ(da::formatInfo(da::FormatId::ColorRGBAf).bytes, 16u);
  EXPECT_EQ(da::toString(da::FormatId::PointXYZW), "PointXYZW");
  const da::ArrayLayout l = da::organizedLayout(da::FormatId::PointXYZ, 2, 3);
  EXPECT_EQ(l.sizeInBytes, 72u);
  EXPECT_EQ(l.size, 6u);
  datest::expectError(ErrorCode::InvalidArgument, [] { (void)da::organizedLayout(da::FormatId::SNR, 0, 3); });
  datest::expectError(ErrorCode::OutOfRange,
                      [] { (void)da::unorganizedLayout(da::FormatId::SNR, std::size_t{1} << 40); });
}

}  // namespace

DATEST_INSTANTIATE_OVER_DEVICES(DeviceArrayTest);
