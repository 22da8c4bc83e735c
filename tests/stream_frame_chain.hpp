// The frame chain of the stream tests: downsample -> normals -> transform -> ROI ->
// unorganize -> centroid, centre and voxel, blocking and on a stream, the byte-wise
// comparison of the two results and the centring's check against the host's data.
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "devicearray/devicearray.hpp"

namespace datest::chain {

using namespace devicearray;

constexpr int kHeight = 96;
constexpr int kWidth = 128;

/// A noisy tilted plane with holes, colours and SNR.
inline HostPointCloud frame() {
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> noise(-2.f, 2.f), u(0.f, 1.f), snr(0.5f, 10.f);
  HostPointCloud c;
  c.height = kHeight;
  c.width = kWidth;
  for (int r = 0; r < kHeight; ++r)
    for (int col = 0; col < kWidth; ++col) {
      const bool hole = u(rng) < 0.1f;
      const float nan = std::numeric_limits<float>::quiet_NaN();
      c.xyz.insert(c.xyz.end(), {hole ? nan : (col - kWidth / 2) * 4.f, hole ? nan : (r - kHeight / 2) * 4.f,
                                 hole ? nan : 800.f + 0.5f * col + noise(rng)});
      c.rgba.insert(c.rgba.end(), {std::uint8_t(rng()), std::uint8_t(rng()), std::uint8_t(rng()), 255});
      c.snr.push_back(snr(rng));
    }
  return c;
}

inline Matrix4x4 pose() { return {0.8f, -0.6f, 0, 10, 0.6f, 0.8f, 0, -20, 0, 0, 1, 5, 0, 0, 0, 1}; }

inline RegionOfInterestBox box() {
  RegionOfInterestBox b;
  b.origin = {-150, -150, 0};
  b.pointA = {150, -150, 0};
  b.pointB = {-150, 150, 0};
  b.minExtent = -2000;
  b.maxExtent = 2000;
  return b;
}

struct ChainResult {
  UnorganizedPointCloud points;     // unorganized
  DeviceArray<PointXYZ> centroid;   // deviceCentroid of points
  UnorganizedPointCloud centred;    // unorganized again, then center()
  UnorganizedPointCloud voxels;     // voxelDownsampled
  DeviceArray<NormalXYZ> normals;
};

inline ChainResult blockingChain(const PointCloud& uploaded) {
  ChainResult r;
  PointCloud cloud = uploaded.downsampled(Downsampling::by2x2);
  r.normals = cloud.deviceNormalsXYZ(cloud.device().sdkStreamOrQueue());
  synchronizeStream(cloud.device().sdkStreamOrQueue());
  cloud.transform(pose());
  cloud.maskByRegionOfInterest(box());
  r.points = cloud.toUnorganizedPointCloud();
  r.centroid = r.points.deviceCentroid(cloud.device().sdkStreamOrQueue());
  r.centred = cloud.toUnorganizedPointCloud();
  r.centred.center();
  r.voxels = r.points.voxelDownsampled(12.f, 2);
  return r;
}

inline ChainResult streamChain(const PointCloud& uploaded, StreamOrQueue sq) {
  ChainResult r;
  PointCloud cloud = uploaded.downsampled(Downsampling::by2x2, sq);
  r.normals = cloud.deviceNormalsXYZ(sq);
  cloud.transform(pose(), sq);
  cloud.maskByRegionOfInterest(box(), sq);
  r.points = cloud.toUnorganizedPointCloud(sq);
  r.centroid = r.points.deviceCentroid(sq);
  r.centred = cloud.toUnorganizedPointCloud(sq);
  r.centred.center(sq);
  r.voxels = r.points.voxelDownsampled(12.f, 2, sq);
  return r;
}

template <class F>
void expectSameBytes(const DeviceArray<F>& got, const DeviceArray<F>& want, const char* what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  if (want.isEmpty()) return;
  const std::vector<F> g = got.toHost(), w = want.toHost();
  EXPECT_EQ(std::memcmp(g.data(), w.data(), g.size() * sizeof(F)), 0) << what;
}

inline void expectSameCloud(const UnorganizedPointCloud& got, const UnorganizedPointCloud& want, const char* what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  ASSERT_GT(want.size(), 0u) << what;
  EXPECT_TRUE(got.isSizeKnown());
  expectSameBytes(got.storedXYZ(), want.storedXYZ(), what);
  expectSameBytes(got.storedColors(), want.storedColors(), what);
  expectSameBytes(got.storedSNRs(), want.storedSNRs(), what);
  EXPECT_EQ(got.transformationMatrix(), want.transformationMatrix()) << what;
}

/// The chain's centroid against the mean of its unorganized points as the host
/// downloads them (long double, within one float step: the device sums in double), and
/// its centred cloud against those points moved by minus that centroid, the translation
/// following pose() in the matrix.
inline void expectCentring(const ChainResult& r, const char* what) {
  const HostPointCloud points = r.points.toHost();
  long double sum[3] = {0, 0, 0};
  for (std::size_t i = 0; i < points.xyz.size(); ++i) sum[i % 3] += points.xyz[i];
  const std::size_t n = points.xyz.size() / 3;
  ASSERT_GT(n, 0u) << what;
  const std::vector<PointXYZ> c = r.centroid.toHost();
  ASSERT_EQ(c.size(), 1u) << what;
  const float centroid[3] = {c[0].x, c[0].y, c[0].z};
  for (int k = 0; k < 3; ++k) {
    const float mean = static_cast<float>(sum[k] / n);
    EXPECT_NEAR(centroid[k], mean, std::nextafter(std::fabs(mean), INFINITY) - std::fabs(mean)) << what << " axis " << k;
  }
  const HostPointCloud centred = r.centred.toHost();
  ASSERT_EQ(centred.xyz.size(), points.xyz.size()) << what;
  for (std::size_t i = 0; i < points.xyz.size(); ++i)
    ASSERT_EQ(centred.xyz[i], points.xyz[i] - centroid[i % 3]) << what << " coordinate " << i;
  Matrix4x4 m = pose();
  for (int k = 0; k < 3; ++k)
    m[4 * k + 3] = static_cast<float>(static_cast<double>(m[4 * k + 3]) - static_cast<double>(centroid[k]));
  EXPECT_EQ(r.centred.transformationMatrix(), m) << what;
}

inline void expectSameChain(const ChainResult& got, const ChainResult& want) {
  expectSameCloud(got.points, want.points, "unorganized");
  expectSameCloud(got.voxels, want.voxels, "voxels");
  expectSameBytes(got.normals, want.normals, "normals");
  expectCentring(got, "stream chain");
  expectCentring(want, "blocking chain");
}

}  // namespace datest::chain
