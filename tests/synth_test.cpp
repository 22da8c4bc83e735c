// The synthetic 3-D camera scene, grid normals and the preview renderer.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <bit>
#include <cmath>
#include <limits>
#include <set>
#include <vector>

#include "devicearray/io.hpp"
#include "test_support.hpp"

using devicearray::ErrorCode;
using devicearray::HostImage;
using devicearray::HostPointCloud;
using devicearray::PinholeCamera;
using devicearray::RenderOptions;
using devicearray::RenderProjection;
using devicearray::RenderView;
using devicearray::SynthOptions;

namespace {

/// A 1/4-resolution camera with the default field of view: fast, same scene.
SynthOptions smallOptions(std::uint64_t seed = 1) {
  SynthOptions o;
  o.camera = PinholeCamera::withFieldOfView(480, 300, 60.0);
  o.seed = seed;
  return o;
}

bool bitwiseEqual(const std::vector<float>& a, const std::vector<float>& b) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i)
    if (std::bit_cast<std::uint32_t>(a[i]) != std::bit_cast<std::uint32_t>(b[i])) return false;
  return true;
}

double fractionValid(const HostPointCloud& c) { return static_cast<double>(c.validCount()) / static_cast<double>(c.size()); }

TEST(Synth, SameSeedGivesBitIdenticalClouds) {
  const HostPointCloud a = devicearray::synthesizeScene(smallOptions(42));
  const HostPointCloud b = devicearray::synthesizeScene(smallOptions(42));
  EXPECT_TRUE(bitwiseEqual(a.xyz, b.xyz));
  EXPECT_EQ(a.rgba, b.rgba);
  EXPECT_TRUE(bitwiseEqual(a.snr, b.snr));
}

TEST(Synth, DifferentSeedsGiveDifferentClouds) {
  const HostPointCloud a = devicearray::synthesizeScene(smallOptions(1));
  const HostPointCloud b = devicearray::synthesizeScene(smallOptions(2));
  EXPECT_FALSE(bitwiseEqual(a.xyz, b.xyz));
}

TEST(Synth, LooksLikeACameraCloud) {
  SynthOptions o = smallOptions();
  o.withNormals = true;
  const HostPointCloud c = devicearray::synthesizeScene(o);
  ASSERT_NO_THROW(c.validate());
  EXPECT_EQ(c.height, 300);
  EXPECT_EQ(c.width, 480);
  EXPECT_EQ(c.rgba.size(), 4 * c.size());
  EXPECT_EQ(c.snr.size(), c.size());
  // Mostly measured, with a real share of holes (shadows, edges, dark spots, range).
  const double valid = fractionValid(c);
  EXPECT_GT(valid, 0.55);
  EXPECT_LT(valid, 0.97);
  // Depths of a camera 1.1 m above the floor: between ~0.5 m and ~3.5 m, all in front.
  float zMin = INFINITY, zMax = -INFINITY;
  std::size_t facingCamera = 0;
  for (std::size_t i = 0; i < c.size(); ++i) {
    if (!c.isValid(i)) continue;
    const float z = c.xyz[3 * i + 2];
    zMin = std::min(zMin, z);
    zMax = std::max(zMax, z);
    // A point lies on its pixel's ray: x/z and y/z match the pinhole model.
    const std::size_t row = i / 480, col = i % 480;
    EXPECT_NEAR(c.xyz[3 * i] / z, (col - o.camera.cx) / o.camera.fx, 1e-5);
    EXPECT_NEAR(c.xyz[3 * i + 1] / z, (row - o.camera.cy) / o.camera.fy, 1e-5);
    const float* n = &c.normals[3 * i];
    EXPECT_NEAR(n[0] * n[0] + n[1] * n[1] + n[2] * n[2], 1.0f, 1e-4f);
    facingCamera += (n[0] * c.xyz[3 * i] + n[1] * c.xyz[3 * i + 1] + n[2] * z) < 0;
    EXPECT_GE(c.snr[i], o.minSNR);
  }
  EXPECT_GT(zMin, 400.0f);
  EXPECT_LT(zMax, 3500.0f);
  EXPECT_GT(zMax - zMin, 1000.0f);
  EXPECT_EQ(facingCamera, c.validCount());
  // Colour varies (objects, shading, tiles): many distinct RGB values.
  std::set<std::uint32_t> colors;
  for (std::size_t i = 0; i < c.size(); i += 7)
    colors.insert(c.rgba[4 * i] | (c.rgba[4 * i + 1] << 8) | (c.rgba[4 * i + 2] << 16));
  EXPECT_GT(colors.size(), 500u);
}

TEST(Synth, SnrFallsWithDistance) {
  const HostPointCloud c = devicearray::synthesizeScene(smallOptions());
  // The floor near the camera (bottom rows) returns more signal than far away (top rows).
  auto meanSnr = [&](int r0, int r1) {
    double sum = 0;
    std::size_t n = 0;
    for (int r = r0; r < r1; ++r)
      for (int col = 0; col < 480; ++col) {
        const std::size_t i = static_cast<std::size_t>(r) * 480 + col;
        if (c.isValid(i)) { sum += c.snr[i]; ++n; }
      }
    return n ? sum / n : 0.0;
  };
  EXPECT_GT(meanSnr(270, 300), 2.0 * meanSnr(0, 60));
}

TEST(Synth, ProjectorShadowsAndDropoutsMakeHoles) {
  SynthOptions withShadows = smallOptions();
  SynthOptions noShadows = smallOptions();
  noShadows.projectorBaselineMm = 0;
  noShadows.dropoutProbability = 0;
  const HostPointCloud a = devicearray::synthesizeScene(withShadows);
  const HostPointCloud b = devicearray::synthesizeScene(noShadows);
  const std::size_t holesWith = a.size() - a.validCount();
  const std::size_t holesWithout = b.size() - b.validCount();
  EXPECT_GT(holesWith, holesWithout + 480);  // shadows beside objects cost at least a row's worth
}

TEST(Synth, DepthNoiseGrowsWithTheSquareOfDepth) {
  SynthOptions clean = smallOptions();
  clean.depthNoiseCoefficient = 0;
  SynthOptions noisy = smallOptions();
  noisy.depthNoiseCoefficient = 1e-6;  // sigma = 1 mm at 1 m, 4 mm at 2 m
  const HostPointCloud a = devicearray::synthesizeScene(clean);
  const HostPointCloud b = devicearray::synthesizeScene(noisy);
  double near2 = 0, far2 = 0;
  std::size_t nearN = 0, farN = 0;
  for (std::size_t i = 0; i < a.size(); ++i) {
    if (!a.isValid(i) || !b.isValid(i)) continue;
    const double z = a.xyz[3 * i + 2], d = b.xyz[3 * i + 2] - z;
    const double normalized = d / (1e-6 * z * z);  // should be standard normal
    if (z < 1200) { near2 += normalized * normalized; ++nearN; }
    if (z > 2000) { far2 += normalized * normalized; ++farN; }
  }
  ASSERT_GT(nearN, 1000u);
  ASSERT_GT(farN, 1000u);
  EXPECT_NEAR(std::sqrt(near2 / nearN), 1.0, 0.08);
  EXPECT_NEAR(std::sqrt(far2 / farN), 1.0, 0.08);
}

TEST(Synth, RejectsBadOptions) {
  SynthOptions o = smallOptions();
  o.dropoutProbability = 1.5;
  datest::expectError(ErrorCode::InvalidArgument, [&] { devicearray::synthesizeScene(o); });
  o = smallOptions();
  o.camera.fx = 0;
  datest::expectError(ErrorCode::InvalidArgument, [&] { devicearray::synthesizeScene(o); });
  o = smallOptions();
  o.depthNoiseCoefficient = std::numeric_limits<double>::quiet_NaN();
  datest::expectError(ErrorCode::InvalidArgument, [&] { devicearray::synthesizeScene(o); });
  datest::expectError(ErrorCode::InvalidArgument, [] { PinholeCamera::withFieldOfView(640, 480, 180.0); });
  datest::expectError(ErrorCode::InvalidArgument, [] { PinholeCamera::withFieldOfView(0, 480, 60.0); });
}

TEST(Synth, ReportsProgressUpToOne) {
  SynthOptions o = smallOptions();
  std::vector<double> seen;
  o.progress = [&](double f) { seen.push_back(f); };
  devicearray::synthesizeScene(o);
  ASSERT_FALSE(seen.empty());
  EXPECT_TRUE(std::is_sorted(seen.begin(), seen.end()));
  EXPECT_EQ(seen.back(), 1.0);
}

// ---------------------------------------------------------------- normals ---

HostPointCloud planeCloud(int H, int W, float slopeX) {
  // z = 1000 + slopeX * x on a 1 mm grid: the normal is (slopeX, 0, -1) / norm.
  HostPointCloud c = HostPointCloud::organized(H, W);
  for (int r = 0; r < H; ++r)
    for (int col = 0; col < W; ++col) {
      const std::size_t i = static_cast<std::size_t>(r * W + col);
      const float x = static_cast<float>(col - W / 2), y = static_cast<float>(r - H / 2);
      c.xyz[3 * i] = x;
      c.xyz[3 * i + 1] = y;
      c.xyz[3 * i + 2] = 1000.0f + slopeX * x;
    }
  return c;
}

TEST(GridNormals, TiltedPlaneHasTheAnalyticNormalFacingTheCamera) {
  HostPointCloud c = planeCloud(5, 6, 1.0f);
  // A hole in the middle: its neighbours fall back to one-sided differences.
  for (int k = 0; k < 3; ++k) c.xyz[3 * (2 * 6 + 3) + k] = std::numeric_limits<float>::quiet_NaN();
  const std::vector<float> n = devicearray::estimateOrganizedNormals(c);
  const float s = 1.0f / std::sqrt(2.0f);
  for (std::size_t i = 0; i < c.size(); ++i) {
    if (i == 2 * 6 + 3) {
      EXPECT_TRUE(std::isnan(n[3 * i]));
      continue;
    }
    EXPECT_NEAR(n[3 * i], s, 1e-5) << i;
    EXPECT_NEAR(n[3 * i + 1], 0.0f, 1e-5) << i;
    EXPECT_NEAR(n[3 * i + 2], -s, 1e-5) << i;
  }
}

TEST(GridNormals, IsolatedPointHasNoNormalAndUnorganizedIsRefused) {
  HostPointCloud c = HostPointCloud::organized(3, 3);
  for (int k = 0; k < 3; ++k) c.xyz[3 * 4 + k] = 100.0f + k;
  const std::vector<float> n = devicearray::estimateOrganizedNormals(c);
  EXPECT_TRUE(std::isnan(n[12]));
  HostPointCloud u;
  u.xyz = {1, 2, 3};
  datest::expectError(ErrorCode::InvalidArgument, [&] { devicearray::estimateOrganizedNormals(u); });
}

// --------------------------------------------------------------- renderer ---

std::array<int, 3> pixel(const HostImage& im, int y, int x) {
  const std::uint8_t* p = im.row(y) + 3 * static_cast<std::size_t>(x);
  return {p[0], p[1], p[2]};
}

TEST(Render, AllViewsOfASynthesizedSceneAreNonTrivial) {
  const HostPointCloud c = devicearray::synthesizeScene(smallOptions());
  RenderOptions o;
  o.view = RenderView::all;
  const HostImage im = devicearray::renderCloud(c, o);
  EXPECT_EQ(im.channels, 3);
  EXPECT_EQ(im.bitDepth, 8);
  EXPECT_EQ(im.height, 300);
  EXPECT_EQ(im.width, 3 * 480 + 2 * 8);
  for (int panel = 0; panel < 3; ++panel) {
    std::set<std::uint32_t> colors;
    for (int y = 0; y < im.height; y += 3)
      for (int x = 0; x < 480; x += 3) {
        const auto p = pixel(im, y, panel * 488 + x);
        colors.insert(static_cast<std::uint32_t>(p[0] | (p[1] << 8) | (p[2] << 16)));
      }
    EXPECT_GT(colors.size(), 50u) << "panel " << panel;
  }
}

TEST(Render, DepthViewIsWarmNearAndCoolFar) {
  const HostPointCloud c = devicearray::synthesizeScene(smallOptions());
  RenderOptions o;
  o.view = RenderView::depth;
  const HostImage im = devicearray::renderCloud(c, o);
  // Bottom rows see the floor close to the camera, rows near the top see it far away.
  auto redMinusBlue = [&](int y0, int y1) {
    long sum = 0, n = 0;
    for (int y = y0; y < y1; ++y)
      for (int x = 0; x < im.width; ++x) {
        const std::size_t i = static_cast<std::size_t>(y) * 480 + x;
        if (!c.isValid(i)) continue;
        const auto p = pixel(im, y, x);
        sum += p[0] - p[2];
        ++n;
      }
    return n ? static_cast<double>(sum) / n : 0.0;
  };
  const double nearRows = redMinusBlue(285, 300), farRows = redMinusBlue(40, 60);
  EXPECT_GT(nearRows, 100.0);  // the nearest colour is deep red: R - B = 135
  EXPECT_GT(nearRows - farRows, 80.0);
}

TEST(Render, FlatFloorFacingUpHasConstantNormalColor) {
  // The normals view of a plane is one colour.
  const HostPointCloud c = planeCloud(20, 30, 0.0f);
  RenderOptions o;
  o.view = RenderView::normals;
  const HostImage im = devicearray::renderCloud(c, o);
  for (int y = 0; y < im.height; ++y)
    for (int x = 0; x < im.width; ++x) {
      const auto p = pixel(im, y, x);  // n = (0, 0, -1) -> (128, 128, 255)
      ASSERT_EQ(p[0], 128);
      ASSERT_EQ(p[1], 128);
      ASSERT_EQ(p[2], 255);
    }
}

TEST(Render, UnorganizedCloudIsProjectedThroughAFittedCamera) {
  const HostPointCloud organized = devicearray::synthesizeScene(smallOptions());
  HostPointCloud u;
  for (std::size_t i = 0; i < organized.size(); ++i)
    if (organized.isValid(i)) {
      u.xyz.insert(u.xyz.end(), &organized.xyz[3 * i], &organized.xyz[3 * i] + 3);
      u.rgba.insert(u.rgba.end(), &organized.rgba[4 * i], &organized.rgba[4 * i] + 4);
    }
  RenderOptions o;
  o.width = 320;
  const HostImage im = devicearray::renderCloud(u, o);
  EXPECT_EQ(im.width, 320);
  EXPECT_EQ(im.height, 200);
  std::size_t covered = 0;
  for (int y = 0; y < im.height; ++y)
    for (int x = 0; x < im.width; ++x) covered += pixel(im, y, x) != std::array<int, 3>{24, 24, 28};
  EXPECT_GT(covered, static_cast<std::size_t>(0.4 * im.width * im.height));
  // Grid projection needs a grid.
  o.projection = RenderProjection::grid;
  datest::expectError(ErrorCode::InvalidArgument, [&] { devicearray::renderCloud(u, o); });
}

TEST(Render, ProjectionWithAGivenCameraPutsPointsAtTheirPixels) {
  HostPointCloud u;
  u.xyz = {0.0f, 0.0f, 1000.0f, 100.0f, 50.0f, 1000.0f, 100.0f, 50.0f, 2000.0f};
  u.rgba = {255, 0, 0, 255, 0, 255, 0, 255, 0, 0, 255, 255};
  RenderOptions o;
  o.projection = RenderProjection::pinhole;
  o.camera = PinholeCamera{64, 48, 100.0, 100.0, 31.5, 23.5};
  o.pointRadius = 0;
  const HostImage im = devicearray::renderCloud(u, o);
  ASSERT_EQ(im.width, 64);
  // (0, 0, 1000) -> (31.5, 23.5) rounds to (32, 24); (100, 50, 1000) -> (41.5, 28.5) -> (42, 29).
  EXPECT_EQ(pixel(im, 24, 32), (std::array<int, 3>{255, 0, 0}));
  EXPECT_EQ(pixel(im, 29, 42), (std::array<int, 3>{0, 255, 0}));
  // The third point, (100, 50, 2000) -> (36.5, 26), is behind nothing and shows blue.
  EXPECT_EQ(pixel(im, 26, 37), (std::array<int, 3>{0, 0, 255}));
  EXPECT_EQ(pixel(im, 0, 0), (std::array<int, 3>{24, 24, 28}));
}

TEST(Render, RejectsEmptyAndAllMissingClouds) {
  datest::expectError(ErrorCode::InvalidArgument, [] { devicearray::renderCloud(HostPointCloud{}); });
  datest::expectError(ErrorCode::InvalidArgument, [] { devicearray::renderCloud(HostPointCloud::organized(4, 4)); });
  RenderOptions o;
  o.pointRadius = -2;
  datest::expectError(ErrorCode::InvalidArgument, [&] { devicearray::renderCloud(planeCloud(4, 4, 0), o); });
}

TEST(Render, RefusesPicturesAboveTheMemoryLimitBeforeAllocating) {
  // 16384 x 16384 took 94 s and 8 GB; with the default limit it fails at once.
  RenderOptions o;
  o.width = o.height = 16384;
  try {
    devicearray::renderCloud(planeCloud(4, 4, 0), o);
    FAIL() << "expected OutOfRange";
  } catch (const devicearray::Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::OutOfRange);
    const std::string msg = e.what();
    EXPECT_NE(msg.find("16384 x 16384"), std::string::npos) << msg;
    EXPECT_NE(msg.find("limit of 2.0 GiB"), std::string::npos) << msg;
  }
  // The limit is the caller's: tighter, looser (pinhole and all views), or none.
  o.width = o.height = 64;
  o.memoryLimitBytes = 1000;
  datest::expectError(ErrorCode::OutOfRange, [&] { devicearray::renderCloud(planeCloud(4, 4, 0), o); });
  o.memoryLimitBytes = 0;
  EXPECT_EQ(devicearray::renderCloud(planeCloud(4, 4, 0), o).width, 64);
  o.view = RenderView::all;
  o.projection = RenderProjection::pinhole;
  o.memoryLimitBytes = 64 * 64 * 60;  // above the ~40 bytes per pixel of this case
  EXPECT_EQ(devicearray::renderCloud(planeCloud(4, 4, 0), o).width, 3 * 64 + 16);
}

TEST(Render, ReportsProgressUpToOne) {
  const HostPointCloud scene = devicearray::synthesizeScene(smallOptions());
  for (RenderProjection projection : {RenderProjection::grid, RenderProjection::pinhole}) {
    RenderOptions o;
    o.view = RenderView::all;
    o.projection = projection;
    std::vector<double> seen;
    o.progress = [&](double f) { seen.push_back(f); };
    devicearray::renderCloud(scene, o);
    ASSERT_GT(seen.size(), 3u);
    EXPECT_LE(seen.size(), 201u);
    EXPECT_TRUE(std::is_sorted(seen.begin(), seen.end()));
    EXPECT_EQ(seen.back(), 1.0);
    EXPECT_EQ(std::count(seen.begin(), seen.end(), 1.0), 1);
  }
}

}  // namespace
