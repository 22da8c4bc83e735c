// PLY files: round trips in every encoding, hand-written files with every supported
// property type, and a corpus of malformed files that must each fail with one
// InvalidArgument naming the file.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
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
using devicearray::PlyFormat;

namespace {

fs::path tempDir() { return datest::scratchDir(); }

/// A small organized cloud with awkward values: NaN holes, negative zero, tiny and huge
/// magnitudes, values with no short decimal form.
HostPointCloud testCloud(bool organized, bool colors, bool snr, bool normals) {
  const int H = 3, W = 4;
  HostPointCloud c = HostPointCloud::organized(H, W, colors, snr, normals);
  const float nan = std::numeric_limits<float>::quiet_NaN();
  for (int i = 0; i < H * W; ++i) {
    const std::size_t k = static_cast<std::size_t>(i);
    c.xyz[3 * k] = 0.1f * static_cast<float>(i) - 0.35f;
    c.xyz[3 * k + 1] = std::nextafter(1000.0f / 3.0f, 0.0f) * static_cast<float>(i % 3);
    c.xyz[3 * k + 2] = 500.0f + 1.0f / 7.0f * static_cast<float>(i);
    if (colors)
      for (int ch = 0; ch < 4; ++ch) c.rgba[4 * k + ch] = static_cast<std::uint8_t>((37 * i + 61 * ch) % 256);
    if (snr) c.snr[k] = i == 5 ? 0.0f : 1e-7f * static_cast<float>(i * i) + 12.5f;
    if (normals) {
      c.normals[3 * k] = 0.6f;
      c.normals[3 * k + 1] = -0.0f;
      c.normals[3 * k + 2] = -0.8f;
    }
  }
  for (std::size_t hole : {1u, 6u, 11u}) {
    for (int ch = 0; ch < 3; ++ch) c.xyz[3 * hole + ch] = nan;
    if (normals)
      for (int ch = 0; ch < 3; ++ch) c.normals[3 * hole + ch] = nan;
  }
  c.xyz[3 * 2] = -0.0f;
  c.xyz[3 * 3 + 2] = 3.0e38f;
  c.xyz[3 * 4 + 1] = 1.0e-38f;
  if (!organized) c.height = c.width = 0;
  return c;
}

struct RoundTripCase {
  PlyFormat format;
  bool organized, colors, snr, normals;
};

std::string caseName(const testing::TestParamInfo<RoundTripCase>& info) {
  const auto& p = info.param;
  std::string s = p.format == PlyFormat::ascii ? "Ascii" : p.format == PlyFormat::binaryLittleEndian ? "BinaryLE" : "BinaryBE";
  s += p.organized ? "Organized" : "Unorganized";
  if (p.colors) s += "Color";
  if (p.snr) s += "Snr";
  if (p.normals) s += "Normals";
  return s;
}

class PlyRoundTrip : public testing::TestWithParam<RoundTripCase> {};

TEST_P(PlyRoundTrip, ReadsBackExactlyWhatWasWritten) {
  const auto& p = GetParam();
  const HostPointCloud original = testCloud(p.organized, p.colors, p.snr, p.normals);
  const fs::path path = tempDir() / (caseName({p, 0}) + ".ply");
  devicearray::writePly(path.string(), original, p.format);
  const HostPointCloud back = devicearray::readPly(path.string());
  EXPECT_EQ(back.height, original.height);
  EXPECT_EQ(back.width, original.width);
  EXPECT_EQ(back.size(), original.size());
  datest::expectSameFloats(original.xyz, back.xyz, "xyz");
  EXPECT_EQ(back.rgba, original.rgba);
  datest::expectSameFloats(original.snr, back.snr, "snr");
  datest::expectSameFloats(original.normals, back.normals, "normals");
  EXPECT_EQ(back.validCount(), original.size() - 3);  // the three NaN holes survive
  EXPECT_TRUE(std::isnan(back.xyz[3 * 6 + 1]));
  EXPECT_TRUE(std::signbit(back.xyz[3 * 2]));  // -0.0 survives in every encoding
}

std::vector<RoundTripCase> roundTripCases() {
  std::vector<RoundTripCase> cases;
  for (PlyFormat f : {PlyFormat::ascii, PlyFormat::binaryLittleEndian, PlyFormat::binaryBigEndian})
    for (int bits = 0; bits < 16; ++bits) cases.push_back({f, (bits & 1) != 0, (bits & 2) != 0, (bits & 4) != 0, (bits & 8) != 0});
  return cases;
}
INSTANTIATE_TEST_SUITE_P(AllEncodingsAndAttributes, PlyRoundTrip, testing::ValuesIn(roundTripCases()), caseName);

TEST(PlyWrite, HeaderStatesOrganizedSizeAndPropertiesInOrder) {
  const fs::path path = tempDir() / "header.ply";
  devicearray::writePly(path.string(), testCloud(true, true, true, true), PlyFormat::ascii);
  std::ifstream f(path);
  std::string all((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  const std::string header = all.substr(0, all.find("end_header"));
  EXPECT_NE(header.find("format ascii 1.0\n"), std::string::npos);
  EXPECT_NE(header.find("obj_info height 3\nobj_info width 4\nelement vertex 12\n"), std::string::npos);
  EXPECT_NE(header.find("property float x\nproperty float y\nproperty float z\nproperty uchar red\nproperty uchar "
                        "green\nproperty uchar blue\nproperty uchar alpha\nproperty float nx\nproperty float ny\n"
                        "property float nz\nproperty float snr\n"),
            std::string::npos);
  // Point 1 is a hole: written as "nan nan nan".
  const std::size_t body = all.find("end_header\n") + 11;
  const std::size_t line2 = all.find('\n', body) + 1;
  EXPECT_EQ(all.substr(line2, 12), "nan nan nan ");
}

TEST(PlyWrite, BinaryLittleEndianBodyIsTheRawFloats) {
  HostPointCloud c;
  c.xyz = {1.5f, -2.0f, 3.25f};
  const fs::path path = tempDir() / "raw.ply";
  devicearray::writePly(path.string(), c);
  std::ifstream f(path, std::ios::binary);
  std::string all((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  const std::string expectedHeader =
      "ply\nformat binary_little_endian 1.0\ncomment written by devicearray\nelement vertex 1\n"
      "property float x\nproperty float y\nproperty float z\nend_header\n";
  ASSERT_EQ(all.size(), expectedHeader.size() + 12);
  EXPECT_EQ(all.substr(0, expectedHeader.size()), expectedHeader);
  const unsigned char expectedBody[12] = {0x00, 0x00, 0xC0, 0x3F, 0x00, 0x00, 0x00, 0xC0, 0x00, 0x00, 0x50, 0x40};
  EXPECT_EQ(std::memcmp(all.data() + expectedHeader.size(), expectedBody, 12), 0);
}

TEST(PlyRead, AsciiWithDoublesScaledColorsExtraPropertiesAndFaces) {
  const fs::path path = tempDir() / "mixed.ply";
  datest::writeFile(path,
            "ply\r\nformat ascii 1.0\r\nobj_info height 1\r\nobj_info width 2\r\n"
            "element vertex 2\r\nproperty double x\r\nproperty double y\r\nproperty double z\r\n"
            "property int label\r\nproperty float red\r\nproperty float green\r\nproperty float blue\r\n"
            "property double snr\r\nelement face 1\r\nproperty list uchar int vertex_indices\r\nend_header\r\n"
            "0.5 -1e2 +3 7 1.0 0.5 -0.25 4.5\r\n"
            "nan 2 3 -8 1.0 0 0.00196 0\r\n"
            "3 0 1 1\r\n");
  const HostPointCloud c = devicearray::readPly(path.string());
  EXPECT_EQ(c.height, 1);
  EXPECT_EQ(c.width, 2);
  ASSERT_EQ(c.size(), 2u);
  EXPECT_EQ(c.xyz[0], 0.5f);
  EXPECT_EQ(c.xyz[1], -100.0f);
  EXPECT_EQ(c.xyz[2], 3.0f);
  EXPECT_TRUE(std::isnan(c.xyz[3]));
  // float colours (all within [0, 1]) are scaled by 255, clamped, rounded; alpha defaults to 255.
  const std::vector<std::uint8_t> rgba{255, 128, 0, 255, 255, 0, 0, 255};
  EXPECT_EQ(c.rgba, rgba);
  EXPECT_EQ(c.snr, (std::vector<float>{4.5f, 0.0f}));
  EXPECT_TRUE(c.normals.empty());
}

TEST(PlyRead, BinaryBigEndianWithUshortColorsAndAlpha) {
  std::string body;
  auto be32 = [&](float v) {
    std::uint32_t u = std::bit_cast<std::uint32_t>(v);
    for (int s = 24; s >= 0; s -= 8) body.push_back(static_cast<char>((u >> s) & 0xFF));
  };
  auto be16 = [&](std::uint16_t v) {
    body.push_back(static_cast<char>(v >> 8));
    body.push_back(static_cast<char>(v & 0xFF));
  };
  be32(1.0f); be32(-2.5f); be32(1000.0f); be16(65535); be16(0); be16(32896); be16(257);
  const std::string header =
      "ply\nformat binary_big_endian 1.0\nelement vertex 1\nproperty float x\nproperty float y\nproperty float z\n"
      "property ushort red\nproperty ushort green\nproperty ushort blue\nproperty ushort alpha\nend_header\n";
  const fs::path path = tempDir() / "be.ply";
  datest::writeFile(path, header + body);
  const HostPointCloud c = devicearray::readPly(path.string());
  EXPECT_FALSE(c.isOrganized());
  EXPECT_EQ(c.xyz, (std::vector<float>{1.0f, -2.5f, 1000.0f}));
  // ushort v scales to round(v * 255 / 65535): 65535 -> 255, 32896 -> 128, 257 -> 1.
  EXPECT_EQ(c.rgba, (std::vector<std::uint8_t>{255, 0, 128, 1}));
}

TEST(PlyRead, EmptyVertexElementGivesAnEmptyCloud) {
  const fs::path path = tempDir() / "novertices.ply";
  datest::writeFile(path, "ply\nformat ascii 1.0\nelement vertex 0\nproperty float x\nproperty float y\nproperty float z\nend_header\n");
  const HostPointCloud c = devicearray::readPly(path.string());
  EXPECT_TRUE(c.empty());
  EXPECT_NO_THROW(c.validate());
}

TEST(PlyRead, MissingFileIsInvalidArgumentNamingThePath) {
  const std::string path = (tempDir() / "does_not_exist.ply").string();
  try {
    devicearray::readPly(path);
    FAIL() << "expected an Error";
  } catch (const devicearray::Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::InvalidArgument);
    EXPECT_NE(std::string(e.what()).find(path), std::string::npos) << e.what();
  }
}

TEST(PlyRead, DirectoryIsInvalidArgument) {
  datest::expectError(ErrorCode::InvalidArgument, [] { devicearray::readPly(tempDir().string()); });
}

TEST(PlyWrite, UnwritablePathIsInvalidArgumentAndLeavesNoFile) {
  const fs::path path = tempDir() / "no_such_dir" / "x.ply";
  datest::expectError(ErrorCode::InvalidArgument,
                      [&] { devicearray::writePly(path.string(), testCloud(true, false, false, false)); });
  EXPECT_FALSE(fs::exists(path));
}

TEST(PlyWrite, RejectsInconsistentClouds) {
  HostPointCloud c = testCloud(true, true, false, false);
  c.rgba.pop_back();
  datest::expectError(ErrorCode::InvalidArgument, [&] { devicearray::writePly((tempDir() / "bad.ply").string(), c); });
  HostPointCloud d = testCloud(true, false, false, false);
  d.width = 5;  // 3 x 5 != 12 points
  datest::expectError(ErrorCode::InvalidArgument, [&] { devicearray::writePly((tempDir() / "bad.ply").string(), d); });
  HostPointCloud e = testCloud(false, false, false, false);
  e.height = 2;  // height without width
  datest::expectError(ErrorCode::InvalidArgument, [&] { e.validate(); });
  datest::expectError(ErrorCode::InvalidArgument,
                      [&] { devicearray::writePly((tempDir() / "bad.ply").string(), HostPointCloud{}); });
}

TEST(HostPointCloudTest, OrganizedFactoryFillsWithMissingPoints) {
  const HostPointCloud c = HostPointCloud::organized(2, 3, true, true, true);
  EXPECT_EQ(c.size(), 6u);
  EXPECT_EQ(c.validCount(), 0u);
  EXPECT_EQ(c.rgba.size(), 24u);
  EXPECT_EQ(c.snr.size(), 6u);
  EXPECT_EQ(c.normals.size(), 18u);
  datest::expectError(ErrorCode::InvalidArgument, [] { HostPointCloud::organized(0, 3); });
  datest::expectError(ErrorCode::InvalidArgument, [] { HostPointCloud::organized(2, -1); });
}

// ------------------------------------------------------- malformed corpus ---

fs::path corpusDir() { return datest::corpusDir("ply"); }

std::vector<std::string> corpusFiles() { return datest::corpusFiles("ply", ".ply"); }

TEST(PlyCorpus, HasAtLeastTwelveMalformedFiles) { EXPECT_GE(corpusFiles().size(), 12u) << corpusDir(); }

class MalformedPly : public testing::TestWithParam<std::string> {};

TEST_P(MalformedPly, FailsWithOneInvalidArgumentNamingTheFile) {
  datest::expectRejected((corpusDir() / GetParam()).string(), [](const std::string& p) { return devicearray::readPly(p); });
}

GTEST_ALLOW_UNINSTANTIATED_PARAMETERIZED_TEST(MalformedPly);
INSTANTIATE_TEST_SUITE_P(Corpus, MalformedPly, testing::ValuesIn(corpusFiles()), datest::corpusTestName);

TEST(PlyRead, AbsurdCountIsRefusedBeforeAllocating) {
  // 10^15 vertices in a 200-byte file: the message says why and no huge allocation happens
  // (a 12 PB allocation would throw bad_alloc, not an Error).
  try {
    devicearray::readPly((corpusDir() / "absurd_vertex_count.ply").string());
    FAIL();
  } catch (const devicearray::Error& e) {
    EXPECT_NE(std::string(e.what()).find("1000000000000000"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("line 3"), std::string::npos) << e.what();
  }
}

TEST(PlyRead, TruncationInsideBinaryBodyNamesTheElement) {
  try {
    devicearray::readPly((corpusDir() / "binary_truncated_body.ply").string());
    FAIL();
  } catch (const devicearray::Error& e) {
    EXPECT_NE(std::string(e.what()).find("vertex"), std::string::npos) << e.what();
  }
}

TEST(PlyRead, BadAsciiTokenNamesLineAndProperty) {
  try {
    devicearray::readPly((corpusDir() / "non_numeric_ascii_value.ply").string());
    FAIL();
  } catch (const devicearray::Error& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("line 8"), std::string::npos) << msg;
    EXPECT_NE(msg.find("'abc'"), std::string::npos) << msg;
    EXPECT_NE(msg.find("'y'"), std::string::npos) << msg;
  }
}

}  // namespace
