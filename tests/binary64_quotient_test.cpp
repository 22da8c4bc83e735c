// The integer division of binary64 bit patterns (src/kernels/binary64_quotient.h) that
// OpenCL devices without double precision use for means, compiled for the host and
// compared with C's (float)(a / b) over operands that reach every rounding case: random
// bit patterns, sums of floats over counts, quotients near the midpoints between two
// floats, and results in the float's subnormal range. The device side is
// opencl_without_fp64_test's.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>

#include "kernels/binary64_quotient.h"

namespace {

std::uint64_t bitsOf(double v) {
  std::uint64_t b;
  std::memcpy(&b, &v, sizeof b);
  return b;
}

std::uint32_t bitsOf(float v) {
  std::uint32_t b;
  std::memcpy(&b, &v, sizeof b);
  return b;
}

void expectQuotient(double a, double b) {
  const float want = static_cast<float>(a / b);
  const float got = da_binary64_quotient_integer(bitsOf(a), bitsOf(b));
  ASSERT_EQ(bitsOf(got), bitsOf(want)) << std::hexfloat << a << " / " << b << ": " << got << " instead of " << want;
}

TEST(Binary64Quotient, RandomOperands) {
  std::mt19937_64 rng(3);
  for (int i = 0; i < 400000; ++i) {
    double a, b;
    const std::uint64_t ab = rng(), bb = rng();
    std::memcpy(&a, &ab, sizeof a);
    std::memcpy(&b, &bb, sizeof b);
    if (!std::isfinite(a) || !std::isfinite(b) || b == 0) continue;
    expectQuotient(a, b);
  }
}

TEST(Binary64Quotient, SumsOverCounts) {
  std::mt19937_64 rng(5);
  for (int i = 0; i < 400000; ++i) {
    const double sum = std::ldexp(static_cast<double>(rng() >> 11), static_cast<int>(rng() % 120) - 90) *
                       (rng() % 2 == 0 ? 1 : -1);
    const double count = static_cast<double>(1 + rng() % (i % 2 == 0 ? 1000 : (std::uint64_t{1} << 48)));
    expectQuotient(sum, count);
  }
}

TEST(Binary64Quotient, QuotientsNearMidpointsBetweenFloats) {
  std::mt19937_64 rng(7);
  for (int i = 0; i < 200000; ++i) {
    const float f = std::ldexp(static_cast<float>((rng() >> 40) | 1), static_cast<int>(rng() % 100) - 70);
    const double midpoint = static_cast<double>(f) + std::ldexp(1.0, std::ilogb(f) - 24);
    const double count = static_cast<double>(1 + rng() % 100000);
    const double sum = midpoint * count;
    expectQuotient(sum, count);
    expectQuotient(std::nextafter(sum, 0.0), count);
    expectQuotient(std::nextafter(sum, INFINITY), count);
  }
}

TEST(Binary64Quotient, SubnormalFloatsZerosAndOverflow) {
  std::mt19937_64 rng(9);
  for (int i = 0; i < 200000; ++i)
    expectQuotient(std::ldexp(static_cast<double>(rng() >> 11), static_cast<int>(rng() % 80) - 250),
                   static_cast<double>(1 + rng() % 5000));
  expectQuotient(0.0, 3.0);
  expectQuotient(-0.0, 3.0);
  expectQuotient(1e300, 1e-300);
  expectQuotient(-3.5e38, 1.0);
  expectQuotient(std::ldexp(1.0, -149), 2.0);  // a tie between 0 and the smallest subnormal
  expectQuotient(std::ldexp(3.0, -150), 1.0);  // a tie rounding up to even
  expectQuotient(std::ldexp(1.0, -1074), 1.0);
}

}  // namespace
