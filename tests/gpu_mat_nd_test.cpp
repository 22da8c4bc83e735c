// GpuMatND on every device: transfers, views, layout/flags, create() reuse,
// GpuMat headers, external memory and every documented error.
//
// Expected values come from host references computed here: packed bytes of the
// original host data, sub-arrays extracted by hand, steps and flags computed with
// OpenCV's rules (MAGIC_VAL + type, CONTINUOUS when the bytes are packed,
// SUBMATRIX when some range is neither Range::all() nor the whole axis).
#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "core/array_access.hpp"
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

using Shape = std::vector<int>;
using Steps = std::vector<std::size_t>;

// Shapes of 1..6 axes with sizes from {1, 4, 3, 5, 7, 13}; small enough that PoCL
// runs every depth x channel combination in a few seconds.
const std::vector<Shape>& roundTripShapes() {
  static const std::vector<Shape> shapes = {
      {13}, {1}, {4, 7}, {1, 5}, {3, 1, 5}, {3, 5, 7}, {4, 1, 3, 5}, {1, 3, 4, 1, 5}, {3, 4, 1, 5, 1, 3}};
  return shapes;
}
const std::vector<int> kChannels = {1, 2, 3, 4, 7, 512};

std::string describe(const Shape& shape, int type) {
  std::string s = "shape [";
  for (std::size_t i = 0; i < shape.size(); ++i) s += (i ? "," : "") + std::to_string(shape[i]);
  return s + "] depth " + std::to_string(static_cast<int>(devicearray::depthOf(type))) + " channels " +
         std::to_string(devicearray::channelsOf(type));
}

// Calls fn(shape, type, h) for every depth x channel count x roundTripShapes() shape,
// h being a continuous random host array (seeds firstSeed, firstSeed + 1, ...), under
// a SCOPED_TRACE naming the case. Stops at the first fatal failure, as an ASSERT in
// the loop body would.
template <class Fn>
void forEachRoundTripCase(std::uint32_t firstSeed, Fn&& fn) {
  std::uint32_t seed = firstSeed;
  for (Depth d : datest::allDepths())
    for (int cn : kChannels)
      for (const Shape& shape : roundTripShapes()) {
        const int type = makeType(d, cn);
        SCOPED_TRACE(describe(shape, type));
        fn(shape, type, datest::randomHostMat(shape, type, seed++));
        if (testing::Test::HasFatalFailure()) return;
      }
}

int expectedFlags(int type, bool continuous, bool submatrix) {
  return GpuMatND::MAGIC_VAL + type + (continuous ? GpuMatND::CONTINUOUS_FLAG : 0) +
         (submatrix ? GpuMatND::SUBMATRIX_FLAG : 0);
}

// Packed (no gaps) by hand: every axis longer than 1 steps over exactly the
// elements of the later axes.
bool packedByHand(const Shape& size, const Steps& step, std::size_t elemSize) {
  std::size_t expected = elemSize;
  for (std::size_t i = size.size(); i-- > 0;) {
    if (size[i] > 1 && step[i] != expected) return false;
    expected *= static_cast<std::size_t>(size[i]);
  }
  return true;
}

datest::DeviceAddress advanced(datest::DeviceAddress a, std::size_t bytes, ComputeBackend backend) {
  if (backend == ComputeBackend::cuda)
    a.base = static_cast<const std::uint8_t*>(a.base) + bytes;
  else
    a.offset += bytes;
  return a;
}

class DeviceTest : public datest::DeviceTest {
 protected:
  // A device array holding `h` (allocated on this test's device first, so the
  // upload writes in place rather than on defaultDevice()).
  GpuMatND uploaded(const HostMat& h) const {
    GpuMatND g(h.size, h.type(), device());
    g.upload(h);
    return g;
  }
};

// =================================================================== transfers

class GpuMatNDRoundTrip : public DeviceTest {};

TEST_P(GpuMatNDRoundTrip, UploadThenDownloadReturnsTheSameBytesForEveryDepthChannelsAndShape) {
  forEachRoundTripCase(1, [&](const Shape& shape, int type, const HostMat& h) {
    GpuMatND g(shape, type, device());
    const auto address = datest::addressOf(g);
    g.upload(h);
    EXPECT_EQ(datest::addressOf(g), address) << "upload of the same size and type writes in place";
    HostMat out;
    g.download(out);
    ASSERT_EQ(out.size, shape);
    ASSERT_EQ(out.type(), type);
    ASSERT_TRUE(datest::bytesEqual(datest::packedBytes(h), datest::packedBytes(out), h.elemSize()));
  });
}

TEST_P(GpuMatNDRoundTrip, CloneIsContinuousIndependentAndEqualForEveryDepthChannelsAndShape) {
  forEachRoundTripCase(1000, [&](const Shape& shape, int type, const HostMat& h) {
    const GpuMatND g = uploaded(h);
    const GpuMatND c = g.clone();
    ASSERT_EQ(c.device(), device());
    EXPECT_EQ(c.size, shape);
    EXPECT_EQ(c.type(), type);
    EXPECT_EQ(c.flags, expectedFlags(type, true, false));
    EXPECT_FALSE(c.external());
    EXPECT_FALSE(datest::addressOf(c) == datest::addressOf(g)) << "clone must own new memory";
    ASSERT_TRUE(datest::bytesEqual(datest::packedBytes(h), datest::downloadPacked(c), h.elemSize()));
  });
}

TEST_P(GpuMatNDRoundTrip, StreamUploadDownloadAndCloneRoundTripAfterSynchronize) {
  Stream stream(device());
  forEachRoundTripCase(2000, [&](const Shape& shape, int type, const HostMat& h) {
    GpuMatND g(shape, type, device());
    g.upload(h, stream);
    HostMat out(shape, type);
    g.download(out, stream);
    GpuMatND c = g.clone(stream);
    HostMat outClone(shape, type);
    c.download(outClone, stream);
    devicearray::synchronizeStream(stream);
    ASSERT_TRUE(datest::bytesEqual(datest::packedBytes(h), datest::packedBytes(out), h.elemSize()));
    ASSERT_TRUE(datest::bytesEqual(datest::packedBytes(h), datest::packedBytes(outClone), h.elemSize()));
  });
}

TEST_P(GpuMatNDRoundTrip, BlockingDownloadSeesUploadEnqueuedOnAnotherStream) {
  Stream stream(device());
  const int type = makeType(Depth::F32, 3);
  const HostMat h = datest::randomHostMat({64, 33, 5}, type, 77);
  GpuMatND g({64, 33, 5}, type, device());
  g.upload(h, stream);  // no host synchronisation before the blocking download
  EXPECT_TRUE(datest::bytesEqual(datest::packedBytes(h), datest::downloadPacked(g), 12));
  stream.waitForCompletion();
  EXPECT_TRUE(stream.queryIfComplete());
}

TEST_P(GpuMatNDRoundTrip, UploadFromNonContinuousHostViewPacksItsElements) {
  const int type = makeType(Depth::U16, 3);
  const HostMat big = datest::randomHostMat({7, 9, 8}, type, 5);
  const HostMat view = big({Range(1, 5), Range(2, 7), Range(3, 8)});
  ASSERT_FALSE(view.isContinuous());
  GpuMatND g({4, 5, 5}, type, device());
  g.upload(view);
  EXPECT_TRUE(g.isContinuous());
  EXPECT_TRUE(datest::bytesEqual(datest::packedBytes(view), datest::downloadPacked(g), 6));

  Stream stream(device());
  GpuMatND g2({4, 5, 5}, type, device());
  g2.upload(view, stream);
  stream.waitForCompletion();
  EXPECT_TRUE(datest::bytesEqual(datest::packedBytes(view), datest::downloadPacked(g2), 6));
}

TEST_P(GpuMatNDRoundTrip, UploadOfDifferentSizeOrTypeRecreatesOnTheSameDevice) {
  GpuMatND g({2, 2}, makeType(Depth::U8, 1), device());
  const HostMat h = datest::randomHostMat({3, 4, 5}, makeType(Depth::F32, 2), 6);
  g.upload(h);
  EXPECT_EQ(g.size, (Shape{3, 4, 5}));
  EXPECT_EQ(g.type(), makeType(Depth::F32, 2));
  EXPECT_EQ(g.device(), device());
  EXPECT_TRUE(g.isContinuous());
  EXPECT_TRUE(datest::bytesEqual(datest::packedBytes(h), datest::downloadPacked(g), 8));
}

TEST_P(GpuMatNDRoundTrip, StreamUploadAndDownloadOfAnotherShapeReplaceTheDestinationAndSparePreviousHandles) {
  Stream stream(device());
  const Shape shape{4, 6, 3};
  const int type = makeType(Depth::U16, 2);
  const HostMat h = datest::randomHostMat(shape, type, 21);
  const HostMat small = datest::randomHostMat({2, 2}, makeType(Depth::U8, 1), 22);
  GpuMatND g({2, 2}, makeType(Depth::U8, 1), device());
  g.upload(small);
  const GpuMatND previous = g;  // another handle to the memory upload replaces
  g.upload(h, stream);
  HostMat empty;
  HostMat wrong({1}, makeType(Depth::F64, 1));
  const HostMat wrongAlias = wrong;
  g.download(empty, stream);
  g.download(wrong, stream);
  stream.waitForCompletion();
  EXPECT_EQ(g.size, shape);
  EXPECT_EQ(g.type(), type);
  EXPECT_EQ(g.device(), device());
  EXPECT_TRUE(datest::bytesEqual(datest::packedBytes(h), datest::downloadPacked(g), 4));
  EXPECT_TRUE(datest::bytesEqual(datest::packedBytes(small), datest::downloadPacked(previous)));
  for (const HostMat* out : {&empty, &wrong}) {
    EXPECT_EQ(out->size, shape);
    EXPECT_EQ(out->type(), type);
    EXPECT_TRUE(datest::bytesEqual(datest::packedBytes(h), datest::packedBytes(*out), 4));
  }
  EXPECT_EQ(wrongAlias.size, (Shape{1})) << "another handle of the replaced HostMat keeps its memory";
}

TEST_P(GpuMatNDRoundTrip, DownloadIntoNonContinuousHostViewWritesInPlaceAndNothingElse) {
  constexpr std::uint8_t kSentinel = 0xA5;
  for (int type : {makeType(Depth::U8, 1), makeType(Depth::S16, 3), makeType(Depth::F64, 2)}) {
    SCOPED_TRACE(describe({3, 5, 4}, type));
    const HostMat h = datest::randomHostMat({3, 5, 4}, type, 9);
    const GpuMatND g = uploaded(h);

    HostMat big({6, 9, 7}, type);
    std::memset(big.data(), kSentinel, big.total() * big.elemSize());
    HostMat view = big({Range(1, 4), Range(2, 7), Range(1, 5)});
    ASSERT_FALSE(view.isContinuous());
    uchar* const where = view.data();
    g.download(view);
    EXPECT_EQ(view.data(), where) << "right size and type: written in place";
    EXPECT_EQ(view.step, big.step);
    EXPECT_TRUE(datest::bytesEqual(datest::packedBytes(h), datest::packedBytes(view), h.elemSize()));

    // Every byte of `big` outside the view is still the sentinel.
    const std::size_t es = big.elemSize();
    std::size_t touched = 0;
    datest::forEachIndex(big.size, [&](const std::vector<int>& idx) {
      const bool inside = idx[0] >= 1 && idx[0] < 4 && idx[1] >= 2 && idx[1] < 7 && idx[2] >= 1 && idx[2] < 5;
      if (inside) return;
      const std::uint8_t* p = big.data() + datest::byteOffset(idx, big.step);
      for (std::size_t b = 0; b < es; ++b) touched += p[b] != kSentinel;
    });
    EXPECT_EQ(touched, 0u) << "bytes outside the destination view were overwritten";
  }
}

TEST_P(GpuMatNDRoundTrip, StreamDownloadIntoNonContinuousHostViewFromDeviceView) {
  constexpr std::uint8_t kSentinel = 0x3C;
  const int type = makeType(Depth::F32, 1);
  const HostMat h = datest::randomHostMat({8, 9, 10}, type, 10);
  const GpuMatND g = uploaded(h);
  const GpuMatND gv = g({Range(2, 5), Range(1, 8), Range(3, 7)});  // {3,7,4}, gaps on the device too
  HostMat big({5, 9, 6}, type);
  std::memset(big.data(), kSentinel, big.total() * big.elemSize());
  HostMat view = big({Range(1, 4), Range(1, 8), Range(1, 5)});
  Stream stream(device());
  gv.download(view, stream);
  stream.waitForCompletion();
  EXPECT_TRUE(datest::bytesEqual(datest::subArrayBytes(datest::packedBytes(h), h.size, 4, {2, 1, 3}, {3, 7, 4}),
                                 datest::packedBytes(view), 4));
  std::size_t touched = 0;
  datest::forEachIndex(big.size, [&](const std::vector<int>& idx) {
    const bool inside = idx[0] >= 1 && idx[0] < 4 && idx[1] >= 1 && idx[1] < 8 && idx[2] >= 1 && idx[2] < 5;
    if (inside) return;
    const std::uint8_t* p = big.data() + datest::byteOffset(idx, big.step);
    for (int b = 0; b < 4; ++b) touched += p[b] != kSentinel;
  });
  EXPECT_EQ(touched, 0u);
}

TEST_P(GpuMatNDRoundTrip, DownloadIntoWrongSizeOrTypeRecreatesTheHostMat) {
  const HostMat h = datest::randomHostMat({3, 5}, makeType(Depth::F32, 2), 12);
  const GpuMatND g = uploaded(h);

  HostMat wrongSize({2, 2}, makeType(Depth::F32, 2));
  g.download(wrongSize);
  EXPECT_EQ(wrongSize.size, (Shape{3, 5}));
  EXPECT_EQ(wrongSize.type(), makeType(Depth::F32, 2));
  EXPECT_TRUE(wrongSize.isContinuous());
  EXPECT_TRUE(datest::bytesEqual(datest::packedBytes(h), datest::packedBytes(wrongSize), 8));

  HostMat wrongType({3, 5}, makeType(Depth::S32, 2));
  g.download(wrongType);
  EXPECT_EQ(wrongType.type(), makeType(Depth::F32, 2));
  EXPECT_TRUE(datest::bytesEqual(datest::packedBytes(h), datest::packedBytes(wrongType), 8));

  // A wrong-size view is recreated, not written through: its parent keeps its bytes.
  HostMat parent({6, 6}, makeType(Depth::F32, 2));
  std::memset(parent.data(), 0x77, parent.total() * parent.elemSize());
  HostMat view = parent({Range(0, 2), Range(0, 2)});
  g.download(view);
  EXPECT_EQ(view.size, (Shape{3, 5}));
  EXPECT_TRUE(datest::bytesEqual(datest::packedBytes(h), datest::packedBytes(view), 8));
  for (std::size_t i = 0; i < parent.total() * parent.elemSize(); ++i)
    ASSERT_EQ(parent.data()[i], 0x77) << "byte " << i << " of the old view's parent changed";
}

TEST_P(GpuMatNDRoundTrip, PinnedHostMatsRoundTrip) {
  const int type = makeType(Depth::S32, 4);
  HostMat src = HostMat::pinned({5, 7, 3}, type);
  datest::writePacked(src, datest::nonZeroBytes(src.total() * src.elemSize(), 13));
  const GpuMatND g = uploaded(src);
  HostMat dst = HostMat::pinned({5, 7, 3}, type);
  Stream stream(device());
  g.download(dst, stream);
  stream.waitForCompletion();
  EXPECT_TRUE(datest::bytesEqual(datest::packedBytes(src), datest::packedBytes(dst), 16));
}

// ======================================================================= views

class GpuMatNDViews : public DeviceTest {};

struct ViewPick {
  std::vector<Range> ranges;  // as passed to operator()
  std::vector<int> start;     // resolved, relative to the array it is applied to
  Shape size;
  bool proper = false;  // some range is neither all() nor the whole axis
};

ViewPick pickRanges(const Shape& shape, std::mt19937& rng) {
  ViewPick p;
  for (int n : shape) {
    const unsigned kind = rng() % 4;
    if (kind == 0) {
      p.ranges.push_back(Range::all());
      p.start.push_back(0);
      p.size.push_back(n);
    } else if (kind == 1) {
      p.ranges.emplace_back(0, n);
      p.start.push_back(0);
      p.size.push_back(n);
    } else {
      const int a = static_cast<int>(rng() % static_cast<unsigned>(n));
      const int b = a + 1 + static_cast<int>(rng() % static_cast<unsigned>(n - a));
      p.ranges.emplace_back(a, b);
      p.start.push_back(a);
      p.size.push_back(b - a);
      p.proper = p.proper || !(a == 0 && b == n);
    }
  }
  return p;
}

TEST_P(GpuMatNDViews, ViewsAndViewsOfViewsMatchHostReferenceElementByElement) {
  std::mt19937 rng(42);
  const std::vector<int> types = {makeType(Depth::U8, 1), makeType(Depth::S16, 3), makeType(Depth::F64, 2),
                                  makeType(Depth::F16, 7)};
  const std::vector<Shape> shapes = {{13}, {7, 13}, {5, 4, 7}, {3, 5, 4, 3}, {4, 3, 1, 5, 3}, {3, 4, 3, 1, 5, 3}};
  for (int type : types) {
    for (const Shape& shape : shapes) {
      for (int trial = 0; trial < 4; ++trial) {
        SCOPED_TRACE(describe(shape, type) + " trial " + std::to_string(trial));
        const HostMat h = datest::randomHostMat(shape, type, rng());
        const std::vector<std::uint8_t> packed = datest::packedBytes(h);
        const std::size_t es = h.elemSize();
        const GpuMatND g = uploaded(h);

        const ViewPick p1 = pickRanges(shape, rng);
        const GpuMatND v1 = g(p1.ranges);
        ASSERT_EQ(v1.size, p1.size);
        EXPECT_EQ(v1.dims, g.dims);
        EXPECT_EQ(v1.step, g.step) << "views keep the parent's step";
        EXPECT_EQ(v1.type(), type);
        EXPECT_EQ(v1.device(), device());
        EXPECT_FALSE(v1.external());
        const bool packed1 = packedByHand(v1.size, v1.step, es);
        EXPECT_EQ(v1.isContinuous(), packed1);
        EXPECT_EQ(v1.isSubmatrix(), p1.proper);
        EXPECT_EQ(v1.flags, expectedFlags(type, packed1, p1.proper));
        EXPECT_EQ(datest::addressOf(v1),
                  advanced(datest::addressOf(g), datest::byteOffset(p1.start, g.step), device().backend()));
        EXPECT_EQ(v1.total(), datest::product(p1.size));
        ASSERT_TRUE(datest::bytesEqual(datest::subArrayBytes(packed, shape, es, p1.start, p1.size),
                                       datest::downloadPacked(v1), es));

        const ViewPick p2 = pickRanges(v1.size, rng);
        const GpuMatND v2 = v1(p2.ranges);
        std::vector<int> absolute(shape.size());
        for (std::size_t i = 0; i < shape.size(); ++i) absolute[i] = p1.start[i] + p2.start[i];
        ASSERT_EQ(v2.size, p2.size);
        EXPECT_EQ(v2.step, g.step);
        const bool packed2 = packedByHand(v2.size, v2.step, es);
        EXPECT_EQ(v2.isContinuous(), packed2);
        EXPECT_EQ(v2.isSubmatrix(), p1.proper || p2.proper) << "a view of a submatrix stays a submatrix";
        EXPECT_EQ(v2.flags, expectedFlags(type, packed2, p1.proper || p2.proper));
        EXPECT_EQ(datest::addressOf(v2),
                  advanced(datest::addressOf(g), datest::byteOffset(absolute, g.step), device().backend()));
        ASSERT_TRUE(datest::bytesEqual(datest::subArrayBytes(packed, shape, es, absolute, p2.size),
                                       datest::downloadPacked(v2), es));
      }
    }
  }
}

TEST_P(GpuMatNDViews, CloneOfSubmatrixIsContinuousAndEqual) {
  const int type = makeType(Depth::S32, 3);
  const HostMat h = datest::randomHostMat({5, 6, 7}, type, 3);
  const GpuMatND g = uploaded(h);
  const GpuMatND v = g({Range(1, 4), Range(2, 5), Range(1, 6)});
  ASSERT_TRUE(v.isSubmatrix());
  ASSERT_FALSE(v.isContinuous());
  for (bool withStream : {false, true}) {
    Stream stream(device());
    const GpuMatND c = withStream ? v.clone(stream) : v.clone();
    if (withStream) stream.waitForCompletion();
    EXPECT_EQ(c.size, (Shape{3, 3, 5}));
    EXPECT_EQ(c.step, datest::packedSteps({3, 3, 5}, 12));
    EXPECT_TRUE(c.isContinuous());
    EXPECT_FALSE(c.isSubmatrix());
    EXPECT_EQ(c.flags, expectedFlags(type, true, false));
    EXPECT_EQ(c.totalMemSize(), 3u * 3 * 5 * 12);
    EXPECT_TRUE(datest::bytesEqual(datest::subArrayBytes(datest::packedBytes(h), h.size, 12, {1, 2, 1}, {3, 3, 5}),
                                   datest::downloadPacked(c), 12));
  }
}

TEST_P(GpuMatNDViews, RangeAllEverywhereIsTheSameArrayNotASubmatrix) {
  const int type = makeType(Depth::U8, 4);
  GpuMatND g({3, 4, 5}, type, device());
  const GpuMatND all = g({Range::all(), Range::all(), Range::all()});
  EXPECT_EQ(all.flags, g.flags);
  EXPECT_FALSE(all.isSubmatrix());
  EXPECT_EQ(datest::addressOf(all), datest::addressOf(g));
  const GpuMatND whole = g({Range(0, 3), Range(0, 4), Range(0, 5)});
  EXPECT_FALSE(whole.isSubmatrix()) << "OpenCV: a range covering the whole axis is not a submatrix";
  EXPECT_EQ(whole.flags, expectedFlags(type, true, false));
}

TEST_P(GpuMatNDViews, LeadingAxisSliceIsAContinuousSubmatrix) {
  const int type = makeType(Depth::F32, 1);
  GpuMatND g({6, 4, 5}, type, device());
  const GpuMatND v = g({Range(2, 4), Range::all(), Range::all()});
  EXPECT_TRUE(v.isContinuous());
  EXPECT_TRUE(v.isSubmatrix());
  EXPECT_EQ(v.flags, expectedFlags(type, true, true));
  const GpuMatND inner = g({Range::all(), Range::all(), Range(1, 3)});
  EXPECT_FALSE(inner.isContinuous());
  EXPECT_EQ(inner.flags, expectedFlags(type, false, true));
}

TEST_P(GpuMatNDViews, SqueezeDropsUnitAxesAndKeepsStepsMemoryAndSubmatrix) {
  const int type = makeType(Depth::U16, 2);
  const HostMat h = datest::randomHostMat({6, 7, 3}, type, 15);
  GpuMatND g = uploaded(h);
  const GpuMatND v = g({Range(2, 3), Range(1, 5), Range::all()});
  const GpuMatND s = devicearray::squeeze(v, {0});
  EXPECT_EQ(s.size, (Shape{4, 3}));
  EXPECT_EQ(s.step, (Steps{v.step[1], v.step[2]}));
  EXPECT_EQ(s.type(), type);
  EXPECT_TRUE(s.isSubmatrix());
  EXPECT_EQ(datest::addressOf(s), datest::addressOf(v));
  g.release();
  EXPECT_TRUE(datest::bytesEqual(datest::subArrayBytes(datest::packedBytes(h), h.size, 4, {2, 1, 0}, {1, 4, 3}),
                                 datest::downloadPacked(s), 4));

  const GpuMatND point = devicearray::squeeze(v({Range::all(), Range(0, 1), Range(2, 3)}), {0, 1, 2});
  EXPECT_EQ(point.size, (Shape{1})) << "a GpuMatND keeps one axis";
  EXPECT_EQ(point.step, (Steps{v.elemSize()}));

  datest::expectError(ErrorCode::InvalidArgument, [&] { (void)devicearray::squeeze(v, {1}); }, "axis of length 4");
  datest::expectError(ErrorCode::InvalidArgument, [&] { (void)devicearray::squeeze(v, {3}); }, "axis out of range");
  datest::expectError(ErrorCode::InvalidArgument, [&] { (void)devicearray::squeeze(v, {0, 0}); }, "axis twice");
  const GpuMatND column = v({Range::all(), Range::all(), Range(1, 2)});
  datest::expectError(ErrorCode::InvalidArgument, [&] { (void)devicearray::squeeze(column, {0, 2}); },
                      "a last axis whose step is not the element size");
  datest::expectError(ErrorCode::InvalidState, [&] { (void)devicearray::squeeze(GpuMatND(), {}); }, "empty");
}

TEST_P(GpuMatNDViews, ViewKeepsMemoryAliveAfterParentRelease) {
  const int type = makeType(Depth::U16, 2);
  const HostMat h = datest::randomHostMat({6, 7, 3}, type, 14);
  GpuMatND g = uploaded(h);
  const GpuMatND v = g({Range(1, 5), Range(2, 6), Range::all()});
  g.release();
  EXPECT_TRUE(g.empty());
  EXPECT_FALSE(v.empty());
  EXPECT_TRUE(datest::bytesEqual(datest::subArrayBytes(datest::packedBytes(h), h.size, 4, {1, 2, 0}, {4, 4, 3}),
                                 datest::downloadPacked(v), 4));
}

TEST_P(GpuMatNDViews, WritesThroughAViewHeaderChangeOnlyThatRegionOfTheParent) {
  const int type = makeType(Depth::U8, 1);
  const HostMat h = datest::randomHostMat({5, 8}, type, 15);
  const GpuMatND g = uploaded(h);
  GpuMat header = g.createGpuMatHeader(std::vector<int>{}, Range(1, 4), Range(2, 6));
  header.setTo(Scalar(0));
  std::vector<std::uint8_t> expected = datest::packedBytes(h);
  for (int r = 1; r < 4; ++r)
    for (int c = 2; c < 6; ++c) expected[static_cast<std::size_t>(r * 8 + c)] = 0;
  EXPECT_TRUE(datest::bytesEqual(expected, datest::downloadPacked(g)));
}

// ============================================================ layout and flags

class GpuMatNDLayout : public DeviceTest {};

TEST_P(GpuMatNDLayout, DefaultConstructedIsEmptyWithZeroFlags) {
  GpuMatND g;
  EXPECT_TRUE(g.empty());
  EXPECT_FALSE(g.external());
  EXPECT_EQ(g.flags, 0);
  EXPECT_EQ(g.dims, 0);
  EXPECT_TRUE(g.size.empty());
  EXPECT_TRUE(g.step.empty());
}

TEST_P(GpuMatNDLayout, AllocatedArrayReportsHandComputedLayout) {
  struct Case {
    Shape shape;
    Depth depth;
    int channels;
    Steps steps;  // by hand
  };
  const std::vector<Case> cases = {
      {{13}, Depth::U8, 1, {1}},
      {{4, 7}, Depth::F32, 3, {84, 12}},
      {{3, 5, 7}, Depth::F64, 2, {560, 112, 16}},
      {{2, 1, 3, 5}, Depth::F16, 4, {120, 120, 40, 8}},
      {{3, 1, 4, 1, 5}, Depth::S16, 7, {280, 280, 70, 70, 14}},
      {{1, 3, 4, 1, 5, 3}, Depth::S32, 512, {368640, 122880, 30720, 30720, 6144, 2048}},
  };
  for (const Case& c : cases) {
    const int type = makeType(c.depth, c.channels);
    SCOPED_TRACE(describe(c.shape, type));
    const GpuMatND g(c.shape, type, device());
    EXPECT_FALSE(g.empty());
    EXPECT_FALSE(g.external());
    EXPECT_EQ(g.dims, static_cast<int>(c.shape.size()));
    EXPECT_EQ(g.size, c.shape);
    EXPECT_EQ(g.step, c.steps);
    EXPECT_EQ(g.step.back(), g.elemSize());
    EXPECT_EQ(g.type(), type);
    EXPECT_EQ(g.depth(), static_cast<int>(c.depth));
    EXPECT_EQ(g.channels(), c.channels);
    EXPECT_EQ(g.elemSize1(), devicearray::depthSize(c.depth));
    EXPECT_EQ(g.elemSize(), devicearray::depthSize(c.depth) * static_cast<std::size_t>(c.channels));
    EXPECT_EQ(g.total(), datest::product(c.shape));
    EXPECT_EQ(g.totalMemSize(), datest::product(c.shape) * g.elemSize());
    EXPECT_EQ(g.totalMemSize(), static_cast<std::size_t>(c.shape[0]) * c.steps[0]);
    EXPECT_TRUE(g.isContinuous());
    EXPECT_FALSE(g.isSubmatrix());
    EXPECT_EQ(g.flags, expectedFlags(type, true, false));
    EXPECT_EQ(g.device(), device());
    EXPECT_EQ(g.backend(), device().backend());
  }
}

TEST_P(GpuMatNDLayout, CopiesShareMemory) {
  GpuMatND a({4, 5}, makeType(Depth::U8, 1), device());
  const GpuMatND b = a;  // NOLINT(performance-unnecessary-copy-initialization)
  EXPECT_EQ(datest::addressOf(a), datest::addressOf(b));
  GpuMatND moved = std::move(a);
  EXPECT_EQ(datest::addressOf(moved), datest::addressOf(b));
}

TEST_P(GpuMatNDLayout, ReleaseEmptiesAndZeroesTheHeader) {
  GpuMatND g({3, 4}, makeType(Depth::F32, 1), device());
  g.release();
  EXPECT_TRUE(g.empty());
  EXPECT_EQ(g.flags, 0);
  EXPECT_EQ(g.dims, 0);
  EXPECT_TRUE(g.size.empty());
  EXPECT_TRUE(g.step.empty());
  g.release();  // twice is fine
  EXPECT_TRUE(g.empty());
}

TEST_P(GpuMatNDLayout, SwapExchangesEverything) {
  const HostMat ha = datest::randomHostMat({3, 4}, makeType(Depth::U8, 1), 16);
  const HostMat hb = datest::randomHostMat({2, 5, 3}, makeType(Depth::F32, 2), 17);
  GpuMatND a = uploaded(ha);
  GpuMatND b = uploaded(hb);
  const auto addrA = datest::addressOf(a);
  const auto addrB = datest::addressOf(b);
  a.swap(b);
  EXPECT_EQ(a.size, (Shape{2, 5, 3}));
  EXPECT_EQ(b.size, (Shape{3, 4}));
  EXPECT_EQ(a.type(), makeType(Depth::F32, 2));
  EXPECT_EQ(b.type(), makeType(Depth::U8, 1));
  EXPECT_EQ(datest::addressOf(a), addrB);
  EXPECT_EQ(datest::addressOf(b), addrA);
  EXPECT_TRUE(datest::bytesEqual(datest::packedBytes(hb), datest::downloadPacked(a)));
  swap(a, b);  // the free function
  EXPECT_EQ(datest::addressOf(a), addrA);
  GpuMatND empty;
  a.swap(empty);
  EXPECT_TRUE(a.empty());
  EXPECT_EQ(datest::addressOf(empty), addrA);
}

TEST_P(GpuMatNDLayout, CreateReusesMemoryOnlyForSameSizeAndTypeOfOwnedContinuousArray) {
  const int type = makeType(Depth::F32, 2);
  GpuMatND a({4, 5, 3}, type, device());
  const auto original = datest::addressOf(a);
  GpuMatND keep = a;  // holds the old memory, so any new allocation has a new address

  a.create({4, 5, 3}, type);
  EXPECT_EQ(datest::addressOf(a), original) << "same size and type: reused";
  EXPECT_EQ(a.flags, expectedFlags(type, true, false));

  GpuMatND b = keep;
  b.create({4, 5, 2}, type);
  EXPECT_FALSE(datest::addressOf(b) == original) << "different size: new memory";
  EXPECT_EQ(b.size, (Shape{4, 5, 2}));
  EXPECT_EQ(b.device(), device());

  GpuMatND c = keep;
  c.create({4, 5, 3}, makeType(Depth::S32, 2));
  EXPECT_FALSE(datest::addressOf(c) == original) << "different type: new memory";
  EXPECT_EQ(c.type(), makeType(Depth::S32, 2));
  EXPECT_EQ(c.device(), device());

  GpuMatND whole = keep({Range::all(), Range::all(), Range::all()});
  whole.create({4, 5, 3}, type);
  EXPECT_EQ(datest::addressOf(whole), original) << "a whole-array view is neither a submatrix nor gapped";
}

TEST_P(GpuMatNDLayout, CreateOnSubmatrixAllocatesContinuousMemoryAndLeavesParentAlone) {
  const int type = makeType(Depth::U8, 1);
  const HostMat h = datest::randomHostMat({6, 8}, type, 18);
  const GpuMatND parent = uploaded(h);

  for (const std::vector<Range>& ranges : {std::vector<Range>{Range(1, 3), Range::all()},    // continuous submatrix
                                           std::vector<Range>{Range::all(), Range(2, 5)}}) {  // gapped
    GpuMatND v = parent(ranges);
    ASSERT_TRUE(v.isSubmatrix());
    const auto before = datest::addressOf(v);
    const Shape size = v.size;
    v.create(size, type);
    EXPECT_FALSE(datest::addressOf(v) == before);
    EXPECT_FALSE(v.isSubmatrix());
    EXPECT_TRUE(v.isContinuous());
    EXPECT_EQ(v.flags, expectedFlags(type, true, false));
    EXPECT_EQ(v.step, datest::packedSteps(size, 1));
    v.upload(datest::randomHostMat(size, type, 99));
    EXPECT_TRUE(datest::bytesEqual(datest::packedBytes(h), datest::downloadPacked(parent)))
        << "the recreated view still wrote into its old parent";
  }
}

TEST_P(GpuMatNDLayout, CreateOnExternalAllocatesOwnedMemory) {
  const int type = makeType(Depth::S16, 1);
  const HostMat h = datest::randomHostMat({5, 6}, type, 19);
  const GpuMatND owner = uploaded(h);
  GpuMatND ext = isCuda() ? GpuMatND({5, 6}, type, static_cast<void*>(owner.getDevicePtr()))
                          : GpuMatND({5, 6}, type, owner.getOpenCLBuffer(), device());
  ASSERT_TRUE(ext.external());
  ext.create({5, 6}, type);
  EXPECT_FALSE(ext.external());
  EXPECT_FALSE(datest::addressOf(ext) == datest::addressOf(owner));
  EXPECT_EQ(ext.device(), device());
  ext.upload(datest::randomHostMat({5, 6}, type, 98));
  EXPECT_TRUE(datest::bytesEqual(datest::packedBytes(h), datest::downloadPacked(owner)));
}

TEST(GpuMatNDDefaultDevice, SizeTypeConstructorAndCreateOnEmptyUseDefaultDevice) {
  if (datest::testDevices().empty()) GTEST_SKIP() << "no device on this machine";
  const ComputeDevice def = ComputeDevice::defaultDevice();
  GpuMatND a({3, 4}, makeType(Depth::U8, 3));
  EXPECT_EQ(a.device(), def);
  GpuMatND b;
  b.create({2, 7}, makeType(Depth::F32, 1));
  EXPECT_EQ(b.device(), def);
  EXPECT_EQ(b.flags, expectedFlags(makeType(Depth::F32, 1), true, false));
}

// ============================================================= GpuMat headers

class GpuMatNDHeaders : public DeviceTest {};

TEST_P(GpuMatNDHeaders, HeaderOf2DArraySharesMemoryAndIsExternal) {
  const int type = makeType(Depth::U8, 3);
  const HostMat h = datest::randomHostMat({5, 7}, type, 20);
  const GpuMatND g = uploaded(h);
  const long useCount = devicearray::detail::allocationOf(g).use_count();
  {
    const GpuMat header = g.createGpuMatHeader();
    EXPECT_EQ(header.rows, 5);
    EXPECT_EQ(header.cols, 7);
    EXPECT_EQ(header.type(), type);
    EXPECT_EQ(header.step, g.step[0]);
    EXPECT_TRUE(header.isContinuous());
    EXPECT_TRUE(header.external()) << "createGpuMatHeader does not own the memory";
    EXPECT_EQ(header.device(), device());
    EXPECT_EQ(devicearray::detail::allocationOf(g).use_count(), useCount)
        << "the header must not keep the memory alive";
    if (isCuda()) {
      EXPECT_EQ(header.data, g.getDevicePtr());
    } else {
      EXPECT_EQ(header.getOpenCLBuffer().buffer, g.getOpenCLBuffer().buffer);
      EXPECT_EQ(header.getOpenCLBuffer().offset, g.getOpenCLBuffer().offset);
    }
    HostMat out;
    header.download(out);
    EXPECT_EQ(out.size, (Shape{5, 7}));
    EXPECT_TRUE(datest::bytesEqual(datest::packedBytes(h), datest::packedBytes(out), 3));
  }
  EXPECT_EQ(devicearray::detail::allocationOf(g).use_count(), useCount);
}

TEST_P(GpuMatNDHeaders, WritesThroughHeaderLandInTheParent) {
  const int type = makeType(Depth::S16, 2);
  GpuMatND g({4, 6}, type, device());
  GpuMat header = g.createGpuMatHeader();
  header.setTo(Scalar(-7, 300));
  std::vector<std::uint8_t> expected;
  for (int i = 0; i < 24; ++i)
    for (std::int16_t v : {std::int16_t(-7), std::int16_t(300)}) {
      const auto* b = reinterpret_cast<const std::uint8_t*>(&v);
      expected.insert(expected.end(), b, b + 2);
    }
  EXPECT_TRUE(datest::bytesEqual(expected, datest::downloadPacked(g), 4));

  const HostMat h = datest::randomHostMat({4, 6}, type, 21);
  header.upload(h);  // same size and type: written in place
  EXPECT_TRUE(datest::bytesEqual(datest::packedBytes(h), datest::downloadPacked(g), 4));
}

TEST_P(GpuMatNDHeaders, OneDimensionalArrayGivesOneRowHeader) {
  const int type = makeType(Depth::F32, 1);
  const HostMat h = datest::randomHostMat({13}, type, 22);
  const GpuMatND g = uploaded(h);
  const GpuMat header = g.createGpuMatHeader();
  EXPECT_EQ(header.rows, 1);
  EXPECT_EQ(header.cols, 13);
  EXPECT_TRUE(header.external());
  HostMat out;
  header.download(out);
  EXPECT_EQ(out.size, (Shape{1, 13}));
  EXPECT_TRUE(datest::bytesEqual(datest::packedBytes(h), datest::packedBytes(out), 4));
}

TEST_P(GpuMatNDHeaders, EffectivelyTwoDimensionalArrayGivesHeader) {
  const int type = makeType(Depth::U16, 1);
  const HostMat h = datest::randomHostMat({1, 1, 4, 5}, type, 23);
  const GpuMatND g = uploaded(h);
  const GpuMat header = g.createGpuMatHeader();
  EXPECT_EQ(header.rows, 4);
  EXPECT_EQ(header.cols, 5);
  EXPECT_EQ(header.step, g.step[2]);
  HostMat out;
  header.download(out);
  EXPECT_TRUE(datest::bytesEqual(datest::packedBytes(h), datest::packedBytes(out), 2));
}

TEST_P(GpuMatNDHeaders, PlaneHeaderAddressesTheIndexedPlaneAndKeepsStep) {
  const int type = makeType(Depth::S32, 1);
  const HostMat h = datest::randomHostMat({3, 4, 5, 6}, type, 24);
  const std::vector<std::uint8_t> packed = datest::packedBytes(h);
  const GpuMatND g = uploaded(h);
  GpuMat header = g.createGpuMatHeader({1, 2}, Range(1, 4), Range(2, 5));
  EXPECT_EQ(header.rows, 3);
  EXPECT_EQ(header.cols, 3);
  EXPECT_EQ(header.step, g.step[2]);
  EXPECT_FALSE(header.isContinuous());
  EXPECT_TRUE(header.external());
  HostMat out;
  header.download(out);
  EXPECT_TRUE(datest::bytesEqual(datest::subArrayBytes(packed, h.size, 4, {1, 2, 1, 2}, {1, 1, 3, 3}),
                                 datest::packedBytes(out), 4));

  header.setTo(Scalar(0));
  std::vector<std::uint8_t> expected = packed;
  for (int r = 1; r < 4; ++r)
    for (int c = 2; c < 5; ++c)
      std::memset(expected.data() + datest::byteOffset({1, 2, r, c}, datest::packedSteps(h.size, 4)), 0, 4);
  EXPECT_TRUE(datest::bytesEqual(expected, datest::downloadPacked(g), 4)) << "only the header's region changes";

  const GpuMat wholePlane = g.createGpuMatHeader({2, 0}, Range::all(), Range::all());
  EXPECT_EQ(wholePlane.rows, 5);
  EXPECT_EQ(wholePlane.cols, 6);
  EXPECT_TRUE(wholePlane.isContinuous());
}

TEST_P(GpuMatNDHeaders, PlaneOperatorClonesIntoAnIndependentGpuMat) {
  const int type = makeType(Depth::U8, 2);
  const HostMat h = datest::randomHostMat({3, 4, 5}, type, 25);
  const std::vector<std::uint8_t> packed = datest::packedBytes(h);
  const GpuMatND g = uploaded(h);
  GpuMat plane = g({2}, Range(1, 3), Range(0, 4));
  EXPECT_EQ(plane.rows, 2);
  EXPECT_EQ(plane.cols, 4);
  EXPECT_FALSE(plane.external());
  EXPECT_TRUE(plane.isContinuous());
  EXPECT_EQ(plane.device(), device());
  HostMat out;
  plane.download(out);
  EXPECT_TRUE(datest::bytesEqual(datest::subArrayBytes(packed, h.size, 2, {2, 1, 0}, {1, 2, 4}),
                                 datest::packedBytes(out), 2));
  plane.setTo(Scalar(0, 0));
  EXPECT_TRUE(datest::bytesEqual(packed, datest::downloadPacked(g), 2)) << "writing the clone changed the parent";
}

TEST_P(GpuMatNDHeaders, ConversionToGpuMatClonesEffectively2DArray) {
  const int type = makeType(Depth::F64, 1);
  const HostMat h = datest::randomHostMat({1, 4, 5}, type, 26);
  const GpuMatND g = uploaded(h);
  GpuMat m = g;  // operator GpuMat()
  EXPECT_EQ(m.rows, 4);
  EXPECT_EQ(m.cols, 5);
  EXPECT_FALSE(m.external());
  HostMat out;
  m.download(out);
  EXPECT_TRUE(datest::bytesEqual(datest::packedBytes(h), datest::packedBytes(out), 8));
  m.setTo(Scalar(1.0));
  EXPECT_TRUE(datest::bytesEqual(datest::packedBytes(h), datest::downloadPacked(g), 8));
}

TEST_P(GpuMatNDHeaders, NonTwoDimensionalArrayHasNoHeader) {
  const GpuMatND g({2, 3, 4}, makeType(Depth::U8, 1), device());
  datest::expectError(ErrorCode::InvalidArgument, [&] { (void)g.createGpuMatHeader(); });
  datest::expectError(ErrorCode::InvalidArgument, [&] { (void)static_cast<GpuMat>(g); });
}

TEST_P(GpuMatNDHeaders, BadPlaneIndicesAndRangesThrow) {
  const GpuMatND g({3, 4, 5, 6}, makeType(Depth::U8, 1), device());
  datest::expectError(ErrorCode::InvalidArgument, [&] { (void)g.createGpuMatHeader({1}, Range::all(), Range::all()); },
                      "one index for a 4-D array");
  datest::expectError(ErrorCode::InvalidArgument,
                      [&] { (void)g.createGpuMatHeader({1, 1, 1}, Range::all(), Range::all()); }, "three indices");
  datest::expectError(ErrorCode::OutOfRange, [&] { (void)g.createGpuMatHeader({3, 0}, Range::all(), Range::all()); },
                      "index 3 on axis of 3");
  datest::expectError(ErrorCode::OutOfRange, [&] { (void)g.createGpuMatHeader({0, -1}, Range::all(), Range::all()); },
                      "negative index");
  datest::expectError(ErrorCode::OutOfRange, [&] { (void)g.createGpuMatHeader({0, 0}, Range(2, 6), Range::all()); },
                      "rows past the end");
  datest::expectError(ErrorCode::OutOfRange, [&] { (void)g.createGpuMatHeader({0, 0}, Range::all(), Range(4, 2)); },
                      "reversed cols");
  datest::expectError(ErrorCode::InvalidArgument, [&] { (void)g({1}, Range::all(), Range::all()); }, "operator()");
  datest::expectError(ErrorCode::OutOfRange, [&] { (void)g({0, 4}, Range::all(), Range::all()); }, "operator()");
  datest::expectError(ErrorCode::OutOfRange, [&] { (void)g({0, 0}, Range(0, 6), Range::all()); }, "operator()");
}

// ============================================================= external memory

class GpuMatNDExternal : public DeviceTest {};

TEST_P(GpuMatNDExternal, WrapsAnotherArraysMemoryWithoutCopyingOrFreeing) {
  const int type = makeType(Depth::F32, 2);
  const HostMat h = datest::randomHostMat({4, 6, 3}, type, 27);
  const GpuMatND owner = uploaded(h);
  {
    GpuMatND ext = isCuda() ? GpuMatND({4, 6, 3}, type, static_cast<void*>(owner.getDevicePtr()))
                            : GpuMatND({4, 6, 3}, type, owner.getOpenCLBuffer(), device());
    EXPECT_TRUE(ext.external());
    EXPECT_FALSE(ext.empty());
    EXPECT_EQ(ext.device(), device());
    EXPECT_EQ(ext.step, owner.step);
    EXPECT_EQ(ext.flags, expectedFlags(type, true, false));
    EXPECT_EQ(datest::addressOf(ext), datest::addressOf(owner));
    EXPECT_TRUE(datest::bytesEqual(datest::packedBytes(h), datest::downloadPacked(ext), 8));

    // Views of external memory are external too and address the same bytes.
    const GpuMatND v = ext({Range(1, 3), Range::all(), Range(0, 2)});
    EXPECT_TRUE(v.external());
    EXPECT_TRUE(datest::bytesEqual(datest::subArrayBytes(datest::packedBytes(h), h.size, 8, {1, 0, 0}, {2, 6, 2}),
                                   datest::downloadPacked(v), 8));
    ext.release();
    EXPECT_TRUE(ext.empty());
  }
  EXPECT_TRUE(datest::bytesEqual(datest::packedBytes(h), datest::downloadPacked(owner), 8))
      << "releasing the external array must not free or change the owner's memory";
}

TEST_P(GpuMatNDExternal, WrapsWithStepsAndByteOffset) {
  const int type = makeType(Depth::U8, 1);
  const HostMat h = datest::randomHostMat({6, 32}, type, 28);
  const GpuMatND owner = uploaded(h);
  // Rows 1..4 of `owner`, bytes 3..17 of each, seen as 4 x 5 RGB triples.
  const int rgb = makeType(Depth::U8, 3);
  GpuMatND ext;
  if (isCuda()) {
    ext = GpuMatND({4, 5}, rgb, static_cast<void*>(owner.getDevicePtr() + 32 + 3), {32});
  } else {
    OpenCLBufferPtr p = owner.getOpenCLBuffer();
    p.offset += 32 + 3;
    ext = GpuMatND({4, 5}, rgb, p, device(), {32, 3});
  }
  EXPECT_TRUE(ext.external());
  EXPECT_EQ(ext.step, (Steps{32, 3}));
  EXPECT_FALSE(ext.isContinuous());
  EXPECT_EQ(ext.flags, expectedFlags(rgb, false, false));
  EXPECT_TRUE(datest::bytesEqual(datest::subArrayBytes(datest::packedBytes(h), {6, 32}, 1, {1, 3}, {4, 15}),
                                 datest::downloadPacked(ext), 3));
  const GpuMatND c = ext.clone();
  EXPECT_FALSE(c.external());
  EXPECT_TRUE(c.isContinuous());
  EXPECT_TRUE(datest::bytesEqual(datest::downloadPacked(ext), datest::downloadPacked(c), 3));

  // Writes through a header of the external array land in the owner.
  GpuMat header = ext.createGpuMatHeader();
  header.setTo(Scalar(0, 0, 0));
  std::vector<std::uint8_t> expected = datest::packedBytes(h);
  for (int r = 1; r < 5; ++r)
    for (int b = 3; b < 18; ++b) expected[static_cast<std::size_t>(r * 32 + b)] = 0;
  EXPECT_TRUE(datest::bytesEqual(expected, datest::downloadPacked(owner)));
}

TEST_P(GpuMatNDExternal, NullOrBadExternalMemoryIsInvalidArgument) {
  const int type = makeType(Depth::F32, 1);
  datest::expectError(ErrorCode::InvalidArgument, [&] { GpuMatND({4, 4}, type, static_cast<void*>(nullptr)); },
                      "null CUDA pointer");
  datest::expectError(ErrorCode::InvalidArgument, [&] { GpuMatND({4, 4}, type, OpenCLBufferPtr{}, device()); },
                      "null cl_mem");
  if (device().backend() != ComputeBackend::opencl) return;
  const GpuMatND owner({16, 16}, type, device());  // a 1024-byte buffer to wrap
  const OpenCLBufferPtr buf = owner.getOpenCLBuffer();
  datest::expectError(ErrorCode::InvalidArgument, [&] { GpuMatND({4, 4}, type, buf, device(), {8}); },
                      "row step smaller than a row");
  datest::expectError(ErrorCode::InvalidArgument, [&] { GpuMatND({4, 4}, type, buf, device(), {18}); },
                      "step not a multiple of elemSize1");
  datest::expectError(ErrorCode::InvalidArgument, [&] { GpuMatND({2, 4, 4}, type, buf, device(), {64}); },
                      "too few steps");
  datest::expectError(ErrorCode::InvalidArgument, [&] { GpuMatND({4, 4}, type, buf, device(), {16, 4, 4}); },
                      "too many steps");
  datest::expectError(ErrorCode::InvalidArgument, [&] { GpuMatND({4, 4}, type, buf, device(), {32, 8}); },
                      "last step != elemSize");
  // Far past any rounding of the 1024-byte allocation.
  datest::expectError(ErrorCode::InvalidArgument, [&] { GpuMatND({256, 256}, type, buf, device()); },
                      "256 KiB do not fit a 1 KiB buffer");
  datest::expectError(ErrorCode::InvalidArgument,
                      [&] { GpuMatND({16, 16}, type, OpenCLBufferPtr{buf.buffer, std::size_t{1} << 20}, device()); },
                      "offset past the end of the buffer");
}

// ====================================================================== errors

class GpuMatNDErrors : public DeviceTest {};

TEST_P(GpuMatNDErrors, BadSizesAreInvalidArgument) {
  const int t = makeType(Depth::U8, 1);
  datest::expectError(ErrorCode::InvalidArgument, [&] { GpuMatND({}, t, device()); }, "no axes");
  datest::expectError(ErrorCode::InvalidArgument, [&] { GpuMatND({0}, t, device()); }, "zero size");
  datest::expectError(ErrorCode::InvalidArgument, [&] { GpuMatND({3, 0, 2}, t, device()); }, "zero size");
  datest::expectError(ErrorCode::InvalidArgument, [&] { GpuMatND({4, -3}, t, device()); }, "negative size");
  datest::expectError(ErrorCode::InvalidArgument, [&] { GpuMatND(Shape(33, 1), t, device()); }, "33 axes");
  std::vector<int> maxDims(32, 1);
  maxDims[0] = 3;
  EXPECT_EQ(GpuMatND(maxDims, t, device()).dims, 32) << "32 axes are allowed (CV_MAX_DIM)";
}

TEST_P(GpuMatNDErrors, HostMatHeaderEditedPastItsMemoryIsRefused) {
  // HostMat's fields are public (as OpenCV's Mat's): a header that claims more rows than
  // the library allocated must not make a transfer read or write past that memory.
  const int t = makeType(Depth::F32, 1);
  HostMat tall({4, 6}, t);  // 96 bytes
  tall.size[0] = 400;
  const GpuMatND rows({400, 6}, t, device());
  GpuMatND target;
  for (const char* fn : {"GpuMatND::upload", "GpuMatND::download", "GpuMat::upload", "HostMat::clone"}) {
    const std::string name = fn;
    datest::expectError(ErrorCode::OutOfRange, [&] {
      if (name == "GpuMatND::upload") target.upload(tall);
      if (name == "GpuMatND::download") rows.download(tall);
      if (name == "GpuMat::upload") GpuMat().upload(tall);
      if (name == "HostMat::clone") (void)tall.clone();
    }, "describes 9600 bytes of its 96-byte memory");
  }
  EXPECT_TRUE(target.empty());
  // Nor can a view of the edited header start past the memory.
  datest::expectError(ErrorCode::OutOfRange, [&] { (void)tall({Range(100, 101), Range::all()}); },
                      "describes 9600 bytes of its 96-byte memory");
  // A view deeper into the memory keeps the rest of it: its rows still upload.
  HostMat whole({4, 6}, t);
  for (int i = 0; i < 24; ++i) reinterpret_cast<float*>(whole.data())[i] = static_cast<float>(i);
  const HostMat lastRows = whole({Range(2, 4), Range::all()});
  target.upload(lastRows);
  HostMat back;
  target.download(back);
  EXPECT_EQ(reinterpret_cast<const float*>(back.data())[0], 12.0f);
  EXPECT_EQ(reinterpret_cast<const float*>(back.data())[11], 23.0f);
}

TEST_P(GpuMatNDErrors, BadTypeCodesAreInvalidArgument) {
  datest::expectError(ErrorCode::InvalidArgument, [&] { GpuMatND({2, 2}, makeType(Depth::U8, 0), device()); },
                      "0 channels");
  datest::expectError(ErrorCode::InvalidArgument, [&] { GpuMatND({2, 2}, makeType(Depth::U8, 513), device()); },
                      "513 channels");
  datest::expectError(ErrorCode::InvalidArgument, [&] { GpuMatND({2, 2}, 5 | (1 << 16), device()); }, "stray bits");
  datest::expectError(ErrorCode::InvalidArgument, [&] { GpuMatND({2, 2}, -1, device()); }, "negative");
}

TEST_P(GpuMatNDErrors, OverflowingSizesAreOutOfRange) {
  datest::expectError(ErrorCode::OutOfRange, [&] { GpuMatND({1 << 30, 1 << 30, 16}, makeType(Depth::U8, 1), device()); });
  datest::expectError(ErrorCode::OutOfRange,
                      [&] { GpuMatND({1 << 30, 1 << 30, 1 << 30}, makeType(Depth::U8, 1), device()); });
  datest::expectError(ErrorCode::OutOfRange, [&] { GpuMatND({1 << 28, 1 << 28}, makeType(Depth::F64, 512), device()); });
}

TEST_P(GpuMatNDErrors, UnallocatableSizeIsOutOfMemory) {
  // 2^62 bytes: representable, but no device has it.
  datest::expectError(ErrorCode::OutOfMemory, [&] { GpuMatND({1 << 30, 1 << 30, 4}, makeType(Depth::U8, 1), device()); });
}

TEST_P(GpuMatNDErrors, FailedCreateLeavesTheArrayUnchanged) {
  const int type = makeType(Depth::U16, 1);
  const HostMat h = datest::randomHostMat({3, 4}, type, 29);
  GpuMatND g = uploaded(h);
  const auto address = datest::addressOf(g);
  const int flags = g.flags;
  datest::expectError(ErrorCode::InvalidArgument, [&] { g.create({3, 0}, type); });
  datest::expectError(ErrorCode::InvalidArgument, [&] { g.create({3, 4}, 1 << 20); });
  datest::expectError(ErrorCode::InvalidArgument, [&] { g.create(Shape(33, 1), type); });
  datest::expectError(ErrorCode::OutOfRange, [&] { g.create({1 << 30, 1 << 30, 16}, type); });
  EXPECT_EQ(datest::addressOf(g), address);
  EXPECT_EQ(g.flags, flags);
  EXPECT_EQ(g.size, (Shape{3, 4}));
  EXPECT_EQ(g.step, (Steps{8, 2}));
  EXPECT_TRUE(datest::bytesEqual(datest::packedBytes(h), datest::downloadPacked(g), 2));
}

TEST_P(GpuMatNDErrors, BadRangesThrowAndLeaveTheArrayUnchanged) {
  const GpuMatND g({4, 5, 6}, makeType(Depth::F32, 1), device());
  const auto address = datest::addressOf(g);
  datest::expectError(ErrorCode::InvalidArgument, [&] { (void)g({Range::all(), Range::all()}); }, "too few ranges");
  datest::expectError(ErrorCode::InvalidArgument, [&] { (void)g(std::vector<Range>(4, Range::all())); },
                      "too many ranges");
  datest::expectError(ErrorCode::OutOfRange, [&] { (void)g({Range(0, 5), Range::all(), Range::all()}); }, "end > size");
  datest::expectError(ErrorCode::OutOfRange, [&] { (void)g({Range::all(), Range(-1, 2), Range::all()}); }, "start < 0");
  datest::expectError(ErrorCode::OutOfRange, [&] { (void)g({Range::all(), Range::all(), Range(4, 2)}); }, "reversed");
  datest::expectError(ErrorCode::OutOfRange, [&] { (void)g({Range::all(), Range(5, 6), Range::all()}); },
                      "start == size");
  datest::expectError(ErrorCode::InvalidArgument, [&] { (void)g({Range::all(), Range(2, 2), Range::all()}); },
                      "empty range makes a zero-length axis");
  EXPECT_EQ(datest::addressOf(g), address);
  EXPECT_EQ(g.size, (Shape{4, 5, 6}));
  EXPECT_FALSE(g.isSubmatrix());
}

TEST_P(GpuMatNDErrors, BackendSpecificAccessorsOfTheOtherBackendAreUnsupported) {
  const GpuMatND g({3, 3}, makeType(Depth::U8, 1), device());
  if (isCuda()) {
    EXPECT_NE(g.getDevicePtr(), nullptr);
    datest::expectError(ErrorCode::Unsupported, [&] { (void)g.getOpenCLBuffer(); });
  } else {
    EXPECT_NE(g.getOpenCLBuffer().buffer, nullptr);
    EXPECT_EQ(g.getOpenCLBuffer().offset, 0u);
    datest::expectError(ErrorCode::Unsupported, [&] { (void)g.getDevicePtr(); });
  }
}

TEST_P(GpuMatNDErrors, OperationsOnAnEmptyArrayAreInvalidState) {
  const GpuMatND empty;
  Stream stream(device());
  HostMat dst = datest::randomHostMat({2, 2}, makeType(Depth::U8, 1), 30);
  const auto before = datest::packedBytes(dst);
  uchar* const where = dst.data();
  datest::expectError(ErrorCode::InvalidState, [&] { (void)empty.clone(); }, "clone");
  datest::expectError(ErrorCode::InvalidState, [&] { (void)empty.clone(stream); }, "clone(stream)");
  datest::expectError(ErrorCode::InvalidState, [&] { empty.download(dst); }, "download");
  datest::expectError(ErrorCode::InvalidState, [&] { empty.download(dst, stream); }, "download(stream)");
  datest::expectError(ErrorCode::InvalidState, [&] { (void)empty.createGpuMatHeader(); }, "createGpuMatHeader");
  datest::expectError(ErrorCode::InvalidState, [&] { (void)static_cast<GpuMat>(empty); }, "operator GpuMat");
  EXPECT_EQ(dst.data(), where) << "a failed download must leave the destination alone";
  EXPECT_EQ(dst.size, (Shape{2, 2}));
  EXPECT_TRUE(datest::bytesEqual(before, datest::packedBytes(dst)));
}

TEST_P(GpuMatNDErrors, UploadOfEmptyHostMatIsInvalidArgumentAndLeavesArrayUnchanged) {
  const int type = makeType(Depth::S8, 2);
  const HostMat h = datest::randomHostMat({3, 5}, type, 31);
  GpuMatND g = uploaded(h);
  const auto address = datest::addressOf(g);
  Stream stream(device());
  datest::expectError(ErrorCode::InvalidArgument, [&] { g.upload(HostMat()); }, "upload");
  datest::expectError(ErrorCode::InvalidArgument, [&] { g.upload(HostMat(), stream); }, "upload(stream)");
  EXPECT_EQ(datest::addressOf(g), address);
  EXPECT_EQ(g.size, (Shape{3, 5}));
  EXPECT_EQ(g.type(), type);
  EXPECT_TRUE(datest::bytesEqual(datest::packedBytes(h), datest::downloadPacked(g), 2));
}

DATEST_INSTANTIATE_OVER_DEVICES(GpuMatNDRoundTrip);
DATEST_INSTANTIATE_OVER_DEVICES(GpuMatNDViews);
DATEST_INSTANTIATE_OVER_DEVICES(GpuMatNDLayout);
DATEST_INSTANTIATE_OVER_DEVICES(GpuMatNDHeaders);
DATEST_INSTANTIATE_OVER_DEVICES(GpuMatNDExternal);
DATEST_INSTANTIATE_OVER_DEVICES(GpuMatNDErrors);

}  // namespace
