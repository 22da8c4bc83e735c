// Files as other tools write them (tests/data/exchange/, made by
// make_exchange_files.py in the layouts of PCL, Open3D, trimesh, pymeshlab,
// CloudCompare and camera vendors): each reads as the points, colours, normals and
// grid it holds.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "devicearray/io.hpp"
#include "file_test_support.hpp"
#include "scratch_dir.hpp"
#include "test_support.hpp"

namespace fs = std::filesystem;
using devicearray::ErrorCode;
using devicearray::HostPointCloud;

namespace {

std::string dataFile(const char* name) { return (fs::path(__FILE__).parent_path() / "data" / "exchange" / name).string(); }

/// The 3 x 4 grid the generator writes: (r, c) -> (c, r, 100 + 10 r + c), holes at
/// (0, 1) and (2, 3), colour (10 c + 5, 20 r + 7, 200 - c - r).
void expectGrid(const HostPointCloud& cloud, bool organized, bool colors) {
  std::size_t k = 0;
  for (int r = 0; r < 3; ++r)
    for (int c = 0; c < 4; ++c) {
      const bool hole = (r == 0 && c == 1) || (r == 2 && c == 3);
      if (hole && !organized) continue;
      ASSERT_LT(k, cloud.size());
      if (hole) {
        EXPECT_FALSE(cloud.isValid(k));
      } else {
        EXPECT_EQ(cloud.xyz[3 * k], static_cast<float>(c));
        EXPECT_EQ(cloud.xyz[3 * k + 1], static_cast<float>(r));
        EXPECT_EQ(cloud.xyz[3 * k + 2], static_cast<float>(100 + 10 * r + c));
      }
      if (colors) {
        EXPECT_EQ(cloud.rgba[4 * k], 10 * c + 5);
        EXPECT_EQ(cloud.rgba[4 * k + 1], 20 * r + 7);
        EXPECT_EQ(cloud.rgba[4 * k + 2], 200 - c - r);
        EXPECT_EQ(cloud.rgba[4 * k + 3], 255);
      }
      ++k;
    }
  EXPECT_EQ(k, cloud.size());
}

TEST(ExchangeFiles, PclOrganizedBinaryPcdWithPadding) {
  const HostPointCloud c = devicearray::readPcd(dataFile("pcl_organized_xyzrgba_binary.pcd"));
  EXPECT_EQ(c.height, 3);
  EXPECT_EQ(c.width, 4);
  expectGrid(c, true, true);
}

TEST(ExchangeFiles, PclBinaryCompressedWithNormalsAndCurvature) {
  const HostPointCloud c = devicearray::readPcd(dataFile("pcl_xyzrgbnormal_binary_compressed.pcd"));
  EXPECT_FALSE(c.isOrganized());
  expectGrid(c, false, true);  // rgb: opaque whatever its top byte says
  ASSERT_TRUE(c.hasNormals());
  for (std::size_t i = 0; i < c.size(); ++i) {
    EXPECT_EQ(c.normals[3 * i + 1], 0.6f);
    EXPECT_EQ(c.normals[3 * i + 2], -0.8f);
  }
}

TEST(ExchangeFiles, OldAsciiPcdWithFloatRgbIntensityAndExtraFields) {
  const HostPointCloud c = devicearray::readPcd(dataFile("pcl_ascii_rgb_float_intensity.pcd"));
  ASSERT_EQ(c.size(), 3u);
  EXPECT_EQ(c.xyz, (std::vector<float>{1.5f, -2.0f, 300.0f, 0.0f, 0.0f, 0.0f, -4.0f, 5.0f, 6.0f}));
  EXPECT_EQ(c.rgba, (std::vector<std::uint8_t>{255, 0, 0, 255, 1, 2, 3, 255, 0, 128, 255, 255}));
}

TEST(ExchangeFiles, PclPlyCameraElementDeclaresTheGrid) {
  const HostPointCloud c = devicearray::readPly(dataFile("pcl_camera_organized.ply"));
  EXPECT_EQ(c.height, 3);
  EXPECT_EQ(c.width, 4);
  expectGrid(c, true, true);
  ASSERT_TRUE(c.hasNormals());  // normal_x / normal_y / normal_z
  EXPECT_EQ(c.normals[2], -1.0f);
}

TEST(ExchangeFiles, ObjInfoNumRowsDeclaresTheGridAndCommentsDoNot) {
  const HostPointCloud c = devicearray::readPly(dataFile("vendor_num_rows_organized.ply"));
  EXPECT_EQ(c.height, 3);
  EXPECT_EQ(c.width, 4);
  expectGrid(c, true, false);
}

TEST(ExchangeFiles, Open3dDoublesAndNormals) {
  const HostPointCloud c = devicearray::readPly(dataFile("open3d_double_normals.ply"));
  ASSERT_EQ(c.size(), 2u);
  EXPECT_EQ(c.xyz, (std::vector<float>{0.25f, -1.5f, 1000.125f, 0.0f, 2.0f, 3.0f}));
  EXPECT_EQ(c.normals, (std::vector<float>{0, 0, 1, 1, 0, 0}));
  EXPECT_EQ(c.rgba, (std::vector<std::uint8_t>{255, 128, 0, 255, 1, 2, 3, 255}));
}

TEST(ExchangeFiles, TrimeshAlphaEmptyFacesAndTrailingBytes) {
  const HostPointCloud c = devicearray::readPly(dataFile("trimesh_rgba_trailing.ply"));
  EXPECT_EQ(c.xyz, (std::vector<float>{1, 2, 3, 4, 5, 6}));
  EXPECT_EQ(c.rgba, (std::vector<std::uint8_t>{10, 20, 30, 128, 40, 50, 60, 255}));
  EXPECT_EQ(devicearray::readPly(dataFile("ply_binary_trailing_bytes.ply")).size(), 2u);
}

TEST(ExchangeFiles, FloatColoursAbove1AreIn0To255) {
  const HostPointCloud c = devicearray::readPly(dataFile("pymeshlab_float_colors_255.ply"));
  EXPECT_EQ(c.rgba, (std::vector<std::uint8_t>{200, 101, 0, 255, 1, 1, 255, 255}));
  EXPECT_EQ(c.normals, (std::vector<float>{0, 0, 1, 0, 1, 0}));
}

TEST(ExchangeFiles, ColourAliasesIntegerCoordinatesAndAlphaAlone) {
  const HostPointCloud d = devicearray::readPly(dataFile("diffuse_colors_int_xyz.ply"));
  EXPECT_EQ(d.xyz, (std::vector<float>{-7, 8, 9, 10, -11, 12}));
  EXPECT_EQ(d.rgba, (std::vector<std::uint8_t>{1, 2, 3, 255, 4, 5, 6, 255}));
  EXPECT_EQ(devicearray::readPly(dataFile("rgb_short_names.ply")).rgba, (std::vector<std::uint8_t>{255, 128, 0, 255}));
  const HostPointCloud a = devicearray::readPly(dataFile("alpha_only.ply"));
  EXPECT_EQ(a.xyz, (std::vector<float>{1, 2, 3}));
  EXPECT_FALSE(a.hasColors());
  EXPECT_EQ(devicearray::readPly(dataFile("ply_int_colors.ply")).rgba,
            (std::vector<std::uint8_t>{1, 2, 3, 255, 1, 2, 3, 255}));
  EXPECT_EQ(devicearray::readPly(dataFile("ply_uchar_x.ply")).xyz, (std::vector<float>{1, 2, 3, 4, 5, 6}));
}

TEST(ExchangeFiles, XyzLayouts) {
  const HostPointCloud cc = devicearray::readXyz(dataFile("cloudcompare_rgb.xyz"));
  EXPECT_EQ(cc.xyz, (std::vector<float>{1.5f, -2, 3, 4, 5, 6}));
  EXPECT_EQ(cc.rgba, (std::vector<std::uint8_t>{255, 128, 0, 255, 1, 2, 3, 255}));
  const HostPointCloud o3 = devicearray::readXyz(dataFile("open3d_rgb_normals.xyz"));
  EXPECT_EQ(o3.rgba, (std::vector<std::uint8_t>{255, 128, 0, 255, 0, 0, 255, 255}));
  EXPECT_EQ(o3.normals, (std::vector<float>{0, 0, 1, 1, 0, 0}));
  const HostPointCloud plain = devicearray::readXyz(dataFile("plain.xyz"));
  ASSERT_EQ(plain.size(), 3u);
  EXPECT_FALSE(plain.isValid(1));
  EXPECT_EQ(plain.xyz[6], 7.0f);
}

TEST(PlyRead, AsciiUnderflowReadsAsZeroOrDenormal) {
  const fs::path path = datest::scratchDir() / "underflow.ply";
  datest::writeFile(path,
            "ply\nformat ascii 1.0\nelement vertex 1\nproperty float x\nproperty double y\nproperty float z\n"
            "end_header\n1e-50 -1e-400 1e-40\n");
  const HostPointCloud c = devicearray::readPly(path.string());
  EXPECT_EQ(c.xyz[0], 0.0f);
  EXPECT_EQ(c.xyz[1], 0.0f);
  EXPECT_TRUE(std::signbit(c.xyz[1]));
  EXPECT_GT(c.xyz[2], 0.0f);  // a float denormal
  datest::writeFile(path,
            "ply\nformat ascii 1.0\nelement vertex 1\nproperty float x\nproperty float y\nproperty float z\n"
            "end_header\n1e50 0 0\n");
  datest::expectError(ErrorCode::InvalidArgument, [&] { devicearray::readPly(path.string()); });
}

TEST(PlyRead, GridFromOptionsForAFileThatDoesNotDeclareOne) {
  const fs::path path = datest::scratchDir() / "grid.ply";
  HostPointCloud c;
  for (int i = 0; i < 6; ++i) c.xyz.insert(c.xyz.end(), {static_cast<float>(i), 0.0f, 1.0f});
  devicearray::writePly(path.string(), c);
  devicearray::PointCloudReadOptions r;
  r.height = 2;
  r.width = 3;
  const HostPointCloud g = devicearray::readPly(path.string(), r);
  EXPECT_EQ(g.height, 2);
  EXPECT_EQ(g.width, 3);
  r.height = 4;
  datest::expectError(ErrorCode::InvalidArgument, [&] { devicearray::readPly(path.string(), r); });
}

TEST(PlyRead, DoublePrecisionLossWarnsOnceThroughTheCallback) {
  const fs::path path = datest::scratchDir() / "utm.ply";
  datest::writeFile(path,
            "ply\nformat ascii 1.0\nelement vertex 3\nproperty double x\nproperty double y\nproperty double z\n"
            "end_header\n0.1 0.2 0.3\n500000.123 4649776.224 12.5\n500000.987 4649776.5 12.5\n");
  std::vector<std::string> warnings;
  devicearray::PointCloudReadOptions r;
  r.warning = [&](const std::string& w) { warnings.push_back(w); };
  devicearray::readPly(path.string(), r);
  ASSERT_EQ(warnings.size(), 1u);
  EXPECT_NE(warnings[0].find("readPly"), std::string::npos);
  EXPECT_NE(warnings[0].find(path.string()), std::string::npos);
}

TEST(PlyWrite, OptionsChooseValidPointsLinearColoursAndNoNormals) {
  HostPointCloud c = HostPointCloud::organized(2, 2, true, false, true);
  for (std::size_t i = 0; i < 4; ++i) {
    if (i != 1) c.xyz[3 * i] = c.xyz[3 * i + 1] = c.xyz[3 * i + 2] = static_cast<float>(i);
    c.rgba[4 * i] = 255;
    c.rgba[4 * i + 1] = 128;
    c.rgba[4 * i + 3] = 255;
  }
  const fs::path path = datest::scratchDir() / "options.ply";
  devicearray::PointCloudWriteOptions o;
  o.organized = false;
  o.normals = false;
  o.colorSpace = devicearray::ColorSpace::linear;
  devicearray::writePly(path.string(), c, devicearray::PlyFormat::ascii, o);
  const HostPointCloud back = devicearray::readPly(path.string());
  EXPECT_FALSE(back.isOrganized());
  EXPECT_EQ(back.size(), 3u);
  EXPECT_FALSE(back.hasNormals());
  EXPECT_EQ(back.rgba[0], 255);
  EXPECT_EQ(back.rgba[1], 55);  // sRGB 128 is linear 0.2158 -> 55
}

}  // namespace
