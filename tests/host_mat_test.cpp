// HostMat: the N-d host array that upload() takes and download() gives.
// Layout expectations (steps, offsets, continuity) are computed by hand here.
#include <cstdint>
#include <vector>

#include "test_support.hpp"

namespace {

using devicearray::Depth;
using devicearray::ErrorCode;
using devicearray::HostMat;
using devicearray::makeType;
using devicearray::Range;
using devicearray::uchar;

TEST(HostMat, DefaultIsEmpty) {
  HostMat m;
  EXPECT_TRUE(m.empty());
  EXPECT_EQ(m.data(), nullptr);
  EXPECT_EQ(m.dims, 0);
  EXPECT_TRUE(m.size.empty());
  EXPECT_FALSE(m.external());
}

TEST(HostMat, AllocatedArrayHasPackedStepsAndAlignment) {
  const int type = makeType(Depth::F32, 3);
  HostMat m({3, 5, 7}, type);
  ASSERT_FALSE(m.empty());
  EXPECT_EQ(m.dims, 3);
  EXPECT_EQ(m.size, (std::vector<int>{3, 5, 7}));
  EXPECT_EQ(m.type(), type);
  EXPECT_EQ(m.depth(), static_cast<int>(Depth::F32));
  EXPECT_EQ(m.channels(), 3);
  EXPECT_EQ(m.elemSize(), 12u);
  EXPECT_EQ(m.elemSize1(), 4u);
  EXPECT_EQ(m.total(), 105u);
  // Hand-computed row-major steps: 7*12 = 84, 5*84 = 420.
  EXPECT_EQ(m.step, (std::vector<std::size_t>{420, 84, 12}));
  EXPECT_TRUE(m.isContinuous());
  EXPECT_FALSE(m.isSubmatrix());
  EXPECT_FALSE(m.external());
  EXPECT_EQ(reinterpret_cast<std::uintptr_t>(m.data()) % 64, 0u) << "documented as 64-byte aligned";
}

TEST(HostMat, ThirtyTwoAxesAreAllowed) {
  std::vector<int> shape(32, 1);
  shape[5] = 2;
  shape[31] = 3;
  HostMat m(shape, makeType(Depth::U8, 1));
  EXPECT_EQ(m.dims, 32);
  EXPECT_EQ(m.total(), 6u);
  EXPECT_TRUE(m.isContinuous());
}

TEST(HostMat, CopiesShareDataAndCloneIsIndependent) {
  HostMat a = datest::randomHostMat({4, 5}, makeType(Depth::U16, 2), 11);
  HostMat shared = a;
  EXPECT_EQ(shared.data(), a.data());

  HostMat c = a.clone();
  EXPECT_NE(c.data(), a.data());
  EXPECT_TRUE(c.isContinuous());
  EXPECT_EQ(c.size, a.size);
  EXPECT_EQ(c.type(), a.type());
  EXPECT_TRUE(datest::bytesEqual(datest::packedBytes(a), datest::packedBytes(c)));

  const std::vector<std::uint8_t> before = datest::packedBytes(a);
  c.data()[0] ^= 0xFF;
  EXPECT_TRUE(datest::bytesEqual(before, datest::packedBytes(a))) << "writing the clone changed the source";
}

TEST(HostMat, AMovedFromArrayIsEmptyAndTheMoveKeepsTheElements) {
  HostMat a = datest::randomHostMat({4, 5}, makeType(Depth::U16, 2), 12);
  const std::vector<std::uint8_t> bytes = datest::packedBytes(a);
  uchar* const data = a.data();
  HostMat b = std::move(a);
  EXPECT_TRUE(a.empty());  // NOLINT(bugprone-use-after-move): what a moved-from array is, is the point
  EXPECT_EQ(a.data(), nullptr);
  EXPECT_EQ(a.dims, 0);
  EXPECT_TRUE(a.size.empty());
  EXPECT_FALSE(a.external());
  EXPECT_EQ(b.data(), data);
  EXPECT_TRUE(datest::bytesEqual(bytes, datest::packedBytes(b)));
  HostMat c({2}, makeType(Depth::U8, 1));
  c = std::move(b);
  EXPECT_TRUE(b.empty());  // NOLINT(bugprone-use-after-move)
  EXPECT_EQ(c.data(), data);
  EXPECT_EQ(c.size, (std::vector<int>{4, 5}));
  EXPECT_TRUE(datest::bytesEqual(bytes, datest::packedBytes(c)));
  c = std::move(c);  // NOLINT: self-move leaves it as it was
  EXPECT_EQ(c.data(), data);
}

TEST(HostMat, ViewSharesMemoryKeepsStepAndOffsetsByHand) {
  const int type = makeType(Depth::S16, 3);  // elemSize 6
  HostMat m = datest::randomHostMat({5, 7, 4}, type, 21);
  const std::vector<std::uint8_t> packed = datest::packedBytes(m);

  HostMat v = m({Range(1, 4), Range(2, 6), Range::all()});
  EXPECT_EQ(v.size, (std::vector<int>{3, 4, 4}));
  EXPECT_EQ(v.step, m.step) << "views keep the parent's step";
  EXPECT_EQ(v.type(), type);
  EXPECT_EQ(v.data(), m.data() + 1 * m.step[0] + 2 * m.step[1]);
  EXPECT_TRUE(v.isSubmatrix());
  EXPECT_FALSE(v.isContinuous());
  EXPECT_TRUE(datest::bytesEqual(datest::subArrayBytes(packed, m.size, 6, {1, 2, 0}, {3, 4, 4}),
                                 datest::packedBytes(v), 6));

  // Writes through the view land in the parent, at the element the view names.
  v.ptr({0, 0, 0})[0] ^= 0x5A;
  EXPECT_EQ(m.data()[1 * m.step[0] + 2 * m.step[1]], static_cast<std::uint8_t>(packed[1 * 168 + 2 * 24] ^ 0x5A));
}

TEST(HostMat, ViewOfViewComposesOffsets) {
  const int type = makeType(Depth::U8, 1);
  HostMat m = datest::randomHostMat({6, 9}, type, 5);
  const std::vector<std::uint8_t> packed = datest::packedBytes(m);
  HostMat v1 = m({Range(1, 6), Range(2, 9)});
  HostMat v2 = v1({Range(2, 4), Range(Range::all())});
  EXPECT_EQ(v2.size, (std::vector<int>{2, 7}));
  EXPECT_EQ(v2.step, m.step);
  EXPECT_EQ(v2.data(), m.data() + 3 * 9 + 2);
  EXPECT_TRUE(v2.isSubmatrix());
  EXPECT_TRUE(datest::bytesEqual(datest::subArrayBytes(packed, {6, 9}, 1, {3, 2}, {2, 7}), datest::packedBytes(v2)));
}

TEST(HostMat, ContinuityOfViewsFollowsTheBytes) {
  HostMat m({4, 6, 5}, makeType(Depth::F64, 1));
  EXPECT_TRUE(m({Range(1, 3), Range::all(), Range::all()}).isContinuous()) << "leading-axis slice is packed";
  EXPECT_TRUE(m({Range(2, 3), Range(1, 4), Range::all()}).isContinuous()) << "one plane, some whole rows";
  EXPECT_TRUE(m({Range(2, 3), Range(1, 2), Range(0, 3)}).isContinuous()) << "part of one row";
  EXPECT_FALSE(m({Range(1, 3), Range(1, 4), Range::all()}).isContinuous());
  EXPECT_FALSE(m({Range::all(), Range::all(), Range(0, 4)}).isContinuous());
  const HostMat whole = m({Range::all(), Range::all(), Range::all()});
  EXPECT_TRUE(whole.isContinuous());
  EXPECT_FALSE(whole.isSubmatrix()) << "Range::all() on every axis is not a submatrix";
}

TEST(HostMat, ViewKeepsMemoryAliveAfterParentRelease) {
  HostMat m = datest::randomHostMat({5, 6}, makeType(Depth::S32, 1), 8);
  const std::vector<std::uint8_t> packed = datest::packedBytes(m);
  HostMat v = m({Range(1, 3), Range(2, 5)});
  m.release();
  EXPECT_TRUE(m.empty());
  EXPECT_TRUE(datest::bytesEqual(datest::subArrayBytes(packed, {5, 6}, 4, {1, 2}, {2, 3}), datest::packedBytes(v), 4));
}

TEST(HostMat, PtrAddressesElementByIndex) {
  HostMat m({3, 4, 5}, makeType(Depth::U16, 3));
  EXPECT_EQ(m.ptr({0, 0, 0}), m.data());
  EXPECT_EQ(m.ptr({2, 3, 4}), m.data() + 2 * 120 + 3 * 30 + 4 * 6);
  HostMat v = m({Range(1, 3), Range(1, 4), Range(2, 5)});
  EXPECT_EQ(v.ptr({1, 2, 0}), m.ptr({2, 3, 2}));
}

TEST(HostMat, PtrRejectsBadIndices) {
  HostMat m({3, 4}, makeType(Depth::U8, 1));
  datest::expectError(ErrorCode::OutOfRange, [&] { (void)m.ptr({3, 0}); }, "row == rows");
  datest::expectError(ErrorCode::OutOfRange, [&] { (void)m.ptr({0, -1}); }, "negative column");
  datest::expectError(ErrorCode::InvalidArgument, [&] { (void)m.ptr({1}); }, "too few indices");
  datest::expectError(ErrorCode::InvalidArgument, [&] { (void)m.ptr({1, 1, 0}); }, "too many indices");
}

TEST(HostMat, ExternalDataIsViewedNotCopied) {
  std::vector<std::uint8_t> buffer(3 * 16, 0xEE);
  // 3 rows of 5 RGB bytes, rows 16 bytes apart (dims-1 steps, like OpenCV).
  HostMat m({3, 5}, makeType(Depth::U8, 3), buffer.data(), {16});
  EXPECT_TRUE(m.external());
  EXPECT_EQ(m.data(), buffer.data());
  EXPECT_EQ(m.step, (std::vector<std::size_t>{16, 3}));
  EXPECT_FALSE(m.isContinuous());
  m.ptr({2, 4})[2] = 7;
  EXPECT_EQ(buffer[2 * 16 + 4 * 3 + 2], 7);

  HostMat full({3, 5}, makeType(Depth::U8, 3), buffer.data(), {15, 3});  // dims steps, packed
  EXPECT_TRUE(full.isContinuous());
  HostMat packed({3, 5}, makeType(Depth::U8, 3), buffer.data());
  EXPECT_EQ(packed.step, (std::vector<std::size_t>{15, 3}));
  EXPECT_TRUE(packed.isContinuous());
}

TEST(HostMat, ReleaseOfExternalLeavesUserMemoryAlone) {
  std::vector<std::uint8_t> buffer(24, 0x42);
  {
    HostMat m({4, 6}, makeType(Depth::U8, 1), buffer.data());
    m.release();
    EXPECT_TRUE(m.empty());
  }
  for (auto b : buffer) EXPECT_EQ(b, 0x42);
}

TEST(HostMat, CreateReusesOnlyOwnedContinuousMemoryOfSameSizeAndType) {
  const int type = makeType(Depth::F32, 2);
  HostMat m({4, 5}, type);
  uchar* const original = m.data();
  HostMat keep = m;  // holds the old memory so a new allocation must differ
  m.create({4, 5}, type);
  EXPECT_EQ(m.data(), original) << "same size and type: reused";

  m.create({5, 4}, type);
  EXPECT_NE(m.data(), original) << "different size: recreated";
  EXPECT_EQ(m.size, (std::vector<int>{5, 4}));
  EXPECT_TRUE(m.isContinuous());

  HostMat n = keep;
  n.create({4, 5}, makeType(Depth::S32, 2));
  EXPECT_NE(n.data(), original) << "different type: recreated";
  EXPECT_EQ(n.type(), makeType(Depth::S32, 2));
  EXPECT_EQ(keep.data(), original);
}

TEST(HostMat, CreateOnExternalAllocatesItsOwnMemory) {
  std::vector<std::uint8_t> buffer(20, 0x33);
  HostMat m({4, 5}, makeType(Depth::U8, 1), buffer.data());
  m.create({4, 5}, makeType(Depth::U8, 1));
  EXPECT_FALSE(m.external());
  EXPECT_NE(m.data(), buffer.data());
  std::memset(m.data(), 0, 20);
  for (auto b : buffer) EXPECT_EQ(b, 0x33);
}

TEST(HostMat, PinnedArrayIsAUsableContinuousHostMat) {
  HostMat p = HostMat::pinned({3, 7, 5}, makeType(Depth::S16, 4));
  ASSERT_FALSE(p.empty());
  EXPECT_EQ(p.size, (std::vector<int>{3, 7, 5}));
  EXPECT_EQ(p.type(), makeType(Depth::S16, 4));
  EXPECT_EQ(p.step, datest::packedSteps({3, 7, 5}, 8));
  EXPECT_TRUE(p.isContinuous());
  const auto bytes = datest::nonZeroBytes(p.total() * p.elemSize(), 3);
  datest::writePacked(p, bytes);
  EXPECT_TRUE(datest::bytesEqual(bytes, datest::packedBytes(p.clone())));
}

// ------------------------------------------------------------------ errors ----

TEST(HostMatErrors, NonPositiveOrMissingSizesAreInvalidArgument) {
  const int t = makeType(Depth::U8, 1);
  datest::expectError(ErrorCode::InvalidArgument, [&] { HostMat({}, t); }, "no axes");
  datest::expectError(ErrorCode::InvalidArgument, [&] { HostMat({0, 3}, t); }, "zero size");
  datest::expectError(ErrorCode::InvalidArgument, [&] { HostMat({3, -2}, t); }, "negative size");
  datest::expectError(ErrorCode::InvalidArgument, [&] { HostMat(std::vector<int>(33, 1), t); }, "33 axes");
  datest::expectError(ErrorCode::InvalidArgument, [&] { (void)HostMat::pinned({0}, t); }, "pinned zero size");
}

TEST(HostMatErrors, BadTypeCodesAreInvalidArgument) {
  datest::expectError(ErrorCode::InvalidArgument, [] { HostMat({2, 2}, -1); }, "negative type");
  datest::expectError(ErrorCode::InvalidArgument, [] { HostMat({2, 2}, makeType(Depth::U8, 513)); }, "513 ch");
  datest::expectError(ErrorCode::InvalidArgument, [] { HostMat({2, 2}, 1 << 20); }, "stray bits");
}

TEST(HostMatErrors, OverflowingSizesAreOutOfRange) {
  datest::expectError(ErrorCode::OutOfRange, [] { HostMat({1 << 30, 1 << 30, 1 << 30}, makeType(Depth::U8, 1)); });
  datest::expectError(ErrorCode::OutOfRange,
                      [] { HostMat({1 << 30, 1 << 30, 16}, makeType(Depth::F64, 512)); });
}

TEST(HostMatErrors, UnallocatableSizeIsOutOfMemory) {
  // 2^62 bytes fits in size_t (and int64) but no host can provide it.
  datest::expectError(ErrorCode::OutOfMemory, [] { HostMat({1 << 30, 1 << 30, 4}, makeType(Depth::U8, 1)); });
}

TEST(HostMatErrors, ExternalNullOrBadStepsAreInvalidArgument) {
  std::vector<std::uint8_t> buf(1024);
  const int t = makeType(Depth::F32, 1);
  datest::expectError(ErrorCode::InvalidArgument, [&] { HostMat({4, 4}, t, nullptr); }, "null data");
  datest::expectError(ErrorCode::InvalidArgument, [&] { HostMat({4, 4}, t, buf.data(), {8}); }, "row step too small");
  datest::expectError(ErrorCode::InvalidArgument, [&] { HostMat({4, 4}, t, buf.data(), {18}); }, "not a multiple");
  datest::expectError(ErrorCode::InvalidArgument, [&] { HostMat({2, 4, 4}, t, buf.data(), {64}); }, "too few steps");
  datest::expectError(ErrorCode::InvalidArgument, [&] { HostMat({4, 4}, t, buf.data(), {16, 4, 4}); }, "too many");
  datest::expectError(ErrorCode::InvalidArgument, [&] { HostMat({4, 4}, t, buf.data(), {32, 8}); },
                      "last step != elemSize");
}

TEST(HostMatErrors, BadRangesThrowAndLeaveTheArrayUnchanged) {
  HostMat m = datest::randomHostMat({4, 5}, makeType(Depth::U8, 2), 9);
  const auto before = datest::packedBytes(m);
  uchar* const data = m.data();
  datest::expectError(ErrorCode::OutOfRange, [&] { (void)m({Range(0, 5), Range::all()}); }, "past the end");
  datest::expectError(ErrorCode::OutOfRange, [&] { (void)m({Range(-1, 2), Range::all()}); }, "negative start");
  datest::expectError(ErrorCode::OutOfRange, [&] { (void)m({Range(3, 1), Range::all()}); }, "reversed");
  datest::expectError(ErrorCode::InvalidArgument, [&] { (void)m({Range::all()}); }, "too few ranges");
  datest::expectError(ErrorCode::InvalidArgument, [&] { (void)m({Range::all(), Range::all(), Range::all()}); },
                      "too many ranges");
  EXPECT_EQ(m.data(), data);
  EXPECT_EQ(m.size, (std::vector<int>{4, 5}));
  EXPECT_TRUE(datest::bytesEqual(before, datest::packedBytes(m)));
}

TEST(HostMatErrors, FailedCreateLeavesTheArrayUnchanged) {
  HostMat m = datest::randomHostMat({3, 3}, makeType(Depth::U8, 1), 2);
  const auto before = datest::packedBytes(m);
  uchar* const data = m.data();
  datest::expectError(ErrorCode::InvalidArgument, [&] { m.create({3, 0}, makeType(Depth::U8, 1)); });
  datest::expectError(ErrorCode::InvalidArgument, [&] { m.create({3, 3}, -5); });
  datest::expectError(ErrorCode::OutOfRange, [&] { m.create({1 << 30, 1 << 30, 1 << 30}, makeType(Depth::U8, 1)); });
  EXPECT_EQ(m.data(), data);
  EXPECT_EQ(m.size, (std::vector<int>{3, 3}));
  EXPECT_EQ(m.type(), makeType(Depth::U8, 1));
  EXPECT_TRUE(datest::bytesEqual(before, datest::packedBytes(m)));
}

}  // namespace
