// Internal backend interface (src/backend/backend.hpp), exercised directly on
// every DeviceImpl of every backend: memory reuse, the strided copy engine in all
// directions, fills, depth conversion, kernel launch, events, queue ordering
// through allocations, queue wrapping and adoption of a caller's OpenCL context.
// Every expectation is computed here on the host, independently of the library.
#define CL_TARGET_OPENCL_VERSION 120
#include <CL/cl.h>
#include <dlfcn.h>
#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <functional>
#include <limits>
#include <memory>
#include <random>
#include <string>
#include <thread>
#include <type_traits>
#include <vector>

#include "backend/backend.hpp"

namespace {

using devicearray::ComputeBackend;
using devicearray::Depth;
using devicearray::Error;
using devicearray::ErrorCode;
using devicearray::detail::Allocation;
using devicearray::detail::CopyDesc;
using devicearray::detail::ConvertDesc;
using devicearray::detail::DeviceImpl;
using devicearray::detail::EventImpl;
using devicearray::detail::FillDesc;
using devicearray::detail::KernelArg;
using devicearray::detail::KernelLaunch;
using devicearray::detail::MemRef;
using devicearray::detail::OrderedUse;
using devicearray::detail::QueueImpl;
using Bytes = std::vector<std::uint8_t>;
using DevicePtr = std::shared_ptr<DeviceImpl>;

std::vector<DevicePtr> allDevices() {
  static const std::vector<DevicePtr> devices = [] {
    std::vector<DevicePtr> v = devicearray::detail::cudaDevices();
    for (auto& d : devicearray::detail::openclDevices()) v.push_back(d);
    return v;
  }();
  return devices;
}

struct DeviceParamName {
  std::string operator()(const testing::TestParamInfo<DevicePtr>& info) const {
    return std::string(info.param->backend() == ComputeBackend::cuda ? "cuda" : "opencl") +
           std::to_string(info.param->ordinal());
  }
};

Bytes randomBytes(std::size_t n, std::uint32_t seed) {
  std::mt19937 rng(seed);
  Bytes v(n);
  for (auto& b : v) b = static_cast<std::uint8_t>(rng());
  return v;
}

template <class Fn>
void expectErrorCode(ErrorCode code, Fn&& fn, const std::string& what) {
  try {
    fn();
    ADD_FAILURE() << "expected Error(" << devicearray::toString(code) << "): " << what;
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), code) << what << ": " << e.what();
    EXPECT_FALSE(std::string(e.what()).empty());
  }
}

testing::AssertionResult sameBytes(const Bytes& expected, const Bytes& actual) {
  if (expected.size() != actual.size())
    return testing::AssertionFailure() << "size " << actual.size() << ", expected " << expected.size();
  for (std::size_t i = 0; i < expected.size(); ++i)
    if (expected[i] != actual[i])
      return testing::AssertionFailure() << "first difference at byte " << i << ": got " << int(actual[i])
                                         << ", expected " << int(expected[i]);
  return testing::AssertionSuccess();
}

// ------------------------------------------------------------ fixture ----

class Backend : public testing::TestWithParam<DevicePtr> {
 protected:
  DeviceImpl& dev() { return *GetParam(); }
  QueueImpl& q() { return *GetParam()->sdkQueue(); }
  bool isOpenCL() { return dev().backend() == ComputeBackend::opencl; }

  /// Blocking contiguous upload of `bytes` at `offset`.
  void write(Allocation& a, std::size_t offset, const Bytes& bytes, QueueImpl* queue = nullptr) {
    QueueImpl& qq = queue ? *queue : q();
    CopyDesc c;
    c.elemSize = bytes.size();
    c.dst = MemRef::dev(&a, offset);
    c.src = MemRef::hostPtr(const_cast<std::uint8_t*>(bytes.data()));
    dev().copy(c, qq);
    qq.synchronize();
  }
  /// Blocking contiguous download of `n` bytes at `offset`.
  Bytes read(Allocation& a, std::size_t offset, std::size_t n, QueueImpl* queue = nullptr) {
    QueueImpl& qq = queue ? *queue : q();
    Bytes out(n);
    CopyDesc c;
    c.elemSize = n;
    c.dst = MemRef::hostPtr(out.data());
    c.src = MemRef::dev(&a, offset);
    dev().copy(c, qq);
    qq.synchronize();
    return out;
  }
  std::shared_ptr<Allocation> allocFilled(std::size_t n, std::uint32_t seed, Bytes* contents = nullptr) {
    auto a = dev().allocate(n, q());
    Bytes init = randomBytes(n, seed);
    write(*a, 0, init);
    if (contents) *contents = init;
    return a;
  }
  /// A fill of the first `bytes` bytes (a multiple of 4) of `a` with the byte `value`,
  /// as 4-byte elements.
  static FillDesc wordFill(Allocation& a, std::size_t bytes, std::uint8_t value) {
    FillDesc f;
    f.dims = 1;
    f.size[0] = static_cast<std::int64_t>(bytes / 4);
    f.step[0] = 4;
    f.elemSize = 4;
    f.dst = MemRef::dev(&a, 0);
    std::memset(f.pattern.data(), value, 4);
    return f;
  }
  /// Enqueues wordFill(a, bytes, value) on `queue` after the earlier users of `a`
  /// (non-blocking).
  void orderedFill(QueueImpl& queue, Allocation& a, std::size_t bytes, std::uint8_t value) {
    OrderedUse use(queue, {&a});
    dev().fill(wordFill(a, bytes, value), queue);
    use.commit();
  }
};

// --------------------------------------------------------- allocations ----

TEST_P(Backend, ReleasedMemoryIsReusedAndKeepsWorking) {
  auto a = dev().allocate(1000, q());
  ASSERT_NE(a->handle(), nullptr);
  EXPECT_EQ(a->bytes(), 1000u);
  EXPECT_FALSE(a->external());
  const void* first = a->handle();
  write(*a, 0, randomBytes(1000, 1));
  a.reset();
  auto b = dev().allocate(1000, q());
  // The OpenCL buffer cache hands back the same cl_mem; CUDA's pool may or may
  // not return the same address, so only OpenCL asserts identity.
  if (isOpenCL()) EXPECT_EQ(b->handle(), first);
  const Bytes data = randomBytes(1000, 2);
  write(*b, 0, data);
  EXPECT_TRUE(sameBytes(data, read(*b, 0, 1000)));
}

TEST_P(Backend, ReuseAcrossQueuesWaitsForThePreviousUser) {
  const std::size_t n = std::size_t{32} << 20;
  auto q1 = dev().createQueue();
  auto q2 = dev().createQueue();
  auto a = dev().allocate(n, *q1);
  orderedFill(*q1, *a, n, 0x11);
  a.reset();  // returned while q1 may still be filling
  auto b = dev().allocate(n, *q2);
  orderedFill(*q2, *b, n, 0x22);
  q2->synchronize();
  q1->synchronize();
  const Bytes got = read(*b, 0, n, q2.get());
  EXPECT_TRUE(sameBytes(Bytes(n, 0x22), got));
}

TEST_P(Backend, HugeAllocationIsOutOfMemory) {
  expectErrorCode(ErrorCode::OutOfMemory, [&] { dev().allocate(std::numeric_limits<std::size_t>::max() / 4, q()); },
                  "allocate(SIZE_MAX / 4)");
}

// ------------------------------------------------------------- copies ----

struct Layout {
  std::string name;
  std::vector<std::int64_t> size;
  std::vector<std::int64_t> dstStep, srcStep;
  std::size_t elemSize = 0;
  std::size_t dstOffset = 0, srcOffset = 0;
};

std::int64_t extentOf(const std::vector<std::int64_t>& size, const std::vector<std::int64_t>& step, std::size_t e) {
  std::int64_t hi = static_cast<std::int64_t>(e);
  for (std::size_t i = 0; i < size.size(); ++i) hi += (size[i] - 1) * step[i];
  return hi;
}

/// Steps with the innermost axis `inner` bytes apart and `pad[i]` extra bytes
/// after each row of axis i + 1.
std::vector<std::int64_t> paddedSteps(const std::vector<std::int64_t>& size, std::int64_t inner,
                                      const std::vector<std::int64_t>& pad) {
  std::vector<std::int64_t> step(size.size());
  std::int64_t s = inner;
  for (std::size_t i = size.size(); i-- > 0;) {
    step[i] = s;
    s = s * size[i] + (i > 0 ? pad[i - 1] : 0);
  }
  return step;
}

std::vector<std::int64_t> packedStepsOf(const std::vector<std::int64_t>& size, std::int64_t e) {
  return paddedSteps(size, e, std::vector<std::int64_t>(size.size(), 0));
}

/// The host reference: element by element, offsets from the index, no shortcuts.
void referenceCopy(const Layout& l, std::uint8_t* dst, const std::uint8_t* src) {
  const std::size_t dims = l.size.size();
  std::vector<std::int64_t> idx(dims, 0);
  while (true) {
    std::int64_t d = 0, s = 0;
    for (std::size_t i = 0; i < dims; ++i) {
      d += idx[i] * l.dstStep[i];
      s += idx[i] * l.srcStep[i];
    }
    std::memcpy(dst + d, src + s, l.elemSize);
    std::size_t axis = dims;
    while (axis > 0 && ++idx[axis - 1] == l.size[axis - 1]) idx[--axis] = 0;
    if (axis == 0) return;
  }
}

std::vector<Layout> copyLayouts(std::size_t e) {
  const auto E = static_cast<std::int64_t>(e);
  std::vector<Layout> v;
  v.push_back({"contiguous", {}, {}, {}, e * 37, 0, 0});
  v.push_back({"contiguousOddOffsets", {}, {}, {}, e * 29, 3, 5});
  v.push_back({"pitched2d", {13}, {E * 9 + 3}, {E * 7 + 5}, e * 7, 0, 0});
  v.push_back({"pitched2dPackedSource", {11}, {E * 6}, {E * 5}, e * 5, 16, 0});
  {
    const std::vector<std::int64_t> size = {5, 7};
    v.push_back({"strided3d", size, {E * 23, E * 3}, {E * 15, E * 2}, e, 7, 2});
  }
  {
    const std::vector<std::int64_t> size = {4, 6};
    v.push_back({"strided3dRect", size, {E * 21, E * 3}, {E * 14, E * 2}, e, 0, 32});
  }
  {
    const std::vector<std::int64_t> size = {3, 2, 5, 3, 7};
    v.push_back({"strided5d", size, paddedSteps(size, 2 * E, {1, E, 3, 2 * E}), paddedSteps(size, E + 1, {E, 5, 0, 1}),
                 e, 1, 16});
    v.push_back({"strided5dPackedSource", size, paddedSteps(size, 3 * E, {0, 2, E, 1}), packedStepsOf(size, E), e, 8, 0});
    v.push_back({"strided5dPackedDestination", size, packedStepsOf(size, E), paddedSteps(size, 2 * E, {3, 0, E, 1}), e,
                 0, 4});
  }
  return v;
}

enum class Direction { hostToDevice, deviceToHost, deviceToDeviceSameBuffer, deviceToDeviceTwoBuffers };
const char* directionName(Direction d) {
  switch (d) {
    case Direction::hostToDevice: return "host->device";
    case Direction::deviceToHost: return "device->host";
    case Direction::deviceToDeviceSameBuffer: return "device->device (one buffer)";
    case Direction::deviceToDeviceTwoBuffers: return "device->device (two buffers)";
  }
  return "";
}

TEST_P(Backend, StridedCopiesMatchTheHostReferenceInEveryDirection) {
  std::uint32_t seed = 100;
  for (std::size_t e : {1, 3, 4, 12, 16}) {
    for (const Layout& l : copyLayouts(e)) {
      for (Direction dir : {Direction::hostToDevice, Direction::deviceToHost, Direction::deviceToDeviceSameBuffer,
                            Direction::deviceToDeviceTwoBuffers}) {
        SCOPED_TRACE(l.name + ", element size " + std::to_string(e) + ", " + directionName(dir));
        const auto srcSpan = static_cast<std::size_t>(extentOf(l.size, l.srcStep, l.elemSize));
        const auto dstSpan = static_cast<std::size_t>(extentOf(l.size, l.dstStep, l.elemSize));
        const std::size_t srcBytes = l.srcOffset + srcSpan + 5;
        const std::size_t dstBytes = l.dstOffset + dstSpan + 7;
        const Bytes srcInit = randomBytes(srcBytes, ++seed);
        const Bytes dstInit = randomBytes(dstBytes, ++seed);
        Bytes expected = dstInit;
        referenceCopy(l, expected.data() + l.dstOffset, srcInit.data() + l.srcOffset);

        CopyDesc c;
        c.dims = static_cast<int>(l.size.size());
        for (int i = 0; i < c.dims; ++i) {
          c.size[i] = l.size[i];
          c.dstStep[i] = l.dstStep[i];
          c.srcStep[i] = l.srcStep[i];
        }
        c.elemSize = l.elemSize;
        Bytes got;
        try {
        switch (dir) {
          case Direction::hostToDevice: {
            auto d = dev().allocate(dstBytes, q());
            write(*d, 0, dstInit);
            c.src = MemRef::hostPtr(const_cast<std::uint8_t*>(srcInit.data() + l.srcOffset));
            c.dst = MemRef::dev(d.get(), l.dstOffset);
            dev().copy(c, q());
            q().synchronize();
            got = read(*d, 0, dstBytes);
            break;
          }
          case Direction::deviceToHost: {
            auto s = dev().allocate(srcBytes, q());
            write(*s, 0, srcInit);
            got = dstInit;
            c.src = MemRef::dev(s.get(), l.srcOffset);
            c.dst = MemRef::hostPtr(got.data() + l.dstOffset);
            dev().copy(c, q());
            q().synchronize();  // covers the host-side unpack of staged transfers
            break;
          }
          case Direction::deviceToDeviceTwoBuffers: {
            auto s = dev().allocate(srcBytes, q());
            auto d = dev().allocate(dstBytes, q());
            write(*s, 0, srcInit);
            write(*d, 0, dstInit);
            c.src = MemRef::dev(s.get(), l.srcOffset);
            c.dst = MemRef::dev(d.get(), l.dstOffset);
            dev().copy(c, q());
            got = read(*d, 0, dstBytes);
            break;
          }
          case Direction::deviceToDeviceSameBuffer: {
            // Source region first, destination region after it, in one buffer.
            auto b = dev().allocate(srcBytes + dstBytes, q());
            Bytes both = srcInit;
            both.insert(both.end(), dstInit.begin(), dstInit.end());
            write(*b, 0, both);
            c.src = MemRef::dev(b.get(), l.srcOffset);
            c.dst = MemRef::dev(b.get(), srcBytes + l.dstOffset);
            dev().copy(c, q());
            const Bytes all = read(*b, 0, srcBytes + dstBytes);
            EXPECT_TRUE(sameBytes(srcInit, Bytes(all.begin(), all.begin() + static_cast<std::ptrdiff_t>(srcBytes))))
                << "the source region changed";
            got.assign(all.begin() + static_cast<std::ptrdiff_t>(srcBytes), all.end());
            break;
          }
        }
        } catch (const Error& err) {
          ADD_FAILURE() << err.what();
          continue;
        }
        EXPECT_TRUE(sameBytes(expected, got));
      }
    }
  }
}

TEST_P(Backend, CopyOutsideTheAllocationIsRejected) {
  auto a = dev().allocate(64, q());
  Bytes host(128);
  CopyDesc c;
  c.elemSize = 65;
  c.dst = MemRef::dev(a.get(), 0);
  c.src = MemRef::hostPtr(host.data());
  expectErrorCode(ErrorCode::OutOfRange, [&] { dev().copy(c, q()); }, "65 bytes into a 64-byte allocation");
  c.elemSize = 16;
  c.dims = 1;
  c.size[0] = 5;
  c.dstStep[0] = 16;
  c.srcStep[0] = 16;
  c.dst = MemRef::dev(a.get(), 1);
  expectErrorCode(ErrorCode::OutOfRange, [&] { dev().copy(c, q()); }, "5 rows of 16 at offset 1");
}

// --------------------------------------------------------------- fills ----

TEST_P(Backend, FillsWritePatternsOfEverySizeIntoEveryLayout) {
  std::uint32_t seed = 500;
  for (std::size_t p = 1; p <= 32; ++p) {
    const Bytes pattern = randomBytes(p, static_cast<std::uint32_t>(p));
    const auto P = static_cast<std::int64_t>(p);
    struct FillCase {
      std::string name;
      std::vector<std::int64_t> size, step;
      std::size_t offset;
    };
    const std::vector<FillCase> cases = {
        {"single", {}, {}, 3},
        {"contiguousAligned", {37}, {P}, p * 2},
        {"contiguousOddOffset", {41}, {P}, 1},
        {"pitched", {9, 5}, {P * 7, P}, 0},
        {"strided3d", {3, 4, 5}, {P * 31 + 2, P * 7 + 1, P + 1}, 5},
    };
    for (const FillCase& fc : cases) {
      SCOPED_TRACE(fc.name + ", pattern of " + std::to_string(p) + " bytes");
      const std::size_t bytes = fc.offset + static_cast<std::size_t>(extentOf(fc.size, fc.step, p)) + 9;
      Bytes expected;
      auto a = allocFilled(bytes, ++seed, &expected);
      Layout l{"", fc.size, fc.step, std::vector<std::int64_t>(fc.size.size(), 0), p, 0, 0};
      referenceCopy(l, expected.data() + fc.offset, pattern.data());
      FillDesc f;
      f.dims = static_cast<int>(fc.size.size());
      for (int i = 0; i < f.dims; ++i) {
        f.size[i] = fc.size[i];
        f.step[i] = fc.step[i];
      }
      f.elemSize = p;
      f.dst = MemRef::dev(a.get(), fc.offset);
      std::memcpy(f.pattern.data(), pattern.data(), p);
      dev().fill(f, q());
      EXPECT_TRUE(sameBytes(expected, read(*a, 0, bytes)));
    }
  }
}

// ---------------------------------------------------------- conversion ----

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

// --------------------------------------------------------------- launch ----

TEST_P(Backend, LaunchRunsASharedKernelWithBufferOffsets) {
  const int n = 1000;
  std::vector<float> x(n), y(n), expected(n);
  for (int i = 0; i < n; ++i) {
    x[static_cast<std::size_t>(i)] = static_cast<float>(i % 97) * 0.25f;  // exact products with a = 2.5
    y[static_cast<std::size_t>(i)] = static_cast<float>(i % 13) - 6.0f;
    expected[static_cast<std::size_t>(i)] = 2.5f * x[static_cast<std::size_t>(i)] + y[static_cast<std::size_t>(i)];
  }
  const std::size_t xOff = 16, yOff = 32;
  auto bx = dev().allocate(xOff + n * sizeof(float), q());
  auto by = dev().allocate(yOff + n * sizeof(float), q());
  Bytes xb(n * sizeof(float)), yb(n * sizeof(float));
  std::memcpy(xb.data(), x.data(), xb.size());
  std::memcpy(yb.data(), y.data(), yb.size());
  write(*bx, xOff, xb);
  write(*by, yOff, yb);
  KernelLaunch l;
  l.name = "da_selftest_axpy";
  l.workDims = 1;
  l.globalSize = {static_cast<std::size_t>(n), 1, 1};
  l.args = {KernelArg::i32(n), KernelArg::f32(2.5f), KernelArg::buf(bx.get(), xOff), KernelArg::buf(by.get(), yOff)};
  dev().launch(l, q());
  const Bytes got = read(*by, yOff, n * sizeof(float));
  std::vector<float> result(n);
  std::memcpy(result.data(), got.data(), got.size());
  for (int i = 0; i < n; ++i) ASSERT_EQ(result[static_cast<std::size_t>(i)], expected[static_cast<std::size_t>(i)]) << "index " << i;

  KernelLaunch unknown = l;
  unknown.name = "da_no_such_kernel";
  expectErrorCode(ErrorCode::Unsupported, [&] { dev().launch(unknown, q()); }, "unknown kernel");
  KernelLaunch missing = l;
  missing.args.pop_back();
  expectErrorCode(ErrorCode::InvalidArgument, [&] { dev().launch(missing, q()); }, "missing argument");
  // A fixed work-group size must divide a 1-D global size.
  KernelLaunch ragged = l;
  ragged.localSize = 64;
  ragged.globalSize = {65, 1, 1};
  expectErrorCode(ErrorCode::InvalidArgument, [&] { dev().launch(ragged, q()); }, "global size not a multiple");
  KernelLaunch twoD = l;
  twoD.localSize = 64;
  twoD.workDims = 2;
  twoD.globalSize = {64, 2, 1};
  expectErrorCode(ErrorCode::InvalidArgument, [&] { dev().launch(twoD, q()); }, "work-group size of a 2-D launch");
  // ... and one that does is honoured: the same axpy again, in groups of 64.
  KernelLaunch grouped = l;
  grouped.localSize = 64;
  grouped.globalSize = {(static_cast<std::size_t>(n) + 63) / 64 * 64, 1, 1};
  dev().launch(grouped, q());
  const Bytes again = read(*by, yOff, n * sizeof(float));
  std::memcpy(result.data(), again.data(), again.size());
  for (int i = 0; i < n; ++i)
    ASSERT_EQ(result[static_cast<std::size_t>(i)], expected[static_cast<std::size_t>(i)] + 2.5f * x[static_cast<std::size_t>(i)])
        << "index " << i;
}

TEST_P(Backend, ConcurrentLaunchesFromManyThreadsKeepTheirArguments) {
  // One kernel object's arguments are shared state on OpenCL: threads launching
  // the same kernel with different buffers and scalars must not mix them up.
  const int n = 4096, threads = 4, rounds = 25;
  std::vector<std::shared_ptr<Allocation>> xs, ys;
  std::vector<std::shared_ptr<QueueImpl>> queues;
  for (int t = 0; t < threads; ++t) {
    queues.push_back(dev().createQueue());
    std::vector<float> x(n, static_cast<float>(t + 1)), y(n, 0.0f);
    Bytes xb(n * sizeof(float)), yb(n * sizeof(float));
    std::memcpy(xb.data(), x.data(), xb.size());
    std::memcpy(yb.data(), y.data(), yb.size());
    xs.push_back(dev().allocate(xb.size(), *queues.back()));
    ys.push_back(dev().allocate(yb.size(), *queues.back()));
    write(*xs.back(), 0, xb, queues.back().get());
    write(*ys.back(), 0, yb, queues.back().get());
  }
  std::vector<std::thread> pool;
  std::vector<std::string> errors(threads);
  for (int t = 0; t < threads; ++t)
    pool.emplace_back([&, t] {
      try {
        for (int r = 0; r < rounds; ++r) {
          KernelLaunch l;
          l.name = "da_selftest_axpy";
          l.globalSize = {static_cast<std::size_t>(n), 1, 1};
          l.args = {KernelArg::i32(n), KernelArg::f32(static_cast<float>(t + 1)), KernelArg::buf(xs[t].get()),
                    KernelArg::buf(ys[t].get())};
          dev().launch(l, *queues[t]);
        }
      } catch (const std::exception& e) {
        errors[t] = e.what();
      }
    });
  for (auto& th : pool) th.join();
  for (int t = 0; t < threads; ++t) {
    EXPECT_EQ(errors[t], "") << "thread " << t;
    const Bytes got = read(*ys[t], 0, n * sizeof(float), queues[t].get());
    std::vector<float> y(n);
    std::memcpy(y.data(), got.data(), got.size());
    const float expected = static_cast<float>(rounds * (t + 1) * (t + 1));  // small integers: exact
    for (int i = 0; i < n; ++i) ASSERT_EQ(y[static_cast<std::size_t>(i)], expected) << "thread " << t << " index " << i;
  }
}

// ------------------------------------------------------ events, queues ----

TEST_P(Backend, EventsCompleteInOrderAndMeasureTime) {
  auto queue = dev().createQueue();
  auto a = dev().allocate(std::size_t{8} << 20, *queue);
  auto start = dev().recordTimingEvent(*queue);
  dev().fill(wordFill(*a, std::size_t{8} << 20, 0), *queue);
  auto end = dev().recordTimingEvent(*queue);
  EXPECT_EQ(start->queueKey(), queue->key());
  end->synchronize();
  EXPECT_TRUE(start->query());
  EXPECT_TRUE(end->query());
  EXPECT_TRUE(queue->query());
  const float ms = start->elapsedMs(*end);
  EXPECT_GE(ms, 0.0f);
  EXPECT_LT(ms, 60000.0f);
  // Waiting on a completed event of another queue is a no-op, not an error.
  q().waitEvent(*end);
  q().synchronize();
}

TEST_P(Backend, TwoQueuesAreOrderedThroughAnAllocation) {
  const std::size_t n = std::size_t{16} << 20;
  auto q1 = dev().createQueue();
  auto q2 = dev().createQueue();
  auto a = dev().allocate(n, *q1);
  const Bytes data = randomBytes(n, 77);
  {
    // q1 uploads (non-blocking); q2 must see the data without a host sync.
    OrderedUse use(*q1, {a.get()});
    CopyDesc c;
    c.elemSize = n;
    c.dst = MemRef::dev(a.get(), 0);
    c.src = MemRef::hostPtr(const_cast<std::uint8_t*>(data.data()));
    dev().copy(c, *q1);
    use.commit();
  }
  Bytes got(n);
  {
    OrderedUse use(*q2, {a.get()});
    CopyDesc c;
    c.elemSize = n;
    c.dst = MemRef::hostPtr(got.data());
    c.src = MemRef::dev(a.get(), 0);
    dev().copy(c, *q2);
    use.commit();
  }
  q2->synchronize();
  EXPECT_TRUE(sameBytes(data, got));
  q1->synchronize();
  // Write-after-write: q1 fills, q2 fills after it; q2's pattern must win.
  orderedFill(*q1, *a, n, 0x5A);
  orderedFill(*q2, *a, n, 0xC3);
  q2->synchronize();
  q1->synchronize();
  EXPECT_TRUE(sameBytes(Bytes(n, 0xC3), read(*a, 0, n)));
}

TEST_P(Backend, WrappedQueuesKeepTheirHandleAndDevice) {
  // (On CUDA a null handle is the legacy default stream, not the library's own.)
  if (isOpenCL()) {
    auto wrapped = dev().wrapQueue(nullptr);
    ASSERT_TRUE(wrapped);
    EXPECT_EQ(wrapped->native(), q().native());
    EXPECT_EQ(wrapped->device().get(), &dev());
  }
  auto own = dev().createQueue();
  auto again = dev().wrapQueue(own->native());
  EXPECT_EQ(again->native(), own->native());
  EXPECT_EQ(again->device().get(), &dev());
}

// ----------------------------------------------- OpenCL-only: interop ----

/// The caller's side of OpenCL interop, through the ICD loader the library
/// already loaded (the test itself does not link OpenCL).
struct ClApi {
  decltype(&::clCreateContext) createContext = nullptr;
  decltype(&::clCreateCommandQueue) createCommandQueue = nullptr;
  decltype(&::clCreateBuffer) createBuffer = nullptr;
  decltype(&::clReleaseContext) releaseContext = nullptr;
  decltype(&::clReleaseCommandQueue) releaseCommandQueue = nullptr;
  decltype(&::clReleaseMemObject) releaseMemObject = nullptr;
  decltype(&::clGetMemObjectInfo) getMemObjectInfo = nullptr;
  decltype(&::clGetContextInfo) getContextInfo = nullptr;
  decltype(&::clGetCommandQueueInfo) getCommandQueueInfo = nullptr;
  decltype(&::clGetDeviceInfo) getDeviceInfo = nullptr;
  decltype(&::clEnqueueReadBuffer) enqueueReadBuffer = nullptr;
  decltype(&::clFinish) finish = nullptr;

  static const ClApi* get() {
    static const ClApi api = [] {
      ClApi a;
      void* lib = dlopen("libOpenCL.so.1", RTLD_NOW | RTLD_NOLOAD);
      if (lib == nullptr) lib = dlopen("libOpenCL.so.1", RTLD_NOW);
      if (lib == nullptr) return a;
      auto load = [&](auto& fn, const char* name) { fn = reinterpret_cast<std::remove_reference_t<decltype(fn)>>(dlsym(lib, name)); };
      load(a.createContext, "clCreateContext");
      load(a.createCommandQueue, "clCreateCommandQueue");
      load(a.createBuffer, "clCreateBuffer");
      load(a.releaseContext, "clReleaseContext");
      load(a.releaseCommandQueue, "clReleaseCommandQueue");
      load(a.releaseMemObject, "clReleaseMemObject");
      load(a.getMemObjectInfo, "clGetMemObjectInfo");
      load(a.getContextInfo, "clGetContextInfo");
      load(a.getCommandQueueInfo, "clGetCommandQueueInfo");
      load(a.getDeviceInfo, "clGetDeviceInfo");
      load(a.enqueueReadBuffer, "clEnqueueReadBuffer");
      load(a.finish, "clFinish");
      return a;
    }();
    return api.finish ? &api : nullptr;
  }
};

/// A context + queue the test owns, on the device of `dev`.
struct UserContext {
  const ClApi* cl;
  cl_context context = nullptr;
  cl_command_queue queue = nullptr;
  cl_device_id device = nullptr;
  UserContext(const ClApi* api, cl_device_id d) : cl(api), device(d) {
    cl_platform_id platform = nullptr;
    cl->getDeviceInfo(d, CL_DEVICE_PLATFORM, sizeof platform, &platform, nullptr);
    const cl_context_properties props[] = {CL_CONTEXT_PLATFORM, reinterpret_cast<cl_context_properties>(platform), 0};
    cl_int err = CL_SUCCESS;
    context = cl->createContext(props, 1, &d, nullptr, nullptr, &err);
    if (err == CL_SUCCESS) queue = cl->createCommandQueue(context, d, 0, &err);  // no profiling, on purpose
  }
  ~UserContext() {
    if (queue) cl->releaseCommandQueue(queue);
    if (context) cl->releaseContext(context);
  }
  cl_uint contextRefs() const {
    cl_uint n = 0;
    cl->getContextInfo(context, CL_CONTEXT_REFERENCE_COUNT, sizeof n, &n, nullptr);
    return n;
  }
  cl_uint queueRefs() const {
    cl_uint n = 0;
    cl->getCommandQueueInfo(queue, CL_QUEUE_REFERENCE_COUNT, sizeof n, &n, nullptr);
    return n;
  }
};

#define REQUIRE_OPENCL_API(api)                                                                 \
  if (!isOpenCL()) GTEST_SKIP() << "OpenCL interop: this parameter is a CUDA device";          \
  const ClApi* api = ClApi::get();                                                              \
  if (api == nullptr) GTEST_SKIP() << "libOpenCL.so.1 could not be loaded by the test"

TEST_P(Backend, WrapQueueRefusesAQueueOfAnotherContext) {
  REQUIRE_OPENCL_API(cl);
  UserContext user(cl, static_cast<cl_device_id>(dev().nativeDevice()));
  ASSERT_NE(user.queue, nullptr);
  expectErrorCode(ErrorCode::InvalidArgument, [&] { dev().wrapQueue(user.queue); }, "queue of another context");
}

TEST_P(Backend, AdoptedContextSharesBuffersWithTheCaller) {
  REQUIRE_OPENCL_API(cl);
  UserContext user(cl, static_cast<cl_device_id>(dev().nativeDevice()));
  ASSERT_NE(user.queue, nullptr);
  const Bytes data = randomBytes(256, 9);
  cl_int err = CL_SUCCESS;
  cl_mem userBuffer = cl->createBuffer(user.context, CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR, data.size(),
                                       const_cast<std::uint8_t*>(data.data()), &err);
  ASSERT_EQ(err, CL_SUCCESS);
  // Reference counts are compared in the same state: right after a blocking
  // command of the caller (drivers may hold the queue's last command).
  std::uint8_t probe = 0;
  auto touch = [&] {
    return cl->enqueueReadBuffer(user.queue, userBuffer, CL_TRUE, 0, 1, &probe, 0, nullptr, nullptr);
  };
  ASSERT_EQ(touch(), CL_SUCCESS);
  const cl_uint contextRefs = user.contextRefs(), queueRefs = user.queueRefs();
  std::weak_ptr<DeviceImpl> weak;
  {
    auto adopted = devicearray::detail::openclAdopt(user.context, user.device, user.queue);
    ASSERT_TRUE(adopted);
    weak = adopted;
    EXPECT_EQ(adopted->ordinal(), -1);
    EXPECT_EQ(adopted->nativeContext(), user.context);
    EXPECT_EQ(adopted->nativeDevice(), user.device);
    EXPECT_EQ(adopted->sdkQueue()->native(), user.queue);
    EXPECT_EQ(devicearray::detail::openclAdopt(user.context, user.device, user.queue), adopted)
        << "the same handles give the same device";

    // Library allocations live in the caller's context.
    QueueImpl& aq = *adopted->sdkQueue();
    auto mine = adopted->allocate(100, aq);
    cl_context owner = nullptr;
    cl->getMemObjectInfo(static_cast<cl_mem>(mine->handle()), CL_MEM_CONTEXT, sizeof owner, &owner, nullptr);
    EXPECT_EQ(owner, user.context);

    // The caller's buffer is usable by the library, and the library's writes are
    // visible to the caller on the caller's own queue.
    auto theirs = adopted->adopt(userBuffer, 0);
    EXPECT_EQ(theirs->bytes(), data.size());
    EXPECT_TRUE(theirs->external());
    Bytes got(data.size());
    CopyDesc c;
    c.elemSize = data.size();
    c.dst = MemRef::hostPtr(got.data());
    c.src = MemRef::dev(theirs.get(), 0);
    adopted->copy(c, aq);
    aq.synchronize();
    EXPECT_TRUE(sameBytes(data, got));
    const Bytes patch = randomBytes(40, 10);
    c.elemSize = patch.size();
    c.dst = MemRef::dev(theirs.get(), 10);
    c.src = MemRef::hostPtr(const_cast<std::uint8_t*>(patch.data()));
    adopted->copy(c, aq);
    Bytes seen(data.size());
    ASSERT_EQ(cl->enqueueReadBuffer(user.queue, userBuffer, CL_TRUE, 0, seen.size(), seen.data(), 0, nullptr, nullptr),
              CL_SUCCESS);
    Bytes expected = data;
    std::memcpy(expected.data() + 10, patch.data(), patch.size());
    EXPECT_TRUE(sameBytes(expected, seen));

    // The caller's queue has no profiling: events order work but carry no time.
    auto e1 = adopted->recordTimingEvent(aq);
    auto e2 = adopted->recordTimingEvent(aq);
    e2->synchronize();
    expectErrorCode(ErrorCode::Unsupported, [&] { e1->elapsedMs(*e2); }, "timing on a queue without profiling");

    // Memory of the enumerated device's context is not usable here, and back.
    auto foreign = dev().allocate(16, q());
    expectErrorCode(ErrorCode::InvalidArgument, [&] { adopted->adopt(foreign->handle(), 0); }, "cl_mem of another context");
    expectErrorCode(ErrorCode::InvalidArgument, [&] { dev().adopt(userBuffer, 0); }, "cl_mem of another context");
    expectErrorCode(ErrorCode::InvalidArgument, [&] { adopted->adopt(userBuffer, 257); }, "more bytes than the cl_mem");
    cl->finish(user.queue);
  }
  // Everything the library retained is released with the last handle.
  EXPECT_TRUE(weak.expired()) << "the adopted device outlived its last handle";
  ASSERT_EQ(touch(), CL_SUCCESS);
  // Event callbacks may still be running when clFinish returns (the OpenCL spec
  // does not order them with it); the events they release hold a queue reference
  // until then. Wait for them, boundedly, before comparing.
  for (int i = 0; i < 200 && (user.queueRefs() != queueRefs || user.contextRefs() != contextRefs); ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  EXPECT_EQ(user.queueRefs(), queueRefs);
  EXPECT_EQ(user.contextRefs(), contextRefs);
  cl->releaseMemObject(userBuffer);
}

TEST_P(Backend, AdoptRefusesMismatchedHandles) {
  REQUIRE_OPENCL_API(cl);
  UserContext a(cl, static_cast<cl_device_id>(dev().nativeDevice()));
  UserContext b(cl, static_cast<cl_device_id>(dev().nativeDevice()));
  ASSERT_NE(a.queue, nullptr);
  ASSERT_NE(b.queue, nullptr);
  using devicearray::detail::openclAdopt;
  expectErrorCode(ErrorCode::InvalidArgument, [&] { openclAdopt(nullptr, a.device, a.queue); }, "null context");
  expectErrorCode(ErrorCode::InvalidArgument, [&] { openclAdopt(a.context, nullptr, a.queue); }, "null device");
  expectErrorCode(ErrorCode::InvalidArgument, [&] { openclAdopt(a.context, a.device, nullptr); }, "null queue");
  expectErrorCode(ErrorCode::InvalidArgument, [&] { openclAdopt(a.context, a.device, b.queue); },
                  "queue of another context");
  expectErrorCode(ErrorCode::InvalidArgument, [&] { openclAdopt(dev().nativeContext(), a.device, a.queue); },
                  "queue not of the given context");
}

GTEST_ALLOW_UNINSTANTIATED_PARAMETERIZED_TEST(Backend);
INSTANTIATE_TEST_SUITE_P(AllDevices, Backend, testing::ValuesIn(allDevices()), DeviceParamName());

// ------------------------------------------------- enumeration (no param) ----

TEST(OpenCLRegistry, DevicesAreListedGpusFirstWithTheirIndexAsOrdinal) {
  const auto devices = devicearray::detail::openclDevices();
  if (devices.empty()) {
    EXPECT_FALSE(devicearray::detail::openclUnavailableReason().empty());
    GTEST_SKIP() << "no OpenCL device: " << devicearray::detail::openclUnavailableReason();
  }
  EXPECT_EQ(devicearray::detail::openclUnavailableReason(), "");
  const ClApi* cl = ClApi::get();
  int lastRank = -1;
  for (std::size_t i = 0; i < devices.size(); ++i) {
    EXPECT_EQ(devices[i]->ordinal(), static_cast<int>(i));
    EXPECT_EQ(devices[i]->backend(), ComputeBackend::opencl);
    EXPECT_FALSE(devices[i]->model().empty());
    EXPECT_GT(devices[i]->totalMemory(), 0u);
    EXPECT_LE(devices[i]->freeMemory(), devices[i]->totalMemory());
    if (cl == nullptr) continue;
    cl_device_type type = 0;
    cl->getDeviceInfo(static_cast<cl_device_id>(devices[i]->nativeDevice()), CL_DEVICE_TYPE, sizeof type, &type, nullptr);
    const int rank = (type & CL_DEVICE_TYPE_GPU) ? 0 : (type & CL_DEVICE_TYPE_ACCELERATOR) ? 1 : (type & CL_DEVICE_TYPE_CPU) ? 2 : 3;
    EXPECT_GE(rank, lastRank) << "device " << i << " (" << devices[i]->model() << ") is listed out of order";
    lastRank = rank;
  }
  EXPECT_EQ(devicearray::detail::openclDevices(), devices) << "the list is built once";
}

}  // namespace
