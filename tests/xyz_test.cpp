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
#include "malformed_corpus.hpp"
#include "file_test_support.hpp"
#include "scratch_dir.hpp"
#include "test_support.hpp"

namespace fs = std::filesystem;
using devicearray::ErrorCode;
using devicearray::HostPointCloud;

namespace {

fs::path tempDir() { return datest::scratchDir(); }

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
    datest::expectSameFloats(c.xyz, back.xyz, "xyz");
    EXPECT_EQ(back.rgba, c.rgba);
    datest::expectSameFloats(c.normals, back.normals, "normals");
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
  datest::writeFile(path, "1 2 3 1.0 0.5 0\n");
  EXPECT_EQ(devicearray::readXyz(path.string()).rgba, (std::vector<std::uint8_t>{255, 128, 0, 255}));
  datest::writeFile(path, "1 2 3 1.0 0.5 0\n1 2 3 200.0 100.4 0\n");
  EXPECT_EQ(devicearray::readXyz(path.string()).rgba,
            (std::vector<std::uint8_t>{1, 1, 0, 255, 200, 100, 0, 255}));
  datest::writeFile(path, "1 2 3 1 0 1\n");  // integers: codes as they are
  EXPECT_EQ(devicearray::readXyz(path.string()).rgba, (std::vector<std::uint8_t>{1, 0, 1, 255}));
}

TEST(XyzCorpus, HasMalformedFiles) {
  EXPECT_GE(datest::corpusFiles("xyz", ".xyz").size(), 8u) << datest::corpusDir("xyz");
}

class MalformedXyz : public testing::TestWithParam<std::string> {};

TEST_P(MalformedXyz, FailsWithOneInvalidArgumentNamingFileAndLine) {
  datest::expectRejected((datest::corpusDir("xyz") / GetParam()).string(),
                         [](const std::string& p) { return devicearray::readXyz(p); },
                         {": line "});
}

GTEST_ALLOW_UNINSTANTIATED_PARAMETERIZED_TEST(MalformedXyz);
INSTANTIATE_TEST_SUITE_P(Corpus, MalformedXyz, testing::ValuesIn(datest::corpusFiles("xyz", ".xyz")),
                         datest::corpusTestName);

}  // namespace
