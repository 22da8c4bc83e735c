// Internal tests of the CUDA backend (src/cuda/): the strided copy engine, fill
// and convert against host references, and the backend's error contract.
// Everything except the fast division needs a CUDA device and skips without one.
#include <gtest/gtest.h>

#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <atomic>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <limits>
#include <random>
#include <thread>
#include <vector>

#include "backend/backend.hpp"
#include "backend/backend_registry.hpp"
#include "cuda/cuda_device.hpp"
#include "cuda/host_copy_threads.hpp"
#include "devicearray/error.hpp"
#include "kernels/prelude.h"

using namespace devicearray;
using namespace devicearray::detail;

namespace {

std::shared_ptr<DeviceImpl> firstCudaDevice() {
  auto devices = backendOf(ComputeBackend::cuda).devices();
  return devices.empty() ? nullptr : devices.front();
}

#define REQUIRE_CUDA_DEVICE(var)                                                                 \
  auto var = firstCudaDevice();                                                                  \
  if (!var) GTEST_SKIP() << "no CUDA device on this machine: " << backendOf(ComputeBackend::cuda).unavailableReason()

std::vector<std::uint8_t> randomBytes(std::size_t n, std::uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<std::uint8_t> v(n);
  for (auto& b : v) b = static_cast<std::uint8_t>(rng());
  return v;
}

/// Host reference of a strided copy (independent of the backend's code paths).
void referenceCopy(std::vector<std::uint8_t>& dst, std::size_t dstOffset, const std::vector<std::int64_t>& dstStep,
                   const std::vector<std::uint8_t>& src, std::size_t srcOffset,
                   const std::vector<std::int64_t>& srcStep, const std::vector<std::int64_t>& size,
                   std::size_t elemSize) {
  std::vector<std::int64_t> idx(size.size(), 0);
  for (;;) {
    std::int64_t d = static_cast<std::int64_t>(dstOffset), s = static_cast<std::int64_t>(srcOffset);
    for (std::size_t a = 0; a < size.size(); ++a) {
      d += idx[a] * dstStep[a];
      s += idx[a] * srcStep[a];
    }
    for (std::size_t b = 0; b < elemSize; ++b) dst[static_cast<std::size_t>(d) + b] = src[static_cast<std::size_t>(s) + b];
    int a = static_cast<int>(size.size()) - 1;
    for (; a >= 0; --a) {
      if (++idx[a] < size[a]) break;
      idx[a] = 0;
    }
    if (a < 0) return;
  }
}

std::size_t spanOf(const std::vector<std::int64_t>& size, const std::vector<std::int64_t>& step, std::size_t elemSize) {
  std::int64_t span = static_cast<std::int64_t>(elemSize);
  for (std::size_t a = 0; a < size.size(); ++a) span += (size[a] - 1) * step[a];
  return static_cast<std::size_t>(span);
}

CopyDesc makeDesc(const std::vector<std::int64_t>& size, const std::vector<std::int64_t>& dstStep,
                  const std::vector<std::int64_t>& srcStep, std::size_t elemSize, MemRef dst, MemRef src) {
  CopyDesc c;
  c.dims = static_cast<int>(size.size());
  for (std::size_t a = 0; a < size.size(); ++a) {
    c.size[a] = size[a];
    c.dstStep[a] = dstStep[a];
    c.srcStep[a] = srcStep[a];
  }
  c.elemSize = elemSize;
  c.dst = dst;
  c.src = src;
  return c;
}

std::shared_ptr<Allocation> deviceBytes(DeviceImpl& dev, const std::vector<std::uint8_t>& bytes) {
  auto a = dev.allocate(bytes.size(), *dev.libraryQueue());
  dev.libraryQueue()->synchronize();
  EXPECT_EQ(cudaMemcpy(a->handle(), bytes.data(), bytes.size(), cudaMemcpyHostToDevice), cudaSuccess);
  // A pageable cudaMemcpy to the device may return before its DMA lands; the copies
  // under test run on non-blocking streams, which do not wait for it.
  EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  return a;
}

std::vector<std::uint8_t> hostBytes(const Allocation& a) {
  std::vector<std::uint8_t> v(a.bytes());
  EXPECT_EQ(cudaMemcpy(v.data(), a.handle(), v.size(), cudaMemcpyDeviceToHost), cudaSuccess);
  return v;
}

struct LayoutCase {
  const char* name;
  std::vector<std::int64_t> size;
  std::vector<std::int64_t> dstStep;
  std::vector<std::int64_t> srcStep;
  std::size_t elemSize;
  std::size_t dstOffset;
  std::size_t srcOffset;

  /// Bytes a buffer needs to hold the source / destination layout at its offset.
  std::size_t srcBytes() const { return srcOffset + spanOf(size, srcStep, elemSize); }
  std::size_t dstBytes() const { return dstOffset + spanOf(size, dstStep, elemSize); }
  /// `dstInit` after the case's copy from `src`, computed on the host.
  std::vector<std::uint8_t> copiedByHand(std::vector<std::uint8_t> dstInit, const std::vector<std::uint8_t>& src) const {
    referenceCopy(dstInit, dstOffset, dstStep, src, srcOffset, srcStep, size, elemSize);
    return dstInit;
  }
};

std::vector<LayoutCase> layoutCases() {
  return {
      {"xyz_in_xyzw_to_packed", {1000}, {12}, {16}, 12, 0, 0},
      {"packed_to_xyz_in_xyzw", {777}, {16}, {12}, 12, 16, 0},
      {"roi_rows_16B_aligned", {64}, {256}, {512}, 48, 32, 64},
      {"wide_rows_memcpy2d", {33}, {200}, {160}, 100, 4, 8},
      {"three_d_view", {3, 5, 7}, {5 * 7 * 4, 7 * 4, 4}, {6 * 9 * 8, 9 * 8, 8}, 4, 0, 12},
      {"odd_offsets_bytes", {9, 11}, {11 * 3 + 5, 3}, {11 * 5, 5}, 3, 1, 3},
      {"four_d_transposed_source", {2, 3, 4, 5}, {3 * 4 * 5 * 8, 4 * 5 * 8, 5 * 8, 8}, {8, 2 * 8, 2 * 3 * 8, 2 * 3 * 4 * 8}, 8, 0, 0},
  };
}

}  // namespace

TEST(CudaFastDivision, MatchesIntegerDivisionBelow2To31) {
  std::mt19937 rng(7);
  const std::uint32_t divisors[] = {1, 2, 3, 5, 7, 12, 16, 255, 1000, 65535, 65536, 1u << 20, (1u << 31) - 1};
  for (std::uint32_t d : divisors) {
    da_u32 multiplier = 0, shift = 0;
    da_fast_div_magic(d, &multiplier, &shift);
    const std::uint32_t edges[] = {0, 1, d - 1, d, d + 1, 2 * d - 1, (1u << 31) - 1, (1u << 31) - 2};
    for (std::uint32_t n : edges) {
      if (n >= (1u << 31)) continue;
      EXPECT_EQ(da_fast_div(n, d, multiplier, shift), n / d) << n << " / " << d;
    }
    for (int i = 0; i < 20000; ++i) {
      const std::uint32_t n = rng() & 0x7FFFFFFFu;
      ASSERT_EQ(da_fast_div(n, d, multiplier, shift), n / d) << n << " / " << d;
    }
  }
}

TEST(CudaBackend, DeviceToDeviceStridedCopiesMatchHostReference) {
  REQUIRE_CUDA_DEVICE(dev);
  auto& q = *dev->libraryQueue();
  std::uint32_t seed = 1;
  for (const LayoutCase& c : layoutCases()) {
    SCOPED_TRACE(c.name);
    auto srcInit = randomBytes(c.srcBytes(), seed++);
    auto dstInit = randomBytes(c.dstBytes(), seed++);
    auto src = deviceBytes(*dev, srcInit);
    auto dst = deviceBytes(*dev, dstInit);
    dev->copy(makeDesc(c.size, c.dstStep, c.srcStep, c.elemSize, MemRef::dev(dst.get(), c.dstOffset),
                       MemRef::dev(src.get(), c.srcOffset)),
              q);
    q.synchronize();
    EXPECT_EQ(hostBytes(*dst), c.copiedByHand(dstInit, srcInit));
  }
}

TEST(CudaBackend, HostStridedUploadAndDownloadMatchHostReference) {
  REQUIRE_CUDA_DEVICE(dev);
  auto q = dev->createQueue();
  std::uint32_t seed = 100;
  for (const LayoutCase& c : layoutCases()) {
    SCOPED_TRACE(c.name);
    // Upload: host layout = src side, device layout = dst side.
    auto hostSrc = randomBytes(c.srcBytes(), seed++);
    auto devInit = randomBytes(c.dstBytes(), seed++);
    auto dst = deviceBytes(*dev, devInit);
    dev->copy(makeDesc(c.size, c.dstStep, c.srcStep, c.elemSize, MemRef::dev(dst.get(), c.dstOffset),
                       MemRef::hostPtr(hostSrc.data() + c.srcOffset)),
              *q);
    q->synchronize();
    const auto expected = c.copiedByHand(devInit, hostSrc);
    EXPECT_EQ(hostBytes(*dst), expected);

    // Download back into a host layout with gaps: bytes between elements stay untouched.
    auto hostDst = randomBytes(c.srcBytes(), seed++);
    auto hostExpected = hostDst;
    referenceCopy(hostExpected, c.srcOffset, c.srcStep, expected, c.dstOffset, c.dstStep, c.size, c.elemSize);
    dev->copy(makeDesc(c.size, c.srcStep, c.dstStep, c.elemSize, MemRef::hostPtr(hostDst.data() + c.srcOffset),
                       MemRef::dev(dst.get(), c.dstOffset)),
              *q);
    q->synchronize();
    EXPECT_EQ(hostDst, hostExpected);
  }
}

TEST(CudaBackend, FillWritesPatternOnlyInsideTheRegion) {
  REQUIRE_CUDA_DEVICE(dev);
  auto& q = *dev->libraryQueue();
  struct FillCase {
    const char* name;
    std::vector<std::int64_t> size, step;
    std::vector<std::uint8_t> pattern;
    std::size_t offset;
  };
  const std::vector<FillCase> cases = {
      {"xyz_pattern_in_xyzw", {50, 20}, {20 * 16 + 16, 16}, {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12}, 0},
      {"single_byte_pitched", {40, 70}, {100, 1}, {0xAB}, 3},
      {"float_contiguous_widened", {1024}, {4}, {0x00, 0x00, 0x80, 0x3F}, 16},
      {"rgb_u8_odd", {13, 17}, {17 * 3 + 1, 3}, {9, 8, 7}, 1},
      {"f64x4_32_bytes", {6}, {40}, std::vector<std::uint8_t>(32, 0x5C), 8},
  };
  std::uint32_t seed = 200;
  for (const FillCase& c : cases) {
    SCOPED_TRACE(c.name);
    const std::size_t elem = c.pattern.size();
    auto init = randomBytes(c.offset + spanOf(c.size, c.step, elem) + 5, seed++);
    auto a = deviceBytes(*dev, init);
    FillDesc f;
    f.dims = static_cast<int>(c.size.size());
    for (std::size_t i = 0; i < c.size.size(); ++i) {
      f.size[i] = c.size[i];
      f.step[i] = c.step[i];
    }
    f.elemSize = elem;
    std::memcpy(f.pattern.data(), c.pattern.data(), elem);
    f.dst = MemRef::dev(a.get(), c.offset);
    dev->fill(f, q);
    q.synchronize();
    auto expected = init;
    std::vector<std::int64_t> zero(c.size.size(), 0);
    referenceCopy(expected, c.offset, c.step, c.pattern, 0, zero, c.size, elem);
    EXPECT_EQ(hostBytes(*a), expected);
  }
}

TEST(CudaBackend, ConvertRoundsHalfToEvenAndSaturates) {
  REQUIRE_CUDA_DEVICE(dev);
  auto& q = *dev->libraryQueue();
  auto run = [&](Depth sd, Depth dd, const void* in, std::size_t n, void* out, double alpha, double beta) {
    std::vector<std::uint8_t> bytes(n * depthSize(sd));
    std::memcpy(bytes.data(), in, bytes.size());
    auto src = deviceBytes(*dev, bytes);
    auto dst = dev->allocate(n * depthSize(dd), q);
    ConvertDesc c;
    c.rows = 1;
    c.values = static_cast<std::int64_t>(n);
    c.srcDepth = sd;
    c.dstDepth = dd;
    c.srcStep = static_cast<std::int64_t>(bytes.size());
    c.dstStep = static_cast<std::int64_t>(n * depthSize(dd));
    c.alpha = alpha;
    c.beta = beta;
    c.src = MemRef::dev(src.get(), 0);
    c.dst = MemRef::dev(dst.get(), 0);
    dev->convert(c, q);
    q.synchronize();
    ASSERT_EQ(cudaMemcpy(out, dst->handle(), n * depthSize(dd), cudaMemcpyDeviceToHost), cudaSuccess);
  };
  {
    const float in[] = {2.5f, 3.5f, -1.f, 300.f, 0.49999997f, std::nanf(""), 254.5f, -0.5f};
    std::uint8_t out[8];
    run(Depth::F32, Depth::U8, in, 8, out, 1, 0);
    const std::uint8_t expect[] = {2, 4, 0, 255, 0, 0, 254, 0};
    EXPECT_EQ(std::vector<std::uint8_t>(out, out + 8), std::vector<std::uint8_t>(expect, expect + 8));
  }
  {
    // 2 * x + 0.5: 1.25 -> 3.0, -1.75 -> -3.0, 20000 -> 40000.5 saturates, -0.5 -> -0.5 -> -0 (even)
    const float in[] = {1.25f, -1.75f, 20000.f, -0.5f, 0.75f};
    std::int16_t out[5];
    run(Depth::F32, Depth::S16, in, 5, out, 2, 0.5);
    const std::int16_t expect[] = {3, -3, 32767, 0, 2};
    EXPECT_EQ(std::vector<std::int16_t>(out, out + 5), std::vector<std::int16_t>(expect, expect + 5));
  }
  {
    const std::uint8_t in[] = {0, 1, 255, 128};
    __half out[4];
    run(Depth::U8, Depth::F16, in, 4, out, 0.5, 0);
    const float expect[] = {0.f, 0.5f, 127.5f, 64.f};
    for (int i = 0; i < 4; ++i) EXPECT_EQ(__half2float(out[i]), expect[i]) << i;
  }
  {
    // S32 sources compute in double: 16777217 survives (it would not in float).
    const std::int32_t in[] = {16777217, -2147483647 - 1, 7};
    double out[3];
    run(Depth::S32, Depth::F64, in, 3, out, 1, 0.25);
    EXPECT_EQ(out[0], 16777217.25);
    EXPECT_EQ(out[1], -2147483648.0 + 0.25);
    EXPECT_EQ(out[2], 7.25);
  }
  {
    const double in[] = {2.5e9, -2.5, -3.5, 1e-300};
    std::int32_t out[4];
    run(Depth::F64, Depth::S32, in, 4, out, 1, 0);
    const std::int32_t expect[] = {std::numeric_limits<std::int32_t>::max(), -2, -4, 0};
    EXPECT_EQ(std::vector<std::int32_t>(out, out + 4), std::vector<std::int32_t>(expect, expect + 4));
  }
  {
    const std::int8_t in[] = {-128, -1, 0, 127};
    std::uint16_t out[4];
    run(Depth::S8, Depth::U16, in, 4, out, 1, 0);
    const std::uint16_t expect[] = {0, 0, 0, 127};
    EXPECT_EQ(std::vector<std::uint16_t>(out, out + 4), std::vector<std::uint16_t>(expect, expect + 4));
  }
}

TEST(CudaBackend, ErrorsNameTheProblem) {
  REQUIRE_CUDA_DEVICE(dev);
  auto& q = *dev->libraryQueue();
  KernelLaunch l;
  l.name = "da_no_such_kernel";
  try {
    dev->launch(l, q);
    ADD_FAILURE() << "launch of an unknown kernel did not throw";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::Unsupported);
    EXPECT_NE(std::string(e.what()).find("da_no_such_kernel"), std::string::npos) << e.what();
  }
  try {
    (void)dev->allocate(std::size_t{1} << 60, q);
    ADD_FAILURE() << "a 2^60-byte allocation did not throw";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::OutOfMemory);
    EXPECT_NE(std::string(e.what()).find(std::to_string(std::size_t{1} << 60)), std::string::npos) << e.what();
  }
  std::vector<int> hostMemory(16);
  try {
    (void)dev->adopt(hostMemory.data(), 64);
    ADD_FAILURE() << "adopting pageable host memory did not throw";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::InvalidArgument) << e.what();
  }
  // The library keeps working after the errors above (no sticky state).
  auto a = dev->allocate(256, q);
  EXPECT_NE(a->handle(), nullptr);
}

TEST(CudaBackend, WrappedStreamsAndTheCurrentDeviceAreRespected) {
  REQUIRE_CUDA_DEVICE(dev);
  cudaStream_t user = nullptr;
  ASSERT_EQ(cudaSetDevice(dev->ordinal()), cudaSuccess);
  ASSERT_EQ(cudaStreamCreate(&user), cudaSuccess);
  auto wrapped = dev->wrapQueue(user);
  EXPECT_EQ(wrapped->native(), user);
  auto legacy = dev->wrapQueue(nullptr);
  EXPECT_EQ(legacy->native(), nullptr);
  auto perThread = dev->wrapQueue(cudaStreamPerThread);
  auto a = dev->allocate(4096, *wrapped);
  auto ev = wrapped->recordEvent();
  perThread->waitEvent(*ev);
  EXPECT_EQ(ev->queueKey(), static_cast<const void*>(user));
  wrapped->synchronize();
  EXPECT_TRUE(wrapped->query());
  a.reset();  // freed in stream order on the library stream
  wrapped.reset();
  EXPECT_EQ(cudaStreamDestroy(user), cudaSuccess);  // non-owning wrapper left it alive
  EXPECT_NE(dev->nativeContext(), nullptr);
}

// Host side of the pageable staging: parallelMemcpy splits large copies over the
// copy threads (ctest runs this binary with DEVICEARRAY_COPY_THREADS=4, so the
// split runs even on a 2-core machine). No device needed.
TEST(HostCopyThreads, ParallelMemcpyCopiesEveryByteFromSeveralCallersAtOnce) {
  EXPECT_GE(cuda::copyThreadCount(), 1u) << "DEVICEARRAY_COPY_THREADS=4 should start 3 workers";
  const std::size_t sizes[] = {0, 1, 4095, (512u << 10) - 1, 512u << 10, (512u << 10) + 1, (1u << 20) + 7,
                               (5u << 20) + 3, (33u << 20) + 1};
  constexpr std::size_t kGuard = 64;
  std::vector<std::thread> callers;
  std::atomic<int> mismatches{0};
  for (int t = 0; t < 3; ++t) {
    callers.emplace_back([&, t] {
      for (std::size_t n : sizes) {
        // Odd offsets on both sides: the parts must not assume alignment.
        const auto src = randomBytes(n + 3, static_cast<std::uint32_t>(1000 + t * 17 + n % 97));
        auto dst = randomBytes(n + 5 + kGuard, static_cast<std::uint32_t>(2000 + t));
        const auto before = dst;
        cuda::parallelMemcpy(dst.data() + 5, src.data() + 3, n);
        if (std::memcmp(dst.data() + 5, src.data() + 3, n) != 0) ++mismatches;
        if (std::memcmp(dst.data(), before.data(), 5) != 0 ||
            std::memcmp(dst.data() + 5 + n, before.data() + 5 + n, kGuard) != 0)
          ++mismatches;  // bytes outside the destination range changed
      }
    });
  }
  for (auto& c : callers) c.join();
  EXPECT_EQ(mismatches.load(), 0);
}
