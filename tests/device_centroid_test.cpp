// UnorganizedPointCloud::deviceCentroid and the stream overload of center, on every
// device: the centroid stays in device memory (NaN when no point is valid) with the
// values centroid() reads, and center(sq) moves the points on the device while its
// translation waits in transformationMatrix() until the host asks for it. That neither
// waits on the host is the gated frame chain's test (stream_frame_chain_test.cpp).
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "devicearray/devicearray.hpp"
#include "test_support.hpp"

namespace {

using namespace devicearray;

constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();

/// n points spread over a few metres, every `missingEvery`-th one missing.
std::vector<PointXYZ> scattered(std::size_t n, std::uint32_t seed, std::size_t missingEvery = 7) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> xy(-900.f, 700.f), z(250.f, 2500.f);
  std::vector<PointXYZ> points(n);
  for (std::size_t i = 0; i < n; ++i)
    points[i] = i % missingEvery == 3 ? PointXYZ{kNaN, kNaN, kNaN} : PointXYZ{xy(rng), xy(rng), z(rng)};
  return points;
}

bool isValid(const PointXYZ& p) { return std::isfinite(p.x) && std::isfinite(p.y) && std::isfinite(p.z); }

/// The mean of the valid points in long double, rounded to float.
std::array<float, 3> hostMean(const std::vector<PointXYZ>& points) {
  long double s[3] = {0, 0, 0};
  std::size_t n = 0;
  for (const PointXYZ& p : points) {
    if (!isValid(p)) continue;
    s[0] += p.x;
    s[1] += p.y;
    s[2] += p.z;
    ++n;
  }
  return {static_cast<float>(s[0] / n), static_cast<float>(s[1] / n), static_cast<float>(s[2] / n)};
}

std::uint32_t bitsOf(float v) {
  std::uint32_t b;
  std::memcpy(&b, &v, sizeof b);
  return b;
}

PointXYZ onlyPoint(const DeviceArray<PointXYZ>& a) {
  const std::vector<PointXYZ> v = a.toHost();
  EXPECT_EQ(v.size(), 1u);
  return v.empty() ? PointXYZ{} : v[0];
}

/// Within one float step of `want`: the device sums in double, the reference in long double.
void expectWithinAStep(const PointXYZ& got, const std::array<float, 3>& want, const char* what) {
  const float g[3] = {got.x, got.y, got.z};
  for (int k = 0; k < 3; ++k) {
    const float step = std::nextafter(std::fabs(want[k]), INFINITY) - std::fabs(want[k]);
    EXPECT_NEAR(g[k], want[k], step) << what << " axis " << k;
  }
}

/// Equal values, +0 and -0 alike (a translation and a transform may sign a zero
/// differently).
void expectSamePoints(const DeviceArray<PointXYZ>& got, const DeviceArray<PointXYZ>& want, const char* what) {
  const std::vector<PointXYZ> g = got.toHost(), w = want.toHost();
  ASSERT_EQ(g.size(), w.size()) << what;
  for (std::size_t i = 0; i < g.size(); ++i) {
    if (!isValid(w[i])) {
      EXPECT_FALSE(isValid(g[i])) << what << " at " << i;
      continue;
    }
    ASSERT_TRUE(g[i].x == w[i].x && g[i].y == w[i].y && g[i].z == w[i].z) << what << " at " << i;
  }
}

Matrix4x4 pose() { return {0.6f, -0.8f, 0, 40, 0.8f, 0.6f, 0, -15, 0, 0, 1, 300, 0, 0, 0, 1}; }
Matrix4x4 tilt() { return {1, 0, 0, 2, 0, 0.8f, -0.6f, 0, 0, 0.6f, 0.8f, -7, 0, 0, 0, 1}; }

UnorganizedPointCloud cloudOf(const std::vector<PointXYZ>& points, const ComputeDevice& d) {
  return UnorganizedPointCloud(DeviceArray<PointXYZ>::fromHost(points.data(), points.size(), d));
}

class DeviceCentroid : public testing::TestWithParam<ComputeDevice> {};

TEST_P(DeviceCentroid, DividesTheSumsAsTheHostDoes) {
  const ComputeDevice d = GetParam();
  Stream stream(d);
  // Coordinates in eighths of a millimetre: every sum is exact in double, so the
  // reference (float)(sum / count) is the device's result bit for bit, for counts whose
  // quotients round up, down and to even.
  std::mt19937 rng(11);
  std::uniform_int_distribution<int> eighths(-800000, 800000);
  for (const std::size_t n : {1u, 2u, 3u, 7u, 10u, 97u, 1000u, 4099u, 65537u}) {
    std::vector<PointXYZ> points(n);
    double s[3] = {0, 0, 0}, count = 0;
    for (std::size_t i = 0; i < n; ++i) {
      if (n > 2 && i % 5 == 1) {
        points[i] = {kNaN, 0, 0};
        continue;
      }
      points[i] = {eighths(rng) / 8.0f, eighths(rng) / 8.0f, eighths(rng) / 8.0f};
      s[0] += points[i].x;
      s[1] += points[i].y;
      s[2] += points[i].z;
      ++count;
    }
    const UnorganizedPointCloud cloud = cloudOf(points, d);
    const PointXYZ got = onlyPoint(cloud.deviceCentroid(stream));
    const std::array<float, 3> read = cloud.centroid();
    const float g[3] = {got.x, got.y, got.z};
    for (int k = 0; k < 3; ++k) {
      EXPECT_EQ(bitsOf(g[k]), bitsOf(static_cast<float>(s[k] / count))) << n << " points, axis " << k;
      EXPECT_EQ(bitsOf(g[k]), bitsOf(read[std::size_t(k)])) << n << " points, axis " << k;
    }
  }
}

TEST_P(DeviceCentroid, IsTheMeanOfTheValidPoints) {
  const ComputeDevice d = GetParam();
  const std::vector<PointXYZ> points = scattered(20011, 3);
  const UnorganizedPointCloud cloud = cloudOf(points, d);
  Stream stream(d);
  const DeviceArray<PointXYZ> c = cloud.deviceCentroid(stream);
  EXPECT_EQ(c.size(), 1u);
  EXPECT_EQ(c.device(), d);
  const PointXYZ got = onlyPoint(c);
  expectWithinAStep(got, hostMean(points), "deviceCentroid");
  const std::array<float, 3> read = cloud.centroid(stream);
  EXPECT_EQ(bitsOf(got.x), bitsOf(read[0]));
  EXPECT_EQ(bitsOf(got.y), bitsOf(read[1]));
  EXPECT_EQ(bitsOf(got.z), bitsOf(read[2]));
  // The device's own queue, as a blocking caller would use it.
  const PointXYZ own = onlyPoint(cloud.deviceCentroid(d.sdkStreamOrQueue()));
  EXPECT_EQ(std::memcmp(&own, &got, sizeof got), 0);
}

TEST_P(DeviceCentroid, NoValidPointGivesNaN) {
  const ComputeDevice d = GetParam();
  Stream stream(d);
  const std::vector<PointXYZ> missing(50, PointXYZ{kNaN, 1, 2});
  const UnorganizedPointCloud allMissing = cloudOf(missing, d);
  const PointXYZ a = onlyPoint(allMissing.deviceCentroid(stream));
  EXPECT_TRUE(std::isnan(a.x) && std::isnan(a.y) && std::isnan(a.z));
  datest::expectError(ErrorCode::InvalidState, [&] { (void)allMissing.centroid(); });
  // A cloud of 0 points that knows its device.
  const HostPointCloud none = [] {
    HostPointCloud h;
    h.height = 2;
    h.width = 2;
    h.xyz.assign(12, kNaN);
    return h;
  }();
  const UnorganizedPointCloud empty = PointCloud::fromHost(none, d).toUnorganizedPointCloud();
  ASSERT_EQ(empty.size(), 0u);
  const PointXYZ e = onlyPoint(empty.deviceCentroid(stream));
  EXPECT_TRUE(std::isnan(e.x) && std::isnan(e.y) && std::isnan(e.z));
  datest::expectError(ErrorCode::InvalidState, [&] { (void)UnorganizedPointCloud().deviceCentroid(d.sdkStreamOrQueue()); });
}

TEST_P(DeviceCentroid, LeavesACountOnTheDeviceThere) {
  const ComputeDevice d = GetParam();
  std::vector<PointXYZ> grid = scattered(64 * 48, 5, 4);
  const PointCloud organized(DeviceArray<PointXYZ>::fromHost(grid.data(), 48, 64, d));
  Stream stream(d);
  UnorganizedPointCloud pending = organized.toUnorganizedPointCloud(stream);
  const DeviceArray<PointXYZ> c = pending.deviceCentroid(stream);
  pending.center(stream);
  EXPECT_FALSE(pending.isSizeKnown());
  const std::array<float, 3> want = hostMean(grid);
  expectWithinAStep(onlyPoint(c), want, "over the capacity");
  EXPECT_FALSE(pending.isSizeKnown());
  // The centred points: the valid ones, in order, each moved by minus the centroid.
  const PointXYZ at = onlyPoint(c);
  std::vector<PointXYZ> moved;
  for (const PointXYZ& p : grid)
    if (isValid(p)) moved.push_back({p.x - at.x, p.y - at.y, p.z - at.z});
  expectSamePoints(pending.storedXYZ(), DeviceArray<PointXYZ>::fromHost(moved.data(), moved.size(), d), "centred");
  const Matrix4x4& m = pending.transformationMatrix();
  EXPECT_EQ(m[3], -at.x);
  EXPECT_EQ(m[7], -at.y);
  EXPECT_EQ(m[11], -at.z);
}

TEST_P(DeviceCentroid, CenteringOnAStreamMatchesTheBlockingForm) {
  const ComputeDevice d = GetParam();
  const UnorganizedPointCloud start = cloudOf(scattered(5003, 7), d).transformed(pose());
  UnorganizedPointCloud onStream = start.transformed(identityMatrix4x4());  // arrays of its own
  UnorganizedPointCloud blocking = start.transformed(identityMatrix4x4());
  Stream stream(d);
  onStream.center(stream);
  onStream.transform(tilt(), stream);
  onStream.center(stream);  // centring again chains a second centroid
  blocking.center();
  blocking.transform(tilt());
  blocking.center();
  EXPECT_EQ(onStream.transformationMatrix(), blocking.transformationMatrix());
  expectSamePoints(onStream.storedXYZ(), blocking.storedXYZ(), "centred twice");
  for (const float v : onStream.centroid()) EXPECT_NEAR(v, 0.0f, 1e-3f);
  // Once read, further transforms accumulate on the host as before.
  onStream.transform(pose(), stream);
  blocking.transform(pose());
  EXPECT_EQ(onStream.transformationMatrix(), blocking.transformationMatrix());
}

TEST_P(DeviceCentroid, OperationsCarryAPendingTranslation) {
  const ComputeDevice d = GetParam();
  const UnorganizedPointCloud start = cloudOf(scattered(3001, 9), d).transformed(pose());
  UnorganizedPointCloud centred = start.transformed(identityMatrix4x4());
  UnorganizedPointCloud blocking = start.transformed(identityMatrix4x4());
  Stream stream(d);
  centred.center(stream);
  blocking.center();
  const UnorganizedPointCloud copies[] = {
      centred,
      centred.transformed(identityMatrix4x4(), stream),
      centred.voxelDownsampled(50.f, 1, stream),
      centred.voxelDownsampled(50.f, 1),
      centred.statisticalOutliersRemoved(8, 2.f, stream),
      centred.radiusOutliersRemoved(200.f, 1, stream),
      centred.clone(d),
  };
  for (const UnorganizedPointCloud& c : copies)
    EXPECT_EQ(c.transformationMatrix(), blocking.transformationMatrix());
  UnorganizedPointCloud extended = blocking.transformed(tilt());
  UnorganizedPointCloud base = start.transformed(identityMatrix4x4());
  base.center(stream);
  base.extend(extended, stream);  // keeps this cloud's (pending) matrix
  EXPECT_EQ(base.transformationMatrix(), blocking.transformationMatrix());
  // Normals look towards the viewpoint the matrix holds.
  UnorganizedPointCloud withNormals = centred;
  withNormals.estimateNormals(12, stream);
  blocking.estimateNormals(12);
  const std::vector<NormalXYZ> g = withNormals.storedNormals().toHost(), w = blocking.storedNormals().toHost();
  ASSERT_EQ(g.size(), w.size());
  for (std::size_t i = 0; i < g.size(); ++i) {
    if (std::isnan(w[i].x)) continue;
    EXPECT_NEAR(g[i].x * w[i].x + g[i].y * w[i].y + g[i].z * w[i].z, 1.0f, 1e-5f) << "normal " << i;
  }
}

TEST_P(DeviceCentroid, ThreadsMayReadOneMatrixTogether) {
  const ComputeDevice d = GetParam();
  const UnorganizedPointCloud start = cloudOf(scattered(4000, 13), d);
  UnorganizedPointCloud blocking = start.transformed(pose());
  UnorganizedPointCloud pending = start.transformed(pose());
  Stream stream(d);
  pending.center(stream);
  blocking.center();
  const UnorganizedPointCloud& shared = pending;
  std::vector<Matrix4x4> seen(4);
  std::vector<std::thread> threads;
  for (std::size_t i = 0; i < seen.size(); ++i) threads.emplace_back([&, i] { seen[i] = shared.transformationMatrix(); });
  for (std::thread& t : threads) t.join();
  for (const Matrix4x4& m : seen) EXPECT_EQ(m, blocking.transformationMatrix());
}

TEST_P(DeviceCentroid, NoValidPointFailsWhereTheMatrixIsRead) {
  const ComputeDevice d = GetParam();
  const std::vector<PointXYZ> missing(40, PointXYZ{1, kNaN, 2});
  UnorganizedPointCloud cloud = cloudOf(missing, d);
  Stream stream(d);
  cloud.center(stream);  // cannot know yet: the centroid is on the device
  const UnorganizedPointCloud moved = cloud.transformed(pose(), stream);
  auto expectNoValidPoint = [](const UnorganizedPointCloud& c) {
    try {
      (void)c.transformationMatrix();
      ADD_FAILURE() << "expected InvalidState";
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::InvalidState);
      EXPECT_NE(std::string(e.what()).find("no valid (finite) point"), std::string::npos) << e.what();
    }
  };
  expectNoValidPoint(cloud);
  expectNoValidPoint(cloud);  // and again: nothing was read that could be kept
  expectNoValidPoint(moved);
  for (const PointXYZ& p : cloud.storedXYZ().toHost()) EXPECT_TRUE(std::isnan(p.y));
  // The blocking form throws at once and leaves the cloud as it was.
  UnorganizedPointCloud blocking = cloudOf(missing, d);
  datest::expectError(ErrorCode::InvalidState, [&] { blocking.center(); });
  EXPECT_EQ(blocking.transformationMatrix(), identityMatrix4x4());
  // A cloud without points fails at once in both forms.
  UnorganizedPointCloud none = PointCloud::fromHost(1, static_cast<int>(missing.size()), missing.data(), nullptr, nullptr, d)
                                   .toUnorganizedPointCloud();
  ASSERT_TRUE(none.isEmpty());
  datest::expectError(ErrorCode::InvalidState, [&] { none.center(stream); });
  datest::expectError(ErrorCode::InvalidState, [&] { none.center(); });
  EXPECT_EQ(none.transformationMatrix(), identityMatrix4x4());
}

DATEST_INSTANTIATE_OVER_DEVICES(DeviceCentroid);

}  // namespace
