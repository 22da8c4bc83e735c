// The neighbour grid's k-nearest search against brute force, plane-fit normals against
// the synthetic scene's exact normals, and normals carried by UnorganizedPointCloud
// through its operations, on every device.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
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

/// The smallest eigenvector of a symmetric 3x3 matrix by cyclic Jacobi rotations in
/// double: an independent route to the kernel's closed form. Also returns the middle
/// and largest eigenvalues, so that callers can skip neighbourhoods without a plane.
struct Eigen3 {
  std::array<double, 3> smallest;
  double middle, largest;
};
Eigen3 jacobiEigen(std::array<std::array<double, 3>, 3> a) {
  std::array<std::array<double, 3>, 3> v = {{{1, 0, 0}, {0, 1, 0}, {0, 0, 1}}};
  for (int sweep = 0; sweep < 50; ++sweep) {
    const double off = a[0][1] * a[0][1] + a[0][2] * a[0][2] + a[1][2] * a[1][2];
    if (off <= 1e-30 * (a[0][0] * a[0][0] + a[1][1] * a[1][1] + a[2][2] * a[2][2])) break;
    for (int p = 0; p < 2; ++p)
      for (int q = p + 1; q < 3; ++q) {
        if (a[p][q] == 0.0) continue;
        const double theta = (a[q][q] - a[p][p]) / (2 * a[p][q]);
        const double t = (theta >= 0 ? 1.0 : -1.0) / (std::abs(theta) + std::sqrt(theta * theta + 1));
        const double c = 1 / std::sqrt(t * t + 1), s = t * c;
        for (int k = 0; k < 3; ++k) {  // a <- a J, then J^T a
          const double akp = a[k][p], akq = a[k][q];
          a[k][p] = c * akp - s * akq;
          a[k][q] = s * akp + c * akq;
        }
        for (int k = 0; k < 3; ++k) {
          const double apk = a[p][k], aqk = a[q][k];
          a[p][k] = c * apk - s * aqk;
          a[q][k] = s * apk + c * aqk;
        }
        for (int k = 0; k < 3; ++k) {
          const double vkp = v[k][p], vkq = v[k][q];
          v[k][p] = c * vkp - s * vkq;
          v[k][q] = s * vkp + c * vkq;
        }
      }
  }
  std::array<int, 3> order = {0, 1, 2};
  std::sort(order.begin(), order.end(), [&](int i, int j) { return a[i][i] < a[j][j]; });
  const int s = order[0];
  return {{v[0][s], v[1][s], v[2][s]}, a[order[1]][order[1]], a[order[2]][order[2]]};
}

/// The organized plane fit written from its rule, in double: a point's neighbours are the
/// valid points of its window within 3 * ring grid steps (ring = Chebyshev distance on the
/// grid, step = distance to the nearest valid 4-neighbour), all valid ones when those are
/// fewer than 3 or lie on a line; the normal points towards the camera at the origin. NaN
/// where a point is missing or has fewer than 3 neighbours; `degenerate` marks points
/// whose neighbourhood has no clear plane, where float and double may disagree.
std::vector<std::array<double, 3>> hostPlaneFit(const HostPointCloud& c, int window, std::vector<char>& degenerate) {
  const int w = c.width, h = c.height, radius = window / 2;
  auto at = [&](int r, int col) -> const float* {
    if (r < 0 || col < 0 || r >= h || col >= w) return nullptr;
    const float* p = &c.xyz[3 * (std::size_t(r) * std::size_t(w) + std::size_t(col))];
    return std::isfinite(p[0]) && std::isfinite(p[1]) && std::isfinite(p[2]) ? p : nullptr;
  };
  auto distance2 = [](const float* p, const float* q) {  // in float, as the kernel selects
    const float dx = q[0] - p[0], dy = q[1] - p[1], dz = q[2] - p[2];
    return dx * dx + dy * dy + dz * dz;
  };
  std::vector<std::array<double, 3>> out(c.size(), {NAN, NAN, NAN});
  degenerate.assign(c.size(), 0);
  for (int r = 0; r < h; ++r)
    for (int col = 0; col < w; ++col) {
      const float* p = at(r, col);
      if (!p) continue;
      float step2 = INFINITY;
      for (const auto [dr, dc] : {std::pair{0, -1}, {0, 1}, {-1, 0}, {1, 0}})
        if (const float* q = at(r + dr, col + dc)) step2 = std::min(step2, distance2(p, q));
      auto gather = [&](bool near) {
        std::vector<const float*> set;
        for (int dr = -radius; dr <= radius; ++dr)
          for (int dc = -radius; dc <= radius; ++dc) {
            const float* q = at(r + dr, col + dc);
            const float reach = 3.0f * float(std::max(std::abs(dr), std::abs(dc)));
            if (q && (!near || distance2(p, q) <= reach * reach * step2)) set.push_back(q);
          }
        return set;
      };
      const std::size_t i = std::size_t(r) * std::size_t(w) + std::size_t(col);
      auto fit = [&](const std::vector<const float*>& set) -> bool {
        if (set.size() < 3) return false;
        std::array<double, 3> mean = {0, 0, 0};
        for (const float* q : set)
          for (int k = 0; k < 3; ++k) mean[std::size_t(k)] += q[k];
        for (double& m : mean) m /= double(set.size());
        std::array<std::array<double, 3>, 3> cov{};
        for (const float* q : set)
          for (int a = 0; a < 3; ++a)
            for (int b = 0; b < 3; ++b)
              cov[std::size_t(a)][std::size_t(b)] += (q[a] - mean[std::size_t(a)]) * (q[b] - mean[std::size_t(b)]);
        const Eigen3 e = jacobiEigen(cov);
        if (!(e.middle > 1e-9 * e.largest)) return false;  // a line or a point: no plane
        const double towards = e.smallest[0] * p[0] + e.smallest[1] * p[1] + e.smallest[2] * p[2] > 0 ? -1 : 1;
        for (int k = 0; k < 3; ++k) out[i][std::size_t(k)] = towards * e.smallest[std::size_t(k)];
        // Close middle and smallest eigenvalues leave the normal ill-defined in float.
        const double smallest = cov[0][0] + cov[1][1] + cov[2][2] - e.middle - e.largest;
        degenerate[i] = e.middle < 4 * std::max(smallest, 0.0);
        return true;
      };
      if (!fit(gather(std::isfinite(step2))) && !fit(gather(false))) degenerate[i] = 1;
    }
  return out;
}

TEST_P(NormalsTest, PlaneFitFollowsItsNeighbourRuleOnEveryWindow) {
  // A scene with depth edges, shadows and dropouts, plus square holes so that some points
  // have no valid 4-neighbour: every window against the rule computed on the host.
  HostPointCloud c = scene(240, 150);
  for (int r = 40; r < 150; r += 23)
    for (int col = 30; col < 240; col += 31)
      for (int k = 0; k < 9; ++k) {
        const std::size_t i = std::size_t(r + k / 3) * 240 + std::size_t(col + k % 3);
        if (k != 4) c.xyz[3 * i] = c.xyz[3 * i + 1] = c.xyz[3 * i + 2] = NAN;  // an isolated point in a hole
      }
  const PointCloud cloud = PointCloud::fromHost(c, dev());
  for (int window = 3; window <= 15; window += 2) {
    std::vector<char> degenerate;
    const auto want = hostPlaneFit(c, window, degenerate);
    const auto got = cloud.deviceNormalsXYZ(window, sq()).toHost();
    std::size_t compared = 0, far = 0, missingMismatch = 0;
    for (std::size_t i = 0; i < got.size(); ++i) {
      if (!c.isValid(i)) {
        EXPECT_TRUE(std::isnan(got[i].x)) << "window " << window << " point " << i;
        continue;
      }
      if (degenerate[i]) continue;
      if (std::isnan(want[i][0]) != std::isnan(got[i].x)) {
        ++missingMismatch;
        continue;
      }
      if (std::isnan(want[i][0])) continue;
      ++compared;
      const double d = want[i][0] * got[i].x + want[i][1] * got[i].y + want[i][2] * got[i].z;
      if (std::acos(std::clamp(d, -1.0, 1.0)) * 180.0 / std::numbers::pi > 0.05) ++far;
    }
    EXPECT_GT(compared, c.validCount() * 9 / 10) << "window " << window;
    EXPECT_EQ(missingMismatch, 0u) << "window " << window;
    // A neighbour within float rounding of its reach may fall on either side of it.
    EXPECT_LE(far, compared / 2000) << "window " << window;
  }
}

/// Bitwise equality of two normals, NaN equal to NaN.
bool sameNormal(const NormalXYZ& a, const NormalXYZ& b) { return std::memcmp(&a, &b, sizeof a) == 0; }

TEST_P(NormalsTest, PlaneFitRestrictedToARegionOfInterestFitsWhatTheRegionKeeps) {
  const HostPointCloud c = scene(240, 150);
  const PointCloud cloud = PointCloud::fromHost(c, dev());
  // A pose of the camera 4 degrees about y and 30 mm away, and a box in that frame
  // around the middle of the view: the loop's transform, then its ROI.
  const float a = 4.0f * float(std::numbers::pi) / 180.0f;
  const Matrix4x4 pose = {std::cos(a), 0, std::sin(a), 30, 0, 1, 0, -5, -std::sin(a), 0, std::cos(a), 12, 0, 0, 0, 1};
  const RegionOfInterestBox box{{-500, -300, 0}, {500, -300, 0}, {-500, 350, 0}, 0, 1700};
  const auto full = cloud.deviceNormalsXYZ(5, sq()).toHost();
  const auto restricted = cloud.deviceNormalsXYZ(5, box, pose, sq()).toHost();
  // Which points the loop keeps, as the device's own transform and ROI decide.
  const HostPointCloud kept = cloud.transformed(pose, sq()).maskedByRegionOfInterest(box, sq()).toHost();
  std::size_t keptValid = 0, removedValid = 0, removedFitted = 0;
  for (std::size_t i = 0; i < full.size(); ++i) {
    if (kept.isValid(i)) {
      ++keptValid;
      EXPECT_TRUE(sameNormal(restricted[i], full[i])) << "kept point " << i;
    } else if (c.isValid(i)) {
      ++removedValid;
      if (!std::isnan(restricted[i].x)) {
        ++removedFitted;  // within rounding of a face: fitted, and then as the full fit
        EXPECT_TRUE(sameNormal(restricted[i], full[i])) << "point " << i;
      }
    } else {
      EXPECT_TRUE(std::isnan(restricted[i].x)) << "missing point " << i;
    }
  }
  ASSERT_GT(keptValid, c.validCount() / 5) << "the box keeps a good part of the view";
  ASSERT_GT(removedValid, c.validCount() / 5) << "and removes a good part";
  EXPECT_LT(removedFitted, removedValid / 1000) << "only points within rounding of a face are fitted";

  // One point kept: every other work-group skips its tile, the point's own gets its fit.
  std::size_t only = 0;
  while (!c.isValid(only) || std::isnan(full[only].x)) only += 37;
  const PointXYZ p{c.xyz[3 * only], c.xyz[3 * only + 1], c.xyz[3 * only + 2]};
  const RegionOfInterestBox around{{p.x, p.y - 0.01f, p.z - 0.01f}, {p.x + 0.01f, p.y - 0.01f, p.z - 0.01f},
                                   {p.x, p.y + 0.01f, p.z - 0.01f}, 0, 0.02f};
  const auto one = cloud.deviceNormalsXYZ(5, around, identityMatrix4x4(), sq()).toHost();
  for (std::size_t i = 0; i < one.size(); ++i)
    if (i == only)
      EXPECT_TRUE(sameNormal(one[i], full[i])) << "the point on the box's face";
    else if (std::abs(c.xyz[3 * i] - p.x) > 0.05f || std::abs(c.xyz[3 * i + 1] - p.y) > 0.05f)
      EXPECT_TRUE(std::isnan(one[i].x)) << "point " << i;

  datest::expectError(ErrorCode::InvalidArgument, [&] { (void)cloud.deviceNormalsXYZ(6, box, pose, sq()); },
                      "even window");
  RegionOfInterestBox flat = box;
  flat.pointB = {0, -300, 0};  // on the line O -> A
  datest::expectError(ErrorCode::InvalidArgument, [&] { (void)cloud.deviceNormalsXYZ(5, flat, pose, sq()); },
                      "collinear box");
  Matrix4x4 projective = pose;
  projective[12] = 0.5f;
  datest::expectError(ErrorCode::InvalidArgument, [&] { (void)cloud.deviceNormalsXYZ(5, box, projective, sq()); },
                      "not affine");
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
