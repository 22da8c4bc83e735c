// PointCloud camera filters (filterNoise, filterOutliers, smoothDepth, fillHoles) against
// host references written here from each filter's documented definition, on every
// device.
//
// Tolerances: decisions (which points are removed or filled) compare input values only,
// so they must match exactly; smoothed and filled coordinates 1e-5 relative (+1e-4 mm)
// and SNR 1e-5 relative, since the device may contract or reorder float arithmetic;
// filled colours within 1 (rounding of a weighted mean).
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

#include "devicearray/devicearray.hpp"
#include "test_support.hpp"

namespace {

using namespace devicearray;

constexpr float kNaN = NAN;

bool isValid(const PointXYZ& p) { return std::isfinite(p.x) && std::isfinite(p.y) && std::isfinite(p.z); }

/// A camera's view of two planes with a 150 mm step between them, some noise, missing
/// points and outliers floating 120 mm in front of the surface.
struct Scene {
  int height = 37, width = 53;
  std::vector<PointXYZ> xyz;
  std::vector<ColorRGBA> rgba;
  std::vector<SNR> snr;

  explicit Scene(std::uint32_t seed, double holes = 0.1, double outliers = 0.02) {
    std::mt19937 rng(seed);
    std::uniform_real_distribution<float> noise(-1.0f, 1.0f), s(0.0f, 12.0f), u(0.0f, 1.0f);
    for (int r = 0; r < height; ++r)
      for (int c = 0; c < width; ++c) {
        float z = 800.0f + 0.5f * c + 0.3f * r + noise(rng) + (c >= width / 2 ? 150.0f : 0.0f);
        if (u(rng) < outliers) z -= 120.0f;
        PointXYZ p{(c - 26.0f) * z / 100.0f, (r - 18.0f) * z / 100.0f, z};
        if (u(rng) < holes) p = {kNaN, kNaN, kNaN};
        xyz.push_back(p);
        rgba.push_back({std::uint8_t(rng()), std::uint8_t(rng()), std::uint8_t(rng()), std::uint8_t(rng())});
        snr.push_back({s(rng)});
      }
    // A hole of 3 x 2 points and a long gap of 9 points in a row.
    for (int r = 10; r < 12; ++r)
      for (int c = 5; c < 8; ++c) xyz[r * width + c] = {kNaN, kNaN, kNaN};
    for (int c = 30; c < 39; ++c) xyz[20 * width + c] = {kNaN, kNaN, kNaN};
  }
  const PointXYZ& at(int r, int c) const { return xyz[static_cast<std::size_t>(r) * width + c]; }
  PointCloud upload(const ComputeDevice& d, bool withColor = true, bool withSnr = true) const {
    return PointCloud::fromHost(height, width, xyz.data(), withColor ? rgba.data() : nullptr,
                                withSnr ? snr.data() : nullptr, d);
  }
};

std::vector<PointXYZ> pointsOf(const PointCloud& c) { return c.devicePointsXYZ(c.device().sdkStreamOrQueue()).toHost(); }

void expectSameValidity(const std::vector<PointXYZ>& got, const std::vector<PointXYZ>& want) {
  ASSERT_EQ(got.size(), want.size());
  for (std::size_t i = 0; i < got.size(); ++i) ASSERT_EQ(isValid(got[i]), isValid(want[i])) << "point " << i;
}

void expectPointsNear(const std::vector<PointXYZ>& got, const std::vector<PointXYZ>& want) {
  expectSameValidity(got, want);
  for (std::size_t i = 0; i < got.size(); ++i) {
    if (!isValid(want[i])) continue;
    const float* g = &got[i].x;
    const float* e = &want[i].x;
    for (int k = 0; k < 3; ++k) ASSERT_NEAR(g[k], e[k], 1e-5 * std::fabs(e[k]) + 1e-4) << "point " << i << " axis " << k;
  }
}

// ---------------------------------------------------------- references ----

std::vector<PointXYZ> noiseReference(const Scene& s, float threshold) {
  std::vector<PointXYZ> out = s.xyz;
  for (std::size_t i = 0; i < out.size(); ++i)
    if (!(s.snr[i].value >= threshold)) out[i] = {kNaN, kNaN, kNaN};
  return out;
}

std::vector<PointXYZ> outlierReference(const Scene& s, float maxDistance) {
  std::vector<PointXYZ> out = s.xyz;
  for (int r = 0; r < s.height; ++r)
    for (int c = 0; c < s.width; ++c) {
      const PointXYZ& p = s.at(r, c);
      if (!isValid(p)) continue;
      double nearest = INFINITY;
      for (int dr = -1; dr <= 1; ++dr)
        for (int dc = -1; dc <= 1; ++dc) {
          const int rr = r + dr, cc = c + dc;
          if ((dr == 0 && dc == 0) || rr < 0 || cc < 0 || rr >= s.height || cc >= s.width) continue;
          const PointXYZ& q = s.at(rr, cc);
          if (!isValid(q)) continue;
          nearest = std::fmin(nearest, std::hypot(double(q.x) - p.x, double(q.y) - p.y, double(q.z) - p.z));
        }
      if (!(nearest <= maxDistance)) out[static_cast<std::size_t>(r) * s.width + c] = {kNaN, kNaN, kNaN};
    }
  return out;
}

std::vector<PointXYZ> smoothingReference(const Scene& s, float sigma, float maxDiff, int radius) {
  std::vector<PointXYZ> out = s.xyz;
  for (int r = 0; r < s.height; ++r)
    for (int c = 0; c < s.width; ++c) {
      const PointXYZ& p = s.at(r, c);
      if (!isValid(p)) continue;
      double wsum = 0, zsum = 0;
      for (int rr = std::max(0, r - radius); rr <= std::min(s.height - 1, r + radius); ++rr)
        for (int cc = std::max(0, c - radius); cc <= std::min(s.width - 1, c + radius); ++cc) {
          const PointXYZ& q = s.at(rr, cc);
          if (!isValid(q) || std::fabs(q.z - p.z) > maxDiff) continue;
          const double w = std::exp(-double((rr - r) * (rr - r) + (cc - c) * (cc - c)) / (2.0 * sigma * sigma));
          wsum += w;
          zsum += w * q.z;
        }
      const double scale = zsum / wsum / p.z;
      out[static_cast<std::size_t>(r) * s.width + c] = {float(p.x * scale), float(p.y * scale), float(p.z * scale)};
    }
  return out;
}

struct Filled {
  std::vector<PointXYZ> xyz;
  std::vector<ColorRGBA> rgba;
  std::vector<SNR> snr;
};

Filled fillReference(const Scene& s, int maxHole, float maxDiff) {
  Filled out{s.xyz, s.rgba, s.snr};
  for (int r = 0; r < s.height; ++r)
    for (int c = 0; c < s.width; ++c) {
      if (isValid(s.at(r, c))) continue;
      // The nearest valid point in each direction (within maxHole steps), as (row, col, steps).
      struct End {
        int r, c, steps;
      };
      auto nearest = [&](int dr, int dc) -> End {
        for (int k = 1; k <= maxHole; ++k) {
          const int rr = r + k * dr, cc = c + k * dc;
          if (rr < 0 || cc < 0 || rr >= s.height || cc >= s.width) break;
          if (isValid(s.at(rr, cc))) return s.at(rr, cc).z != 0 ? End{rr, cc, k} : End{0, 0, 0};
        }
        return {0, 0, 0};
      };
      const End ends[4] = {nearest(0, -1), nearest(0, 1), nearest(-1, 0), nearest(1, 0)};
      std::vector<std::pair<std::size_t, double>> contributions;  // (point index, weight within its gap)
      int gaps = 0;
      for (int g = 0; g < 2; ++g) {
        const End& a = ends[2 * g];
        const End& b = ends[2 * g + 1];
        if (a.steps == 0 || b.steps == 0 || a.steps + b.steps - 1 > maxHole) continue;
        if (std::fabs(s.at(a.r, a.c).z - s.at(b.r, b.c).z) > maxDiff) continue;
        ++gaps;
        const double span = a.steps + b.steps;
        contributions.push_back({static_cast<std::size_t>(a.r) * s.width + a.c, b.steps / span});
        contributions.push_back({static_cast<std::size_t>(b.r) * s.width + b.c, a.steps / span});
      }
      if (gaps == 0) continue;
      double sx = 0, sy = 0, z = 0, snr = 0, col[4] = {0, 0, 0, 0};
      for (const auto& [j, w0] : contributions) {
        const double w = w0 / gaps;
        const PointXYZ& q = s.xyz[j];
        sx += w * (double(q.x) / q.z);
        sy += w * (double(q.y) / q.z);
        z += w * q.z;
        snr += w * s.snr[j].value;
        const std::uint8_t* qc = &s.rgba[j].r;
        for (int k = 0; k < 4; ++k) col[k] += w * qc[k];
      }
      const std::size_t i = static_cast<std::size_t>(r) * s.width + c;
      out.xyz[i] = {float(sx * z), float(sy * z), float(z)};
      out.snr[i] = {float(snr)};
      std::uint8_t* oc = &out.rgba[i].r;
      for (int k = 0; k < 4; ++k) oc[k] = static_cast<std::uint8_t>(std::floor(col[k] + 0.5));
    }
  return out;
}

// --------------------------------------------------------------- tests ----

class CameraFiltersTest : public datest::DeviceTest {};

TEST_P(CameraFiltersTest, NoiseFilterRemovesPointsBelowTheSnrThreshold) {
  Scene s(1);
  s.snr[7].value = kNaN;
  const PointCloud cloud = s.upload(device());
  const PointCloud filtered = cloud.noiseFiltered(4.5f);
  const std::vector<PointXYZ> want = noiseReference(s, 4.5f);
  expectPointsNear(pointsOf(filtered), want);
  for (std::size_t i = 0; i < want.size(); ++i)
    if (isValid(want[i])) ASSERT_EQ(pointsOf(filtered)[i].x, want[i].x);  // kept points are copied bit for bit
  expectPointsNear(pointsOf(cloud), s.xyz);                              // the *ed form leaves the source alone

  PointCloud inPlace = s.upload(device());
  Stream stream(device());
  inPlace.filterNoise(4.5f, stream);
  synchronizeStream(stream);
  expectPointsNear(pointsOf(inPlace), want);
  EXPECT_TRUE(inPlace.hasColors() && inPlace.hasSNRs());
}

TEST_P(CameraFiltersTest, OutlierFilterRemovesPointsFarFromEveryValidNeighbour) {
  const Scene s(2);
  const std::vector<PointXYZ> want = outlierReference(s, 20.0f);
  std::size_t removed = 0;
  for (std::size_t i = 0; i < want.size(); ++i) removed += isValid(s.xyz[i]) && !isValid(want[i]);
  ASSERT_GT(removed, 5u);  // the scene's outliers are there to be found
  PointCloud cloud = s.upload(device());
  expectPointsNear(pointsOf(cloud.outliersFiltered(20.0f)), want);
  cloud.filterOutliers(20.0f);
  expectPointsNear(pointsOf(cloud), want);
  // A distance of 0 removes every point (no two grid points coincide).
  for (const PointXYZ& p : pointsOf(cloud.outliersFiltered(0.0f))) ASSERT_FALSE(isValid(p));
}

TEST_P(CameraFiltersTest, DepthSmoothingMatchesReferenceAndKeepsPointsOnTheirRays) {
  const Scene s(3);
  const PointCloud cloud = s.upload(device());
  for (const auto& [sigma, maxDiff, radius] : {std::tuple{1.5f, 10.0f, 3}, std::tuple{0.8f, 500.0f, 0}}) {
    const int effective = radius == 0 ? static_cast<int>(std::ceil(2.0 * sigma)) : radius;
    const std::vector<PointXYZ> got = pointsOf(cloud.depthSmoothed(sigma, maxDiff, radius));
    expectPointsNear(got, smoothingReference(s, sigma, maxDiff, effective));
    for (std::size_t i = 0; i < got.size(); ++i)
      if (isValid(got[i])) ASSERT_NEAR(got[i].x / got[i].z, s.xyz[i].x / s.xyz[i].z, 1e-6) << i;
  }
  // Smoothing never mixes the two planes when the depth step exceeds maxDepthDifference:
  // points next to the step stay on their own plane.
  const std::vector<PointXYZ> got = pointsOf(cloud.depthSmoothed(2.0f, 10.0f));
  for (int r = 0; r < s.height; ++r) {
    const std::size_t i = static_cast<std::size_t>(r) * s.width + s.width / 2 - 1;
    if (isValid(s.xyz[i]) && s.xyz[i].z > 700) EXPECT_LT(std::fabs(got[i].z - s.xyz[i].z), 5.0f) << r;
  }
}

TEST_P(CameraFiltersTest, HoleFillingInterpolatesSmallGapsWithColoursAndSnr) {
  const Scene s(4, 0.05, 0.0);
  for (const auto& [maxHole, maxDiff] : {std::pair{4, 20.0f}, std::pair{12, 1000.0f}, std::pair{1, 20.0f}}) {
    const Filled want = fillReference(s, maxHole, maxDiff);
    const PointCloud filled = s.upload(device()).holesFilled(maxHole, maxDiff);
    expectPointsNear(pointsOf(filled), want.xyz);
    const std::vector<ColorRGBA> colors = filled.storedColors().toHost();
    const std::vector<SNR> snrs = filled.storedSNRs().toHost();
    for (std::size_t i = 0; i < want.xyz.size(); ++i) {
      for (int k = 0; k < 4; ++k) ASSERT_NEAR((&colors[i].r)[k], (&want.rgba[i].r)[k], 1) << i;
      ASSERT_NEAR(snrs[i].value, want.snr[i].value, 1e-5 * want.snr[i].value + 1e-6) << i;
    }
  }
  // The 3 x 2 hole is filled for a size of 3 (its rows are 3 long); the 9-point row gap
  // is filled only where a column gap qualifies, from that column alone.
  const std::vector<PointXYZ> got = pointsOf(s.upload(device(), false, false).holesFilled(3, 20.0f));
  EXPECT_TRUE(isValid(got[10 * s.width + 6]));
  for (int c = 30; c < 39; ++c) {
    const PointXYZ& above = s.at(19, c);
    const PointXYZ& below = s.at(21, c);
    if (!isValid(above) || !isValid(below)) continue;
    EXPECT_NEAR(got[20 * s.width + c].z, 0.5f * (above.z + below.z), 1e-3f) << c;
  }
  // On a pinhole cloud the filled point lies on its pixel's ray.
  const PointXYZ& p = got[10 * s.width + 6];
  EXPECT_NEAR(p.x / p.z, (6 - 26.0f) / 100.0f, 1e-5);
  EXPECT_NEAR(p.y / p.z, (10 - 18.0f) / 100.0f, 1e-5);
}

TEST_P(CameraFiltersTest, FiltersKeepTheTransformationMatrixAndRefuseBadParameters) {
  const Scene s(5);
  PointCloud cloud = s.upload(device());
  Matrix4x4 m = identityMatrix4x4();
  m[3] = 10.0f;
  cloud.transform(m);
  EXPECT_EQ(cloud.noiseFiltered(1.0f).transformationMatrix(), m);
  EXPECT_EQ(cloud.outliersFiltered(1.0f).transformationMatrix(), m);
  EXPECT_EQ(cloud.depthSmoothed(1.0f, 5.0f).transformationMatrix(), m);
  EXPECT_EQ(cloud.holesFilled(2, 5.0f).transformationMatrix(), m);

  datest::expectError(ErrorCode::InvalidArgument, [&] { (void)cloud.noiseFiltered(kNaN); });
  datest::expectError(ErrorCode::InvalidState, [&] { (void)s.upload(device(), true, false).noiseFiltered(1.0f); });
  datest::expectError(ErrorCode::InvalidArgument, [&] { (void)cloud.outliersFiltered(-1.0f); });
  datest::expectError(ErrorCode::InvalidArgument, [&] { (void)cloud.depthSmoothed(0.0f, 5.0f); });
  datest::expectError(ErrorCode::InvalidArgument, [&] { (void)cloud.depthSmoothed(1.0f, INFINITY); });
  datest::expectError(ErrorCode::InvalidArgument, [&] { (void)cloud.depthSmoothed(1.0f, 5.0f, 16); });
  datest::expectError(ErrorCode::InvalidArgument, [&] { (void)cloud.holesFilled(0, 5.0f); });
  datest::expectError(ErrorCode::InvalidArgument, [&] { (void)cloud.holesFilled(2, -5.0f); });
  datest::expectError(ErrorCode::InvalidState, [&] { (void)PointCloud().noiseFiltered(1.0f); });
}

DATEST_INSTANTIATE_OVER_DEVICES(CameraFiltersTest);

}  // namespace
