// Several CUDA devices in one process (docs/stream-queue-context.md, "Several
// devices"): placement of every call on the array's own device whatever device is
// current, cross-device copies (peer copy engine, peer kernel, cudaMemcpy3DPeer and
// staging through both devices) against host references, stream ordering across
// devices with a gated producer, stream-ordered release on the right device, and
// DLPack device ordinals. Runs when the machine has two CUDA devices
// (scripts/device/multi-gpu.sh on an nvidia-h200-x2 machine) and skips otherwise.
#include <cuda_runtime.h>

#include <chrono>
#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "backend/backend.hpp"
#include "backend/backend_registry.hpp"
#include "core/array_access.hpp"
#include "devicearray/devicearray.hpp"
#include "devicearray/dlpack.hpp"
#include "cuda_gate.cuh"
#include "ordering_support.hpp"
#include "test_support.hpp"

namespace {

using namespace devicearray;
using Bytes = std::vector<std::uint8_t>;

/// Runs `fn` with `device` current and restores the previous device (test-side
/// runtime calls such as cudaMalloc for user memory on a given device).
template <class Fn>
void onDevice(int device, Fn&& fn) {
  const int previous = currentDevice();
  ASSERT_EQ(cudaSetDevice(device), cudaSuccess);
  fn();
  ASSERT_EQ(cudaSetDevice(previous), cudaSuccess);
}

/// Device that owns `p` according to the runtime (independent of the library).
int ownerOf(const void* p) {
  cudaPointerAttributes a{};
  if (cudaPointerGetAttributes(&a, p) != cudaSuccess) return -1;
  return a.type == cudaMemoryTypeDevice ? a.device : -1;
}

/// Lets an unordered consumer (if the library forgot a wait) run to completion.
void settle() { std::this_thread::sleep_for(std::chrono::milliseconds(30)); }

// ------------------------------------------------------- host references ---

/// The packed elements of a strided region (byte steps) of a host image.
Bytes gather(const Bytes& image, std::size_t offset, const std::vector<std::int64_t>& size,
             const std::vector<std::int64_t>& step, std::size_t elemSize) {
  Bytes out;
  std::vector<int> shape(size.begin(), size.end());
  datest::forEachIndex(shape, [&](const std::vector<int>& idx) {
    std::size_t at = offset;
    for (std::size_t d = 0; d < idx.size(); ++d) at += static_cast<std::size_t>(idx[d] * step[d]);
    out.insert(out.end(), image.begin() + static_cast<std::ptrdiff_t>(at),
               image.begin() + static_cast<std::ptrdiff_t>(at + elemSize));
  });
  return out;
}

/// Writes packed elements into a strided region of a host image.
void scatter(Bytes& image, std::size_t offset, const std::vector<std::int64_t>& size,
             const std::vector<std::int64_t>& step, std::size_t elemSize, const Bytes& packed) {
  std::size_t pos = 0;
  std::vector<int> shape(size.begin(), size.end());
  datest::forEachIndex(shape, [&](const std::vector<int>& idx) {
    std::size_t at = offset;
    for (std::size_t d = 0; d < idx.size(); ++d) at += static_cast<std::size_t>(idx[d] * step[d]);
    std::memcpy(image.data() + at, packed.data() + pos, elemSize);
    pos += elemSize;
  });
}

Bytes downloadBytes(const GpuMat& m) {
  HostMat h;
  m.download(h);
  return datest::packedBytes(h);
}

// ------------------------------------------------------------------ fixture ---

class MultiGpu : public testing::Test {
 protected:
  void SetUp() override {
    std::vector<ComputeDevice> cuda;
    for (const auto& d : datest::testDevices())
      if (d.backend() == ComputeBackend::cuda) cuda.push_back(d);
    if (cuda.size() < 2) {
      const std::string reason = detail::backendOf(ComputeBackend::cuda).unavailableReason();
      GTEST_SKIP() << "needs two CUDA devices; this machine has " << cuda.size()
                   << (reason.empty() ? std::string() : " (" + reason + ")")
                   << " (multi-GPU tests run on the nvidia-h200-x2 machine: scripts/device/multi-gpu.sh)";
    }
    d0_ = cuda[0];
    d1_ = cuda[1];
    ASSERT_EQ(cudaSetDevice(d0_.ordinal()), cudaSuccess);
  }
  void TearDown() override {
    if (!d0_.isValid()) return;
    for (const auto& d : {d0_, d1_}) onDevice(d.ordinal(), [] { (void)cudaDeviceSynchronize(); });
  }

  /// The current device is still `expected` (the library restored it).
  static testing::AssertionResult current(const ComputeDevice& expected) {
    const int now = currentDevice();
    if (now == expected.ordinal()) return testing::AssertionSuccess();
    return testing::AssertionFailure() << "the current device is " << now << " after the call; the caller had "
                                       << expected.ordinal();
  }

  ComputeDevice d0_;
  ComputeDevice d1_;
};

// ------------------------------------------------------------- placement ---

TEST_F(MultiGpu, EveryCallOnSecondDeviceRunsThereAndLeavesTheCallersDeviceCurrent) {
  const int type = makeType(Depth::U8, 3);
  const HostMat host = datest::randomHostMat({37, 61}, type, 11);
  const Bytes expected = datest::packedBytes(host);

  GpuMat a(37, 61, type, d1_);
  EXPECT_TRUE(current(d0_));
  EXPECT_EQ(a.device(), d1_);
  EXPECT_EQ(ownerOf(a.data), d1_.ordinal()) << "allocated on the wrong device";
  a.upload(host);
  EXPECT_TRUE(current(d0_));
  EXPECT_TRUE(datest::bytesEqual(expected, downloadBytes(a), 3));
  EXPECT_TRUE(current(d0_));

  GpuMat b = a.clone();
  EXPECT_TRUE(current(d0_));
  EXPECT_EQ(ownerOf(b.data), d1_.ordinal());
  EXPECT_TRUE(datest::bytesEqual(expected, downloadBytes(b), 3));

  // Stream calls: a library stream of device 1 created while device 0 is current.
  Stream s1(d1_);
  EXPECT_TRUE(current(d0_));
  GpuMat c = a.clone(s1);
  HostMat viaStream = HostMat::pinned({37, 61}, type);
  c.download(viaStream, s1);
  Event e(d1_);
  e.record(s1);
  EXPECT_TRUE(current(d0_));
  e.waitForCompletion();
  EXPECT_TRUE(e.queryIfComplete());
  EXPECT_TRUE(current(d0_));
  EXPECT_TRUE(datest::bytesEqual(expected, datest::packedBytes(viaStream), 3));

  // setTo and convertTo launch kernels on device 1.
  GpuMat ones(16, 20, makeType(Depth::U8, 1), d1_);
  ones.setTo(Scalar(7), s1);
  GpuMat wide;
  ones.convertTo(wide, makeType(Depth::U16, 1), 3.0, 2.0, s1);
  s1.waitForCompletion();
  EXPECT_TRUE(current(d0_));
  EXPECT_EQ(wide.device(), d1_);
  const Bytes wideBytes = downloadBytes(wide);
  std::vector<std::uint16_t> values(wideBytes.size() / 2);
  std::memcpy(values.data(), wideBytes.data(), wideBytes.size());
  EXPECT_EQ(values, std::vector<std::uint16_t>(16 * 20, 3 * 7 + 2));

  // A registered shared kernel (format conversion) through DeviceImpl::launch.
  std::vector<PointXYZ> points(500);
  for (int i = 0; i < 500; ++i) points[static_cast<std::size_t>(i)] = PointXYZ{1.0f * i, -2.0f * i, 0.25f * i};
  auto xyz = DeviceArray<PointXYZ>::fromHost(points.data(), points.size(), d1_);
  auto xyzw = convert<PointXYZW>(xyz, s1);
  std::vector<PointXYZW> back(500);
  xyzw.copyToHost(back.data(), back.size() * sizeof(PointXYZW), s1);
  s1.waitForCompletion();
  EXPECT_TRUE(current(d0_));
  for (int i = 0; i < 500; ++i) {
    const auto& p = back[static_cast<std::size_t>(i)];
    ASSERT_EQ(p.x, 1.0f * i);
    ASSERT_EQ(p.y, -2.0f * i);
    ASSERT_EQ(p.z, 0.25f * i);
    ASSERT_EQ(p.w, 1.0f);
  }

  // A stream of the other device is rejected, and the device is still restored.
  Stream s0(d0_);
  datest::expectError(ErrorCode::InvalidArgument, [&] { (void)a.clone(s0); }, "clone on a stream of device 0");
  EXPECT_TRUE(current(d0_));
}

TEST_F(MultiGpu, WorksWhicheverDeviceIsCurrent) {
  // The same calls with device 1 current and the array on device 0.
  ASSERT_EQ(cudaSetDevice(d1_.ordinal()), cudaSuccess);
  const int type = makeType(Depth::F32, 1);
  const HostMat host = datest::randomHostMat({64, 48}, type, 12);
  GpuMat a(64, 48, type, d0_);
  a.upload(host);
  Stream s0(d0_);
  GpuMat b = a.clone(s0);
  s0.waitForCompletion();
  EXPECT_TRUE(current(d1_));
  EXPECT_EQ(ownerOf(b.data), d0_.ordinal());
  EXPECT_TRUE(datest::bytesEqual(datest::packedBytes(host), downloadBytes(b), 4));
  EXPECT_TRUE(current(d1_));
}

// --------------------------------------------------- cross-device copies ---

struct CopyCase {
  const char* name;
  int type;
  bool srcView;  ///< copy from a sub-matrix (strided rows) of a larger matrix
  bool dstView;  ///< copy into a sub-matrix of a larger matrix
  bool stream;   ///< the stream overload (otherwise the blocking one)
};

TEST_F(MultiGpu, CopyToAnotherDeviceMatchesTheHostReference) {
  const std::vector<CopyCase> cases = {
      {"contiguous u8c4 blocking", makeType(Depth::U8, 4), false, false, false},
      {"contiguous f32 stream", makeType(Depth::F32, 1), false, false, true},
      {"strided source u8c3", makeType(Depth::U8, 3), true, false, false},
      {"strided destination f32c3 stream", makeType(Depth::F32, 3), false, true, true},
      {"strided both u16", makeType(Depth::U16, 1), true, true, false},
      {"strided both s8c2 stream", makeType(Depth::S8, 2), true, true, true},
  };
  const int rows = 45, cols = 77;
  std::uint32_t seed = 100;
  for (const CopyCase& k : cases) {
    for (int direction = 0; direction < 2; ++direction) {
      SCOPED_TRACE(std::string(k.name) + (direction == 0 ? " (0 -> 1)" : " (1 -> 0)"));
      const ComputeDevice& from = direction == 0 ? d0_ : d1_;
      const ComputeDevice& to = direction == 0 ? d1_ : d0_;
      const std::size_t es = depthSize(depthOf(k.type)) * static_cast<std::size_t>(channelsOf(k.type));

      // Source: a rows x cols window at (3, 5) of a larger matrix, or the whole matrix.
      const int srcRows = k.srcView ? rows + 7 : rows, srcCols = k.srcView ? cols + 11 : cols;
      const HostMat srcHost = datest::randomHostMat({srcRows, srcCols}, k.type, ++seed);
      GpuMat srcParent(srcRows, srcCols, k.type, from);
      srcParent.upload(srcHost);
      GpuMat src = k.srcView ? srcParent(Range(3, 3 + rows), Range(5, 5 + cols)) : srcParent;
      const Bytes srcImage = datest::packedBytes(srcHost);
      const std::size_t srcPitch = static_cast<std::size_t>(srcCols) * es;
      const Bytes expectedWindow =
          gather(srcImage, k.srcView ? 3 * srcPitch + 5 * es : 0, {rows, cols},
                 {static_cast<std::int64_t>(srcPitch), static_cast<std::int64_t>(es)}, es);

      // Destination: a window at (2, 9) of a larger matrix filled with a sentinel.
      const int dstRows = k.dstView ? rows + 4 : rows, dstCols = k.dstView ? cols + 13 : cols;
      const HostMat dstHost = datest::randomHostMat({dstRows, dstCols}, k.type, ++seed);
      GpuMat dstParent(dstRows, dstCols, k.type, to);
      dstParent.upload(dstHost);
      GpuMat dst = k.dstView ? dstParent(Range(2, 2 + rows), Range(9, 9 + cols)) : dstParent;
      const void* dstData = dst.data;

      if (k.stream) {
        Stream s(to);
        src.copyTo(dst, s);
        EXPECT_TRUE(current(d0_));
        s.waitForCompletion();
      } else {
        src.copyTo(dst);
      }
      EXPECT_TRUE(current(d0_));
      EXPECT_EQ(dst.data, dstData) << "copyTo reallocated a destination of the right size and type";
      EXPECT_EQ(dst.device(), to);

      Bytes expected = datest::packedBytes(dstHost);
      const std::size_t dstPitch = static_cast<std::size_t>(dstCols) * es;
      scatter(expected, k.dstView ? 2 * dstPitch + 9 * es : 0, {rows, cols},
              {static_cast<std::int64_t>(dstPitch), static_cast<std::int64_t>(es)}, es, expectedWindow);
      EXPECT_TRUE(datest::bytesEqual(expected, downloadBytes(dstParent), es));
    }
  }
}

TEST_F(MultiGpu, CopyFromUserMemoryOnAnotherDevice) {
  // Memory the library did not allocate takes the copy-engine paths (cudaMemcpyPeer /
  // cudaMemcpy3DPeer), since its pool (if any) is unknown to the library.
  const int rows = 30, cols = 50;
  const std::size_t es = 4, pitch = 256;
  void* user = nullptr;
  const Bytes image = datest::nonZeroBytes(rows * pitch, 21);
  onDevice(d0_.ordinal(), [&] {
    ASSERT_EQ(cudaMalloc(&user, rows * pitch), cudaSuccess);
    ASSERT_EQ(cudaMemcpy(user, image.data(), image.size(), cudaMemcpyHostToDevice), cudaSuccess);
    ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);  // a pageable upload may return before its DMA lands
  });
  ASSERT_NE(user, nullptr);
  {
    const GpuMat external(rows, cols, makeType(Depth::F32, 1), user, pitch);
    ASSERT_EQ(external.device(), d0_);
    const Bytes expected = gather(image, 0, {rows, cols}, {static_cast<std::int64_t>(pitch), 4}, es);

    GpuMat packed(rows, cols, makeType(Depth::F32, 1), d1_);
    external.copyTo(packed);
    EXPECT_TRUE(datest::bytesEqual(expected, downloadBytes(packed), es));

    GpuMat parent(rows + 2, cols + 6, makeType(Depth::F32, 1), d1_);
    parent.setTo(Scalar(-1));
    GpuMat window = parent(Range(1, 1 + rows), Range(4, 4 + cols));
    Stream s1(d1_);
    external.copyTo(window, s1);
    s1.waitForCompletion();
    EXPECT_TRUE(current(d0_));
    Bytes full((rows + 2) * (cols + 6) * es);
    const float minusOne = -1.0f;
    for (std::size_t i = 0; i < full.size(); i += 4) std::memcpy(full.data() + i, &minusOne, 4);
    scatter(full, (1 * (cols + 6) + 4) * es, {rows, cols}, {static_cast<std::int64_t>((cols + 6) * es), 4}, es,
            expected);
    EXPECT_TRUE(datest::bytesEqual(full, downloadBytes(parent), es));
  }
  onDevice(d0_.ordinal(), [&] { EXPECT_EQ(cudaFree(user), cudaSuccess); });
}

/// One strided layout case of the backend-level test below (byte steps).
struct LayoutCase {
  const char* name;
  std::vector<std::int64_t> size;
  std::size_t elemSize;
  std::vector<std::int64_t> dstStep;
  std::vector<std::int64_t> srcStep;
  std::size_t dstOffset;
  std::size_t srcOffset;
};

std::int64_t spanOf(const std::vector<std::int64_t>& size, const std::vector<std::int64_t>& step, std::size_t es) {
  std::int64_t span = static_cast<std::int64_t>(es);
  for (std::size_t d = 0; d < size.size(); ++d) span += (size[d] - 1) * step[d];
  return span;
}

TEST_F(MultiGpu, BackendCopiesEveryLayoutAcrossDevices) {
  using detail::Allocation;
  using detail::CopyDesc;
  using detail::MemRef;
  // Layouts chosen for each path: contiguous (cudaMemcpyPeer), rows of contiguous
  // bytes with pitches cudaMemcpy3D takes, and layouts it cannot take (gaps inside
  // rows, a slice pitch that is not a multiple of the row pitch), which a library
  // source copies with the peer kernel and a user source through staging buffers.
  const std::vector<LayoutCase> cases = {
      {"contiguous", {}, 1000, {}, {}, 8, 24},
      {"pitched rows", {9}, 20, {28}, {36}, 4, 12},
      {"pitched slices", {3, 4}, 24, {160, 40}, {256, 32}, 0, 8},
      {"gaps in rows", {5, 7}, 4, {56, 8}, {88, 12}, 4, 0},
      {"slice pitch not a row multiple", {3, 4}, 24, {160, 40}, {136, 32}, 16, 4},
      {"packed source, gapped destination", {3, 5}, 4, {100, 8}, {20, 4}, 0, 0},
      {"gapped source, packed destination", {3, 5}, 4, {20, 4}, {100, 8}, 0, 0},
      {"odd element size", {6, 5}, 3, {33, 6}, {15, 3}, 1, 3},
  };
  const auto& dev0 = d0_.impl();
  const auto& dev1 = d1_.impl();
  std::uint32_t seed = 300;
  for (const LayoutCase& k : cases) {
    for (bool userSource : {false, true}) {
      SCOPED_TRACE(std::string(k.name) + (userSource ? " (user memory source)" : " (library memory source)"));
      const int dims = static_cast<int>(k.size.size());
      const std::size_t srcBytes = k.srcOffset + static_cast<std::size_t>(spanOf(k.size, k.srcStep, k.elemSize));
      const std::size_t dstBytes = k.dstOffset + static_cast<std::size_t>(spanOf(k.size, k.dstStep, k.elemSize));
      const Bytes srcImage = datest::nonZeroBytes(srcBytes, ++seed);
      Bytes dstImage = datest::nonZeroBytes(dstBytes, ++seed);

      void* user = nullptr;
      std::shared_ptr<Allocation> srcAlloc;
      if (userSource) {
        onDevice(d0_.ordinal(), [&] {
          ASSERT_EQ(cudaMalloc(&user, srcBytes), cudaSuccess);
          ASSERT_EQ(cudaMemcpy(user, srcImage.data(), srcBytes, cudaMemcpyHostToDevice), cudaSuccess);
          ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);  // a pageable upload may return before its DMA lands
        });
        srcAlloc = dev0->adopt(user, srcBytes);
      } else {
        srcAlloc = dev0->allocate(srcBytes, *dev0->libraryQueue());
        CopyDesc up;
        up.elemSize = srcBytes;
        up.dst = MemRef::dev(srcAlloc.get(), 0);
        up.src = MemRef::hostPtr(const_cast<std::uint8_t*>(srcImage.data()));
        up.hostMayBlock = true;
        detail::OrderedUse use(*dev0->libraryQueue(), {srcAlloc.get()});
        dev0->copy(up, *dev0->libraryQueue());
        use.commit()->synchronize();
      }
      auto dstAlloc = dev1->allocate(dstBytes, *dev1->libraryQueue());
      {
        CopyDesc up;
        up.elemSize = dstBytes;
        up.dst = MemRef::dev(dstAlloc.get(), 0);
        up.src = MemRef::hostPtr(dstImage.data());
        up.hostMayBlock = true;
        detail::OrderedUse use(*dev1->libraryQueue(), {dstAlloc.get()});
        dev1->copy(up, *dev1->libraryQueue());
        use.commit()->synchronize();
      }

      CopyDesc desc;
      desc.dims = dims;
      for (int d = 0; d < dims; ++d) {
        desc.size[static_cast<std::size_t>(d)] = k.size[static_cast<std::size_t>(d)];
        desc.dstStep[static_cast<std::size_t>(d)] = k.dstStep[static_cast<std::size_t>(d)];
        desc.srcStep[static_cast<std::size_t>(d)] = k.srcStep[static_cast<std::size_t>(d)];
      }
      desc.elemSize = k.elemSize;
      desc.dst = MemRef::dev(dstAlloc.get(), k.dstOffset);
      desc.src = MemRef::dev(srcAlloc.get(), k.srcOffset);
      auto q = dev1->createQueue();
      EXPECT_TRUE(dev1->copyAcrossDevices(desc, *dev0, *q));
      EXPECT_TRUE(current(d0_));
      q->synchronize();

      Bytes got(dstBytes);
      {
        CopyDesc down;
        down.elemSize = dstBytes;
        down.dst = MemRef::hostPtr(got.data());
        down.src = MemRef::dev(dstAlloc.get(), 0);
        down.hostMayBlock = true;
        detail::OrderedUse use(*dev1->libraryQueue(), {dstAlloc.get()});
        dev1->copy(down, *dev1->libraryQueue());
        use.commit()->synchronize();
      }
      scatter(dstImage, k.dstOffset, k.size, k.dstStep, k.elemSize,
              gather(srcImage, k.srcOffset, k.size, k.srcStep, k.elemSize));
      EXPECT_TRUE(datest::bytesEqual(dstImage, got, k.elemSize));

      srcAlloc.reset();
      if (user != nullptr) onDevice(d0_.ordinal(), [&] { EXPECT_EQ(cudaFree(user), cudaSuccess); });
    }
  }
}

TEST_F(MultiGpu, BackendRejectsBadCrossDeviceCopies) {
  using detail::CopyDesc;
  using detail::MemRef;
  const auto& dev0 = d0_.impl();
  const auto& dev1 = d1_.impl();
  auto src = dev0->allocate(256, *dev0->libraryQueue());
  auto dst = dev1->allocate(256, *dev1->libraryQueue());
  CopyDesc desc;
  desc.dims = 1;
  desc.size[0] = 10;
  desc.srcStep[0] = 32;  // 9 * 32 + 16 = 304 bytes > 256
  desc.dstStep[0] = 16;
  desc.elemSize = 16;
  desc.dst = MemRef::dev(dst.get(), 0);
  desc.src = MemRef::dev(src.get(), 0);
  datest::expectError(ErrorCode::OutOfRange, [&] { (void)dev1->copyAcrossDevices(desc, *dev0, *dev1->libraryQueue()); },
                      "source region beyond its allocation");
  desc.srcStep[0] = 16;
  // The queue must belong to the destination device.
  datest::expectError(ErrorCode::InvalidArgument,
                      [&] { (void)dev1->copyAcrossDevices(desc, *dev0, *dev0->libraryQueue()); }, "queue of the source");
  // The source memory must belong to the named source device.
  datest::expectError(ErrorCode::InvalidArgument, [&] { (void)dev1->copyAcrossDevices(desc, *dev1, *dev1->libraryQueue()); },
                      "source device is the destination");
  EXPECT_TRUE(current(d0_));
}

// ------------------------------------------------------------- ordering ---

/// Gated producer on a user stream of `from`; hand-over through a library call on
/// that stream; consumer copies to `to` on a stream of `to` and downloads there,
/// with no host synchronization in between.
void gatedCrossDeviceCopy(const ComputeDevice& from, const ComputeDevice& to, Stream consumer, int expectCurrent) {
  constexpr int kH = 40, kW = 96, kN = kH * kW;
  const int type = makeType(Depth::F32, 1);
  cudaStream_t producerStream = nullptr;
  onDevice(from.ordinal(), [&] {
    ASSERT_EQ(cudaStreamCreateWithFlags(&producerStream, cudaStreamNonBlocking), cudaSuccess);
  });
  ASSERT_NE(producerStream, nullptr);
  {
    GpuMat src(kH, kW, type, from);
    src.setTo(Scalar(0));  // blocking: ready for any stream
    GpuMat dst(kH, kW, type, to);
    GpuMat parent(kH + 3, kW + 5, type, to);
    parent.setTo(Scalar(-1));
    GpuMat window = parent(Range(1, 1 + kH), Range(2, 2 + kW));
    HostMat viaDst = HostMat::pinned({kH, kW}, type);
    HostMat viaWindow = HostMat::pinned({kH + 3, kW + 5}, type);
    Gate gate({from.ordinal(), to.ordinal()});
    ASSERT_TRUE(gate.valid());

    onDevice(from.ordinal(), [&] {
      gatedProduce<<<1, 256, 0, producerStream>>>(gate.device(), reinterpret_cast<float*>(src.data), kN,
                                                  cyclesFor50ms(from.ordinal()), 2.0f);
      ASSERT_EQ(cudaGetLastError(), cudaSuccess);
    });
    // Hand-over: a library call on the producer's stream reads src after
    // the kernel; src and `handed` now carry that stream's event.
    Stream producer = Stream::wrap(from, CUDAStreamPtr{producerStream});
    GpuMat handed = src.clone(producer);

    src.copyTo(dst, consumer);         // contiguous: peer copy engine
    handed.copyTo(window, consumer);   // strided destination: peer kernel
    dst.download(viaDst, consumer);
    parent.download(viaWindow, consumer);
    EXPECT_EQ(currentDevice(), expectCurrent);
    settle();
    EXPECT_FALSE(consumer.queryIfComplete()) << "the consumer stream finished while the producer was gated";
    EXPECT_TRUE(gate.open()) << "a cross-device copy blocked the host on the gated producer";
    consumer.waitForCompletion();
    EXPECT_EQ(currentDevice(), expectCurrent);

    std::vector<float> expected(kN);
    for (int i = 0; i < kN; ++i) expected[static_cast<std::size_t>(i)] = 2.0f + 0.5f * static_cast<float>(i);
    EXPECT_EQ(std::vector<float>(viaDst.ptr<float>(), viaDst.ptr<float>() + kN), expected);
    std::vector<float> window2((kH + 3) * (kW + 5), -1.0f);
    for (int r = 0; r < kH; ++r)
      for (int c = 0; c < kW; ++c)
        window2[static_cast<std::size_t>((r + 1) * (kW + 5) + c + 2)] = expected[static_cast<std::size_t>(r * kW + c)];
    EXPECT_EQ(std::vector<float>(viaWindow.ptr<float>(), viaWindow.ptr<float>() + window2.size()), window2);
  }
  onDevice(from.ordinal(), [&] { EXPECT_EQ(cudaStreamDestroy(producerStream), cudaSuccess); });
}

TEST_F(MultiGpu, ConsumerStreamOnOtherDeviceWaitsForGatedProducerWithoutHostSync) {
  gatedCrossDeviceCopy(d0_, d1_, Stream(d1_), d0_.ordinal());
  gatedCrossDeviceCopy(d1_, d0_, Stream(d0_), d0_.ordinal());
}

TEST_F(MultiGpu, DefaultStreamHandlesOfTwoDevicesAreNotConfused) {
  // 0 / cudaStreamPerThread name a different stream on each device but have one
  // handle value; the copy must still wait for the producer's recorded work.
  gatedCrossDeviceCopy(d0_, d1_, Stream::wrap(d1_, CUDAStreamPtr{cudaStreamPerThread}), d0_.ordinal());
  gatedCrossDeviceCopy(d0_, d1_, Stream::wrap(d1_, CUDAStreamPtr{nullptr}), d0_.ordinal());
}

TEST_F(MultiGpu, LaterWriteToTheSourceWaitsUntilTheCrossDeviceCopyHasReadIt) {
  // The copy is held back on the consumer stream of device 1 by a gated kernel; a
  // library write to the source on a stream of device 0 must wait for the copy's
  // event, which the copy recorded on the source allocation.
  constexpr int kH = 32, kW = 256;
  const int type = makeType(Depth::F32, 1);
  GpuMat src(kH, kW, type, d0_);
  src.setTo(Scalar(5));
  GpuMat parent(kH + 2, kW + 2, type, d1_);
  parent.setTo(Scalar(0));
  GpuMat window = parent(Range(1, 1 + kH), Range(1, 1 + kW));
  GpuMat scratch(1, 256, type, d1_);
  scratch.setTo(Scalar(0));
  Stream s1(d1_);
  Stream s0(d0_);
  {
    Gate gate({d0_.ordinal(), d1_.ordinal()});
    ASSERT_TRUE(gate.valid());
    onDevice(d1_.ordinal(), [&] {
      gatedProduce<<<1, 256, 0, static_cast<cudaStream_t>(s1.handle().stream)>>>(
          gate.device(), reinterpret_cast<float*>(scratch.data), 256, cyclesFor50ms(d1_.ordinal()), 1.0f);
      ASSERT_EQ(cudaGetLastError(), cudaSuccess);
    });
    src.copyTo(window, s1);    // queued behind the gate
    src.setTo(Scalar(9), s0);  // must not overtake the copy's read
    settle();
    EXPECT_FALSE(s0.queryIfComplete()) << "the write to the source did not wait for the cross-device copy";
    EXPECT_TRUE(gate.open()) << "a call blocked the host on the gated stream";
    s0.waitForCompletion();
    s1.waitForCompletion();
  }
  std::vector<float> expected(static_cast<std::size_t>((kH + 2) * (kW + 2)), 0.0f);
  for (int r = 0; r < kH; ++r)
    for (int c = 0; c < kW; ++c) expected[static_cast<std::size_t>((r + 1) * (kW + 2) + c + 1)] = 5.0f;
  const Bytes got = downloadBytes(parent);
  std::vector<float> values(got.size() / 4);
  std::memcpy(values.data(), got.data(), got.size());
  EXPECT_EQ(values, expected);
  const Bytes srcNow = downloadBytes(src);
  std::vector<float> srcValues(srcNow.size() / 4);
  std::memcpy(srcValues.data(), srcNow.data(), srcNow.size());
  EXPECT_EQ(srcValues, std::vector<float>(static_cast<std::size_t>(kH * kW), 9.0f));
  EXPECT_TRUE(current(d0_));
}

// ----------------------------------------------------------------- release ---

TEST_F(MultiGpu, DroppingTheLastHandleFreesOnTheArraysOwnDevice) {
  // Each round takes ~26% of the device and drops it while the other device is
  // current and work on it is still queued; if a free went to the wrong device (or
  // failed), the fourth round could not allocate.
  for (const auto& [owner, other] : {std::pair{d1_, d0_}, std::pair{d0_, d1_}}) {
    SCOPED_TRACE("array on " + owner.toString() + ", " + other.toString() + " current");
    ASSERT_EQ(cudaSetDevice(other.ordinal()), cudaSuccess);
    const std::size_t cols = std::size_t{1} << 20;
    const int rows = static_cast<int>(owner.totalMemory() / 100 * 26 / cols);
    Stream s(owner);
    for (int round = 0; round < 6; ++round) {
      GpuMat big(rows, static_cast<int>(cols), makeType(Depth::U8, 1), owner);
      big.setTo(Scalar(round + 1), s);
      GpuMat tail = big(Range(rows - 1, rows), Range(0, 16));
      HostMat seen = HostMat::pinned({1, 16}, makeType(Depth::U8, 1));
      tail.download(seen, s);
      big = GpuMat();
      tail = GpuMat();  // the last handle: released while setTo / download may still run
      EXPECT_TRUE(current(other));
      s.waitForCompletion();
      EXPECT_EQ(Bytes(seen.data(), seen.data() + 16), Bytes(16, static_cast<std::uint8_t>(round + 1)));
    }
    EXPECT_TRUE(current(other));
  }
}

// ------------------------------------------------------------------ DLPack ---

TEST_F(MultiGpu, DLPackExportOfSecondDeviceReportsItsOrdinalAndImportsBack) {
  const int type = makeType(Depth::F32, 2);
  const HostMat host = datest::randomHostMat({12, 34}, type, 31);
  GpuMatND a({12, 34}, type, d1_);
  a.upload(host);

  DLManagedTensorVersioned* t = toDLPackVersioned(a);
  ASSERT_NE(t, nullptr);
  EXPECT_TRUE(current(d0_));
  EXPECT_EQ(t->dl_tensor.device.device_type, kDLCUDA);
  EXPECT_EQ(t->dl_tensor.device.device_id, d1_.ordinal());
  EXPECT_EQ(ownerOf(t->dl_tensor.data), d1_.ordinal());
  GpuMatND back = fromDLPack(t);  // takes ownership of t
  EXPECT_TRUE(current(d0_));
  EXPECT_EQ(back.device(), d1_);
  EXPECT_EQ(back.getDevicePtr(), a.getDevicePtr());
  EXPECT_TRUE(datest::bytesEqual(datest::packedBytes(host), datest::downloadPacked(back), 8));

  DLManagedTensor* legacy = toDLPack(a);
  ASSERT_NE(legacy, nullptr);
  EXPECT_EQ(legacy->dl_tensor.device.device_id, d1_.ordinal());
  legacy->deleter(legacy);
}

struct UserTensor {
  DLManagedTensorVersioned managed{};
  std::int64_t shape[2] = {0, 0};
  bool* deleted = nullptr;
};

TEST_F(MultiGpu, DLPackImportOfATensorOnDevice1WhileDevice0IsCurrent) {
  constexpr int rows = 20, cols = 24;
  const Bytes image = datest::nonZeroBytes(rows * cols * 2, 41);
  void* memory = nullptr;
  onDevice(d1_.ordinal(), [&] {
    ASSERT_EQ(cudaMalloc(&memory, image.size()), cudaSuccess);
    ASSERT_EQ(cudaMemcpy(memory, image.data(), image.size(), cudaMemcpyHostToDevice), cudaSuccess);
    ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);  // a pageable upload may return before its DMA lands
  });
  ASSERT_NE(memory, nullptr);
  ASSERT_TRUE(current(d0_));

  bool deleted = false;
  auto* user = new UserTensor;
  user->deleted = &deleted;
  user->shape[0] = rows;
  user->shape[1] = cols;
  DLManagedTensorVersioned& m = user->managed;
  m.version = DLPackVersion{1, 0};
  m.manager_ctx = user;
  m.deleter = [](DLManagedTensorVersioned* self) {
    auto* owner = static_cast<UserTensor*>(self->manager_ctx);
    *owner->deleted = true;
    delete owner;
  };
  m.dl_tensor.data = memory;
  m.dl_tensor.device = DLDevice{kDLCUDA, d1_.ordinal()};
  m.dl_tensor.ndim = 2;
  m.dl_tensor.dtype = DLDataType{kDLUInt, 16, 1};
  m.dl_tensor.shape = user->shape;
  m.dl_tensor.strides = nullptr;
  m.dl_tensor.byte_offset = 0;
  {
    GpuMatND imported = fromDLPack(&m);
    EXPECT_TRUE(current(d0_));
    EXPECT_EQ(imported.device(), d1_);
    EXPECT_EQ(imported.getDevicePtr(), memory);
    EXPECT_EQ(imported.type(), makeType(Depth::U16, 1));
    EXPECT_TRUE(datest::bytesEqual(image, datest::downloadPacked(imported), 2));
    // A copy to device 0 reads it across devices.
    GpuMat onD0(rows, cols, makeType(Depth::U16, 1), d0_);
    GpuMat(imported).copyTo(onD0);
    EXPECT_TRUE(datest::bytesEqual(image, downloadBytes(onD0), 2));
    EXPECT_FALSE(deleted);
  }
  EXPECT_TRUE(deleted) << "the producer's deleter did not run when the last handle went away";
  EXPECT_TRUE(current(d0_));
  onDevice(d1_.ordinal(), [&] { EXPECT_EQ(cudaFree(memory), cudaSuccess); });
}

// ------------------------------------------------ other backends: staging ---

TEST(MultiBackend, CopyBetweenCudaAndOpenCLStillStagesThroughTheHost) {
  ComputeDevice cuda, opencl;
  for (const auto& d : datest::testDevices()) {
    if (d.backend() == ComputeBackend::cuda && !cuda.isValid()) cuda = d;
    if (d.backend() == ComputeBackend::opencl && !opencl.isValid()) opencl = d;
  }
  if (!cuda.isValid() || !opencl.isValid())
    GTEST_SKIP() << "needs a CUDA device and an OpenCL device (CUDA: "
                 << (cuda.isValid() ? "yes" : detail::backendOf(ComputeBackend::cuda).unavailableReason()) << ", OpenCL: "
                 << (opencl.isValid() ? "yes" : detail::backendOf(ComputeBackend::opencl).unavailableReason()) << ")";
  const int type = makeType(Depth::U8, 3);
  const HostMat host = datest::randomHostMat({19, 23}, type, 51);
  GpuMat onCuda(19, 23, type, cuda);
  onCuda.upload(host);
  GpuMat onOpenCL(19, 23, type, opencl);
  onCuda.copyTo(onOpenCL);
  EXPECT_TRUE(datest::bytesEqual(datest::packedBytes(host), downloadBytes(onOpenCL), 3));
  GpuMat back(19, 23, type, cuda);
  Stream s(cuda);
  onOpenCL.copyTo(back, s);
  s.waitForCompletion();
  EXPECT_TRUE(datest::bytesEqual(datest::packedBytes(host), downloadBytes(back), 3));
  // The CUDA backend declines sources of another backend.
  detail::CopyDesc desc;
  desc.elemSize = 16;
  desc.dst = detail::MemRef::dev(detail::allocationOf(back).get(), 0);
  desc.src = detail::MemRef::dev(detail::allocationOf(onOpenCL).get(), 0);
  EXPECT_FALSE(cuda.impl()->copyAcrossDevices(desc, *opencl.impl(), *cuda.impl()->libraryQueue()));
}

}  // namespace
