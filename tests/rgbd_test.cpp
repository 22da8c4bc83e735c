// RGB-D: pointCloudFromDepthImage and projectToRGBDImage against host references written
// here from their documented definitions, on every device, and the depth -> cloud ->
// depth round trip, which must be exact for a U16 image.
//
// Tolerances: back-projected coordinates 1e-5 relative (+1e-4 mm), as the device may
// contract float arithmetic; projected depth images and colours exact (the test points
// lie at least 0.1 pixel from a pixel border, so the rounding to a pixel is certain).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <random>
#include <vector>

#include "devicearray/devicearray.hpp"
#include "test_support.hpp"

namespace {

using namespace devicearray;

constexpr float kNaN = NAN;

PinholeCamera smallCamera() { return PinholeCamera{64, 48, 60.0, 62.0, 31.7, 23.2}; }

GpuMatND uploadImage(const void* data, int height, int width, Depth depth, const ComputeDevice& d) {
  GpuMatND m({height, width}, makeType(depth, 1), d);
  m.upload(HostMat({height, width}, makeType(depth, 1), const_cast<void*>(data)));
  return m;
}

template <class T>
std::vector<T> downloadImage(const GpuMatND& m) {
  std::vector<T> out(static_cast<std::size_t>(m.size[0]) * m.size[1]);
  HostMat host(m.size, m.type(), out.data());
  m.download(host);
  return out;
}

std::vector<std::uint16_t> randomDepth(const PinholeCamera& cam, std::uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int> d(1000, 60000), hole(0, 9);
  std::vector<std::uint16_t> depth(static_cast<std::size_t>(cam.width) * cam.height);
  for (auto& v : depth) v = hole(rng) == 0 ? 0 : static_cast<std::uint16_t>(d(rng));
  return depth;
}

class RgbdTest : public datest::DeviceTest {};

TEST_P(RgbdTest, DepthImageBecomesPointsOnThePixelRays) {
  const PinholeCamera cam = smallCamera();
  const std::vector<std::uint16_t> depth = randomDepth(cam, 1);
  const float scale = 0.05f;
  const PointCloud cloud = pointCloudFromDepthImage(uploadImage(depth.data(), cam.height, cam.width, Depth::U16, device()),
                                                    scale, cam);
  ASSERT_EQ(cloud.height(), cam.height);
  ASSERT_EQ(cloud.width(), cam.width);
  EXPECT_FALSE(cloud.hasColors());
  const std::vector<PointXYZ> got = cloud.storedXYZ().toHost();
  for (int r = 0; r < cam.height; ++r)
    for (int c = 0; c < cam.width; ++c) {
      const std::size_t i = static_cast<std::size_t>(r) * cam.width + c;
      if (depth[i] == 0) {
        ASSERT_TRUE(std::isnan(got[i].x) && std::isnan(got[i].y) && std::isnan(got[i].z)) << i;
        continue;
      }
      const double z = double(depth[i]) * scale;
      ASSERT_NEAR(got[i].z, z, 1e-6 * z) << i;
      ASSERT_NEAR(got[i].x, (c - cam.cx) * z / cam.fx, 1e-5 * z + 1e-4) << i;
      ASSERT_NEAR(got[i].y, (r - cam.cy) * z / cam.fy, 1e-5 * z + 1e-4) << i;
    }
}

TEST_P(RgbdTest, U16DepthRoundTripsThroughTheCloudExactly) {
  const PinholeCamera cam = smallCamera();
  const std::vector<std::uint16_t> depth = randomDepth(cam, 2);
  for (float scale : {1.0f, 0.125f, 0.1f}) {
    const GpuMatND image = uploadImage(depth.data(), cam.height, cam.width, Depth::U16, device());
    Stream stream(device());
    const PointCloud cloud = pointCloudFromDepthImage(image, scale, cam, stream);
    const RGBDImage back = projectToRGBDImage(cloud, cam, Depth::U16, scale, identityMatrix4x4(), stream);
    synchronizeStream(stream);
    EXPECT_EQ(back.depth.type(), makeType(Depth::U16, 1));
    EXPECT_TRUE(back.colors.isEmpty());
    EXPECT_EQ(downloadImage<std::uint16_t>(back.depth), depth) << "scale " << scale;
    // The same through the unorganized cloud of the valid points.
    const RGBDImage viaPoints = projectToRGBDImage(cloud.toUnorganizedPointCloud(), cam, Depth::U16, scale);
    EXPECT_EQ(downloadImage<std::uint16_t>(viaPoints.depth), depth) << "scale " << scale;
  }
}

TEST_P(RgbdTest, FloatDepthAndColourImageRoundTrip) {
  const PinholeCamera cam = smallCamera();
  std::mt19937 rng(3);
  std::uniform_real_distribution<float> d(0.3f, 4.0f);
  std::vector<float> depth(static_cast<std::size_t>(cam.width) * cam.height);
  std::vector<ColorRGBA> colors(depth.size());
  for (std::size_t i = 0; i < depth.size(); ++i) {
    depth[i] = i % 7 == 3 ? 0.0f : (i % 11 == 5 ? kNaN : d(rng));  // metres: scale 1000 mm per unit
    colors[i] = {std::uint8_t(rng()), std::uint8_t(rng()), std::uint8_t(rng()), 255};
  }
  const auto colorImage = DeviceArray<ColorRGBA>::fromHost(colors.data(), cam.height, cam.width, device());
  const PointCloud cloud = pointCloudFromDepthImage(uploadImage(depth.data(), cam.height, cam.width, Depth::F32, device()),
                                                    1000.0f, cam, colorImage);
  ASSERT_TRUE(cloud.hasColors());
  const RGBDImage back = projectToRGBDImage(cloud, cam, Depth::F32, 1000.0f);
  const std::vector<float> gotDepth = downloadImage<float>(back.depth);
  const std::vector<ColorRGBA> gotColors = back.colors.toHost();
  for (std::size_t i = 0; i < depth.size(); ++i) {
    if (!(depth[i] > 0)) {
      ASSERT_TRUE(std::isnan(gotDepth[i])) << i;
      ASSERT_EQ(gotColors[i].a, 0) << i;
      continue;
    }
    ASSERT_NEAR(gotDepth[i], depth[i], 1e-6 * depth[i]) << i;
    ASSERT_EQ(gotColors[i].r, colors[i].r) << i;
    ASSERT_EQ(gotColors[i].g, colors[i].g) << i;
    ASSERT_EQ(gotColors[i].b, colors[i].b) << i;
  }
  // An sRGB colour image keeps its codes; as linear RGBA it is decoded, as everywhere else.
  std::vector<ColorRGB_SRGB> srgb(depth.size(), ColorRGB_SRGB{255, 128, 0});
  const PointCloud fromSrgb = pointCloudFromDepthImage(
      uploadImage(depth.data(), cam.height, cam.width, Depth::F32, device()), 1000.0f, cam,
      DeviceArray<ColorRGB_SRGB>::fromHost(srgb.data(), cam.height, cam.width, device()));
  EXPECT_EQ(fromSrgb.colorSpace(), ColorSpace::srgb);
  const ColorRGBA_SRGB code = fromSrgb.imageDeviceArray<ColorRGBA_SRGB>(device().sdkStreamOrQueue()).toHost()[0];
  EXPECT_EQ(code.g, 128);
  EXPECT_EQ(code.a, 255);
  const ColorRGBA linear = fromSrgb.imageDeviceArray<ColorRGBA>(device().sdkStreamOrQueue()).toHost()[0];
  EXPECT_EQ(linear.r, 255);
  EXPECT_LT(linear.g, 128);
  EXPECT_EQ(linear.b, 0);
}

TEST_P(RgbdTest, ProjectionKeepsTheNearestPointAndBreaksTiesByLowestIndex) {
  const PinholeCamera cam = smallCamera();
  std::mt19937 rng(4);
  std::uniform_int_distribution<int> col(-3, cam.width + 2), row(-3, cam.height + 2), depth(-50, 3000);
  std::uniform_real_distribution<float> offset(-0.4f, 0.4f);
  const Matrix4x4 m = {1, 0, 0, 5, 0, 1, 0, -7, 0, 0, 1, 20, 0, 0, 0, 1};  // camera from cloud: a translation
  std::vector<PointXYZ> xyz;
  std::vector<ColorRGBA> rgba;
  for (int i = 0; i < 4000; ++i) {
    // Depths on a 10 mm grid, so many points tie; pixels drawn with sub-pixel offsets.
    const float z = float(depth(rng) / 10 * 10);
    const float u = float(col(rng)) + offset(rng), v = float(row(rng)) + offset(rng);
    const float zc = z == 0 ? 1.0f : z;
    xyz.push_back({float((u - cam.cx) * zc / cam.fx) - 5, float((v - cam.cy) * zc / cam.fy) + 7, zc - 20});
    rgba.push_back({std::uint8_t(i), std::uint8_t(i >> 8), 7, 255});
  }
  xyz[17] = {kNaN, kNaN, kNaN};
  // Host reference: the same projection, nearest depth then lowest index.
  const std::size_t pixels = static_cast<std::size_t>(cam.width) * cam.height;
  std::vector<float> bestZ(pixels, INFINITY);
  std::vector<int> winner(pixels, -1);
  for (std::size_t i = 0; i < xyz.size(); ++i) {
    const PointXYZ& p = xyz[i];
    if (!std::isfinite(p.x)) continue;
    const float x = p.x + 5, y = p.y - 7, z = p.z + 20;
    if (!(z > 0)) continue;
    const float u = std::floor(float(cam.fx) * x / z + float(cam.cx) + 0.5f);
    const float v = std::floor(float(cam.fy) * y / z + float(cam.cy) + 0.5f);
    if (u < 0 || v < 0 || u >= cam.width || v >= cam.height) continue;
    const std::size_t px = static_cast<std::size_t>(v) * cam.width + static_cast<std::size_t>(u);
    if (z < bestZ[px]) {
      bestZ[px] = z;
      winner[px] = static_cast<int>(i);
    }
  }
  const UnorganizedPointCloud cloud(DeviceArray<PointXYZ>::fromHost(xyz.data(), static_cast<int>(xyz.size()), device()),
                                    DeviceArray<ColorRGBA>::fromHost(rgba.data(), static_cast<int>(rgba.size()), device()));
  const RGBDImage out = projectToRGBDImage(cloud, cam, Depth::U16, 2.0f, m);
  const std::vector<std::uint16_t> gotDepth = downloadImage<std::uint16_t>(out.depth);
  const std::vector<ColorRGBA> gotColors = out.colors.toHost();
  for (std::size_t px = 0; px < pixels; ++px) {
    if (winner[px] < 0) {
      ASSERT_EQ(gotDepth[px], 0) << px;
      ASSERT_EQ(gotColors[px].a, 0) << px;
      continue;
    }
    ASSERT_EQ(gotDepth[px], static_cast<std::uint16_t>(std::floor(bestZ[px] / 2.0f + 0.5f))) << px;
    ASSERT_EQ(gotColors[px].r, rgba[winner[px]].r) << px;
    ASSERT_EQ(gotColors[px].g, rgba[winner[px]].g) << px;
  }
}

TEST_P(RgbdTest, RefusesBadImagesCamerasAndScales) {
  const PinholeCamera cam = smallCamera();
  const std::vector<std::uint16_t> depth = randomDepth(cam, 5);
  const GpuMatND image = uploadImage(depth.data(), cam.height, cam.width, Depth::U16, device());
  PinholeCamera wrongSize = cam;
  wrongSize.width = 63;
  datest::expectError(ErrorCode::InvalidArgument, [&] { (void)pointCloudFromDepthImage(image, 1.0f, wrongSize); });
  datest::expectError(ErrorCode::InvalidArgument, [&] { (void)pointCloudFromDepthImage(image, 0.0f, cam); });
  datest::expectError(ErrorCode::InvalidArgument, [&] {
    (void)pointCloudFromDepthImage(GpuMatND({cam.height, cam.width}, makeType(Depth::U8, 1), device()), 1.0f, cam);
  });
  std::vector<ColorRGBA> small(10);
  datest::expectError(ErrorCode::InvalidArgument, [&] {
    (void)pointCloudFromDepthImage(image, 1.0f, cam, DeviceArray<ColorRGBA>::fromHost(small.data(), 2, 5, device()));
  });
  const PointCloud cloud = pointCloudFromDepthImage(image, 1.0f, cam);
  datest::expectError(ErrorCode::InvalidArgument, [&] { (void)projectToRGBDImage(cloud, cam, Depth::U8, 1.0f); });
  datest::expectError(ErrorCode::InvalidArgument, [&] { (void)projectToRGBDImage(cloud, cam, Depth::U16, kNaN); });
  Matrix4x4 notAffine = identityMatrix4x4();
  notAffine[12] = 1;
  datest::expectError(ErrorCode::InvalidArgument,
                      [&] { (void)projectToRGBDImage(cloud, cam, Depth::U16, 1.0f, notAffine); });
  datest::expectError(ErrorCode::InvalidState, [&] { (void)projectToRGBDImage(PointCloud(), cam); });
}

DATEST_INSTANTIATE_OVER_DEVICES(RgbdTest);

}  // namespace
