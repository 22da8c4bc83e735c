// XYZ text files: round trips, the column rules, and a corpus of malformed files that
// must each fail with one InvalidArgument naming the file and line.
#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <limits>
#include <string>
#include <vector>

#include "devicearray/io.hpp"
#include "scratch_dir.hpp"
#include "test_support.hpp"

namespace fs = std::filesystem;
using devicearray::ErrorCode;
using devicearray::HostPointCloud;

namespace {

fs::path tempDir() { return datest::scratchDir(); }

void writeFile(const fs::path& p, const std::string& bytes) {
  std::ofstream f(p, std::ios::binary);
  f.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

HostPointCloud testCloud(bool colors, bool normals) {
  HostPointCloud c = HostPointCloud::organized(2, 3, colors, false, normals);
  for (std::size_t i = 0; i < c.size(); ++i) {
    c.xyz[3 * i] = 0.1f * static_cast<float>(i);
    c.xyz[3 * i + 1] = -1.0f / 3.0f;
    c.xyz[3 * i + 2] = 1.0e-40f * static_cast<float>(i);
    if (colors)
      for (int ch = 0; ch < 3; ++ch) c.rgba[4 * i + ch] = static_cast<std::uint8_t>(40 * i + ch);
    if (colors) c.rgba[4 * i + 3] = 255;
    if (normals) {
      c.normals[3 * i] = 0.0f;
      c.normals[3 * i + 1] = 0.6f;
      c.normals[3 * i + 2] = 0.8f;
    }
  }
  for (int ch = 0; ch < 3; ++ch) c.xyz[3 * 4 + ch] = std::numeric_limits<float>::quiet_NaN();
  return c;
}

void expectSameFloats(const std::vector<float>& a, const std::vector<float>& b, const char* what) {
  ASSERT_EQ(a.size(), b.size()) << what;
  for (std::size_t i = 0; i < a.size(); ++i) {
    if (std::isnan(a[i]))
      EXPECT_TRUE(std::isnan(b[i])) << what << "[" << i << "]";
    else
      EXPECT_EQ(std::bit_cast<std::uint32_t>(a[i]), std::bit_cast<std::uint32_t>(b[i])) << what << "[" << i << "]";
  }
}

TEST(XyzRoundTrip, EveryLayoutReadsBackWithTheGridFromOptions) {
  for (int layout = 0; layout < 3; ++layout) {
    const HostPointCloud c = testCloud(layout >= 1, layout == 2);
    const fs::path path = tempDir() / "round_trip.xyz";
    devicearray::writeXyz(path.string(), c);
    devicearray::PointCloudReadOptions r;
    r.height = 2;
    r.width = 3;
    const HostPointCloud back = devicearray::readXyz(path.string(), r);
    EXPECT_EQ(back.height, 2);
    EXPECT_EQ(back.width, 3);
    expectSameFloats(c.xyz, back.xyz, "xyz");
    EXPECT_EQ(back.rgba, c.rgba);
    expectSameFloats(c.normals, back.normals, "normals");
    const HostPointCloud plain = devicearray::readXyz(path.string());
    EXPECT_FALSE(plain.isOrganized());
    EXPECT_EQ(plain.size(), 6u);
  }
}

TEST(XyzWrite, NormalsWithoutColoursAreNotWrittenAndValidOnlyDropsHoles) {
  const HostPointCloud c = testCloud(false, true);
  const fs::path path = tempDir() / "normals.xyz";
  devicearray::PointCloudWriteOptions o;
  o.organized = false;
  devicearray::writeXyz(path.string(), c, o);
  const HostPointCloud back = devicearray::readXyz(path.string());
  EXPECT_EQ(back.size(), 5u);
  EXPECT_FALSE(back.hasNormals());
  EXPECT_FALSE(back.hasColors());
}

TEST(XyzRead, FloatColoursFollowTheFileWideRule) {
  const fs::path path = tempDir() / "float_colors.xyz";
  writeFile(path, "1 2 3 1.0 0.5 0\n");
  EXPECT_EQ(devicearray::readXyz(path.string()).rgba, (std::vector<std::uint8_t>{255, 128, 0, 255}));
  writeFile(path, "1 2 3 1.0 0.5 0\n1 2 3 200.0 100.4 0\n");
  EXPECT_EQ(devicearray::readXyz(path.string()).rgba,
            (std::vector<std::uint8_t>{1, 1, 0, 255, 200, 100, 0, 255}));
  writeFile(path, "1 2 3 1 0 1\n");  // integers: codes as they are
  EXPECT_EQ(devicearray::readXyz(path.string()).rgba, (std::vector<std::uint8_t>{1, 0, 1, 255}));
}

fs::path corpusDir() { return fs::path(__FILE__).parent_path() / "data" / "xyz"; }

std::vector<std::string> corpusFiles() {
  std::vector<std::string> names;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(corpusDir(), ec))
    if (entry.path().extension() == ".xyz") names.push_back(entry.path().filename().string());
  std::sort(names.begin(), names.end());
  return names;
}

TEST(XyzCorpus, HasMalformedFiles) { EXPECT_GE(corpusFiles().size(), 8u) << corpusDir(); }

class MalformedXyz : public testing::TestWithParam<std::string> {};

TEST_P(MalformedXyz, FailsWithOneInvalidArgumentNamingFileAndLine) {
  const std::string path = (corpusDir() / GetParam()).string();
  try {
    const HostPointCloud c = devicearray::readXyz(path);
    FAIL() << "readXyz accepted " << path << " (" << c.size() << " points)";
  } catch (const devicearray::Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::InvalidArgument) << e.what();
    const std::string msg = e.what();
    EXPECT_NE(msg.find(path), std::string::npos) << msg;
    EXPECT_NE(msg.find(": line "), std::string::npos) << msg;
    EXPECT_EQ(msg.find('\n'), std::string::npos) << "one line: " << msg;
    EXPECT_LT(msg.size(), 600u) << msg;
    for (char ch : msg) EXPECT_FALSE(static_cast<unsigned char>(ch) < 0x20 || ch == 0x7f) << msg;
  }
}

std::string fileTestName(const testing::TestParamInfo<std::string>& info) {
  std::string s = info.param.substr(0, info.param.size() - 4);
  for (char& ch : s)
    if (!std::isalnum(static_cast<unsigned char>(ch))) ch = '_';
  return s;
}

GTEST_ALLOW_UNINSTANTIATED_PARAMETERIZED_TEST(MalformedXyz);
INSTANTIATE_TEST_SUITE_P(Corpus, MalformedXyz, testing::ValuesIn(corpusFiles()), fileTestName);

}  // namespace
