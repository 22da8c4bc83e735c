// DLPack export/import (dlpack.hpp): layout of exported tensors against
// hand-computed values, zero-copy round trips for every depth and rank, views,
// deleter lifetime, and malformed hand-built tensors (right error, deleter run once).
#include <cstdint>
#include <cstring>
#include <functional>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "core/array_access.hpp"
#include "devicearray/dlpack.hpp"
#include "test_support.hpp"

namespace {

using devicearray::ComputeBackend;
using devicearray::ComputeDevice;
using devicearray::Depth;
using devicearray::DeviceArray;
using devicearray::ErrorCode;
using devicearray::GpuMatND;
using devicearray::HostMat;
using devicearray::makeType;
using devicearray::Range;

constexpr Depth kAllDepths[] = {Depth::U8, Depth::S8, Depth::U16, Depth::S16,
                                Depth::S32, Depth::F32, Depth::F64, Depth::F16};

/// The DLPack dtype of each depth, written out from the DLPack spec.
DLDataType expectedDType(Depth d) {
  switch (d) {
    case Depth::U8: return {1, 8, 1};
    case Depth::S8: return {0, 8, 1};
    case Depth::U16: return {1, 16, 1};
    case Depth::S16: return {0, 16, 1};
    case Depth::S32: return {0, 32, 1};
    case Depth::F32: return {2, 32, 1};
    case Depth::F64: return {2, 64, 1};
    case Depth::F16: return {2, 16, 1};
  }
  return {255, 0, 0};
}

std::vector<std::int64_t> asVector(const std::int64_t* p, int n) { return std::vector<std::int64_t>(p, p + n); }

/// A tensor built by hand over memory the test owns; its deleter only counts calls,
/// so the count can be read after the library is done with it.
struct HandBuiltTensor {
  std::vector<std::int64_t> shape;
  std::vector<std::int64_t> strides;  // empty: NULL strides
  DLManagedTensorVersioned versioned{};
  DLManagedTensor legacy{};
  int deleterCalls = 0;

  static void deleteVersioned(DLManagedTensorVersioned* self) {
    ++static_cast<HandBuiltTensor*>(self->manager_ctx)->deleterCalls;
  }
  static void deleteLegacy(DLManagedTensor* self) { ++static_cast<HandBuiltTensor*>(self->manager_ctx)->deleterCalls; }

  /// Re-points both forms at the (possibly edited) shape/strides vectors.
  void sync(const DLTensor& t) {
    versioned.dl_tensor = t;
    legacy.dl_tensor = t;
    versioned.dl_tensor.shape = legacy.dl_tensor.shape = shape.empty() ? nullptr : shape.data();
    versioned.dl_tensor.strides = legacy.dl_tensor.strides = strides.empty() ? nullptr : strides.data();
  }
};

/// A float32 (or `dtype`) tensor of `shape`/`strides` at `byteOffset` bytes past the
/// first element of `backing`, named the way a foreign producer would name it.
std::unique_ptr<HandBuiltTensor> handBuilt(const GpuMatND& backing, std::vector<std::int64_t> shape,
                                           std::vector<std::int64_t> strides, DLDataType dtype = {2, 32, 1},
                                           std::uint64_t byteOffset = 0) {
  auto h = std::make_unique<HandBuiltTensor>();
  h->shape = std::move(shape);
  h->strides = std::move(strides);
  DLTensor t{};
  t.ndim = static_cast<std::int32_t>(h->shape.size());
  t.dtype = dtype;
  const ComputeDevice device = backing.device();
  if (backing.backend() == ComputeBackend::cuda) {
    t.device = {kDLCUDA, device.ordinal()};
    t.data = backing.getDevicePtr();
    t.byte_offset = byteOffset;
  } else {
    const auto buffer = backing.getOpenCLBuffer();
    t.device = {kDLOpenCL, device.ordinal() < 0 ? 0 : device.ordinal()};
    t.data = buffer.buffer;
    t.byte_offset = buffer.offset + byteOffset;
  }
  h->versioned.version = {1, 1};
  h->versioned.manager_ctx = h.get();
  h->versioned.deleter = &HandBuiltTensor::deleteVersioned;
  h->versioned.flags = 0;
  h->legacy.manager_ctx = h.get();
  h->legacy.deleter = &HandBuiltTensor::deleteLegacy;
  h->sync(t);
  return h;
}

/// A device array of `shape` x `type` holding nonZeroBytes(seed).
GpuMatND randomDeviceArray(const std::vector<int>& shape, int type, const ComputeDevice& device, std::uint32_t seed) {
  GpuMatND g(shape, type, device);
  g.upload(datest::randomHostMat(shape, type, seed));
  return g;
}

/// Whether two arrays start at the same device byte.
bool sameFirstByte(const GpuMatND& a, const GpuMatND& b) {
  if (a.backend() != b.backend()) return false;
  if (a.backend() == ComputeBackend::cuda) return a.getDevicePtr() == b.getDevicePtr();
  const auto x = a.getOpenCLBuffer();
  const auto y = b.getOpenCLBuffer();
  return x.buffer == y.buffer && x.offset == y.offset;
}

/// Host floats of a float32 device array, packed.
std::vector<float> downloadFloats(const GpuMatND& g) {
  const auto bytes = datest::downloadPacked(g);
  std::vector<float> out(bytes.size() / sizeof(float));
  std::memcpy(out.data(), bytes.data(), bytes.size());
  return out;
}

/// A float32 array {24} holding 0, 1, ..., 23.
GpuMatND iotaFloats(const ComputeDevice& device, int n = 24) {
  std::vector<float> host(static_cast<std::size_t>(n));
  for (int i = 0; i < n; ++i) host[static_cast<std::size_t>(i)] = static_cast<float>(i);
  GpuMatND g({n}, makeType(Depth::F32, 1), device);
  g.upload(HostMat({n}, makeType(Depth::F32, 1), host.data()));
  return g;
}

class DLPack : public testing::TestWithParam<ComputeDevice> {
 protected:
  ComputeDevice device() const { return GetParam(); }
  DLDevice expectedDevice() const {
    const ComputeDevice d = device();
    if (d.backend() == ComputeBackend::cuda) return {kDLCUDA, d.ordinal()};
    return {kDLOpenCL, d.ordinal() < 0 ? 0 : d.ordinal()};
  }
};

// ------------------------------------------------------------------- export ----

TEST_P(DLPack, ExportOfSeedPointXYZExampleHasSeedShapeStridesAndDtype) {
  // The 2 x 3 PointXYZ buffer of docs/data-layout.md: shape [2, 3, 3], strides
  // [W*C = 9, C = 3, 1], float32.
  const auto arr = DeviceArray<devicearray::PointXYZ>::allocate(2, 3, device());
  DLManagedTensorVersioned* t = devicearray::toDLPackVersioned(arr);
  ASSERT_NE(t, nullptr);
  EXPECT_EQ(t->version.major, 1u);
  EXPECT_EQ(t->flags, 0u) << "zero-copy export is neither READ_ONLY nor IS_COPIED";
  ASSERT_EQ(t->dl_tensor.ndim, 3);
  EXPECT_EQ(asVector(t->dl_tensor.shape, 3), (std::vector<std::int64_t>{2, 3, 3}));
  ASSERT_NE(t->dl_tensor.strides, nullptr);
  EXPECT_EQ(asVector(t->dl_tensor.strides, 3), (std::vector<std::int64_t>{9, 3, 1}));
  EXPECT_EQ(t->dl_tensor.dtype.code, kDLFloat);
  EXPECT_EQ(t->dl_tensor.dtype.bits, 32);
  EXPECT_EQ(t->dl_tensor.dtype.lanes, 1);
  EXPECT_EQ(t->dl_tensor.device.device_type, expectedDevice().device_type);
  EXPECT_EQ(t->dl_tensor.device.device_id, expectedDevice().device_id);
  const GpuMatND mat = arr.toGpuMatND();
  if (device().backend() == ComputeBackend::cuda) {
    EXPECT_EQ(t->dl_tensor.data, static_cast<void*>(mat.getDevicePtr()));
    EXPECT_EQ(t->dl_tensor.byte_offset, 0u);
  } else {
    EXPECT_EQ(t->dl_tensor.data, mat.getOpenCLBuffer().buffer);
    EXPECT_EQ(t->dl_tensor.byte_offset, mat.getOpenCLBuffer().offset);
  }
  t->deleter(t);
}

TEST_P(DLPack, ExportOfSingleChannelAndUnorganizedArraysFollowsTheSeedTable) {
  // PointZ 2 x 3: [2, 3] / [3, 1]; unorganized PointXYZ N = 5: [5, 3] / [3, 1]; SNR N = 4: [4] / [1].
  const auto z = DeviceArray<devicearray::PointZ>::allocate(2, 3, device());
  const auto xyz = DeviceArray<devicearray::PointXYZ>::allocate(std::size_t{5}, device());
  const auto snr = DeviceArray<devicearray::SNR>::allocate(std::size_t{4}, device());
  DLManagedTensor* a = devicearray::toDLPack(z);
  DLManagedTensor* b = devicearray::toDLPack(xyz);
  DLManagedTensorVersioned* c = devicearray::toDLPackVersioned(snr);
  EXPECT_EQ(asVector(a->dl_tensor.shape, a->dl_tensor.ndim), (std::vector<std::int64_t>{2, 3}));
  EXPECT_EQ(asVector(a->dl_tensor.strides, a->dl_tensor.ndim), (std::vector<std::int64_t>{3, 1}));
  EXPECT_EQ(asVector(b->dl_tensor.shape, b->dl_tensor.ndim), (std::vector<std::int64_t>{5, 3}));
  EXPECT_EQ(asVector(b->dl_tensor.strides, b->dl_tensor.ndim), (std::vector<std::int64_t>{3, 1}));
  EXPECT_EQ(asVector(c->dl_tensor.shape, c->dl_tensor.ndim), (std::vector<std::int64_t>{4}));
  EXPECT_EQ(asVector(c->dl_tensor.strides, c->dl_tensor.ndim), (std::vector<std::int64_t>{1}));
  a->deleter(a);
  b->deleter(b);
  c->deleter(c);
}

TEST_P(DLPack, ExportedDtypeOfEveryDepthIsTheDLPackOne) {
  for (Depth d : kAllDepths) {
    SCOPED_TRACE("depth " + std::to_string(static_cast<int>(d)));
    GpuMatND g({3, 2}, makeType(d, 2), device());
    DLManagedTensorVersioned* t = devicearray::toDLPackVersioned(g);
    const DLDataType want = expectedDType(d);
    EXPECT_EQ(t->dl_tensor.dtype.code, want.code);
    EXPECT_EQ(t->dl_tensor.dtype.bits, want.bits);
    EXPECT_EQ(t->dl_tensor.dtype.lanes, want.lanes);
    EXPECT_EQ(asVector(t->dl_tensor.shape, t->dl_tensor.ndim), (std::vector<std::int64_t>{3, 2, 2}));
    EXPECT_EQ(asVector(t->dl_tensor.strides, t->dl_tensor.ndim), (std::vector<std::int64_t>{4, 2, 1}));
    t->deleter(t);
  }
}

TEST_P(DLPack, ExportOfViewCarriesTheViewOffset) {
  // 4 x 6 float32; view rows [1, 3) x cols [2, 5): first element at (1*6 + 2) * 4 = 32 bytes.
  const GpuMatND parent = iotaFloats(device());
  namespace detail = devicearray::detail;
  GpuMatND grid =
      detail::makeGpuMatND(detail::allocationOf(parent), detail::offsetOf(parent), {4, 6}, makeType(Depth::F32, 1), {});
  const GpuMatND view = grid({Range(1, 3), Range(2, 5)});
  DLManagedTensorVersioned* t = devicearray::toDLPackVersioned(view);
  EXPECT_EQ(asVector(t->dl_tensor.shape, 2), (std::vector<std::int64_t>{2, 3}));
  EXPECT_EQ(asVector(t->dl_tensor.strides, 2), (std::vector<std::int64_t>{6, 1})) << "views keep the parent's step";
  if (device().backend() == ComputeBackend::cuda) {
    EXPECT_EQ(t->dl_tensor.data, static_cast<void*>(parent.getDevicePtr() + 32));
    EXPECT_EQ(t->dl_tensor.byte_offset, 0u);
  } else {
    EXPECT_EQ(t->dl_tensor.data, parent.getOpenCLBuffer().buffer) << "data is the cl_mem itself";
    EXPECT_EQ(t->dl_tensor.byte_offset, parent.getOpenCLBuffer().offset + 32);
  }
  const GpuMatND back = devicearray::fromDLPack(t);
  EXPECT_EQ(downloadFloats(back), (std::vector<float>{8, 9, 10, 14, 15, 16}));
}

TEST_P(DLPack, ExportOfEmptyArrayIsInvalidArgument) {
  datest::expectError(ErrorCode::InvalidArgument, [] { devicearray::toDLPackVersioned(GpuMatND()); });
  datest::expectError(ErrorCode::InvalidArgument, [] { devicearray::toDLPack(GpuMatND()); });
  datest::expectError(ErrorCode::InvalidArgument,
                      [] { devicearray::toDLPackVersioned(DeviceArray<devicearray::PointXYZ>()); });
}

TEST_P(DLPack, StepThatIsNotAMultipleOfTheChannelSizeCannotBeExported) {
  // DLPack strides count elements: a 7-byte row step of uint16 values has no DLPack form.
  GpuMatND g({2, 3}, makeType(Depth::U16, 1), device());
  g.step[0] = 7;
  datest::expectError(ErrorCode::InvalidArgument, [&] { devicearray::toDLPackVersioned(g); });
  datest::expectError(ErrorCode::InvalidArgument, [&] { devicearray::toDLPack(g); });
}

TEST_P(DLPack, HeaderEditedPastItsMemoryIsNotExported) {
  // The header's fields are public (as OpenCV's); a consumer would read whatever the
  // tensor describes, so a header that reaches past the memory is refused.
  const GpuMatND base({4, 6}, makeType(Depth::F32, 3), device());  // 288 bytes
  GpuMatND tall = base;
  tall.size[0] = 1000;
  GpuMatND wide = base;
  wide.step[0] *= 10;
  GpuMatND fourChannels = base;
  fourChannels.flags = (fourChannels.flags & ~0xFFF) | makeType(Depth::F32, 4);
  GpuMatND negative = base;
  negative.size[0] = -3;
  for (const GpuMatND* g : {&tall, &wide}) {
    datest::expectError(ErrorCode::OutOfRange, [&] { devicearray::toDLPackVersioned(*g); }, "of a 288-byte buffer");
    datest::expectError(ErrorCode::OutOfRange, [&] { devicearray::toDLPack(*g); }, "of a 288-byte buffer");
  }
  datest::expectError(ErrorCode::InvalidArgument, [&] { devicearray::toDLPackVersioned(fourChannels); },
                      "last step 12 must equal the element size 16");
  datest::expectError(ErrorCode::InvalidArgument, [&] { devicearray::toDLPackVersioned(negative); });
  DLManagedTensorVersioned* fine = devicearray::toDLPackVersioned(base);
  EXPECT_EQ(fine->dl_tensor.shape[0], 4);
  fine->deleter(fine);
}

TEST_P(DLPack, ExportedTensorKeepsTheMemoryAlive) {
  GpuMatND g = randomDeviceArray({5, 7}, makeType(Depth::U8, 3), device(), 11);
  const auto expected = datest::downloadPacked(g);
  DLManagedTensorVersioned* t = devicearray::toDLPackVersioned(g);
  g.release();
  const GpuMatND back = devicearray::fromDLPack(t);
  EXPECT_TRUE(datest::bytesEqual(expected, datest::downloadPacked(back), 1));
}

TEST_P(DLPack, HostCopyIsFlaggedCopiedAndOnTheCPU) {
  const GpuMatND g = randomDeviceArray({3, 4}, makeType(Depth::S16, 2), device(), 5);
  const auto expected = datest::downloadPacked(g);
  DLManagedTensorVersioned* t = devicearray::toDLPackVersionedHostCopy(g);
  EXPECT_EQ(t->flags, DLPACK_FLAG_BITMASK_IS_COPIED);
  EXPECT_EQ(t->dl_tensor.device.device_type, kDLCPU);
  EXPECT_EQ(t->dl_tensor.device.device_id, 0);
  EXPECT_EQ(asVector(t->dl_tensor.shape, 3), (std::vector<std::int64_t>{3, 4, 2}));
  EXPECT_EQ(asVector(t->dl_tensor.strides, 3), (std::vector<std::int64_t>{8, 2, 1}));
  const auto* bytes = static_cast<const std::uint8_t*>(t->dl_tensor.data);
  EXPECT_TRUE(datest::bytesEqual(expected, std::vector<std::uint8_t>(bytes, bytes + expected.size()), 2));
  t->deleter(t);
}

// ------------------------------------------------------------------ round trips ----

TEST_P(DLPack, RoundTripOfEveryDepthAndRankSharesMemoryAndKeepsValues) {
  const std::vector<std::vector<int>> shapes = {{7}, {3, 5}, {2, 3, 4}, {2, 2, 3, 2}};
  std::uint32_t seed = 1;
  for (Depth d : kAllDepths) {
    for (const auto& shape : shapes) {
      for (int channels : {1, 3}) {
        for (bool versioned : {true, false}) {
          SCOPED_TRACE("depth " + std::to_string(static_cast<int>(d)) + " dims " + std::to_string(shape.size()) +
                       " channels " + std::to_string(channels) + (versioned ? " versioned" : " legacy"));
          const GpuMatND g = randomDeviceArray(shape, makeType(d, channels), device(), seed++);
          const GpuMatND back = versioned ? devicearray::fromDLPack(devicearray::toDLPackVersioned(g))
                                          : devicearray::fromDLPack(devicearray::toDLPack(g));
          std::vector<int> expectedShape = shape;
          if (channels > 1) expectedShape.push_back(channels);
          EXPECT_EQ(back.size, expectedShape);
          EXPECT_EQ(back.dims, static_cast<int>(expectedShape.size()));
          EXPECT_EQ(back.channels(), 1);
          EXPECT_EQ(back.depth(), static_cast<int>(d));
          EXPECT_TRUE(back.isContinuous());
          EXPECT_TRUE(back.external());
          EXPECT_TRUE(sameFirstByte(g, back)) << "import must not copy";
          EXPECT_TRUE(datest::bytesEqual(datest::downloadPacked(g), datest::downloadPacked(back),
                                         devicearray::depthSize(d)));
        }
      }
    }
  }
}

TEST_P(DLPack, RoundTripOfThreeDimensionalViewKeepsStridesAndValues) {
  // {3, 4, 5} of 2-channel float32 (8 bytes); view [1,3) x all x [2,5).
  const std::vector<int> shape = {3, 4, 5};
  const GpuMatND g = randomDeviceArray(shape, makeType(Depth::F32, 2), device(), 99);
  const GpuMatND view = g({Range(1, 3), Range::all(), Range(2, 5)});
  DLManagedTensor* t = devicearray::toDLPack(view);
  // Element strides of the parent {3,4,5,2}: [40, 10, 2, 1]; view offset (1*40 + 2*2) * 4 = 176 bytes.
  EXPECT_EQ(asVector(t->dl_tensor.shape, 4), (std::vector<std::int64_t>{2, 4, 3, 2}));
  EXPECT_EQ(asVector(t->dl_tensor.strides, 4), (std::vector<std::int64_t>{40, 10, 2, 1}));
  const std::uint64_t offset = device().backend() == ComputeBackend::cuda ? 0 : g.getOpenCLBuffer().offset + 176;
  EXPECT_EQ(t->dl_tensor.byte_offset, offset);
  const GpuMatND back = devicearray::fromDLPack(t);
  EXPECT_FALSE(back.isContinuous());
  EXPECT_EQ(back.step, (GpuMatND::StepArray{160, 40, 8, 4}));
  const auto expected = datest::subArrayBytes(datest::downloadPacked(g), shape, 8, {1, 0, 2}, {2, 4, 3});
  EXPECT_TRUE(datest::bytesEqual(expected, datest::downloadPacked(back), 4));
}

TEST_P(DLPack, DeviceArrayRoundTripThroughFormat) {
  std::vector<devicearray::ColorRGBA> host(6);
  for (std::size_t i = 0; i < host.size(); ++i)
    host[i] = {static_cast<std::uint8_t>(i), static_cast<std::uint8_t>(10 + i), static_cast<std::uint8_t>(20 + i),
               255};
  const auto arr = DeviceArray<devicearray::ColorRGBA>::fromHost(host.data(), 2, 3, device());
  const auto back = devicearray::fromDLPack<devicearray::ColorRGBA>(devicearray::toDLPackVersioned(arr));
  EXPECT_EQ(back.shape(), (std::vector<int>{2, 3, 4}));
  EXPECT_EQ(back.height(), 2);
  EXPECT_EQ(back.width(), 3);
  const auto values = back.toHost();
  ASSERT_EQ(values.size(), host.size());
  for (std::size_t i = 0; i < host.size(); ++i) {
    EXPECT_EQ(values[i].r, host[i].r);
    EXPECT_EQ(values[i].g, host[i].g);
    EXPECT_EQ(values[i].b, host[i].b);
    EXPECT_EQ(values[i].a, host[i].a);
  }
}

// ------------------------------------------------------------------ import ----

TEST_P(DLPack, ImportWithNullStridesAndByteOffsetReadsTheRightElements) {
  const GpuMatND backing = iotaFloats(device());
  auto h = handBuilt(backing, {2, 3}, {}, {2, 32, 1}, 2 * sizeof(float));
  {
    const GpuMatND g = devicearray::fromDLPack(&h->versioned);
    EXPECT_EQ(g.size, (GpuMatND::SizeArray{2, 3}));
    EXPECT_EQ(g.step, (GpuMatND::StepArray{12, 4}));
    EXPECT_EQ(downloadFloats(g), (std::vector<float>{2, 3, 4, 5, 6, 7}));
    EXPECT_EQ(h->deleterCalls, 0);
  }
  EXPECT_EQ(h->deleterCalls, 1);
}

TEST_P(DLPack, ImportOfPaddedRowsGivesNonContinuousArray) {
  // Rows of 3 floats every 5 floats, starting at element 1.
  const GpuMatND backing = iotaFloats(device());
  auto h = handBuilt(backing, {3, 3}, {5, 1}, {2, 32, 1}, sizeof(float));
  {
    const GpuMatND g = devicearray::fromDLPack(&h->legacy);
    EXPECT_FALSE(g.isContinuous());
    EXPECT_EQ(g.step, (GpuMatND::StepArray{20, 4}));
    EXPECT_EQ(downloadFloats(g), (std::vector<float>{1, 2, 3, 6, 7, 8, 11, 12, 13}));
  }
  EXPECT_EQ(h->deleterCalls, 1);
}

TEST_P(DLPack, StridesOfLengthOneAxesAreIgnored) {
  // PyTorch may report any stride for an axis of length 1.
  const GpuMatND backing = iotaFloats(device());
  auto h = handBuilt(backing, {1, 4, 1}, {1000, 1, 77});
  {
    const GpuMatND g = devicearray::fromDLPack(&h->versioned);
    EXPECT_EQ(g.size, (GpuMatND::SizeArray{1, 4, 1}));
    EXPECT_EQ(downloadFloats(g), (std::vector<float>{0, 1, 2, 3}));
  }
  EXPECT_EQ(h->deleterCalls, 1);
}

TEST_P(DLPack, DeleterRunsOnceWhenTheLastHandleGoes) {
  const GpuMatND backing = iotaFloats(device());
  auto h = handBuilt(backing, {4, 6}, {});
  GpuMatND view;
  GpuMatND copy;
  {
    GpuMatND g = devicearray::fromDLPack(&h->versioned);
    view = g({Range(1, 2), Range(0, 3)});
    copy = g;
    g.release();
  }
  EXPECT_EQ(h->deleterCalls, 0) << "a copy and a view still hold the memory";
  copy = GpuMatND();
  EXPECT_EQ(h->deleterCalls, 0) << "the view still holds the memory";
  EXPECT_EQ(downloadFloats(view), (std::vector<float>{6, 7, 8}));
  view.release();
  EXPECT_EQ(h->deleterCalls, 1);
}

TEST_P(DLPack, DeleterRunsOnceForDeviceArrayImport) {
  const GpuMatND backing = iotaFloats(device());
  auto h = handBuilt(backing, {2, 3}, {});
  {
    const auto z = devicearray::fromDLPack<devicearray::PointZ>(&h->versioned);
    EXPECT_EQ(z.shape(), (std::vector<int>{2, 3}));
    const GpuMatND shared = z.toGpuMatND();
    EXPECT_EQ(h->deleterCalls, 0);
  }
  EXPECT_EQ(h->deleterCalls, 1);
}

TEST_P(DLPack, ExplicitDeviceOverloadImportsOntoThatDevice) {
  const GpuMatND backing = iotaFloats(device());
  auto h = handBuilt(backing, {6}, {});
  {
    const GpuMatND g = devicearray::fromDLPack(&h->versioned, device());
    EXPECT_EQ(g.device(), device());
    EXPECT_EQ(downloadFloats(g), (std::vector<float>{0, 1, 2, 3, 4, 5}));
  }
  EXPECT_EQ(h->deleterCalls, 1);
  datest::expectError(ErrorCode::InvalidArgument,
                      [&] { devicearray::fromDLPack(&h->versioned, ComputeDevice()); });
  EXPECT_EQ(h->deleterCalls, 2) << "the failed import also ran the deleter, once";
}

TEST_P(DLPack, FromDLPackPointXYZTakesHW3AndRefusesHW4) {
  const GpuMatND backing = iotaFloats(device());
  {
    auto h = handBuilt(backing, {2, 2, 3}, {});
    {
      const auto xyz = devicearray::fromDLPack<devicearray::PointXYZ>(&h->versioned);
      EXPECT_EQ(xyz.height(), 2);
      EXPECT_EQ(xyz.width(), 2);
      EXPECT_TRUE(xyz.isOrganized());
      const auto pts = xyz.toHost();
      ASSERT_EQ(pts.size(), 4u);
      EXPECT_EQ(pts[3].x, 9.f);
      EXPECT_EQ(pts[3].y, 10.f);
      EXPECT_EQ(pts[3].z, 11.f);
    }
    EXPECT_EQ(h->deleterCalls, 1);
  }
  {
    auto h = handBuilt(backing, {2, 2, 4}, {});
    datest::expectError(ErrorCode::InvalidArgument,
                        [&] { devicearray::fromDLPack<devicearray::PointXYZ>(&h->versioned); });
    EXPECT_EQ(h->deleterCalls, 1);
  }
  {
    auto h = handBuilt(backing, {8, 3}, {});  // unorganized [N, 3]
    {
      const auto xyz = devicearray::fromDLPack<devicearray::PointXYZ>(&h->legacy);
      EXPECT_FALSE(xyz.isOrganized());
      EXPECT_EQ(xyz.size(), 8u);
    }
    EXPECT_EQ(h->deleterCalls, 1);
  }
  {
    auto h = handBuilt(backing, {2, 2, 3}, {}, {1, 8, 1});  // uint8 is not PointXYZ's float
    datest::expectError(ErrorCode::InvalidArgument,
                        [&] { devicearray::fromDLPack<devicearray::PointXYZ>(&h->versioned); });
    EXPECT_EQ(h->deleterCalls, 1);
  }
  {
    auto h = handBuilt(backing, {2, 2, 3}, {8, 4, 1});  // pixels 4 floats apart: not packed
    datest::expectError(ErrorCode::InvalidArgument,
                        [&] { devicearray::fromDLPack<devicearray::PointXYZ>(&h->versioned); });
    EXPECT_EQ(h->deleterCalls, 1);
  }
}

// --------------------------------------------------------------- malformed ----

struct Malformed {
  const char* name;
  ErrorCode code;
  std::function<void(HandBuiltTensor&, DLTensor&)> edit;
};

std::vector<Malformed> malformedCases() {
  auto fake = reinterpret_cast<void*>(std::uintptr_t{0x1000});
  return {
      {"NULL data", ErrorCode::InvalidArgument, [](HandBuiltTensor&, DLTensor& t) { t.data = nullptr; }},
      {"ndim -1", ErrorCode::InvalidArgument, [](HandBuiltTensor&, DLTensor& t) { t.ndim = -1; }},
      {"ndim 33", ErrorCode::Unsupported,
       [](HandBuiltTensor& h, DLTensor& t) { h.shape.assign(33, 1); h.strides.clear(); t.ndim = 33; }},
      {"ndim 0", ErrorCode::Unsupported, [](HandBuiltTensor&, DLTensor& t) { t.ndim = 0; }},
      {"NULL shape", ErrorCode::InvalidArgument, [](HandBuiltTensor& h, DLTensor&) { h.shape.clear(); }},
      {"negative shape", ErrorCode::InvalidArgument, [](HandBuiltTensor& h, DLTensor&) { h.shape[1] = -3; }},
      {"zero shape", ErrorCode::InvalidArgument, [](HandBuiltTensor& h, DLTensor&) { h.shape[0] = 0; }},
      {"shape above INT_MAX", ErrorCode::OutOfRange,
       [](HandBuiltTensor& h, DLTensor&) { h.shape[0] = std::int64_t{1} << 31; h.strides.clear(); }},
      {"overflowing shape", ErrorCode::OutOfRange,
       [](HandBuiltTensor& h, DLTensor&) { h.shape = {INT32_MAX, INT32_MAX, INT32_MAX}; h.strides.clear(); }},
      {"overflowing strides", ErrorCode::OutOfRange,
       [](HandBuiltTensor& h, DLTensor&) { h.strides = {std::int64_t{1} << 62, 1}; }},
      {"lanes 2", ErrorCode::Unsupported, [](HandBuiltTensor&, DLTensor& t) { t.dtype.lanes = 2; }},
      {"bool", ErrorCode::Unsupported, [](HandBuiltTensor&, DLTensor& t) { t.dtype = {kDLBool, 8, 1}; }},
      {"bfloat16", ErrorCode::Unsupported, [](HandBuiltTensor&, DLTensor& t) { t.dtype = {kDLBfloat, 16, 1}; }},
      {"complex64", ErrorCode::Unsupported, [](HandBuiltTensor&, DLTensor& t) { t.dtype = {kDLComplex, 64, 1}; }},
      {"int64", ErrorCode::Unsupported, [](HandBuiltTensor&, DLTensor& t) { t.dtype = {kDLInt, 64, 1}; }},
      {"uint32", ErrorCode::Unsupported, [](HandBuiltTensor&, DLTensor& t) { t.dtype = {kDLUInt, 32, 1}; }},
      {"float with 24 bits", ErrorCode::Unsupported, [](HandBuiltTensor&, DLTensor& t) { t.dtype = {kDLFloat, 24, 1}; }},
      {"kDLROCM device", ErrorCode::Unsupported,
       [fake](HandBuiltTensor&, DLTensor& t) { t.device = {kDLROCM, 0}; t.data = fake; t.byte_offset = 0; }},
      {"kDLCPU device", ErrorCode::Unsupported,
       [fake](HandBuiltTensor&, DLTensor& t) { t.device = {kDLCPU, 0}; t.data = fake; t.byte_offset = 0; }},
      {"CUDA ordinal that does not exist", ErrorCode::Unsupported,
       [fake](HandBuiltTensor&, DLTensor& t) { t.device = {kDLCUDA, 99}; t.data = fake; t.byte_offset = 0; }},
      {"negative stride", ErrorCode::InvalidArgument, [](HandBuiltTensor& h, DLTensor&) { h.strides = {-3, 1}; }},
      {"gaps in the last axis", ErrorCode::InvalidArgument, [](HandBuiltTensor& h, DLTensor&) { h.strides = {6, 2}; }},
      {"overlapping rows", ErrorCode::InvalidArgument, [](HandBuiltTensor& h, DLTensor&) { h.strides = {2, 1}; }},
      {"column-major", ErrorCode::InvalidArgument, [](HandBuiltTensor& h, DLTensor&) { h.strides = {1, 2}; }},
      {"zero stride on a long axis", ErrorCode::InvalidArgument,
       [](HandBuiltTensor& h, DLTensor&) { h.strides = {0, 1}; }},
  };
}

TEST_P(DLPack, MalformedTensorsAreRefusedAndTheirDeleterRunsOnce) {
  const GpuMatND backing = iotaFloats(device());
  for (const Malformed& m : malformedCases()) {
    for (bool versioned : {true, false}) {
      SCOPED_TRACE(std::string(m.name) + (versioned ? " (versioned)" : " (legacy)"));
      auto h = handBuilt(backing, {2, 3}, {3, 1});
      DLTensor t = h->versioned.dl_tensor;
      m.edit(*h, t);
      h->sync(t);
      if (versioned)
        datest::expectError(m.code, [&] { devicearray::fromDLPack(&h->versioned); });
      else
        datest::expectError(m.code, [&] { devicearray::fromDLPack(&h->legacy); });
      EXPECT_EQ(h->deleterCalls, 1);
    }
  }
}

TEST_P(DLPack, NewerMajorVersionIsUnsupportedWithoutReadingTheTensor) {
  const GpuMatND backing = iotaFloats(device());
  auto h = handBuilt(backing, {2, 3}, {});
  h->versioned.version = {2, 0};
  // A 2.x tensor may lay its fields out differently: make them garbage to prove
  // they are not read.
  std::memset(&h->versioned.dl_tensor, 0xA5, sizeof(DLTensor));
  h->versioned.flags = ~std::uint64_t{0};
  datest::expectError(ErrorCode::Unsupported, [&] { devicearray::fromDLPack(&h->versioned); });
  EXPECT_EQ(h->deleterCalls, 1);
}

TEST_P(DLPack, ReadOnlyAndVersionZeroTensorsAreRefused) {
  const GpuMatND backing = iotaFloats(device());
  {
    auto h = handBuilt(backing, {2, 3}, {});
    h->versioned.flags = DLPACK_FLAG_BITMASK_READ_ONLY;
    datest::expectError(ErrorCode::Unsupported, [&] { devicearray::fromDLPack(&h->versioned); });
    EXPECT_EQ(h->deleterCalls, 1);
  }
  {
    auto h = handBuilt(backing, {2, 3}, {});
    h->versioned.version = {0, 8};
    datest::expectError(ErrorCode::InvalidArgument, [&] { devicearray::fromDLPack(&h->versioned); });
    EXPECT_EQ(h->deleterCalls, 1);
  }
}

TEST_P(DLPack, NullTensorIsInvalidArgument) {
  datest::expectError(ErrorCode::InvalidArgument,
                      [] { devicearray::fromDLPack(static_cast<DLManagedTensorVersioned*>(nullptr)); });
  datest::expectError(ErrorCode::InvalidArgument,
                      [] { devicearray::fromDLPack(static_cast<DLManagedTensor*>(nullptr)); });
}

TEST_P(DLPack, TensorPastTheEndOrMisalignedIsRefused) {
  const GpuMatND backing = iotaFloats(device());
  if (device().backend() == ComputeBackend::opencl) {
    // The allocator may round the cl_mem up, so go far past any size it could have.
    auto past = handBuilt(backing, {2, 3}, {}, {2, 32, 1}, std::uint64_t{1} << 40);
    datest::expectError(ErrorCode::OutOfRange, [&] { devicearray::fromDLPack(&past->versioned); });
    EXPECT_EQ(past->deleterCalls, 1);
  }
  auto misaligned = handBuilt(backing, {2, 3}, {}, {2, 32, 1}, 2);
  datest::expectError(ErrorCode::InvalidArgument, [&] { devicearray::fromDLPack(&misaligned->versioned); });
  EXPECT_EQ(misaligned->deleterCalls, 1);
}

// --------------------------------------------------------- stream handshake ----

TEST_P(DLPack, ReadyOnConsumerStreamSharesTheMemoryAndTheConsumerSeesTheData) {
  devicearray::Stream library(device());
  devicearray::Stream consumer(device());
  const GpuMatND source = iotaFloats(device(), 4096);
  const GpuMatND copy = source.clone(library);  // still running on `library`, perhaps
  const GpuMatND ready = devicearray::readyOnConsumerStream(copy, consumer.handle());
  EXPECT_TRUE(sameFirstByte(ready, copy));
  EXPECT_EQ(ready.size, copy.size);
  EXPECT_EQ(ready.step, copy.step);
  EXPECT_EQ(ready.type(), copy.type());
  // The consumer reads through the exported tensor after waiting on its own stream.
  DLManagedTensorVersioned* t = devicearray::toDLPackVersioned(ready);
  consumer.waitForCompletion();
  const GpuMatND imported = devicearray::fromDLPack(t);
  EXPECT_EQ(downloadFloats(imported), downloadFloats(source));
  // Without a consumer nothing is ordered, and the handle is still the same memory.
  EXPECT_TRUE(sameFirstByte(devicearray::readyOnConsumerStream(copy, std::nullopt), copy));
}

TEST_P(DLPack, LibraryWorkAfterAProducerStreamSeesItsWrites) {
  devicearray::Stream producer(device());
  const GpuMatND source = iotaFloats(device(), 4096);
  GpuMatND target({4096}, makeType(Depth::F32, 1), device());
  // A "foreign" producer writes `target` on its own stream through a handle the
  // library does not order (as a framework writes an imported tensor); only the
  // declaration below tells the library about that write.
  std::vector<float> values(4096, 7.5f);
  HostMat host({4096}, makeType(Depth::F32, 1), values.data());
  GpuMatND foreignHandle = devicearray::readyOnConsumerStream(target, std::nullopt);
  source.clone(producer);  // queue work ahead of the write
  foreignHandle.upload(host, producer);
  devicearray::orderAfterProducerStream(target, producer.handle());
  EXPECT_EQ(downloadFloats(target.clone()), values);  // blocking clone on the library's queue
}

TEST_P(DLPack, HandshakeRefusesEmptyArraysAndForeignStreams) {
  const GpuMatND source = iotaFloats(device());
  datest::expectError(ErrorCode::InvalidArgument,
                      [&] { devicearray::readyOnConsumerStream(GpuMatND(), device().sdkStreamOrQueue()); });
  datest::expectError(ErrorCode::InvalidArgument,
                      [&] { devicearray::orderAfterProducerStream(GpuMatND(), device().sdkStreamOrQueue()); });
  const devicearray::StreamOrQueue foreign =
      device().backend() == ComputeBackend::cuda ? devicearray::StreamOrQueue(devicearray::OpenCLCommandQueuePtr{})
                                                 : devicearray::StreamOrQueue(devicearray::CUDAStreamPtr{});
  datest::expectError(ErrorCode::InvalidArgument, [&] { devicearray::readyOnConsumerStream(source, foreign); });
  datest::expectError(ErrorCode::InvalidArgument, [&] { devicearray::orderAfterProducerStream(source, foreign); });
}

DATEST_INSTANTIATE_OVER_DEVICES(DLPack);

}  // namespace
