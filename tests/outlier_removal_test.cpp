// Statistical and radius outlier removal of UnorganizedPointCloud against brute-force
// host references, on clouds of uneven density with isolated outliers, on every device.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <vector>

#include "devicearray/devicearray.hpp"
#include "test_support.hpp"

namespace {

using namespace devicearray;

class OutlierRemovalTest : public datest::DeviceTest {
 protected:
  StreamOrQueue sq() const { return device().sdkStreamOrQueue(); }
};

/// A dense patch, a sparse patch, a small far cluster and isolated points spread far
/// apart: the points' k-th neighbours lie from a few to hundreds of mm away.
std::vector<PointXYZ> unevenCloud(unsigned seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(0.f, 1.f);
  std::vector<PointXYZ> p;
  for (int i = 0; i < 2000; ++i) p.push_back({100.f * u(rng), 100.f * u(rng), 500.f + 2.f * u(rng)});
  for (int i = 0; i < 400; ++i) p.push_back({200.f + 200.f * u(rng), 300.f * u(rng), 650.f + 5.f * u(rng)});
  for (int i = 0; i < 5; ++i) p.push_back({-300.f + u(rng), -300.f + u(rng), 900.f + u(rng)});
  for (int i = 0; i < 25; ++i) p.push_back({-2000.f + 4000.f * u(rng), -2000.f + 4000.f * u(rng), 3000.f * u(rng)});
  std::shuffle(p.begin(), p.end(), rng);
  return p;
}

double distance(const PointXYZ& a, const PointXYZ& b) {
  const double dx = double(a.x) - b.x, dy = double(a.y) - b.y, dz = double(a.z) - b.z;
  return std::sqrt(dx * dx + dy * dy + dz * dz);
}

/// Brute force: each point's mean distance to its k nearest points (itself included).
std::vector<double> meanDistances(const std::vector<PointXYZ>& p, int k) {
  std::vector<double> means(p.size());
  std::vector<double> d(p.size());
  for (std::size_t i = 0; i < p.size(); ++i) {
    for (std::size_t j = 0; j < p.size(); ++j) d[j] = distance(p[i], p[j]);
    const std::size_t m = std::min<std::size_t>(std::size_t(k), p.size());
    std::partial_sort(d.begin(), d.begin() + std::ptrdiff_t(m), d.end());
    double sum = 0;
    for (std::size_t j = 0; j < m; ++j) sum += d[j];
    means[i] = sum / double(m);
  }
  return means;
}

struct Reference {
  std::vector<std::size_t> kept;
  std::vector<std::size_t> borderline;  // so close to the threshold that float rounding may decide
};

Reference statisticalReference(const std::vector<PointXYZ>& p, int k, double ratio) {
  const std::vector<double> means = meanDistances(p, k);
  double m = 0;
  for (double v : means) m += v;
  m /= double(means.size());
  double ss = 0;
  for (double v : means) ss += (v - m) * (v - m);
  const double threshold = m + ratio * std::sqrt(ss / double(means.size() - 1));
  Reference r;
  for (std::size_t i = 0; i < p.size(); ++i) {
    if (std::abs(means[i] - threshold) < 1e-4 * threshold) r.borderline.push_back(i);
    if (means[i] <= threshold) r.kept.push_back(i);
  }
  return r;
}

std::vector<std::size_t> radiusReference(const std::vector<PointXYZ>& p, float radius, int minPoints) {
  std::vector<std::size_t> kept;
  for (std::size_t i = 0; i < p.size(); ++i) {
    int count = 0;
    for (std::size_t j = 0; j < p.size(); ++j) {
      const float dx = p[j].x - p[i].x, dy = p[j].y - p[i].y, dz = p[j].z - p[i].z;
      if (dx * dx + dy * dy + dz * dz < radius * radius) ++count;
    }
    if (count > minPoints) kept.push_back(i);
  }
  return kept;
}

/// Which input points `out` holds, in its order (points are distinct, so matched by value).
std::vector<std::size_t> indicesOf(const std::vector<PointXYZ>& in, const std::vector<PointXYZ>& out) {
  std::vector<std::size_t> idx;
  std::size_t from = 0;
  for (const PointXYZ& o : out) {
    while (from < in.size() && !(in[from].x == o.x && in[from].y == o.y && in[from].z == o.z)) ++from;
    idx.push_back(from++);
  }
  return idx;
}

void expectSameUpToBorderline(const std::vector<std::size_t>& got, const Reference& want) {
  EXPECT_LT(want.borderline.size(), 3u);
  std::vector<std::size_t> a, b;
  auto borderline = [&](std::size_t i) {
    return std::find(want.borderline.begin(), want.borderline.end(), i) != want.borderline.end();
  };
  std::copy_if(got.begin(), got.end(), std::back_inserter(a), [&](std::size_t i) { return !borderline(i); });
  std::copy_if(want.kept.begin(), want.kept.end(), std::back_inserter(b), [&](std::size_t i) { return !borderline(i); });
  EXPECT_EQ(a, b);
}

UnorganizedPointCloud upload(const std::vector<PointXYZ>& p, const ComputeDevice& d) {
  return UnorganizedPointCloud(DeviceArray<PointXYZ>::fromHost(p.data(), p.size(), d));
}

TEST_P(OutlierRemovalTest, StatisticalMatchesBruteForce) {
  const std::vector<PointXYZ> p = unevenCloud(7);
  for (const auto& [k, ratio] : {std::pair{20, 2.0f}, std::pair{8, 1.0f}, std::pair{32, 0.5f}, std::pair{1, 2.0f}}) {
    SCOPED_TRACE(testing::Message() << "k " << k << " ratio " << ratio);
    const Reference want = statisticalReference(p, k, ratio);
    const UnorganizedPointCloud out = upload(p, device()).statisticalOutliersRemoved(k, ratio);
    expectSameUpToBorderline(indicesOf(p, out.devicePointsXYZ(sq()).toHost()), want);
  }
  // The isolated points are the ones removed.
  const UnorganizedPointCloud out = upload(p, device()).statisticalOutliersRemoved(20, 2.0f);
  for (const PointXYZ& q : out.devicePointsXYZ(sq()).toHost()) EXPECT_LT(std::abs(q.x), 1000.f);
}

TEST_P(OutlierRemovalTest, StatisticalWithFewerPointsThanNeighbours) {
  const std::vector<PointXYZ> p = {{0, 0, 0}, {1, 0, 0}, {0, 1, 0}, {1, 1, 0}, {0.5f, 0.5f, 0}, {40, 40, 40}};
  const Reference want = statisticalReference(p, 20, 1.0);
  const UnorganizedPointCloud out = upload(p, device()).statisticalOutliersRemoved(20, 1.0f, sq());
  synchronizeStream(sq());
  expectSameUpToBorderline(indicesOf(p, out.devicePointsXYZ(sq()).toHost()), want);
  EXPECT_EQ(out.size(), 5u);
}

TEST_P(OutlierRemovalTest, RadiusMatchesBruteForce) {
  const std::vector<PointXYZ> p = unevenCloud(11);
  for (const auto& [radius, minPoints] : {std::pair{5.0f, 3}, std::pair{12.0f, 20}, std::pair{3.0f, 1},
                                          std::pair{50.0f, 100}, std::pair{0.01f, 1}}) {
    SCOPED_TRACE(testing::Message() << "radius " << radius << " minPoints " << minPoints);
    const UnorganizedPointCloud out = upload(p, device()).radiusOutliersRemoved(radius, minPoints);
    EXPECT_EQ(indicesOf(p, out.devicePointsXYZ(sq()).toHost()), radiusReference(p, radius, minPoints));
  }
}

TEST_P(OutlierRemovalTest, AttributesFollowTheKeptPointsAndInPlaceFormsAgree) {
  const std::vector<PointXYZ> p = unevenCloud(3);
  std::vector<ColorRGBA> colors(p.size());
  std::vector<SNR> snrs(p.size());
  std::vector<NormalXYZ> normals(p.size());
  for (std::size_t i = 0; i < p.size(); ++i) {
    colors[i] = ColorRGBA{std::uint8_t(i), std::uint8_t(i >> 8), 7, 255};
    snrs[i] = SNR{float(i)};
    normals[i] = NormalXYZ{0, 0, float(i)};
  }
  const ComputeDevice d = device();
  UnorganizedPointCloud cloud(DeviceArray<PointXYZ>::fromHost(p.data(), p.size(), d),
                              DeviceArray<ColorRGBA>::fromHost(colors.data(), colors.size(), d),
                              DeviceArray<SNR>::fromHost(snrs.data(), snrs.size(), d),
                              DeviceArray<NormalXYZ>::fromHost(normals.data(), normals.size(), d));
  const Matrix4x4 shift = {1, 0, 0, 1, 0, 1, 0, 2, 0, 0, 1, 3, 0, 0, 0, 1};
  cloud.transform(shift);
  for (int which = 0; which < 2; ++which) {
    const UnorganizedPointCloud out =
        which == 0 ? cloud.statisticalOutliersRemoved(20, 2.0f) : cloud.radiusOutliersRemoved(10.0f, 5);
    ASSERT_TRUE(out.hasColors() && out.hasSNRs() && out.hasNormals());
    ASSERT_GT(out.size(), 2000u);
    ASSERT_LT(out.size(), p.size());
    EXPECT_EQ(out.transformationMatrix(), cloud.transformationMatrix());
    const auto c = out.deviceColors<ColorRGBA>(sq()).toHost();
    const auto s = out.deviceSNRs(sq()).toHost();
    const auto n = out.deviceNormalsXYZ(sq()).toHost();
    std::size_t last = 0;
    for (std::size_t j = 0; j < out.size(); ++j) {
      const std::size_t i = std::size_t(s[j].value);
      if (j > 0) EXPECT_GT(i, last);  // original order
      last = i;
      EXPECT_EQ(n[j].z, float(i));
      EXPECT_EQ(c[j].r, std::uint8_t(i));
      EXPECT_EQ(c[j].g, std::uint8_t(i >> 8));
    }
    UnorganizedPointCloud inPlace = cloud;
    if (which == 0)
      inPlace.removeStatisticalOutliers(20, 2.0f, sq());
    else
      inPlace.removeRadiusOutliers(10.0f, 5, sq());
    synchronizeStream(sq());
    EXPECT_EQ(inPlace.size(), out.size());
    EXPECT_EQ(cloud.size(), p.size());  // the original is unchanged
  }
}

TEST_P(OutlierRemovalTest, EmptyCloudsAndInvalidArguments) {
  const UnorganizedPointCloud empty = UnorganizedPointCloud::fromHost(HostPointCloud{}, device());
  EXPECT_TRUE(empty.statisticalOutliersRemoved(20, 2.0f).isEmpty());
  EXPECT_TRUE(empty.radiusOutliersRemoved(5.0f, 2).isEmpty());
  const UnorganizedPointCloud cloud = upload(unevenCloud(1), device());
  datest::expectError(ErrorCode::InvalidArgument, [&] { (void)cloud.statisticalOutliersRemoved(0, 2.0f); }, "k 0");
  datest::expectError(ErrorCode::InvalidArgument, [&] { (void)cloud.statisticalOutliersRemoved(33, 2.0f); }, "k 33");
  datest::expectError(ErrorCode::InvalidArgument, [&] { (void)cloud.statisticalOutliersRemoved(20, -1.0f); },
                      "negative ratio");
  datest::expectError(ErrorCode::InvalidArgument, [&] { (void)cloud.statisticalOutliersRemoved(20, NAN); },
                      "NaN ratio");
  datest::expectError(ErrorCode::InvalidArgument, [&] { (void)cloud.radiusOutliersRemoved(0.0f, 2); }, "radius 0");
  datest::expectError(ErrorCode::InvalidArgument, [&] { (void)cloud.radiusOutliersRemoved(INFINITY, 2); },
                      "radius inf");
  datest::expectError(ErrorCode::InvalidArgument, [&] { (void)cloud.radiusOutliersRemoved(5.0f, 0); }, "minPoints 0");
}

DATEST_INSTANTIATE_OVER_DEVICES(OutlierRemovalTest);

}  // namespace
