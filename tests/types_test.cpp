// Element type codes, Range, Scalar and Error: host-only, no device needed.
// The expected type codes are OpenCV's published CV_* values, written out by hand.
#include <climits>
#include <string>

#include "test_support.hpp"

namespace {

using devicearray::Depth;
using devicearray::Error;
using devicearray::ErrorCode;
using devicearray::Range;
using devicearray::Scalar;

TEST(Types, DepthCodesAreOpenCVs) {
  EXPECT_EQ(static_cast<int>(Depth::U8), 0);   // CV_8U
  EXPECT_EQ(static_cast<int>(Depth::S8), 1);   // CV_8S
  EXPECT_EQ(static_cast<int>(Depth::U16), 2);  // CV_16U
  EXPECT_EQ(static_cast<int>(Depth::S16), 3);  // CV_16S
  EXPECT_EQ(static_cast<int>(Depth::S32), 4);  // CV_32S
  EXPECT_EQ(static_cast<int>(Depth::F32), 5);  // CV_32F
  EXPECT_EQ(static_cast<int>(Depth::F64), 6);  // CV_64F
  EXPECT_EQ(static_cast<int>(Depth::F16), 7);  // CV_16F
}

TEST(Types, MakeTypeMatchesOpenCVTypeCodes) {
  using devicearray::makeType;
  // CV_8UC1 .. CV_16FC4 and CV_MAKETYPE(depth, n) for large n.
  static_assert(makeType(Depth::U8, 1) == 0);
  static_assert(makeType(Depth::U8, 3) == 16);   // CV_8UC3
  static_assert(makeType(Depth::U8, 4) == 24);   // CV_8UC4
  static_assert(makeType(Depth::S16, 2) == 11);  // CV_16SC2
  static_assert(makeType(Depth::F32, 1) == 5);   // CV_32FC1
  static_assert(makeType(Depth::F32, 3) == 21);  // CV_32FC3
  static_assert(makeType(Depth::F64, 4) == 30);  // CV_64FC4
  static_assert(makeType(Depth::F16, 1) == 7);   // CV_16FC1
  static_assert(makeType(Depth::S32, 7) == 52);  // CV_32SC(7) = 4 + 6*8
  static_assert(makeType(Depth::U8, 512) == 4088);
  static_assert(makeType(Depth::F16, 512) == 4095);  // the largest code, CV_MAT_TYPE_MASK
}

TEST(Types, DepthAndChannelsRoundTripForEveryDepthAndChannelCount) {
  for (Depth d : datest::allDepths()) {
    for (int cn : {1, 2, 3, 4, 5, 7, 64, 511, 512}) {
      const int t = devicearray::makeType(d, cn);
      EXPECT_EQ(devicearray::depthOf(t), d) << "type " << t;
      EXPECT_EQ(devicearray::channelsOf(t), cn) << "type " << t;
      EXPECT_TRUE(devicearray::isValidType(t)) << "type " << t;
    }
  }
}

TEST(Types, DepthSizeIsBytesPerChannelValue) {
  static_assert(devicearray::depthSize(Depth::U8) == 1);
  static_assert(devicearray::depthSize(Depth::S8) == 1);
  static_assert(devicearray::depthSize(Depth::U16) == 2);
  static_assert(devicearray::depthSize(Depth::S16) == 2);
  static_assert(devicearray::depthSize(Depth::S32) == 4);
  static_assert(devicearray::depthSize(Depth::F32) == 4);
  static_assert(devicearray::depthSize(Depth::F64) == 8);
  static_assert(devicearray::depthSize(Depth::F16) == 2);
}

TEST(Types, InvalidTypeCodesAreRecognised) {
  EXPECT_FALSE(devicearray::isValidType(-1));
  EXPECT_FALSE(devicearray::isValidType(devicearray::makeType(Depth::U8, 0)));    // 0 channels
  EXPECT_FALSE(devicearray::isValidType(devicearray::makeType(Depth::U8, 513)));  // > CV_CN_MAX
  EXPECT_FALSE(devicearray::isValidType(4096));
  EXPECT_FALSE(devicearray::isValidType(1 << 20 | 5));  // stray flag bits
  EXPECT_TRUE(devicearray::isValidType(0));
  EXPECT_TRUE(devicearray::isValidType(4095));
}

TEST(Types, RangeAllSelectsWholeAxisLikeOpenCV) {
  const Range all = Range::all();
  EXPECT_EQ(all.start, INT_MIN);
  EXPECT_EQ(all.end, INT_MAX);
  EXPECT_TRUE(all.isAll());
  EXPECT_FALSE(Range(0, 5).isAll());
  EXPECT_EQ(Range::all(), Range(INT_MIN, INT_MAX));
}

TEST(Types, RangeSizeAndEmpty) {
  EXPECT_EQ(Range(2, 7).size(), 5);
  EXPECT_FALSE(Range(2, 7).empty());
  EXPECT_EQ(Range(3, 3).size(), 0);
  EXPECT_TRUE(Range(3, 3).empty());
  EXPECT_TRUE(Range(1, 4) == Range(1, 4));
  EXPECT_FALSE(Range(1, 4) == Range(1, 5));
}

TEST(Types, ScalarIsAggregateInitialisableWithZeroDefaults) {
  const Scalar a{1.5, 2.5};
  EXPECT_EQ(a[0], 1.5);
  EXPECT_EQ(a[1], 2.5);
  EXPECT_EQ(a[2], 0.0);
  EXPECT_EQ(a[3], 0.0);
  const Scalar b(1, 2, 3, 4);
  for (int i = 0; i < 4; ++i) EXPECT_EQ(b.val[i], i + 1);
  const Scalar c = Scalar::all(-7);
  for (int i = 0; i < 4; ++i) EXPECT_EQ(c[i], -7);
  constexpr Scalar d{};
  static_assert(d[0] == 0 && d[3] == 0);
  Scalar e;
  e[2] = 9;
  EXPECT_EQ(e.val[2], 9);
}

TEST(Errors, ErrorCarriesCodeAndMessage) {
  const Error e(ErrorCode::OutOfRange, "GpuMatND::operator(): range [3, 9) is outside axis 1 of size 5");
  EXPECT_EQ(e.code(), ErrorCode::OutOfRange);
  EXPECT_EQ(std::string(e.what()), "GpuMatND::operator(): range [3, 9) is outside axis 1 of size 5");
  const std::exception& base = e;
  EXPECT_STREQ(base.what(), e.what());
}

TEST(Errors, EveryErrorCodeHasItsName) {
  EXPECT_STREQ(devicearray::toString(ErrorCode::InvalidArgument), "InvalidArgument");
  EXPECT_STREQ(devicearray::toString(ErrorCode::OutOfRange), "OutOfRange");
  EXPECT_STREQ(devicearray::toString(ErrorCode::OutOfMemory), "OutOfMemory");
  EXPECT_STREQ(devicearray::toString(ErrorCode::Unsupported), "Unsupported");
  EXPECT_STREQ(devicearray::toString(ErrorCode::BackendUnavailable), "BackendUnavailable");
  EXPECT_STREQ(devicearray::toString(ErrorCode::BackendError), "BackendError");
  EXPECT_STREQ(devicearray::toString(ErrorCode::InvalidState), "InvalidState");
}

TEST(Errors, BackendNamesArePrintable) {
  EXPECT_STREQ(devicearray::toString(devicearray::ComputeBackend::cuda), "cuda");
  EXPECT_STREQ(devicearray::toString(devicearray::ComputeBackend::opencl), "opencl");
}

}  // namespace
