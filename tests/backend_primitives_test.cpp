// The parallel primitives of every device (src/backend/parallel_primitives.hpp): results
// against host references, and the argument checks made once for every backend.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <numeric>
#include <optional>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "backend/parallel_primitives.hpp"
#include "backend_fixture.hpp"
#if defined(DEVICEARRAY_HAS_OPENCL)
#include "opencl/opencl_primitives.hpp"
#endif

namespace backendtest {
namespace {

using devicearray::detail::BufferRef;

template <class T>
Bytes bytesOf(const std::vector<T>& v) {
  Bytes b(v.size() * sizeof(T));
  std::memcpy(b.data(), v.data(), b.size());
  return b;
}

template <class T>
std::vector<T> valuesOf(const Bytes& b) {
  std::vector<T> v(b.size() / sizeof(T));
  std::memcpy(v.data(), b.data(), b.size());
  return v;
}

class Primitives : public Backend {
 protected:
  template <class T>
  std::shared_ptr<Allocation> upload(const std::vector<T>& values) {
    auto a = dev().allocate(std::max<std::size_t>(values.size() * sizeof(T), 1), q());
    if (!values.empty()) write(*a, 0, bytesOf(values));
    return a;
  }
  template <class T>
  std::vector<T> download(Allocation& a, std::size_t count, std::size_t offset = 0) {
    return valuesOf<T>(read(a, offset, count * sizeof(T)));
  }
  /// Sorts (keys, their indices) with `p` by bits [0, endBit) (and the key width word
  /// holding `width`, when given) and checks the result against std::stable_sort of the
  /// whole keys: the callers' keys differ only in those bits. With `keyedEnd`, the keyed
  /// end word holds it (the callers' keys from there on are all ones), and only the
  /// outputs before it are checked, against the sort of the keys before it.
  void expectStableSort(devicearray::detail::ParallelPrimitives& p, const std::vector<std::uint64_t>& keys,
                        int endBit, std::optional<std::uint32_t> width = std::nullopt, int likelyWidth = 0,
                        std::optional<std::uint32_t> keyedEnd = std::nullopt, std::size_t likelyKeyedEnd = 0) {
    const std::size_t n = keys.size();
    std::vector<std::uint32_t> values(n);
    std::iota(values.begin(), values.end(), 0u);
    auto keysIn = upload(keys), valuesIn = upload(values);
    // The width, then a zero word, then the keyed end.
    auto words = upload(std::vector<std::uint32_t>{width.value_or(0), 0u, keyedEnd.value_or(0)});
    auto keysOut = dev().allocate(n * 8, q()), valuesOut = dev().allocate(n * 4, q());
    p.sortPairsU64U32(q(), {keysIn.get(), 0}, {valuesIn.get(), 0}, {keysOut.get(), 0}, {valuesOut.get(), 0}, n, endBit,
                      width ? BufferRef{words.get(), 0} : BufferRef{}, likelyWidth,
                      keyedEnd ? BufferRef{words.get(), 8} : BufferRef{}, likelyKeyedEnd);
    const std::size_t sorted = keyedEnd ? std::min<std::size_t>(n, *keyedEnd) : n;
    std::vector<std::uint32_t> order(values.begin(), values.begin() + static_cast<std::ptrdiff_t>(sorted));
    // By bits [0, endBit) only: the bits above move with the keys but do not order them.
    const std::uint64_t sortedBits = endBit >= 64 ? ~std::uint64_t{0} : (std::uint64_t{1} << endBit) - 1;
    std::stable_sort(order.begin(), order.end(), [&](std::uint32_t a, std::uint32_t b) {
      return (keys[a] & sortedBits) < (keys[b] & sortedBits);
    });
    std::vector<std::uint64_t> sortedKeys(sorted);
    for (std::size_t i = 0; i < sorted; ++i) sortedKeys[i] = keys[order[i]];
    if (sorted > 0) {
      EXPECT_EQ(download<std::uint64_t>(*keysOut, sorted), sortedKeys);
      EXPECT_EQ(download<std::uint32_t>(*valuesOut, sorted), order);
    }
    EXPECT_EQ(download<std::uint64_t>(*keysIn, n), keys) << "the inputs are left unchanged";
    EXPECT_EQ(download<std::uint32_t>(*valuesIn, n), values) << "the inputs are left unchanged";
    const auto after = download<std::uint32_t>(*words, 3);
    if (width) EXPECT_EQ(after[1], 0u) << "the word after the width is left zero";
    if (keyedEnd) EXPECT_EQ(after[2], *keyedEnd) << "the keyed end is left as it was";
  }
  /// This device's primitives and, on OpenCL, both shapes of them.
  std::vector<std::shared_ptr<devicearray::detail::ParallelPrimitives>> everyShape() {
    std::vector<std::shared_ptr<devicearray::detail::ParallelPrimitives>> all{
        std::shared_ptr<devicearray::detail::ParallelPrimitives>(&dev().primitives(), [](auto*) {})};
#if defined(DEVICEARRAY_HAS_OPENCL)
    if (dev().backend() == ComputeBackend::opencl) {
      using devicearray::detail::opencl::PrimitivesShape;
      for (const PrimitivesShape shape : {PrimitivesShape::chunked, PrimitivesShape::workGroups})
        all.push_back(devicearray::detail::opencl::makePrimitives(dev(), shape));
    }
#endif
    return all;
  }
};

TEST_P(Primitives, ExclusiveScanInPlaceMatchesTheHostScan) {
  std::vector<std::uint32_t> values(3001);
  for (std::size_t i = 0; i < values.size(); ++i) values[i] = static_cast<std::uint32_t>((i * 2654435761u) >> 20);
  auto a = upload(values);
  dev().primitives().exclusiveScanU32(q(), {a.get(), 0}, {a.get(), 0}, values.size());
  std::vector<std::uint32_t> expected(values.size());
  std::exclusive_scan(values.begin(), values.end(), expected.begin(), std::uint32_t{0});
  EXPECT_EQ(download<std::uint32_t>(*a, values.size()), expected);
}

TEST_P(Primitives, SortPairsIsStableByTheLowKeyBits) {
  const std::size_t n = 2000;
  std::vector<std::uint64_t> keys(n);
  std::vector<std::uint32_t> values(n);
  for (std::size_t i = 0; i < n; ++i) {
    keys[i] = (static_cast<std::uint64_t>(i) * 0x9E3779B97F4A7C15ull) >> 7;
    values[i] = static_cast<std::uint32_t>(i);
  }
  auto keysIn = upload(keys), valuesIn = upload(values);
  auto keysOut = dev().allocate(n * 8, q()), valuesOut = dev().allocate(n * 4, q());
  dev().primitives().sortPairsU64U32(q(), {keysIn.get(), 0}, {valuesIn.get(), 0}, {keysOut.get(), 0},
                                     {valuesOut.get(), 0}, n, 12);
  std::vector<std::uint32_t> order(values);
  std::stable_sort(order.begin(), order.end(),
                   [&](std::uint32_t a, std::uint32_t b) { return (keys[a] & 0xFFF) < (keys[b] & 0xFFF); });
  std::vector<std::uint64_t> sortedKeys(n);
  for (std::size_t i = 0; i < n; ++i) sortedKeys[i] = keys[order[i]];
  EXPECT_EQ(download<std::uint32_t>(*valuesOut, n), order);
  EXPECT_EQ(download<std::uint64_t>(*keysOut, n), sortedKeys);
  EXPECT_EQ(download<std::uint64_t>(*keysIn, n), keys) << "the inputs are left unchanged";
}

// A key width word on the device: every key that is not all ones (of endBit bits) is
// below 2^width - 1. The sort must give the order of all endBit bits: on CUDA the bits
// above CUB's (32, or the guess below) are sorted on the device only for keys wider
// than that, on OpenCL the passes past
// the width only keep the order, and the first of them moves the pairs to the outputs
// when the ping-pong left them elsewhere (widths 1 and 5 end their sorting passes on
// either side; endBit 60 has an odd number of passes). Both OpenCL shapes run too. The
// host's guess of the width (none, below, at and above it) must not change the result:
// on CUDA, CUB sorts the guessed bits and the device the bits above them.
TEST_P(Primitives, SortPairsByADeviceKeyWidthMatchesTheFullSort) {
  std::mt19937_64 rng(31);
  for (const auto& primitives : everyShape()) {
    for (const std::size_t n : {std::size_t{1}, std::size_t{3000}, std::size_t{100003}}) {
      for (const auto [endBit, width] : {std::pair{63, 1}, {63, 5}, {63, 20}, {63, 32}, {63, 33}, {63, 40},
                                         {63, 63}, {60, 5}, {60, 31}, {60, 46}}) {
        SCOPED_TRACE(std::to_string(n) + " keys below 2^" + std::to_string(width) + " - 1, or all " +
                     std::to_string(endBit) + " ones");
        const std::uint64_t allOnes = (std::uint64_t{1} << endBit) - 1;
        const std::uint64_t below = (std::uint64_t{1} << width) - 1;  // keys are below this
        std::vector<std::uint64_t> keys(n);
        for (std::size_t i = 0; i < n; ++i)
          // A quarter missing; the rest drawn from few values spread over the width (equal
          // keys keep their order), the largest allowed one among them.
          keys[i] = i % 4 == 1 ? allOnes : (i % 7 == 0 ? below - 1 : (rng() % 61) * (below / 61 + 1) % below);
        // On CUDA, guesses that leave the device-wide sort 8, 9, 16, 18, 27, 40 and all
        // bits of 3,000 keys (a frame-sized sort: 9-bit digits where they save a pass)
        // and 8, 16, 24, 32, 40 and all bits of one key (CUB's single tile); on 100003
        // keys none and a low one (many tiles of the device's pass).
        // OpenCL's work-group shape launches the passes up to the guess and sorts the
        // bits past it in one work-group (slow: a low guess on the smaller sizes only);
        // its chunked shape ignores the guess.
        std::vector<int> guesses{0, 8};
        if (dev().backend() == ComputeBackend::cuda && n != 100003) guesses = {0, 1, 9, 16, 17, 25, 33, endBit};
        if (dev().backend() == ComputeBackend::opencl && n == 100003) guesses = {0, width};
        for (const int guess : guesses) {
          SCOPED_TRACE("width guessed as " + std::to_string(guess));
          expectStableSort(*primitives, keys, endBit, static_cast<std::uint32_t>(width), guess);
        }
      }
    }
  }
}

// Sizes at the edges of the CUDA sort's tilings of 64-bit keys and one past them: CUB's
// single tile (256 x 9 keys), the frame-sized sorts' tiles of 2,048 keys up to 2^18
// keys, CUB's own tiles of 5,760 past that; and partial last tiles of both. The keys
// repeat (stability) and spread over the bits sorted; the bits above those are random
// and must not change the order (a last pass narrower than a digit must not read them).
// The bit ranges take the frame-sized sorts through 9-bit digits (9, 17, 18 and 26
// bits: one, two and three passes, the last narrower than a digit at 17 and 26) and
// 8-bit ones (5, 19, 24 and 63 bits), and CUB's through partial 8-bit passes; OpenCL's
// 4-bit passes end narrower than a digit at 5, 9, 17, 18, 19, 26 and 63 bits, in both
// shapes.
TEST_P(Primitives, SortPairsAtTheEdgesOfEveryTilingMatchTheHostSort) {
  std::mt19937_64 rng(59);
  for (const auto& primitives : everyShape()) {
    for (const std::size_t n : {std::size_t{2304}, std::size_t{2305}, std::size_t{2048 * 10 + 1},
                                std::size_t{1} << 18, (std::size_t{1} << 18) + 1, std::size_t{5760 * 50 + 7}}) {
      for (const int endBit : {63, 26, 24, 19, 18, 17, 9, 5}) {
        SCOPED_TRACE(std::to_string(n) + " keys by bits [0, " + std::to_string(endBit) + ")");
        const std::uint64_t below = std::uint64_t{1} << std::min(endBit, 40);
        std::vector<std::uint64_t> keys(n);
        for (auto& k : keys) k = ((rng() % 5000) * (below / 5000 + 1) % below) | (rng() << endBit);
        expectStableSort(*primitives, keys, endBit);
        if (HasFatalFailure()) return;
      }
    }
  }
}

// A keyed end word on the device: the entries from it up to the guess (the count
// without one) are missing (all ones), and only the entries before it are sorted; the
// outputs from it on are left unspecified and the entries past the end and the guess
// are never read: they hold small keys here, which a backend that read them would sort
// in. On CUDA, CUB sorts as many entries as the host guessed and, when the guess was
// low, the device sorts them all again on one block: the guesses (none, below, at and
// above the end, the whole count) must not change the result. OpenCL's passes skip the
// entries past the end on the device and ignore the guess. With a key width word
// (whose bits CUB, and OpenCL's launched passes, may not cover) and without one.
TEST_P(Primitives, SortPairsUpToADeviceKeyedEndMatchesTheSortOfThatPrefix) {
  std::mt19937_64 rng(47);
  for (const auto& primitives : everyShape()) {
    for (const std::size_t n : {std::size_t{3000}, std::size_t{100003}}) {
      for (const std::size_t end : {std::size_t{0}, std::size_t{1}, n / 3, n - 5, n}) {
        // Width 0: no width word (keys below 2^20).
        for (const auto [width, likelyWidth] : {std::pair{17, 0}, {17, 8}, {40, 24}, {0, 0}}) {
          const std::uint64_t allOnes = (std::uint64_t{1} << 63) - 1;
          const std::uint64_t below = (std::uint64_t{1} << (width > 0 ? width : 20)) - 1;
          std::vector<std::size_t> guesses{0, std::max<std::size_t>(1, end / 2), std::max<std::size_t>(1, end), n};
          if (dev().backend() != ComputeBackend::cuda) guesses = {0, std::max<std::size_t>(1, end / 2)};
          for (const std::size_t guess : guesses) {
            SCOPED_TRACE(std::to_string(n) + " keys, keyed end " + std::to_string(end) + " guessed as " +
                         std::to_string(guess) + ", width " + std::to_string(width) + " guessed as " +
                         std::to_string(likelyWidth));
            std::vector<std::uint64_t> keys(n, allOnes);
            for (std::size_t i = 0; i < end; ++i) keys[i] = i % 5 == 2 ? allOnes : rng() % below;
            for (std::size_t i = std::max(end, guess > 0 ? guess : n); i < n; ++i) keys[i] = rng() % 7;
            expectStableSort(*primitives, keys, 63,
                             width > 0 ? std::optional<std::uint32_t>(static_cast<std::uint32_t>(width)) : std::nullopt,
                             likelyWidth, static_cast<std::uint32_t>(end), guess);
            if (HasFatalFailure()) return;
          }
        }
      }
    }
  }
}

TEST_P(Primitives, ReductionsSkipPointsWithANonFiniteCoordinate) {
  const float nan = std::numeric_limits<float>::quiet_NaN(), inf = std::numeric_limits<float>::infinity();
  std::vector<float> xyz;
  double sx = 0, sy = 0, sz = 0, count = 0;
  float mx = inf, my = inf, mz = inf, Mx = -inf, My = -inf, Mz = -inf;
  for (int i = 0; i < 700; ++i) {
    const float x = 0.25f * static_cast<float>(i % 37) - 3.0f, y = static_cast<float>(i % 11), z = -0.5f * i;
    const bool valid = i % 7 != 3;
    xyz.insert(xyz.end(), {x, valid ? y : (i % 2 ? nan : inf), z});
    if (!valid) continue;
    sx += x, sy += y, sz += z, count += 1;
    mx = std::min(mx, x), my = std::min(my, y), mz = std::min(mz, z);
    Mx = std::max(Mx, x), My = std::max(My, y), Mz = std::max(Mz, z);
  }
  const std::size_t n = xyz.size() / 3;
  auto points = upload(xyz);
  auto out = dev().allocate(64, q());
  dev().primitives().sumValidXYZ(q(), {points.get(), 0}, n, {out.get(), 0});
  const auto sums = download<double>(*out, 4);
  EXPECT_DOUBLE_EQ(sums[0], sx);
  EXPECT_DOUBLE_EQ(sums[1], sy);
  EXPECT_DOUBLE_EQ(sums[2], sz);
  EXPECT_EQ(sums[3], count);
  dev().primitives().boundsValidXYZ(q(), {points.get(), 0}, n, {out.get(), 40});
  EXPECT_EQ(download<float>(*out, 6, 40), (std::vector<float>{mx, my, mz, Mx, My, Mz}));
}

TEST_P(Primitives, RefuseArgumentsThatWouldCorruptMemory) {
  auto& p = dev().primitives();
  auto a = dev().allocate(4096, q());
  auto b = dev().allocate(4096, q());
  expectErrorCode(ErrorCode::InvalidArgument, [&] { p.exclusiveScanU32(q(), {a.get(), 0}, {b.get(), 0}, 2000); },
                  "a scan of more elements than the buffers hold");
  expectErrorCode(ErrorCode::InvalidArgument, [&] { p.exclusiveScanU32(q(), {a.get(), 0}, {a.get(), 4}, 100); },
                  "a scan whose output is its input shifted");
  expectErrorCode(ErrorCode::InvalidArgument,
                  [&] {
                    p.exclusiveScanU32(q(), {a.get(), 0}, {b.get(), 0},
                                       std::size_t{std::numeric_limits<std::int32_t>::max()} + 1);
                  },
                  "a count above INT32_MAX");
  expectErrorCode(ErrorCode::InvalidArgument, [&] { p.exclusiveScanU32(q(), {nullptr, 0}, {b.get(), 0}, 10); },
                  "a null buffer");
  for (const int endBit : {0, 65})
    expectErrorCode(
        ErrorCode::InvalidArgument,
        [&] { p.sortPairsU64U32(q(), {a.get(), 0}, {a.get(), 800}, {b.get(), 0}, {b.get(), 800}, 100, endBit); },
        "endBit " + std::to_string(endBit));
  expectErrorCode(ErrorCode::InvalidArgument,
                  [&] { p.sortPairsU64U32(q(), {a.get(), 0}, {a.get(), 800}, {a.get(), 1000}, {b.get(), 0}, 100, 64); },
                  "sorted keys written over the input values");
  // The key width and the zero word after it: two words of their own.
  const std::pair<BufferRef, const char*> badWidthWords[] = {
      {{b.get(), 4}, "key width inside the sorted keys"},
      {{b.get(), 4094}, "key width past the end of its buffer"},
      {{b.get(), 4092}, "the zero word after the key width past the end of its buffer"},
      {{a.get(), 796}, "key width words over the input keys and values"}};
  for (const auto& [width, what] : badWidthWords)
    expectErrorCode(ErrorCode::InvalidArgument,
                    [&, width = width] {
                      p.sortPairsU64U32(q(), {a.get(), 0}, {a.get(), 800}, {b.get(), 0}, {b.get(), 800}, 100, 63,
                                        width);
                    },
                    what);
  for (const int guess : {-1, 64})
    expectErrorCode(ErrorCode::InvalidArgument,
                    [&] {
                      p.sortPairsU64U32(q(), {a.get(), 0}, {a.get(), 800}, {b.get(), 0}, {b.get(), 800}, 100, 63,
                                        {b.get(), 2000}, guess);
                    },
                    "a key width guessed as " + std::to_string(guess));
  expectErrorCode(
      ErrorCode::InvalidArgument,
      [&] { p.sortPairsU64U32(q(), {a.get(), 0}, {a.get(), 800}, {b.get(), 0}, {b.get(), 800}, 100, 63, {}, 20); },
      "a key width guessed without a key width word");
  // The keyed end: a word of its own, and a guess of it only with it, within the count.
  const std::pair<BufferRef, const char*> badEndWords[] = {{{b.get(), 796}, "keyed end inside the sorted keys"},
                                                           {{b.get(), 4094}, "keyed end past the end of its buffer"},
                                                           {{a.get(), 1000}, "keyed end over the input values"},
                                                           {{b.get(), 2004}, "keyed end on the key width's zero word"}};
  for (const auto& [end, what] : badEndWords)
    expectErrorCode(ErrorCode::InvalidArgument,
                    [&, end = end] {
                      p.sortPairsU64U32(q(), {a.get(), 0}, {a.get(), 800}, {b.get(), 0}, {b.get(), 800}, 100, 63,
                                        {b.get(), 2000}, 0, end);
                    },
                    what);
  expectErrorCode(ErrorCode::InvalidArgument,
                  [&] {
                    p.sortPairsU64U32(q(), {a.get(), 0}, {a.get(), 800}, {b.get(), 0}, {b.get(), 800}, 100, 63, {}, 0,
                                      {}, 50);
                  },
                  "a keyed end guessed without a keyed end word");
  expectErrorCode(ErrorCode::InvalidArgument,
                  [&] {
                    p.sortPairsU64U32(q(), {a.get(), 0}, {a.get(), 800}, {b.get(), 0}, {b.get(), 800}, 100, 63, {}, 0,
                                      {b.get(), 3000}, 101);
                  },
                  "a keyed end guessed above the count");
  expectErrorCode(ErrorCode::InvalidArgument, [&] { p.sumValidXYZ(q(), {a.get(), 0}, 10, {a.get(), 64}); },
                  "sums written over the points");
  expectErrorCode(ErrorCode::InvalidArgument, [&] { p.boundsValidXYZ(q(), {a.get(), 0}, 10, {b.get(), 4080}); },
                  "bounds past the end of their buffer");
  expectErrorCode(ErrorCode::InvalidArgument, [&] { p.validPointOffsets(q(), {a.get(), 0}, 100, {b.get(), 3700}); },
                  "offsets (count + 1 of them) past the end of their buffer");
  expectErrorCode(ErrorCode::InvalidArgument, [&] { p.validPointOffsets(q(), {a.get(), 0}, 100, {a.get(), 1000}); },
                  "offsets written over the points");
}

TEST_P(Primitives, ValidPointOffsetsCountTheValidPointsBeforeEachPoint) {
  const float nan = std::numeric_limits<float>::quiet_NaN(), inf = std::numeric_limits<float>::infinity();
  std::mt19937 rng(11);
  // 576,001 offsets: a prime count, as a compaction of a 960 x 600 cloud scans.
  for (const std::size_t n : {std::size_t{0}, std::size_t{1}, std::size_t{1000}, std::size_t{576000}}) {
    SCOPED_TRACE(std::to_string(n) + " points");
    std::vector<float> xyz(std::max<std::size_t>(3 * n, 3), 1.0f);
    std::vector<std::uint32_t> expected(n + 1, 0);
    for (std::size_t i = 0; i < n; ++i) {
      const unsigned kind = rng() % 4;  // valid, NaN, infinite, valid
      if (kind == 1) xyz[3 * i + rng() % 3] = nan;
      if (kind == 2) xyz[3 * i + rng() % 3] = -inf;
      expected[i + 1] = expected[i] + (kind == 1 || kind == 2 ? 0u : 1u);
    }
    auto points = upload(xyz);
    auto offsets = dev().allocate((n + 1) * sizeof(std::uint32_t), q());
    write(*offsets, 0, bytesOf(std::vector<std::uint32_t>(n + 1, 0xDEADBEEFu)));
    dev().primitives().validPointOffsets(q(), {points.get(), 0}, n, {offsets.get(), 0});
    EXPECT_EQ(download<std::uint32_t>(*offsets, n + 1), expected);
  }
}

TEST_P(Primitives, RefuseAQueueOfAnotherDevice) {
  for (const DevicePtr& other : allDevices()) {
    if (other.get() == &dev()) continue;
    auto a = dev().allocate(64, q());
    expectErrorCode(ErrorCode::InvalidArgument,
                    [&] { dev().primitives().exclusiveScanU32(*other->libraryQueue(), {a.get(), 0}, {a.get(), 0}, 4); },
                    "the queue of " + other->model());
    return;
  }
  GTEST_SKIP() << "needs a second device";
}

#if defined(DEVICEARRAY_HAS_OPENCL)
// The OpenCL primitives come in two shapes, chunk per work item for CPUs and tile per
// work-group for GPUs (src/opencl/opencl_primitives.hpp); a device runs one of them, so
// both are made here on every OpenCL device and checked against the host: sizes around
// the chunk (256) and the tiles (1024 keys, 2048 scanned values), scans of several
// levels and of the up to 8 tiles one work-group scans in turn, bounds of several
// levels, and sorts with many equal keys by 4, 32 and 63 bits.
TEST_P(Primitives, OpenCLScanSortAndBoundsInBothShapesMatchTheHost) {
  if (dev().backend() != ComputeBackend::opencl) GTEST_SKIP() << "OpenCL only";
  using devicearray::detail::opencl::PrimitivesShape;
  std::mt19937_64 rng(7);
  for (const PrimitivesShape shape : {PrimitivesShape::chunked, PrimitivesShape::workGroups}) {
    SCOPED_TRACE(shape == PrimitivesShape::chunked ? "chunked" : "workGroups");
    const auto primitives = devicearray::detail::opencl::makePrimitives(dev(), shape);

    for (const std::size_t n : {std::size_t{1}, std::size_t{255}, std::size_t{257}, std::size_t{1000},
                                std::size_t{2047}, std::size_t{2048}, std::size_t{2049}, std::size_t{5 * 2048 + 77},
                                std::size_t{8 * 2048}, std::size_t{8 * 2048 + 1}, std::size_t{100003},
                                std::size_t{2048 * 2048 + 3}}) {
      SCOPED_TRACE("scan of " + std::to_string(n));
      std::vector<std::uint32_t> values(n);
      for (auto& v : values) v = static_cast<std::uint32_t>(rng());  // sums wrap around
      std::vector<std::uint32_t> expected(n);
      std::exclusive_scan(values.begin(), values.end(), expected.begin(), std::uint32_t{0});
      auto in = upload(values), out = dev().allocate(n * 4, q());
      primitives->exclusiveScanU32(q(), {in.get(), 0}, {out.get(), 0}, n);
      EXPECT_EQ(download<std::uint32_t>(*out, n), expected);
      primitives->exclusiveScanU32(q(), {in.get(), 0}, {in.get(), 0}, n);
      EXPECT_EQ(download<std::uint32_t>(*in, n), expected) << "in place";
    }

    for (const std::size_t n : {std::size_t{1}, std::size_t{255}, std::size_t{1023}, std::size_t{1024},
                                std::size_t{1025}, std::size_t{3000}, std::size_t{100003}}) {
      for (const int endBit : {4, 32, 63}) {
        SCOPED_TRACE("sort of " + std::to_string(n) + " by " + std::to_string(endBit) + " bits");
        const std::uint64_t mask = (std::uint64_t{1} << endBit) - 1;
        // Few distinct keys, so that most have equals whose order the sort must keep.
        std::vector<std::uint64_t> pool(97);
        for (auto& k : pool) k = rng() & mask;
        std::vector<std::uint64_t> keys(n);
        for (std::size_t i = 0; i < n; ++i) keys[i] = pool[rng() % pool.size()];
        expectStableSort(*primitives, keys, endBit);
      }
    }

    // Bounds of one tile (2048 points), of several, and of tiles of tiles, with missing
    // points everywhere; a cloud with no valid point gets the empty bounds.
    const float nan = std::numeric_limits<float>::quiet_NaN(), inf = std::numeric_limits<float>::infinity();
    for (const std::size_t n : {std::size_t{1}, std::size_t{2047}, std::size_t{2049}, std::size_t{100003},
                                std::size_t{2048 * 2048 + 3}}) {
      for (const bool anyValid : {true, false}) {
        SCOPED_TRACE("bounds of " + std::to_string(n) + (anyValid ? "" : " missing") + " points");
        std::uniform_real_distribution<float> coordinate(-5000.0f, 5000.0f);
        std::vector<float> xyz(3 * n);
        std::vector<float> expected{inf, inf, inf, -inf, -inf, -inf};
        for (std::size_t i = 0; i < n; ++i) {
          const bool valid = anyValid && (i % 5 != 1 || n == 1);
          for (std::size_t c = 0; c < 3; ++c) {
            const float v = coordinate(rng);
            xyz[3 * i + c] = valid ? v : (c == i % 3 ? nan : v);
            if (!valid) continue;
            expected[c] = std::min(expected[c], v);
            expected[3 + c] = std::max(expected[3 + c], v);
          }
        }
        auto points = upload(xyz);
        auto out = dev().allocate(6 * sizeof(float), q());
        primitives->boundsValidXYZ(q(), {points.get(), 0}, n, {out.get(), 0});
        EXPECT_EQ(download<float>(*out, 6), expected);
      }
    }
  }
}
#endif

GTEST_ALLOW_UNINSTANTIATED_PARAMETERIZED_TEST(Primitives);
INSTANTIATE_TEST_SUITE_P(AllDevices, Primitives, testing::ValuesIn(allDevices()), DeviceParamName());

}  // namespace
}  // namespace backendtest
