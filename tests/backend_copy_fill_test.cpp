// Backend interface: the strided copy engine in every direction and pattern fills
// of every size into every layout, against an element-by-element host reference.
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "backend_fixture.hpp"

namespace backendtest {
namespace {

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

/// A fill of `pattern` (one element) over the layout (size, step) at `dst`.
FillDesc fillOf(const std::vector<std::int64_t>& size, const std::vector<std::int64_t>& step, const Bytes& pattern,
                MemRef dst) {
  FillDesc f;
  f.dims = static_cast<int>(size.size());
  for (int i = 0; i < f.dims; ++i) {
    f.size[i] = size[i];
    f.step[i] = step[i];
  }
  f.elemSize = pattern.size();
  f.dst = dst;
  std::memcpy(f.pattern.data(), pattern.data(), pattern.size());
  return f;
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
      dev().fill(fillOf(fc.size, fc.step, pattern, MemRef::dev(a.get(), fc.offset)), q());
      EXPECT_TRUE(sameBytes(expected, read(*a, 0, bytes)));
    }
  }
}

// Patterns of one repeated byte (zeroed counters, a 0xFF mask) may take another road than
// the general fill: CUDA fills them with a memset, or with its fill kernel up to 1 MiB
// where kernels are dependent launches. Either way the bytes must be the reference's, on
// both sides of that size, contiguous and pitched.
TEST_P(Backend, FillsOfOneRepeatedByteMatchTheReferenceAroundAMebibyte) {
  std::uint32_t seed = 900;
  constexpr std::int64_t kMiB = std::int64_t{1} << 20;
  for (const std::size_t p : {std::size_t{1}, std::size_t{4}, std::size_t{16}}) {
    for (const std::uint8_t value : {std::uint8_t{0x00}, std::uint8_t{0xAB}}) {
      const auto P = static_cast<std::int64_t>(p);
      struct FillCase {
        std::string name;
        std::vector<std::int64_t> size, step;
      };
      const std::vector<FillCase> cases = {
          {"contiguous, 48 bytes", {48 / P}, {P}},
          {"contiguous, 1 MiB", {kMiB / P}, {P}},
          {"contiguous, 1 MiB and 16 bytes", {(kMiB + 16) / P}, {P}},
          {"pitched, 1 MiB", {256, 4096 / P}, {4096 + 64, P}},
          {"pitched, 1 MiB and 4 rows", {260, 4096 / P}, {4096 + 64, P}},
      };
      for (const FillCase& fc : cases) {
        SCOPED_TRACE(fc.name + ", " + std::to_string(p) + "-byte elements of byte " + std::to_string(value));
        const std::size_t offset = 16;
        const std::size_t bytes = offset + static_cast<std::size_t>(extentOf(fc.size, fc.step, p)) + 9;
        Bytes expected;
        auto a = allocFilled(bytes, ++seed, &expected);
        const Bytes pattern(p, value);
        Layout l{"", fc.size, fc.step, std::vector<std::int64_t>(fc.size.size(), 0), p, 0, 0};
        referenceCopy(l, expected.data() + offset, pattern.data());
        dev().fill(fillOf(fc.size, fc.step, pattern, MemRef::dev(a.get(), offset)), q());
        EXPECT_TRUE(sameBytes(expected, read(*a, 0, bytes)));
      }
    }
  }
}

GTEST_ALLOW_UNINSTANTIATED_PARAMETERIZED_TEST(Backend);
INSTANTIATE_TEST_SUITE_P(AllDevices, Backend, testing::ValuesIn(allDevices()), DeviceParamName());

}  // namespace
}  // namespace backendtest
