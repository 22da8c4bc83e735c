// PNG files and HostImage: byte-exact round trips for every channel count and bit
// depth, and clean errors for bad images and bad files.
#include <gtest/gtest.h>
#include <unistd.h>

#include <climits>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "devicearray/io.hpp"
#include "scratch_dir.hpp"
#include "test_support.hpp"

namespace fs = std::filesystem;
using devicearray::ErrorCode;
using devicearray::HostImage;

namespace {

fs::path tempDir() { return datest::scratchDir(); }

#define REQUIRE_PNG()                                                                         \
  if (!devicearray::pngSupported()) GTEST_SKIP() << "this build has no libpng (PNG is optional)"

struct PngCase {
  int channels, bitDepth, height, width;
};

class PngRoundTrip : public testing::TestWithParam<PngCase> {};

TEST_P(PngRoundTrip, ReadsBackTheSameSamples) {
  REQUIRE_PNG();
  const auto& p = GetParam();
  HostImage image(p.height, p.width, p.channels, p.bitDepth);
  image.data = datest::randomBytes(image.sizeInBytes(), static_cast<std::uint32_t>(p.channels * 100 + p.bitDepth));
  const fs::path path = tempDir() / ("rt_" + std::to_string(p.channels) + "_" + std::to_string(p.bitDepth) + ".png");
  devicearray::writePng(path.string(), image);
  const HostImage back = devicearray::readPng(path.string());
  EXPECT_EQ(back.height, p.height);
  EXPECT_EQ(back.width, p.width);
  EXPECT_EQ(back.channels, p.channels);
  EXPECT_EQ(back.bitDepth, p.bitDepth);
  EXPECT_EQ(back.data, image.data);
}

INSTANTIATE_TEST_SUITE_P(AllKinds, PngRoundTrip,
                         testing::Values(PngCase{1, 8, 17, 23}, PngCase{3, 8, 31, 9}, PngCase{4, 8, 5, 64},
                                         PngCase{1, 16, 13, 11}, PngCase{3, 16, 7, 19}, PngCase{4, 16, 1, 1}),
                         [](const testing::TestParamInfo<PngCase>& info) {
                           return "C" + std::to_string(info.param.channels) + "Bits" +
                                  std::to_string(info.param.bitDepth);
                         });

TEST(Png, SixteenBitSamplesKeepTheirValueNotTheirBytes) {
  REQUIRE_PNG();
  HostImage image(1, 2, 1, 16);
  image.setSample(0, 0, 0, 0x1234);
  image.setSample(0, 1, 0, 65535);
  const fs::path path = tempDir() / "sixteen.png";
  devicearray::writePng(path.string(), image);
  // PNG stores 16-bit samples big-endian: the file holds 0x12 0x34 somewhere in its
  // (compressed) data, but the decoded value must be 0x1234 on any host.
  const HostImage back = devicearray::readPng(path.string());
  EXPECT_EQ(back.sample(0, 0, 0), 0x1234u);
  EXPECT_EQ(back.sample(0, 1, 0), 65535u);
}

TEST(Png, FileStartsWithThePngSignature) {
  REQUIRE_PNG();
  HostImage image(2, 2, 3);
  const fs::path path = tempDir() / "sig.png";
  devicearray::writePng(path.string(), image);
  std::ifstream f(path, std::ios::binary);
  char sig[8] = {};
  f.read(sig, 8);
  EXPECT_EQ(std::string(sig, 8), std::string("\x89PNG\r\n\x1a\n", 8));
}

TEST(Png, NotAPngIsInvalidArgument) {
  REQUIRE_PNG();
  const fs::path path = tempDir() / "text.png";
  std::ofstream(path) << "this is not a png file at all";
  datest::expectError(ErrorCode::InvalidArgument, [&] { devicearray::readPng(path.string()); });
  const fs::path empty = tempDir() / "empty.png";
  std::ofstream(empty).flush();
  datest::expectError(ErrorCode::InvalidArgument, [&] { devicearray::readPng(empty.string()); });
}

TEST(Png, TruncatedPngIsInvalidArgumentNamingTheFile) {
  REQUIRE_PNG();
  HostImage image(64, 64, 3);
  image.data = datest::randomBytes(image.sizeInBytes(), 7);
  const fs::path path = tempDir() / "truncated.png";
  devicearray::writePng(path.string(), image);
  fs::resize_file(path, fs::file_size(path) / 2);
  try {
    devicearray::readPng(path.string());
    FAIL() << "a truncated PNG was accepted";
  } catch (const devicearray::Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::InvalidArgument);
    EXPECT_NE(std::string(e.what()).find(path.string()), std::string::npos) << e.what();
  }
}

TEST(Png, MissingFileAndUnwritablePathAreInvalidArgument) {
  REQUIRE_PNG();
  datest::expectError(ErrorCode::InvalidArgument, [] { devicearray::readPng((tempDir() / "nope.png").string()); });
  const fs::path bad = tempDir() / "no_dir" / "x.png";
  datest::expectError(ErrorCode::InvalidArgument, [&] { devicearray::writePng(bad.string(), HostImage(2, 2, 1)); });
  EXPECT_FALSE(fs::exists(bad));
}

TEST(Png, WriteRejectsInconsistentImages) {
  REQUIRE_PNG();
  const std::string path = (tempDir() / "bad.png").string();
  HostImage short_(4, 4, 3);
  short_.data.pop_back();
  datest::expectError(ErrorCode::InvalidArgument, [&] { devicearray::writePng(path, short_); });
  HostImage twoChannels(4, 4, 1);
  twoChannels.channels = 2;
  datest::expectError(ErrorCode::InvalidArgument, [&] { devicearray::writePng(path, twoChannels); });
  datest::expectError(ErrorCode::InvalidArgument, [&] { devicearray::writePng(path, HostImage{}); });
}

TEST(HostImageTest, ConstructorValidatesAndZeroFills) {
  const HostImage im(3, 5, 4, 16);
  EXPECT_EQ(im.sizeInBytes(), 3u * 5u * 4u * 2u);
  EXPECT_EQ(im.rowBytes(), 40u);
  EXPECT_EQ(im.data.size(), im.sizeInBytes());
  EXPECT_EQ(im.sample(2, 4, 3), 0u);
  datest::expectError(ErrorCode::InvalidArgument, [] { HostImage(0, 5, 1); });
  datest::expectError(ErrorCode::InvalidArgument, [] { HostImage(5, 5, 2); });
  datest::expectError(ErrorCode::InvalidArgument, [] { HostImage(5, 5, 3, 12); });
  datest::expectError(ErrorCode::OutOfRange, [] { HostImage(INT_MAX, INT_MAX, 4, 16); });
}

TEST(HostImageTest, SampleAccessIsBoundsCheckedAndRangeChecked) {
  HostImage im(2, 3, 3);
  im.setSample(1, 2, 2, 200);
  EXPECT_EQ(im.data[(1 * 3 + 2) * 3 + 2], 200);
  datest::expectError(ErrorCode::OutOfRange, [&] { im.sample(2, 0, 0); });
  datest::expectError(ErrorCode::OutOfRange, [&] { im.setSample(0, 0, 3, 1); });
  datest::expectError(ErrorCode::InvalidArgument, [&] { im.setSample(0, 0, 0, 256); });
}

}  // namespace
