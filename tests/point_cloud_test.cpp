// PointCloud / UnorganizedPointCloud / Frame2D against the host reference
// of point_cloud_reference.hpp, on every device.
//
// Tolerances: XYZ results 1e-5 relative (+1e-4 mm absolute) — the device accumulates
// in float, the reference in double; normals 1e-4 per component; colours exact (integer
// means); SNR 1e-5 relative. ROI decisions may differ from the double reference only
// for points within 1e-3 mm of a face (float vs double projections).
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <random>

#include "devicearray/devicearray.hpp"
#include "point_cloud_reference.hpp"
#include "test_support.hpp"

namespace {

using namespace devicearray;

pcref::Cloud randomCloud(int h, int w, std::uint32_t seed, double holes = 0.15, bool colors = true, bool snr = true) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> xy(-500.f, 500.f), z(300.f, 1500.f), s(0.5f, 10.f), u(0.f, 1.f);
  pcref::Cloud c;
  c.height = h;
  c.width = w;
  for (int i = 0; i < h * w; ++i) {
    PointXYZ p{xy(rng), xy(rng), z(rng)};
    if (u(rng) < holes) p = pcref::nanPoint();
    c.xyz.push_back(p);
    if (colors) c.rgba.push_back({std::uint8_t(rng()), std::uint8_t(rng()), std::uint8_t(rng()), std::uint8_t(rng())});
    if (snr) c.snr.push_back({s(rng)});
  }
  return c;
}

PointCloud upload(const pcref::Cloud& c, const ComputeDevice& d) {
  return PointCloud::fromHost(c.height, c.width, c.xyz.data(), c.rgba.empty() ? nullptr : c.rgba.data(),
                              c.snr.empty() ? nullptr : c.snr.data(), d);
}

void expectPointsNear(const std::vector<PointXYZ>& got, const std::vector<PointXYZ>& want, const char* what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  for (std::size_t i = 0; i < got.size(); ++i) {
    const bool gv = pcref::valid(got[i]), wv = pcref::valid(want[i]);
    ASSERT_EQ(gv, wv) << what << " validity at " << i;
    if (!wv) {
      EXPECT_TRUE(std::isnan(got[i].x) && std::isnan(got[i].y) && std::isnan(got[i].z)) << what << " at " << i;
      continue;
    }
    const float* g = &got[i].x;
    const float* e = &want[i].x;
    for (int k = 0; k < 3; ++k)
      ASSERT_NEAR(g[k], e[k], 1e-5 * std::fabs(e[k]) + 1e-4) << what << " point " << i << " axis " << k;
  }
}

void expectColorsEqual(const std::vector<ColorRGBA>& got, const std::vector<ColorRGBA>& want) {
  ASSERT_EQ(got.size(), want.size());
  for (std::size_t i = 0; i < got.size(); ++i) {
    ASSERT_EQ(got[i].r, want[i].r) << i;
    ASSERT_EQ(got[i].g, want[i].g) << i;
    ASSERT_EQ(got[i].b, want[i].b) << i;
    ASSERT_EQ(got[i].a, want[i].a) << i;
  }
}

void expectSnrNear(const std::vector<SNR>& got, const std::vector<SNR>& want) {
  ASSERT_EQ(got.size(), want.size());
  for (std::size_t i = 0; i < got.size(); ++i)
    ASSERT_NEAR(got[i].value, want[i].value, 1e-5 * std::fabs(want[i].value) + 1e-6) << i;
}

class PointCloudTest : public testing::TestWithParam<ComputeDevice> {
 protected:
  ComputeDevice dev() const { return GetParam(); }
  StreamOrQueue sq() const { return GetParam().sdkStreamOrQueue(); }

  /// source.voxelDownsampled(voxelSize, minPts), blocking and as a stream call, against
  /// the reference voxels `want`.
  template <class Cloud>
  void expectVoxelGrid(const Cloud& source, float voxelSize, int minPts, const pcref::Cloud& want) const {
    for (const bool onStream : {false, true}) {
      SCOPED_TRACE(testing::Message() << voxelSize << " mm, min " << minPts << (onStream ? ", stream" : ", blocking"));
      const UnorganizedPointCloud v =
          onStream ? source.voxelDownsampled(voxelSize, minPts, sq()) : source.voxelDownsampled(voxelSize, minPts);
      ASSERT_EQ(v.size(), want.xyz.size());
      if (want.xyz.empty()) continue;
      expectPointsNear(v.storedXYZ().toHost(), want.xyz, "voxel xyz");
      expectColorsEqual(v.storedColors().toHost(), want.rgba);
      expectSnrNear(v.storedSNRs().toHost(), want.snr);
    }
  }
};

TEST_P(PointCloudTest, UploadDownloadRoundTripsAndAccessorsMatch) {
  const pcref::Cloud c = randomCloud(37, 53, 1);
  const PointCloud cloud = upload(c, dev());
  EXPECT_EQ(cloud.height(), 37);
  EXPECT_EQ(cloud.width(), 53);
  EXPECT_EQ(cloud.size(), 37u * 53u);
  expectPointsNear(cloud.devicePointsXYZ(sq()).toHost(), c.xyz, "xyz");
  expectSnrNear(cloud.deviceSNRs(sq()).toHost(), c.snr);
  expectColorsEqual(cloud.imageDeviceArray<ColorRGBA>(sq()).toHost(), c.rgba);
  const auto bgra = cloud.imageDeviceArray<ColorBGRA>(sq()).toHost();
  EXPECT_EQ(bgra[5].b, c.rgba[5].b);
  EXPECT_EQ(bgra[5].r, c.rgba[5].r);
  const auto xyzw = cloud.devicePointsXYZW(sq()).toHost();
  const auto z = cloud.devicePointsZ(sq()).toHost();
  for (std::size_t i = 0; i < c.xyz.size(); ++i) {
    if (!pcref::valid(c.xyz[i])) continue;
    EXPECT_EQ(xyzw[i].y, c.xyz[i].y);
    EXPECT_EQ(xyzw[i].w, 1.0f);
    EXPECT_EQ(z[i].z, c.xyz[i].z);
  }
}

TEST_P(PointCloudTest, ZeroCopyConstructionSharesTheArrays) {
  const pcref::Cloud c = randomCloud(5, 7, 2, 0.0);
  auto xyz = DeviceArray<PointXYZ>::fromHost(c.xyz.data(), 5, 7, dev());
  PointCloud cloud(xyz);
  EXPECT_FALSE(cloud.hasColors());
  EXPECT_FALSE(cloud.hasSNRs());
  cloud.transform({1, 0, 0, 10, 0, 1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1});
  EXPECT_FLOAT_EQ(xyz.toHost()[3].x, c.xyz[3].x + 10.0f);  // in place on the user's array
  datest::expectError(ErrorCode::InvalidState, [&] { (void)cloud.deviceSNRs(sq()); });
  datest::expectError(ErrorCode::InvalidState, [&] { (void)cloud.imageDeviceArray<ColorRGBA>(sq()); });
  datest::expectError(ErrorCode::InvalidArgument, [&] { PointCloud bad(DeviceArray<PointXYZ>{}); });
  auto snr = DeviceArray<SNR>::fromHost(c.snr.data(), 7, 5, dev());
  datest::expectError(ErrorCode::InvalidArgument, [&] { PointCloud bad(xyz, {}, snr); });
  auto flat = DeviceArray<PointXYZ>::fromHost(c.xyz.data(), std::size_t(35), dev());
  datest::expectError(ErrorCode::InvalidArgument, [&] { PointCloud bad(flat); });
}

TEST_P(PointCloudTest, DownsampleMatchesReferenceForEveryBlockSize) {
  for (auto [d, k] : {std::pair{Downsampling::by2x2, 2}, {Downsampling::by3x3, 3}, {Downsampling::by4x4, 4}}) {
    for (bool attrs : {true, false}) {
      const pcref::Cloud c = randomCloud(37, 53, 10 + k, 0.3, attrs, attrs);  // 37, 53 not divisible by k
      const pcref::Cloud want = pcref::downsample(c, k);
      PointCloud cloud = upload(c, dev());
      const PointCloud out = cloud.downsampled(d);
      ASSERT_EQ(out.height(), 37 / k);
      ASSERT_EQ(out.width(), 53 / k);
      expectPointsNear(out.storedXYZ().toHost(), want.xyz, "downsampled xyz");
      if (attrs) {
        expectColorsEqual(out.storedColors().toHost(), want.rgba);
        expectSnrNear(out.storedSNRs().toHost(), want.snr);
      }
      cloud.downsample(d);
      EXPECT_EQ(cloud.height(), 37 / k);
      expectPointsNear(cloud.storedXYZ().toHost(), want.xyz, "in place");
    }
  }
}

TEST_P(PointCloudTest, DownsampleEdgeCases) {
  const pcref::Cloud one = randomCloud(1, 1, 3, 0.0);
  PointCloud tiny = upload(one, dev());
  datest::expectError(ErrorCode::InvalidArgument, [&] { tiny.downsample(Downsampling::by2x2); });
  EXPECT_EQ(tiny.height(), 1);  // unchanged after the failed call
  datest::expectError(ErrorCode::InvalidArgument, [&] { (void)tiny.downsampled(static_cast<Downsampling>(7)); });
  // All-NaN: every output point missing, SNR 0.
  pcref::Cloud nan = randomCloud(8, 8, 4, 1.0);
  const PointCloud out = upload(nan, dev()).downsampled(Downsampling::by4x4);
  for (const PointXYZ& p : out.storedXYZ().toHost()) EXPECT_TRUE(std::isnan(p.x));
  for (const SNR& s : out.storedSNRs().toHost()) EXPECT_EQ(s.value, 0.0f);
  // Hand-worked 2x2 block: weights 1 and 4 (SNR 1, 2), one hole, one zero-SNR point.
  std::vector<PointXYZ> xyz = {{0, 0, 1}, {10, 0, 1}, pcref::nanPoint(), {100, 100, 100}};
  std::vector<SNR> snr = {{1}, {2}, {5}, {0}};
  const PointCloud hand = PointCloud::fromHost(2, 2, xyz.data(), nullptr, snr.data(), dev()).downsampled(Downsampling::by2x2);
  const PointXYZ p = hand.storedXYZ().toHost()[0];
  EXPECT_NEAR(p.x, 8.0f, 1e-5);  // (1*0 + 4*10 + 0*100) / 5
  EXPECT_NEAR(p.y, 0.0f, 1e-5);
  EXPECT_NEAR(hand.storedSNRs().toHost()[0].value, std::sqrt(5.0f), 1e-6);
}

TEST_P(PointCloudTest, TransformAppliesToValidPointsAndAccumulates) {
  const pcref::Cloud c = randomCloud(37, 53, 5);
  const float a = 0.3f;
  const Matrix4x4 r = {std::cos(a), -std::sin(a), 0, 5, std::sin(a), std::cos(a), 0, -7, 0, 0, 1, 100, 0, 0, 0, 1};
  const Matrix4x4 s = {2, 0, 0, 0, 0, 1, 0, 1, 0, 0, 1, 0, 0, 0, 0, 1};
  PointCloud cloud = upload(c, dev());
  cloud.transform(r);
  cloud.transform(s, sq());
  expectPointsNear(cloud.storedXYZ().toHost(), pcref::transform(pcref::transform(c.xyz, r), s), "transformed");
  const Matrix4x4 total = pcref::multiply(s, r);
  for (int i = 0; i < 16; ++i) EXPECT_NEAR(cloud.transformationMatrix()[i], total[i], 1e-6);
  const PointCloud copy = upload(c, dev()).transformed(r);
  expectPointsNear(copy.storedXYZ().toHost(), pcref::transform(c.xyz, r), "transformed copy");
  Matrix4x4 projective = identityMatrix4x4();
  projective[14] = 1;
  datest::expectError(ErrorCode::InvalidArgument, [&] { cloud.transform(projective); });
  Matrix4x4 nanM = identityMatrix4x4();
  nanM[1] = NAN;
  datest::expectError(ErrorCode::InvalidArgument, [&] { (void)cloud.transformed(nanM); });
  for (int i = 0; i < 16; ++i) EXPECT_NEAR(cloud.transformationMatrix()[i], total[i], 1e-6);  // unchanged
}

TEST_P(PointCloudTest, MaskRemovesPixelsWhereMaskIsZero) {
  const pcref::Cloud c = randomCloud(37, 53, 6);
  std::vector<std::uint8_t> m(c.xyz.size());
  std::mt19937 rng(9);
  for (auto& v : m) v = (rng() % 3 == 0) ? 0 : std::uint8_t(1 + rng() % 200);
  std::vector<PointXYZ> want = c.xyz;
  for (std::size_t i = 0; i < m.size(); ++i)
    if (m[i] == 0) want[i] = pcref::nanPoint();
  PointCloud cloud = upload(c, dev());
  const PointCloud copy = cloud.masked(HostMat({37, 53}, makeType(Depth::U8, 1), m.data()));
  expectPointsNear(copy.storedXYZ().toHost(), want, "masked (HostMat)");
  expectPointsNear(cloud.storedXYZ().toHost(), c.xyz, "source untouched");
  GpuMatND dm({37, 53}, makeType(Depth::U8, 1), dev());
  dm.upload(HostMat({37, 53}, makeType(Depth::U8, 1), m.data()));
  cloud.mask(dm, sq());
  expectPointsNear(cloud.storedXYZ().toHost(), want, "mask (GpuMatND)");
  // A mask that removes everything.
  std::vector<bool> none(c.xyz.size(), false);
  PointCloud all = upload(c, dev());
  all.mask(none, 37, 53);
  for (const PointXYZ& p : all.storedXYZ().toHost()) EXPECT_TRUE(std::isnan(p.z));
  EXPECT_EQ(all.toUnorganizedPointCloud().size(), 0u);
  // Bad masks.
  datest::expectError(ErrorCode::InvalidArgument, [&] { cloud.mask(m.data(), 53, 37); });
  datest::expectError(ErrorCode::InvalidArgument, [&] { cloud.mask(none, 37, 52); });
  GpuMatND wrongType({37, 53}, makeType(Depth::F32, 1), dev());
  datest::expectError(ErrorCode::InvalidArgument, [&] { cloud.mask(wrongType); });
  GpuMatND wrongSize({36, 53}, makeType(Depth::U8, 1), dev());
  datest::expectError(ErrorCode::InvalidArgument, [&] { (void)cloud.masked(wrongSize); });
  try {
    (void)cloud.masked(wrongSize);
  } catch (const devicearray::Error& e) {
    EXPECT_NE(std::string(e.what()).find("the mask must be 2-D 37x53 like the cloud, but is 36x53"), std::string::npos)
        << e.what();
  }
  // A host mask's error says which of type and shape is wrong, and what was given.
  const std::pair<HostMat, std::string> badHost[] = {
      {HostMat({53, 37}, makeType(Depth::U8, 1), m.data()), "must be 2-D 37x53 like the cloud, but is 53x37"},
      {HostMat({37, 53, 1}, makeType(Depth::U8, 1), m.data()), "must be 2-D 37x53 like the cloud, but is 37x53x1"},
      {HostMat({37, 53}, makeType(Depth::S8, 1), m.data()), "it must be makeType(Depth::U8, 1)"}};
  for (const auto& [mask, message] : badHost) {
    try {
      (void)cloud.masked(mask);
      ADD_FAILURE() << "accepted: " << message;
    } catch (const devicearray::Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::InvalidArgument);
      EXPECT_NE(std::string(e.what()).find(message), std::string::npos) << e.what();
    }
  }
}

TEST_P(PointCloudTest, RegionOfInterestKeepsPointsInsideTheOrientedBox) {
  const pcref::Cloud c = randomCloud(37, 53, 7, 0.1);
  // A tilted box: base spanned by non-orthogonal edges.
  const RegionOfInterestBox box{{-200, -100, 500}, {250, -50, 600}, {-150, 300, 550}, -200, 400};
  PointCloud cloud = upload(c, dev());
  const auto got = cloud.maskedByRegionOfInterest(box).storedXYZ().toHost();
  int kept = 0;
  for (std::size_t i = 0; i < c.xyz.size(); ++i) {
    const auto d = pcref::roi(c.xyz[i], box.origin, box.pointA, box.pointB, box.minExtent, box.maxExtent);
    if (d.margin < 1e-3) continue;
    ASSERT_EQ(pcref::valid(got[i]), d.inside) << i;
    if (d.inside) {
      EXPECT_EQ(got[i].x, c.xyz[i].x);
      ++kept;
    }
  }
  EXPECT_GT(kept, 10);
  // Nothing / everything.
  const RegionOfInterestBox far{{1e5f, 1e5f, 1e5f}, {1e5f + 1, 1e5f, 1e5f}, {1e5f, 1e5f + 1, 1e5f}, 0, 1};
  PointCloud empty = upload(c, dev());
  empty.maskByRegionOfInterest(far, sq());
  EXPECT_EQ(empty.toUnorganizedPointCloud().size(), 0u);
  const RegionOfInterestBox huge{{-1e4f, -1e4f, 0}, {1e4f, -1e4f, 0}, {-1e4f, 1e4f, 0}, -1e4f, 1e4f};
  expectPointsNear(cloud.maskedByRegionOfInterest(huge).storedXYZ().toHost(), c.xyz, "everything kept");
  // Degenerate boxes.
  datest::expectError(ErrorCode::InvalidArgument, [&] {
    cloud.maskByRegionOfInterest({{0, 0, 0}, {0, 0, 0}, {0, 1, 0}, 0, 1});
  });
  datest::expectError(ErrorCode::InvalidArgument, [&] {
    cloud.maskByRegionOfInterest({{0, 0, 0}, {1, 1, 1}, {2, 2, 2}, 0, 1});
  });
  datest::expectError(ErrorCode::InvalidArgument, [&] {
    cloud.maskByRegionOfInterest({{0, 0, 0}, {1, 0, 0}, {0, 1, 0}, 2, 1});
  });
}

TEST_P(PointCloudTest, TransformAndRegionOfInterestInOnePassGiveTheTwoCallsPoints) {
  const pcref::Cloud c = randomCloud(37, 53, 11, 0.1);
  const float a = 0.3f;
  const Matrix4x4 m = {std::cos(a), -std::sin(a), 0,     12.5f,  // a rotation about z, a stretch of z
                       std::sin(a), std::cos(a),  0,     -7,     // and a translation
                       0,           0,            1.02f, 30,     //
                       0,           0,            0,     1};
  const RegionOfInterestBox box{{-200, -100, 500}, {250, -50, 600}, {-150, 300, 550}, -200, 400};
  // A transform before them: the one pass accumulates the matrix as transform() does.
  PointCloud twoCalls = upload(c, dev()).transformed(m, sq());
  PointCloud onePass = twoCalls.clone(dev());
  twoCalls.transform(m, sq());
  twoCalls.maskByRegionOfInterest(box, sq());
  onePass.transformAndMaskByRegionOfInterest(m, box, sq());
  const auto want = twoCalls.storedXYZ().toHost(), got = onePass.storedXYZ().toHost();
  ASSERT_EQ(got.size(), want.size());
  std::size_t kept = 0;
  for (std::size_t i = 0; i < got.size(); ++i) {
    EXPECT_EQ(std::memcmp(&got[i], &want[i], sizeof got[i]), 0) << "point " << i;  // bit for bit, NaN included
    kept += pcref::valid(got[i]) ? 1 : 0;
  }
  EXPECT_GT(kept, 10u);
  EXPECT_LT(kept, got.size() / 2);
  EXPECT_EQ(onePass.transformationMatrix(), twoCalls.transformationMatrix());
  Matrix4x4 projective = m;
  projective[14] = 1;
  datest::expectError(ErrorCode::InvalidArgument,
                      [&] { onePass.transformAndMaskByRegionOfInterest(projective, box, sq()); }, "not affine");
  datest::expectError(ErrorCode::InvalidArgument, [&] {
    onePass.transformAndMaskByRegionOfInterest(m, {{0, 0, 0}, {1, 1, 1}, {2, 2, 2}, 0, 1}, sq());
  }, "collinear box");
  EXPECT_EQ(onePass.transformationMatrix(), twoCalls.transformationMatrix()) << "a refused call changes nothing";
  const auto after = onePass.storedXYZ().toHost();
  EXPECT_EQ(std::memcmp(after.data(), got.data(), got.size() * sizeof got[0]), 0) << "nor the points";
}

TEST_P(PointCloudTest, NormalsMatchReferenceAndFaceTheCamera) {
  // A tilted plane z = 1000 + 0.5 x, with holes.
  const int h = 37, w = 53;
  std::vector<PointXYZ> plane(std::size_t(h * w));
  for (int r = 0; r < h; ++r)
    for (int c = 0; c < w; ++c) {
      const float x = (c - 26) * 4.0f, y = (r - 18) * 4.0f;
      plane[std::size_t(r * w + c)] = ((r * 7 + c * 3) % 11 == 0) ? pcref::nanPoint() : PointXYZ{x, y, 1000 + 0.5f * x};
    }
  PointCloud cloud = PointCloud::fromHost(h, w, plane.data(), nullptr, nullptr, dev());
  const auto n = cloud.deviceNormalsXYZ(sq()).toHost();
  const auto want = pcref::normals(h, w, plane, {0, 0, 0});
  const float len = std::sqrt(1.25f);
  for (std::size_t i = 0; i < n.size(); ++i) {
    ASSERT_EQ(std::isnan(n[i].x), std::isnan(want[i].x)) << i;
    if (std::isnan(want[i].x)) continue;
    EXPECT_NEAR(n[i].x, want[i].x, 1e-4);
    EXPECT_NEAR(n[i].y, want[i].y, 1e-4);
    EXPECT_NEAR(n[i].z, want[i].z, 1e-4);
    EXPECT_NEAR(n[i].x, 0.5f / len, 1e-4);  // analytic plane normal, towards the camera
    EXPECT_NEAR(n[i].z, -1.0f / len, 1e-4);
  }
  // A sphere of radius 300 around (0, 0, 1000): camera-facing normals point outwards.
  std::vector<PointXYZ> sphere(std::size_t(h * w), pcref::nanPoint());
  for (int r = 0; r < h; ++r)
    for (int c = 0; c < w; ++c) {
      const float x = (c - 26) * 8.0f, y = (r - 18) * 8.0f, rr = 300 * 300 - x * x - y * y;
      if (rr > 0) sphere[std::size_t(r * w + c)] = {x, y, 1000 - std::sqrt(rr)};
    }
  const auto sn = PointCloud::fromHost(h, w, sphere.data(), nullptr, nullptr, dev()).deviceNormalsXYZ(sq()).toHost();
  const auto sw = pcref::normals(h, w, sphere, {0, 0, 0});
  int checked = 0;
  for (std::size_t i = 0; i < sn.size(); ++i) {
    ASSERT_EQ(std::isnan(sn[i].x), std::isnan(sw[i].x)) << i;
    if (std::isnan(sw[i].x)) continue;
    EXPECT_NEAR(sn[i].x, sw[i].x, 1e-4);
    EXPECT_NEAR(sn[i].z, sw[i].z, 1e-4);
    const PointXYZ& p = sphere[i];
    EXPECT_LT(sn[i].x * p.x + sn[i].y * p.y + sn[i].z * p.z, 0.0f);
    ++checked;
  }
  EXPECT_GT(checked, 500);
  // Transforming the cloud rotates its normals (orientation follows the camera).
  const float a = 2.5f;  // large rotation: points end up behind the original origin
  const Matrix4x4 rot = {std::cos(a), 0, std::sin(a), 50, 0, 1, 0, 0, -std::sin(a), 0, std::cos(a), 20, 0, 0, 0, 1};
  cloud.transform(rot);
  const auto nr = cloud.deviceNormalsXYZ(sq()).toHost();
  for (std::size_t i = 0; i < n.size(); ++i) {
    if (std::isnan(n[i].x)) continue;
    EXPECT_NEAR(nr[i].x, rot[0] * n[i].x + rot[2] * n[i].z, 1e-4);
    EXPECT_NEAR(nr[i].z, rot[8] * n[i].x + rot[10] * n[i].z, 1e-4);
  }
  // All-NaN and 1x1 clouds: NaN normals.
  const pcref::Cloud one = randomCloud(1, 1, 8, 0.0);
  EXPECT_TRUE(std::isnan(upload(one, dev()).deviceNormalsXYZ(sq()).toHost()[0].x));
}

TEST_P(PointCloudTest, ToUnorganizedPreservesOrderAcrossWorkGroups) {
  for (auto [h, w] : {std::pair{37, 53}, {256, 320}, {1, 1}}) {
    const pcref::Cloud c = randomCloud(h, w, 20 + std::uint32_t(h), 0.4);
    PointCloud cloud = upload(c, dev());
    cloud.transform({1, 0, 0, 1, 0, 1, 0, 2, 0, 0, 1, 3, 0, 0, 0, 1});
    const UnorganizedPointCloud u = cloud.toUnorganizedPointCloud(sq());
    pcref::Cloud moved = c;
    moved.xyz = pcref::transform(c.xyz, cloud.transformationMatrix());
    const pcref::Cloud want = pcref::compact(moved);
    ASSERT_EQ(u.size(), want.xyz.size());
    EXPECT_EQ(u.transformationMatrix(), cloud.transformationMatrix());
    if (want.xyz.empty()) continue;
    expectPointsNear(u.devicePointsXYZ(sq()).toHost(), want.xyz, "compacted");
    expectColorsEqual(u.deviceColors<ColorRGBA>(sq()).toHost(), want.rgba);
    expectSnrNear(u.deviceSNRs(sq()).toHost(), want.snr);
  }
}

TEST_P(PointCloudTest, VoxelDownsamplingMatchesReference) {
  // The scene spans 1000 x 1000 x 1200 mm: the keys of 1 mm voxels need 31 bits (the
  // grid's cell count), of 0.4 mm voxels 35 (more than the 32 a CUDA stream call sorts
  // before the device decides on the rest).
  for (auto [h, w, voxelSize, minPts] : {std::tuple{37, 53, 150.0f, 1}, {37, 53, 150.0f, 3}, {256, 320, 40.0f, 2},
                                         {37, 53, 1e5f, 1}, {37, 53, 1.0f, 1}, {37, 53, 0.4f, 1}}) {
    const pcref::Cloud c = randomCloud(h, w, 30 + std::uint32_t(w), 0.2);
    const UnorganizedPointCloud u = upload(c, dev()).toUnorganizedPointCloud();
    expectVoxelGrid(u, voxelSize, minPts, pcref::voxel(pcref::compact(c), voxelSize, minPts));
    if (HasFatalFailure()) return;
  }
  const pcref::Cloud c = randomCloud(37, 53, 40);
  const UnorganizedPointCloud u = upload(c, dev()).toUnorganizedPointCloud();
  EXPECT_EQ(u.voxelDownsampled(1e6f, 1).size(), 1u);  // voxel larger than the scene
  EXPECT_EQ(u.voxelDownsampled(1.0f, 1000000).size(), 0u);
  datest::expectError(ErrorCode::InvalidArgument, [&] { (void)u.voxelDownsampled(0.0f, 1); });
  datest::expectError(ErrorCode::InvalidArgument, [&] { (void)u.voxelDownsampled(NAN, 1); });
  datest::expectError(ErrorCode::InvalidArgument, [&] { (void)u.voxelDownsampled(1.0f, 0); });
  datest::expectError(ErrorCode::InvalidArgument, [&] { (void)u.voxelDownsampled(1e-6f, 1); });  // too many voxels
}

/// The bytes of `a` on the host, to compare two results bit for bit (NaNs included).
template <class F>
std::vector<unsigned char> bytesOf(const DeviceArray<F>& a) {
  const std::vector<F> host = a.toHost();
  std::vector<unsigned char> bytes(host.size() * sizeof(F));
  if (!host.empty()) std::memcpy(bytes.data(), host.data(), bytes.size());
  return bytes;
}

/// A stream voxel grid (its count read as `count`) against the blocking grid of the
/// same cloud and the host reference: the reference's count, points and colours, and
/// the blocking grid's bytes.
void expectStreamGridAsBlocking(const UnorganizedPointCloud& onStream, std::size_t count,
                                const UnorganizedPointCloud& blocking, const pcref::Cloud& want) {
  ASSERT_EQ(count, want.xyz.size());
  ASSERT_EQ(blocking.size(), want.xyz.size());
  expectPointsNear(onStream.storedXYZ().toHost(), want.xyz, "voxel xyz");
  expectColorsEqual(onStream.storedColors().toHost(), want.rgba);
  EXPECT_EQ(bytesOf(onStream.storedXYZ()), bytesOf(blocking.storedXYZ()));
  EXPECT_EQ(bytesOf(onStream.storedSNRs()), bytesOf(blocking.storedSNRs()));
}

TEST_P(PointCloudTest, VoxelGridOfTheCameraGridSkipsTheCompaction) {
  // PointCloud::voxelDownsampled must give the voxels of the compacted cloud bit for bit
  // (missing points skipped where they are) and agree with the host reference; 0.4 mm
  // voxels take the wide-key path (35 bits). The keys are packed by work-groups of 2,048
  // points: one partial group, 40 groups, and 293 (more than a work-group's 256 work
  // items, which sum the counts of the groups before theirs).
  const Matrix4x4 pose = {0, -1, 0, 10, 1, 0, 0, 20, 0, 0, 1, 30, 0, 0, 0, 1};
  for (auto [h, w, voxelSize, minPts] : {std::tuple{37, 53, 150.0f, 1}, {37, 53, 150.0f, 3}, {256, 320, 40.0f, 2},
                                         {37, 53, 0.4f, 1}, {37, 53, 0.4f, 2}, {600, 1000, 40.0f, 1}}) {
    const pcref::Cloud c = randomCloud(h, w, 70 + std::uint32_t(w), 0.2);
    const PointCloud grid = upload(c, dev()).transformed(pose);
    pcref::Cloud moved = c;
    moved.xyz = pcref::transform(c.xyz, pose);
    const pcref::Cloud want = pcref::voxel(pcref::compact(moved), voxelSize, minPts);
    const DeviceArray<NormalXYZ> normals = grid.deviceNormalsXYZ(sq());
    const UnorganizedPointCloud viaCompaction = grid.toUnorganizedPointCloud(normals).voxelDownsampled(voxelSize, minPts);
    for (const bool onStream : {false, true}) {
      SCOPED_TRACE(testing::Message() << voxelSize << " mm, min " << minPts << (onStream ? ", stream" : ", blocking"));
      const UnorganizedPointCloud v = onStream ? grid.voxelDownsampled(normals, voxelSize, minPts, sq())
                                               : grid.voxelDownsampled(normals, voxelSize, minPts);
      ASSERT_EQ(v.size(), want.xyz.size());
      EXPECT_EQ(v.transformationMatrix(), grid.transformationMatrix());
      if (want.xyz.empty()) continue;
      expectPointsNear(v.storedXYZ().toHost(), want.xyz, "voxel xyz");
      expectColorsEqual(v.storedColors().toHost(), want.rgba);
      EXPECT_EQ(bytesOf(v.storedXYZ()), bytesOf(viaCompaction.storedXYZ()));
      EXPECT_EQ(bytesOf(v.storedColors()), bytesOf(viaCompaction.storedColors()));
      EXPECT_EQ(bytesOf(v.storedSNRs()), bytesOf(viaCompaction.storedSNRs()));
      EXPECT_EQ(bytesOf(v.storedNormals()), bytesOf(viaCompaction.storedNormals()));
      // Without normals: the same points, and no normals.
      const UnorganizedPointCloud plain =
          onStream ? grid.voxelDownsampled(voxelSize, minPts, sq()) : grid.voxelDownsampled(voxelSize, minPts);
      EXPECT_FALSE(plain.hasNormals());
      EXPECT_EQ(bytesOf(plain.storedXYZ()), bytesOf(viaCompaction.storedXYZ()));
    }
  }
  // A grid without a valid point: no voxel, on both forms.
  const pcref::Cloud holes = randomCloud(9, 11, 4, 1.0);
  const PointCloud empty = upload(holes, dev());
  EXPECT_EQ(empty.voxelDownsampled(10.0f, 1).size(), 0u);
  EXPECT_EQ(empty.voxelDownsampled(10.0f, 1, sq()).size(), 0u);
  const PointCloud grid = upload(randomCloud(12, 16, 5), dev());
  const PointCloud other = upload(randomCloud(16, 12, 5), dev());
  datest::expectError(ErrorCode::InvalidState, [&] { (void)PointCloud().voxelDownsampled(1.0f, 1); },
                      "PointCloud::voxelDownsampled");
  datest::expectError(ErrorCode::InvalidState, [&] { (void)PointCloud().voxelDownsampled(0.0f, 1, sq()); },
                      "the cloud is empty");
  datest::expectError(ErrorCode::InvalidArgument, [&] { (void)grid.voxelDownsampled(0.0f, 1, sq()); });
  datest::expectError(ErrorCode::InvalidArgument, [&] { (void)grid.voxelDownsampled(1.0f, 0); });
  datest::expectError(ErrorCode::InvalidArgument, [&] { (void)grid.voxelDownsampled(1e-6f, 1); }, "too small");
  datest::expectError(ErrorCode::InvalidArgument,
                      [&] { (void)grid.voxelDownsampled(other.deviceNormalsXYZ(sq()), 1.0f, 1, sq()); });
  // The stream form reports a grid too fine from the call that reads its count.
  const UnorganizedPointCloud tooFine = grid.voxelDownsampled(1e-6f, 1, sq());
  datest::expectError(ErrorCode::InvalidArgument, [&] { (void)tooFine.size(); }, "too small");
}

TEST_P(PointCloudTest, VoxelGridsAtTheEdgeOfAKeyWidth) {
  // Unit voxels along x, one point each, in a grid of 2^12 - 1, 2^12 and 2^12 + 1 cells:
  // the keys then need 12, 13 and 13 bits, and the largest key of the 2^12 - 1 grid is
  // one below the missing points' low 12 bits, which must still sort after it. Missing
  // points come first in the cloud's order, so a sort that let them tie with the last
  // voxel would put them before it.
  for (const int cells : {4095, 4096, 4097}) {
    std::vector<PointXYZ> xyz(16, pcref::nanPoint());
    for (int v = cells - 1; v >= 0; --v) xyz.push_back({float(v) + 0.5f, 0.25f, -0.25f});
    xyz.push_back({0.0f, 0.0f, -0.5f});  // the min corner: voxel 0
    const UnorganizedPointCloud cloud(DeviceArray<PointXYZ>::fromHost(xyz.data(), xyz.size(), dev()));
    for (const bool onStream : {false, true}) {
      SCOPED_TRACE(testing::Message() << cells << " cells" << (onStream ? ", stream" : ", blocking"));
      const UnorganizedPointCloud v = onStream ? cloud.voxelDownsampled(1.0f, 1, sq()) : cloud.voxelDownsampled(1.0f, 1);
      ASSERT_EQ(v.size(), std::size_t(cells));
      const std::vector<PointXYZ> got = v.devicePointsXYZ(sq()).toHost();
      for (int k = 0; k < cells; ++k) {
        // Voxel k holds (k + 0.5, 0.25, -0.25); voxel 0 also the min corner (0, 0, -0.5).
        const PointXYZ want = k == 0 ? PointXYZ{0.25f, 0.125f, -0.375f} : PointXYZ{float(k) + 0.5f, 0.25f, -0.25f};
        ASSERT_NEAR(got[k].x, want.x, 1e-4) << "voxel " << k;
        ASSERT_NEAR(got[k].y, want.y, 1e-6) << "voxel " << k;
        ASSERT_NEAR(got[k].z, want.z, 1e-6) << "voxel " << k;
      }
    }
  }
}

TEST_P(PointCloudTest, StreamVoxelGridsAreRightWhateverTheGuessedKeyWidth) {
  // The stream form sorts as many key bits as the widest grid of its device and voxel
  // size whose width the host read needed (on CUDA: CUB sorts those, the device the
  // rest). About 2 mm voxels over the cloud scaled by 0.05 (about 50 x 50 x 60 mm) need
  // 15 key bits, over the cloud as it is (1000 x 1000 x 1200 mm) 28, scaled by 5 35.
  // Each case has a voxel size of its own (no earlier guess): a grid of the first scene
  // sets the guess (blocking, or a stream grid whose count is read), then a stream grid
  // of the second, whose guess is too low, right or too high, must be the blocking
  // grid's bit for bit and the host reference's.
  const pcref::Cloud c = randomCloud(64, 80, 91, 0.2);
  const auto scaled = [&](float s) {
    pcref::Cloud out = c;
    for (PointXYZ& p : out.xyz) p = {p.x * s, p.y * s, p.z * s};
    return out;
  };
  struct Case {
    float before, scale;
    bool beforeOnStream;
  };
  const Case cases[] = {{0.05f, 1.0f, false}, {0.05f, 5.0f, true}, {1.0f, 5.0f, false},
                        {5.0f, 0.05f, true},  {1.0f, 1.0f, true}};
  // Sizes no other test uses, one per case, so each case starts without a guess.
  float voxelSize = 2.0f;
  for (const Case& k : cases) {
    voxelSize += 0.125f;
    SCOPED_TRACE(testing::Message() << voxelSize << " mm voxels over the scene scaled by " << k.scale << " after "
                                    << k.before << (k.beforeOnStream ? " (stream)" : " (blocking)"));
    const PointCloud previous = upload(scaled(k.before), dev());
    const pcref::Cloud scene = scaled(k.scale);
    const PointCloud grid = upload(scene, dev());
    const std::size_t previousCount = k.beforeOnStream ? previous.voxelDownsampled(voxelSize, 1, sq()).size()
                                                       : previous.voxelDownsampled(voxelSize, 1).size();
    EXPECT_GT(previousCount, 0u);
    const UnorganizedPointCloud onStream = grid.voxelDownsampled(voxelSize, 1, sq());
    const std::size_t count = onStream.size();  // read: the guess is now at least this grid's width
    // The first scene again, its guess from the stream grid's count.
    const UnorganizedPointCloud back = previous.voxelDownsampled(voxelSize, 1, sq());
    EXPECT_EQ(bytesOf(back.storedXYZ()), bytesOf(previous.voxelDownsampled(voxelSize, 1).storedXYZ()));
    expectStreamGridAsBlocking(onStream, count, grid.voxelDownsampled(voxelSize, 1),
                               pcref::voxel(pcref::compact(scene), voxelSize, 1));
    if (HasFatalFailure()) return;
  }
}

TEST_P(PointCloudTest, StreamVoxelGridsAreRightWhateverTheGuessedKeyedEnd) {
  // The stream form sorts about as many positions as the largest keyed end of the
  // grids of its device and voxel size whose count the host read (on CUDA: CUB sorts
  // those, and when the guess was low the device sorts them all again on one block).
  // An organized frame's grid packs its valid points' keys first (the keyed end is
  // their count); an unorganized cloud's stops after its last valid point. Frames of
  // one size whose valid points end at 10 %, then 90 % (the guess too low), 20 % (too
  // high) and 100 % of the cloud, missing points among them, each grid on a stream
  // first (then read: the next guess), must be the blocking grid's bytes and the host
  // reference's. Each form has a voxel size no other test uses: the first frame has
  // no guess.
  for (const bool organized : {true, false}) {
    const float voxelSize = organized ? 23.125f : 23.25f;
    for (const double endsAt : {0.1, 0.9, 0.2, 1.0}) {
      SCOPED_TRACE(testing::Message() << (organized ? "organized" : "unorganized") << ", valid points end at "
                                      << endsAt);
      pcref::Cloud c = randomCloud(120, 150, 7, 0.1);
      const std::size_t end = static_cast<std::size_t>(endsAt * static_cast<double>(c.xyz.size()));
      for (std::size_t i = end; i < c.xyz.size(); ++i) c.xyz[i] = pcref::nanPoint();
      const PointCloud frame = upload(c, dev());
      const UnorganizedPointCloud points(DeviceArray<PointXYZ>::fromHost(c.xyz.data(), c.xyz.size(), dev()),
                                         DeviceArray<ColorRGBA>::fromHost(c.rgba.data(), c.rgba.size(), dev()),
                                         DeviceArray<SNR>::fromHost(c.snr.data(), c.snr.size(), dev()));
      const UnorganizedPointCloud onStream =
          organized ? frame.voxelDownsampled(voxelSize, 1, sq()) : points.voxelDownsampled(voxelSize, 1, sq());
      const std::size_t count = onStream.size();
      expectStreamGridAsBlocking(
          onStream, count, organized ? frame.voxelDownsampled(voxelSize, 1) : points.voxelDownsampled(voxelSize, 1),
          pcref::voxel(pcref::compact(c), voxelSize, 1));
      if (HasFatalFailure()) return;
    }
  }
}

TEST_P(PointCloudTest, VoxelGridsOfCloudsWithoutAValidPointAreEmpty) {
  // No valid point: the keyed end is 0 (no position to sort) on both paths, organized
  // (packed keys) and unorganized, blocking and on a stream.
  pcref::Cloud c = randomCloud(30, 40, 3, 0.0);
  for (PointXYZ& p : c.xyz) p = pcref::nanPoint();
  const PointCloud frame = upload(c, dev());
  const UnorganizedPointCloud points(DeviceArray<PointXYZ>::fromHost(c.xyz.data(), c.xyz.size(), dev()));
  EXPECT_EQ(frame.voxelDownsampled(5.0f, 1).size(), 0u);
  EXPECT_EQ(frame.voxelDownsampled(5.0f, 1, sq()).size(), 0u);
  EXPECT_EQ(points.voxelDownsampled(5.0f, 1).size(), 0u);
  EXPECT_EQ(points.voxelDownsampled(5.0f, 1, sq()).size(), 0u);
}

TEST_P(PointCloudTest, VoxelGridsOfLargeCloudsNumberEveryVoxelOnce) {
  // 400 k points (1,563 tiles of 256 sorted positions, more than the tile-numbering
  // kernel has work-groups, so each numbers several) with 30 % missing: the voxels'
  // slots are numbered per tile and then over the tiles up to the first tile of
  // missing points. 40 mm voxels hold about 15 points (runs over tile edges), 12 mm
  // ones about 1 (hundreds of voxels a tile); minPointsPerVoxel drops some.
  const pcref::Cloud c = randomCloud(400, 1000, 91, 0.3);
  const PointCloud grid = upload(c, dev());
  for (auto [voxelSize, minPts] : {std::pair{40.0f, 1}, {40.0f, 12}, {12.0f, 1}, {12.0f, 2}}) {
    expectVoxelGrid(grid, voxelSize, minPts, pcref::voxel(pcref::compact(c), voxelSize, minPts));
    if (HasFatalFailure()) return;
  }
}

TEST_P(PointCloudTest, VoxelsOfManyPointsAddEachPointOnce) {
  // Voxels of 1 to 600 points (unit voxels from x = 2v), their points interleaved in
  // the cloud's order, with missing points among them: the reduction sums tiles of 256
  // sorted points and adds the shares of voxels that run over a tile's edge, and every
  // point must count once. The voxels sort in x order, so their runs end at sorted
  // positions 1, 256 (a tile's end), 512 (a whole tile), 812, 1412 (over three tiles),
  // ...; the 323 missing points sort last and fill a tile of their own.
  const int lengths[] = {1, 255, 256, 300, 600, 2, 31, 33, 97, 40};
  const int voxels = int(std::size(lengths));
  std::mt19937 rng(77);
  std::uniform_real_distribution<float> inside(0.05f, 0.95f), snrs(0.5f, 10.f), unit(-1.f, 1.f);
  std::vector<int> owner;
  for (int v = 0; v < voxels; ++v) owner.insert(owner.end(), lengths[v], v);
  std::shuffle(owner.begin(), owner.end(), rng);
  pcref::Cloud c;
  std::vector<NormalXYZ> normals;
  for (std::size_t i = 0; i < owner.size(); ++i) {
    if (i % 5 == 2) {  // a missing point
      c.xyz.push_back(pcref::nanPoint());
      c.rgba.push_back({1, 2, 3, 4});
      c.snr.push_back({1.0f});
      normals.push_back({NAN, NAN, NAN});
    }
    // Voxel 0's one point is the min corner, where the grid is anchored.
    c.xyz.push_back(owner[i] == 0 ? PointXYZ{0.0f, 0.0f, 0.0f}
                                  : PointXYZ{2.0f * float(owner[i]) + inside(rng), inside(rng), inside(rng)});
    c.rgba.push_back({std::uint8_t(rng()), std::uint8_t(rng()), std::uint8_t(rng()), std::uint8_t(rng())});
    c.snr.push_back({snrs(rng)});
    normals.push_back(i % 9 == 4 ? NormalXYZ{NAN, NAN, NAN} : NormalXYZ{unit(rng), unit(rng), 1.0f});
  }
  c.height = 1;
  c.width = int(c.xyz.size());
  const UnorganizedPointCloud cloud(DeviceArray<PointXYZ>::fromHost(c.xyz.data(), c.xyz.size(), dev()),
                                    DeviceArray<ColorRGBA>::fromHost(c.rgba.data(), c.rgba.size(), dev()),
                                    DeviceArray<SNR>::fromHost(c.snr.data(), c.snr.size(), dev()),
                                    DeviceArray<NormalXYZ>::fromHost(normals.data(), normals.size(), dev()));
  // Normals: the normalized sum of each voxel's valid normals, in double.
  std::vector<std::array<double, 3>> normalSums(voxels, {0.0, 0.0, 0.0});
  for (std::size_t i = 0; i < c.xyz.size(); ++i)
    if (pcref::valid(c.xyz[i]) && !std::isnan(normals[i].x)) {
      const int v = int(c.xyz[i].x / 2.0f);
      normalSums[v][0] += normals[i].x, normalSums[v][1] += normals[i].y, normalSums[v][2] += normals[i].z;
    }
  for (const int minPoints : {1, 33}) {
    const pcref::Cloud want = pcref::voxel(c, 1.0f, minPoints);
    std::vector<int> keptVoxels;
    for (int v = 0; v < voxels; ++v)
      if (lengths[v] >= minPoints) keptVoxels.push_back(v);
    ASSERT_EQ(want.xyz.size(), keptVoxels.size());
    for (const bool onStream : {false, true}) {
      SCOPED_TRACE(testing::Message() << "minPoints " << minPoints << (onStream ? ", stream" : ", blocking"));
      const UnorganizedPointCloud v =
          onStream ? cloud.voxelDownsampled(1.0f, minPoints, sq()) : cloud.voxelDownsampled(1.0f, minPoints);
      ASSERT_EQ(v.size(), want.xyz.size());
      expectPointsNear(v.devicePointsXYZ(sq()).toHost(), want.xyz, "voxel xyz");
      expectColorsEqual(v.deviceColors<ColorRGBA>(sq()).toHost(), want.rgba);
      expectSnrNear(v.deviceSNRs(sq()).toHost(), want.snr);
      const auto got = v.deviceNormalsXYZ(sq()).toHost();
      for (std::size_t k = 0; k < keptVoxels.size(); ++k) {
        const auto& sum = normalSums[keptVoxels[k]];
        const double len = std::sqrt(sum[0] * sum[0] + sum[1] * sum[1] + sum[2] * sum[2]);
        EXPECT_NEAR(got[k].x, sum[0] / len, 1e-5) << k;
        EXPECT_NEAR(got[k].y, sum[1] / len, 1e-5) << k;
        EXPECT_NEAR(got[k].z, sum[2] / len, 1e-5) << k;
      }
    }
  }
}

TEST_P(PointCloudTest, UnorganizedExtendPaintCentroidCenter) {
  const pcref::Cloud a = randomCloud(9, 11, 50, 0.2), b = randomCloud(7, 5, 51, 0.2);
  UnorganizedPointCloud ua = upload(a, dev()).toUnorganizedPointCloud();
  const UnorganizedPointCloud ub = upload(b, dev()).toUnorganizedPointCloud();
  const pcref::Cloud ca = pcref::compact(a), cb = pcref::compact(b);
  ua.extend(ub);
  std::vector<PointXYZ> both = ca.xyz;
  both.insert(both.end(), cb.xyz.begin(), cb.xyz.end());
  expectPointsNear(ua.devicePointsXYZ(sq()).toHost(), both, "extended");
  double s[3] = {0, 0, 0};
  for (const auto& p : both) {
    s[0] += p.x;
    s[1] += p.y;
    s[2] += p.z;
  }
  const auto cen = ua.centroid();
  for (int k = 0; k < 3; ++k) EXPECT_NEAR(cen[std::size_t(k)], s[k] / double(both.size()), 1e-3);
  ua.center();
  const auto after = ua.centroid(sq());
  for (float v : after) EXPECT_NEAR(v, 0.0f, 1e-3);
  EXPECT_NEAR(ua.transformationMatrix()[3], -cen[0], 1e-4);
  ua.paintUniformColor(ColorRGBA{1, 2, 3, 4});
  for (const auto& col : ua.deviceColors<ColorRGBA>(sq()).toHost()) EXPECT_EQ(col.b, 3);
  // Transform accumulation on unorganized clouds.
  const Matrix4x4 t = {1, 0, 0, 1, 0, 1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1};
  const auto moved = ua.transformed(t);
  EXPECT_NEAR(moved.centroid()[0], 1.0f, 1e-3);
  // Attribute mismatch, empty clouds.
  UnorganizedPointCloud plain(DeviceArray<PointXYZ>::fromHost(ca.xyz.data(), ca.xyz.size(), dev()));
  datest::expectError(ErrorCode::InvalidArgument, [&] { plain.extend(ub); });
  UnorganizedPointCloud empty = upload(randomCloud(3, 3, 52, 1.0), dev()).toUnorganizedPointCloud();
  EXPECT_EQ(empty.size(), 0u);
  datest::expectError(ErrorCode::InvalidState, [&] { (void)empty.centroid(); });
  EXPECT_EQ(empty.voxelDownsampled(1.0f, 1).size(), 0u);
  empty.extend(ub);
  EXPECT_EQ(empty.size(), ub.size());
}

TEST_P(PointCloudTest, FrameGivesEveryColourFormat) {
  std::vector<ColorRGBA> px(6 * 4);
  for (std::size_t i = 0; i < px.size(); ++i) px[i] = {std::uint8_t(i * 10), std::uint8_t(255 - i), 7, 200};
  const Frame2D frame(DeviceArray<ColorRGBA>::fromHost(px.data(), 4, 6, dev()));
  EXPECT_EQ(frame.height(), 4);
  EXPECT_EQ(frame.width(), 6);
  const auto bgr = frame.imageDeviceArray<ColorBGR>(sq()).toHost();
  const auto f = frame.imageDeviceArray<ColorRGBAf>(sq()).toHost();
  const auto srgb = frame.imageDeviceArray<ColorRGBA_SRGB>(sq());
  for (std::size_t i = 0; i < px.size(); ++i) {
    EXPECT_EQ(bgr[i].r, px[i].r);
    EXPECT_EQ(bgr[i].b, px[i].b);
    EXPECT_NEAR(f[i].r, px[i].r / 255.0f, 1e-6);
  }
  EXPECT_EQ(srgb.height(), 4);
  auto dst = DeviceArray<ColorBGRA>::allocate(4, 6, dev());
  frame.imageDeviceArray<ColorBGRA>(dst.view(), sq());
  EXPECT_EQ(dst.toHost()[3].r, px[3].r);
  auto wrong = DeviceArray<ColorBGRA>::allocate(6, 4, dev());
  datest::expectError(ErrorCode::InvalidArgument, [&] { frame.imageDeviceArray<ColorBGRA>(wrong.view(), sq()); });
  datest::expectError(ErrorCode::InvalidState, [&] { (void)Frame2D().imageDeviceArray<ColorRGB>(sq()); });
}

TEST_P(PointCloudTest, HostCloudRoundTripAndSRGBColours) {
  HostPointCloud h = HostPointCloud::organized(4, 5, true, true);
  for (std::size_t i = 0; i < h.size(); ++i) {
    h.xyz[3 * i] = float(i);
    h.xyz[3 * i + 1] = 1;
    h.xyz[3 * i + 2] = 500;
    h.rgba[4 * i] = 255;
    h.rgba[4 * i + 1] = 128;
    h.rgba[4 * i + 3] = 255;
    h.snr[i] = 3;
  }
  const PointCloud cloud = PointCloud::fromHost(h, dev());
  const HostPointCloud back = cloud.toHost();
  EXPECT_EQ(back.xyz, h.xyz);
  EXPECT_EQ(back.snr, h.snr);
  EXPECT_EQ(back.rgba[0], 255);
  EXPECT_EQ(back.rgba[1], 128);  // the sRGB codes are stored as they are
  EXPECT_EQ(cloud.colorSpace(), ColorSpace::srgb);
  // As linear ColorRGBA: sRGB 128 is linear ~0.216 -> 55.
  EXPECT_NEAR(cloud.imageDeviceArray<ColorRGBA>(sq()).toHost()[0].g, 55, 1);
  datest::expectError(ErrorCode::InvalidArgument, [&] { (void)PointCloud::fromHost(HostPointCloud{}, dev()); });
}

TEST_P(PointCloudTest, StreamMismatchIsRejected) {
  const PointCloud cloud = upload(randomCloud(3, 3, 60), dev());
  const StreamOrQueue other = dev().backend() == ComputeBackend::cuda ? StreamOrQueue(OpenCLCommandQueuePtr{})
                                                                      : StreamOrQueue(CUDAStreamPtr{});
  datest::expectError(ErrorCode::InvalidArgument, [&] { (void)cloud.devicePointsXYZ(other); });
  datest::expectError(ErrorCode::InvalidArgument, [&] { (void)cloud.deviceNormalsXYZ(other); });
  datest::expectError(ErrorCode::InvalidState, [&] { (void)PointCloud().devicePointsXYZ(other); });
}

DATEST_INSTANTIATE_OVER_DEVICES(PointCloudTest);

}  // namespace
