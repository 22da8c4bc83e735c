// The neighbour grid's k-nearest search against brute force, plane-fit normals against
// the synthetic scene's exact normals, and normals carried by UnorganizedPointCloud
// through its operations, on every device.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <numbers>
#include <random>

#include "devicearray/devicearray.hpp"
#include "devicearray/io.hpp"
#include "pointcloud/neighbour_grid.hpp"
#include "pointcloud/pointcloud_internal.hpp"
#include "test_support.hpp"

namespace {

using namespace devicearray;
namespace pc = devicearray::detail::pc;

class NormalsTest : public testing::TestWithParam<ComputeDevice> {
 protected:
  ComputeDevice dev() const { return GetParam(); }
  StreamOrQueue sq() const { return GetParam().sdkStreamOrQueue(); }
};

/// Median angle (degrees) between the estimated and the exact normals of the valid
/// points, and how many valid points got no normal.
std::pair<double, std::size_t> medianError(const std::vector<NormalXYZ>& got, const HostPointCloud& exact) {
  std::vector<double> errors;
  std::size_t missing = 0;
  for (std::size_t i = 0; i < exact.size(); ++i) {
    if (!exact.isValid(i)) continue;
    if (std::isnan(got[i].x)) {
      ++missing;
      continue;
    }
    const double d = got[i].x * exact.normals[3 * i] + got[i].y * exact.normals[3 * i + 1] +
                     got[i].z * exact.normals[3 * i + 2];
    errors.push_back(std::acos(std::clamp(d, -1.0, 1.0)) * 180.0 / std::numbers::pi);
  }
  std::nth_element(errors.begin(), errors.begin() + std::ptrdiff_t(errors.size() / 2), errors.end());
  return {errors[errors.size() / 2], missing};
}

HostPointCloud scene(int width, int height) {
  SynthOptions o;
  o.camera = PinholeCamera::withFieldOfView(width, height, 60.0);
  o.withNormals = true;
  o.withColors = false;
  return synthesizeScene(o);
}

TEST_P(NormalsTest, NearestNeighboursMatchBruteForce) {
  std::mt19937 rng(5);
  std::uniform_real_distribution<float> u(-50.f, 50.f);
  const std::size_t n = 3000, queries = 500;
  const int k = 8;
  std::vector<PointXYZ> points(n), probes(queries);
  for (auto& p : points) p = {u(rng), u(rng), 0.2f * u(rng)};
  for (std::size_t i = 0; i < n; i += 97) points[i] = {NAN, NAN, NAN};  // missing points are never neighbours
  for (auto& p : probes) p = {u(rng) * 1.2f, u(rng) * 1.2f, 0.2f * u(rng)};
  const auto dp = DeviceArray<PointXYZ>::fromHost(points.data(), n, dev());
  const auto dq = DeviceArray<PointXYZ>::fromHost(probes.data(), queries, dev());
  auto q = dev().impl()->libraryQueue();
  const float cell = 6.0f, maxDistance = 6.0f;
  const pc::NeighbourGrid grid(*q, pc::bufferOf(dp), n, cell, "test");
  const auto out = pc::scratch(*q, queries * k, 8, "test");
  grid.nearest(*q, pc::bufferOf(dq), queries, k, 1, maxDistance, {out.get(), 0}, {out.get(), queries * k * 4});
  std::vector<std::uint32_t> idx(queries * k);
  std::vector<float> dist(queries * k);
  pc::readBack(*q, out.get(), 0, idx.data(), idx.size() * 4);
  pc::readBack(*q, out.get(), queries * k * 4, dist.data(), dist.size() * 4);
  for (std::size_t i = 0; i < queries; ++i) {
    std::vector<std::pair<float, std::uint32_t>> want;
    for (std::size_t j = 0; j < n; ++j) {
      if (std::isnan(points[j].x)) continue;
      const float d = std::hypot(points[j].x - probes[i].x, points[j].y - probes[i].y, points[j].z - probes[i].z);
      if (d < maxDistance) want.push_back({d, std::uint32_t(j)});
    }
    std::sort(want.begin(), want.end());
    for (int m = 0; m < k; ++m) {
      const std::size_t at = i * k + std::size_t(m);
      if (std::size_t(m) >= want.size()) {
        EXPECT_EQ(idx[at], 0xFFFFFFFFu) << "query " << i << " rank " << m;
        EXPECT_TRUE(std::isnan(dist[at]));
        continue;
      }
      EXPECT_NEAR(dist[at], want[std::size_t(m)].first, 1e-4f) << "query " << i << " rank " << m;
      const PointXYZ& p = points[idx[at]];
      EXPECT_NEAR(std::hypot(p.x - probes[i].x, p.y - probes[i].y, p.z - probes[i].z), dist[at], 1e-4f);
    }
  }
}

TEST_P(NormalsTest, OrganizedPlaneFitMeetsTheAccuracyOfTheSyntheticScene) {
  // The full-resolution scene at its default noise: the default window is chosen for it.
  const HostPointCloud c = scene(1920, 1200);
  const PointCloud cloud = PointCloud::fromHost(c, dev());
  const auto [median, missing] =
      medianError(cloud.deviceNormalsXYZ(PointCloud::kDefaultNormalWindowSize, sq()).toHost(), c);
  EXPECT_LE(median, 2.0);
  EXPECT_LT(missing, c.validCount() / 10000);
  const auto [centralMedian, centralMissing] = medianError(cloud.deviceNormalsXYZ(sq()).toHost(), c);
  EXPECT_GT(centralMedian, 4 * median) << "central differences are much noisier";
  (void)centralMissing;
}

TEST_P(NormalsTest, PlaneFitOnAPlaneAndAtItsCorners) {
  // A tilted plane with holes: exact normals, oriented towards the camera; a point with
  // only three valid points in its window still gets one.
  const int h = 21, w = 25;
  std::vector<PointXYZ> plane(std::size_t(h * w), PointXYZ{NAN, NAN, NAN});
  for (int r = 0; r < h; ++r)
    for (int c = 0; c < w; ++c)
      if (r < 15 && (r * 7 + c * 3) % 11 != 0) plane[std::size_t(r * w + c)] = {c * 4.0f, r * 4.0f, 1000 + 2.0f * c};
  // An island of three points, far from the rest.
  plane[std::size_t(19 * w + 10)] = {40, 76, 1020};
  plane[std::size_t(19 * w + 11)] = {44, 76, 1022};
  plane[std::size_t(20 * w + 10)] = {40, 80, 1020};
  const PointCloud cloud = PointCloud::fromHost(h, w, plane.data(), nullptr, nullptr, dev());
  const auto n = cloud.deviceNormalsXYZ(3, sq()).toHost();
  const float len = std::sqrt(1.25f);  // z = 1000 + 0.5 x
  for (std::size_t i = 0; i < n.size(); ++i) {
    if (std::isnan(plane[i].x)) {
      EXPECT_TRUE(std::isnan(n[i].x)) << i;
      continue;
    }
    ASSERT_FALSE(std::isnan(n[i].x)) << i;
    EXPECT_NEAR(n[i].x, 0.5f / len, 1e-4) << i;
    EXPECT_NEAR(n[i].y, 0.0f, 1e-4) << i;
    EXPECT_NEAR(n[i].z, -1.0f / len, 1e-4) << i;
  }
  datest::expectError(ErrorCode::InvalidArgument, [&] { (void)cloud.deviceNormalsXYZ(4, sq()); }, "even window");
  datest::expectError(ErrorCode::InvalidArgument, [&] { (void)cloud.deviceNormalsXYZ(17, sq()); }, "window > 15");
}

TEST_P(NormalsTest, UnorganizedNearestNeighbourNormals) {
  const HostPointCloud c = scene(480, 300);
  HostPointCloud valid;  // the valid points with their exact normals
  for (std::size_t i = 0; i < c.size(); ++i)
    if (c.isValid(i))
      for (int k = 0; k < 3; ++k) {
        valid.xyz.push_back(c.xyz[3 * i + std::size_t(k)]);
        valid.normals.push_back(c.normals[3 * i + std::size_t(k)]);
      }
  UnorganizedPointCloud cloud = UnorganizedPointCloud::fromHost(valid, dev());
  ASSERT_TRUE(cloud.hasNormals());  // the exact ones, uploaded
  cloud.estimateNormals();
  const auto [median, missing] = medianError(cloud.deviceNormalsXYZ(sq()).toHost(), valid);
  EXPECT_LE(median, 2.0);
  EXPECT_LT(missing, valid.size() / 1000);
  datest::expectError(ErrorCode::InvalidArgument, [&] { cloud.estimateNormals(2); }, "too few neighbours");
  datest::expectError(ErrorCode::InvalidArgument, [&] { cloud.estimateNormals(257); }, "too many neighbours");
}

TEST_P(NormalsTest, NormalsFollowTheUnorganizedCloudsOperations) {
  // Two points per voxel with normals that average to a known direction.
  const std::vector<PointXYZ> xyz = {{0.1f, 0.1f, 0.1f}, {0.2f, 0.2f, 0.2f}, {5.1f, 0.1f, 0.1f}, {5.2f, 0.2f, 0.2f}};
  const float s = std::sqrt(0.5f);
  const std::vector<NormalXYZ> normals = {{1, 0, 0}, {0, 1, 0}, {0, 0, -1}, {0, 0, -1}};
  UnorganizedPointCloud cloud(DeviceArray<PointXYZ>::fromHost(xyz.data(), xyz.size(), dev()), {}, {},
                              DeviceArray<NormalXYZ>::fromHost(normals.data(), normals.size(), dev()));
  const auto voxels = cloud.voxelDownsampled(1.0f, 1).deviceNormalsXYZ(sq()).toHost();
  ASSERT_EQ(voxels.size(), 2u);
  EXPECT_NEAR(voxels[0].x, s, 1e-6);
  EXPECT_NEAR(voxels[0].y, s, 1e-6);
  EXPECT_NEAR(voxels[1].z, -1.0f, 1e-6);
  // Transform: rotation about z by 90 degrees turns normals; translation leaves them.
  const Matrix4x4 m = {0, -1, 0, 10, 1, 0, 0, 20, 0, 0, 1, 30, 0, 0, 0, 1};
  const auto turned = cloud.transformed(m).deviceNormalsXYZ(sq()).toHost();
  EXPECT_NEAR(turned[0].y, 1.0f, 1e-6);
  EXPECT_NEAR(turned[1].x, -1.0f, 1e-6);
  // Extend concatenates; host round trip keeps them.
  UnorganizedPointCloud both = cloud;
  both.extend(cloud);
  const HostPointCloud host = both.toHost();
  ASSERT_EQ(host.normals.size(), 24u);
  EXPECT_EQ(host.normals[12], 1.0f);
  EXPECT_EQ(UnorganizedPointCloud::fromHost(host, dev()).deviceNormalsXYZ(sq()).toHost()[6].z, -1.0f);
  // Clouds with and without normals do not mix.
  const UnorganizedPointCloud bare(DeviceArray<PointXYZ>::fromHost(xyz.data(), xyz.size(), dev()));
  datest::expectError(ErrorCode::InvalidArgument, [&] { both.extend(bare); }, "normals mismatch");
  datest::expectError(ErrorCode::InvalidState, [&] { (void)bare.deviceNormalsXYZ(sq()); }, "no normals");
}

DATEST_INSTANTIATE_OVER_DEVICES(NormalsTest);

}  // namespace
