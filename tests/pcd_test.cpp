// PCD files: round trips in every DATA encoding and with every option, hand-written
// headers, and a corpus of malformed files that must each fail with one
// InvalidArgument naming the file.
#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "devicearray/io.hpp"
#include "malformed_corpus.hpp"
#include "file_test_support.hpp"
#include "scratch_dir.hpp"
#include "test_support.hpp"

namespace fs = std::filesystem;
using devicearray::ColorSpace;
using devicearray::ErrorCode;
using devicearray::HostPointCloud;
using devicearray::PcdFormat;
using devicearray::PointCloudWriteOptions;

namespace {

fs::path tempDir() { return datest::scratchDir(); }

/// A 5 x 7 organized cloud with holes, awkward floats and every attribute.
HostPointCloud testCloud(bool colors, bool snr, bool normals) {
  HostPointCloud c = HostPointCloud::organized(5, 7, colors, snr, normals);
  for (std::size_t i = 0; i < c.size(); ++i) {
    c.xyz[3 * i] = 0.1f * static_cast<float>(i) - 1.7f;
    c.xyz[3 * i + 1] = std::nextafter(1000.0f / 3.0f, 0.0f) * static_cast<float>(i % 4);
    c.xyz[3 * i + 2] = 500.0f + static_cast<float>(i) / 7.0f;
    if (colors)
      for (int ch = 0; ch < 4; ++ch) c.rgba[4 * i + ch] = static_cast<std::uint8_t>((37 * i + 61 * ch) % 256);
    if (snr) c.snr[i] = 0.5f * static_cast<float>(i);
    if (normals) {
      c.normals[3 * i] = 0.6f;
      c.normals[3 * i + 1] = -0.0f;
      c.normals[3 * i + 2] = -0.8f;
    }
  }
  for (std::size_t hole : {0u, 9u, 34u})
    for (int ch = 0; ch < 3; ++ch) c.xyz[3 * hole + ch] = std::numeric_limits<float>::quiet_NaN();
  c.xyz[3 * 3 + 2] = 3.0e38f;
  c.xyz[3 * 4 + 1] = 1.0e-40f;  // a denormal
  return c;
}

struct PcdCase {
  PcdFormat format;
  bool colors, snr, normals;
};

class PcdRoundTrip : public testing::TestWithParam<PcdCase> {};

TEST_P(PcdRoundTrip, ReadsBackExactlyWhatWasWritten) {
  const auto& p = GetParam();
  const HostPointCloud original = testCloud(p.colors, p.snr, p.normals);
  const fs::path path = tempDir() / "round_trip.pcd";
  devicearray::writePcd(path.string(), original, p.format);
  const HostPointCloud back = devicearray::readPcd(path.string());
  EXPECT_EQ(back.height, 5);
  EXPECT_EQ(back.width, 7);
  datest::expectSameFloats(original.xyz, back.xyz, "xyz");
  EXPECT_EQ(back.rgba, original.rgba);
  datest::expectSameFloats(original.snr, back.snr, "snr");
  datest::expectSameFloats(original.normals, back.normals, "normals");
}

std::vector<PcdCase> pcdCases() {
  std::vector<PcdCase> cases;
  for (PcdFormat f : {PcdFormat::ascii, PcdFormat::binary, PcdFormat::binaryCompressed})
    for (int bits = 0; bits < 8; ++bits) cases.push_back({f, (bits & 1) != 0, (bits & 2) != 0, (bits & 4) != 0});
  return cases;
}

std::string pcdCaseName(const testing::TestParamInfo<PcdCase>& info) {
  const auto& p = info.param;
  std::string s = p.format == PcdFormat::ascii ? "Ascii" : p.format == PcdFormat::binary ? "Binary" : "Compressed";
  if (p.colors) s += "Color";
  if (p.snr) s += "Snr";
  if (p.normals) s += "Normals";
  return s;
}
INSTANTIATE_TEST_SUITE_P(AllEncodingsAndAttributes, PcdRoundTrip, testing::ValuesIn(pcdCases()), pcdCaseName);

TEST(PcdWrite, HeaderIsWhatPclWrites) {
  const fs::path path = tempDir() / "header.pcd";
  devicearray::writePcd(path.string(), testCloud(true, false, true), PcdFormat::ascii);
  const std::string all = datest::readFile(path);
  EXPECT_NE(all.find("VERSION 0.7\nFIELDS x y z rgba normal_x normal_y normal_z\nSIZE 4 4 4 4 4 4 4\n"
                     "TYPE F F F U F F F\nCOUNT 1 1 1 1 1 1 1\nWIDTH 7\nHEIGHT 5\nVIEWPOINT 0 0 0 1 0 0 0\n"
                     "POINTS 35\nDATA ascii\n"),
            std::string::npos)
      << all.substr(0, 400);
}

TEST(PcdWrite, CompressedLargeCloudsRoundTripAndShrink) {
  // Repetitive data compresses; random data exercises long literal runs.
  for (bool random : {false, true}) {
    HostPointCloud c;
    std::mt19937 rng(7);
    std::uniform_real_distribution<float> u(-1000.0f, 1000.0f);
    for (int i = 0; i < 100000; ++i) {
      c.xyz.push_back(random ? u(rng) : static_cast<float>(i % 100));
      c.xyz.push_back(random ? u(rng) : 1.0f);
      c.xyz.push_back(random ? u(rng) : 2.0f);
    }
    const fs::path path = tempDir() / "big.pcd";
    devicearray::writePcd(path.string(), c, PcdFormat::binaryCompressed);
    if (!random) EXPECT_LT(fs::file_size(path), c.xyz.size() * 4 / 4);
    const HostPointCloud back = devicearray::readPcd(path.string());
    datest::expectSameFloats(c.xyz, back.xyz, "xyz");
  }
}

TEST(PcdWrite, OptionsChooseValidPointsNormalsAndColourSpace) {
  const HostPointCloud c = testCloud(true, false, true);
  const fs::path path = tempDir() / "options.pcd";
  PointCloudWriteOptions o;
  o.organized = false;
  o.normals = false;
  o.colorSpace = ColorSpace::linear;
  devicearray::writePcd(path.string(), c, PcdFormat::binary, o);
  const HostPointCloud linear = devicearray::readPcd(path.string());
  EXPECT_FALSE(linear.isOrganized());
  EXPECT_EQ(linear.size(), c.size() - 3);
  EXPECT_FALSE(linear.hasNormals());
  EXPECT_EQ(linear.validCount(), linear.size());
  // Read back as linear: sRGB again, within the 8-bit round trip.
  devicearray::PointCloudReadOptions r;
  r.colorSpace = ColorSpace::linear;
  const HostPointCloud srgb = devicearray::readPcd(path.string(), r);
  std::size_t k = 0;
  for (std::size_t i = 0; i < c.size(); ++i) {
    if (!c.isValid(i)) continue;
    for (int ch = 0; ch < 3; ++ch) {
      const int want = c.rgba[4 * i + ch], got = srgb.rgba[4 * k + ch];
      // 8-bit linear codes are coarser than sRGB ones in the bright half and finer
      // (shared by several sRGB codes) in the darkest shades.
      EXPECT_LE(std::abs(got - want), want > 40 ? 1 : 13) << i;
      // Linear codes are never above the sRGB ones.
      EXPECT_LE(linear.rgba[4 * k + ch], c.rgba[4 * i + ch]);
    }
    EXPECT_EQ(srgb.rgba[4 * k + 3], c.rgba[4 * i + 3]);  // alpha is not re-encoded
    ++k;
  }
}

TEST(PcdRead, GridFromOptionsAndContradictions) {
  HostPointCloud c = testCloud(false, false, false);
  c.height = c.width = 0;  // unorganized: 35 points in row order
  const fs::path path = tempDir() / "grid.pcd";
  devicearray::writePcd(path.string(), c);
  devicearray::PointCloudReadOptions r;
  r.height = 5;
  r.width = 7;
  const HostPointCloud g = devicearray::readPcd(path.string(), r);
  EXPECT_EQ(g.height, 5);
  EXPECT_EQ(g.width, 7);
  r.height = 7;
  r.width = 7;
  datest::expectError(ErrorCode::InvalidArgument, [&] { devicearray::readPcd(path.string(), r); });
  r.height = 5;
  r.width = 0;
  datest::expectError(ErrorCode::InvalidArgument, [&] { devicearray::readPcd(path.string(), r); });
  devicearray::writePcd(path.string(), testCloud(false, false, false));  // declares 5 x 7
  r.height = 7;
  r.width = 5;
  datest::expectError(ErrorCode::InvalidArgument, [&] { devicearray::readPcd(path.string(), r); });
}

TEST(PcdRead, DoubleCoordinatesBeyondFloatPrecisionWarnOnce) {
  const fs::path path = tempDir() / "double.pcd";
  std::string data = "VERSION 0.7\nFIELDS x y z\nSIZE 8 8 8\nTYPE F F F\nWIDTH 3\nDATA ascii\n"
                     "1.25 2 3\n6378137.123 2 3\n6378137.456 2 3\n";
  datest::writeFile(path, data);
  std::vector<std::string> warnings;
  devicearray::PointCloudReadOptions r;
  r.warning = [&](const std::string& w) { warnings.push_back(w); };
  const HostPointCloud c = devicearray::readPcd(path.string(), r);
  ASSERT_EQ(warnings.size(), 1u);
  EXPECT_NE(warnings[0].find(path.string()), std::string::npos) << warnings[0];
  EXPECT_NE(warnings[0].find("precision"), std::string::npos) << warnings[0];
  EXPECT_EQ(c.xyz[0], 1.25f);
}

// ------------------------------------------------------- malformed corpus ---

TEST(PcdCorpus, HasAtLeastTwentyMalformedFiles) {
  EXPECT_GE(datest::corpusFiles("pcd", ".pcd").size(), 20u) << datest::corpusDir("pcd");
}

class MalformedPcd : public testing::TestWithParam<std::string> {};

TEST_P(MalformedPcd, FailsWithOneInvalidArgumentNamingTheFileAndPlace) {
  datest::expectRejected((datest::corpusDir("pcd") / GetParam()).string(),
                         [](const std::string& p) { return devicearray::readPcd(p); },
                         {": line ", ": byte ", "empty", "no 'DATA'"});
}

GTEST_ALLOW_UNINSTANTIATED_PARAMETERIZED_TEST(MalformedPcd);
INSTANTIATE_TEST_SUITE_P(Corpus, MalformedPcd, testing::ValuesIn(datest::corpusFiles("pcd", ".pcd")),
                         datest::corpusTestName);

TEST(PcdRead, CompressedCorruptionNamesTheByte) {
  const fs::path path = datest::corpusDir("pcd") / "compressed_reference_before_start.pcd";
  try {
    devicearray::readPcd(path.string());
    FAIL();
  } catch (const devicearray::Error& e) {
    EXPECT_NE(std::string(e.what()).find("before the start"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("byte "), std::string::npos) << e.what();
  }
}

}  // namespace
