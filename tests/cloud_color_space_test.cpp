// Colour spaces of PointCloud / UnorganizedPointCloud / Frame2D, on every device: sRGB
// input keeps its codes exactly, conversions equal convert<>() of those codes, colour
// means are taken in linear light (exactly the reference below), and linear input keeps
// the integer means it always had.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <vector>

#include "core/color_tables.hpp"
#include "devicearray/devicearray.hpp"
#include "test_support.hpp"

namespace {

using namespace devicearray;

class CloudColorSpaceTest : public testing::TestWithParam<ComputeDevice> {
 protected:
  ComputeDevice dev() const { return GetParam(); }
  StreamOrQueue sq() const { return GetParam().sdkStreamOrQueue(); }
};

/// The sRGB code of code i in channel c: every code appears in every channel.
ColorRGBA_SRGB codeAt(int i) {
  return ColorRGBA_SRGB{static_cast<std::uint8_t>(i), static_cast<std::uint8_t>(255 - i),
                        static_cast<std::uint8_t>((i * 7) % 256), static_cast<std::uint8_t>((i * 3 + 1) % 256)};
}

/// A 16 x 16 host cloud whose colours hold all 256 sRGB codes in each channel.
HostPointCloud everyCode() {
  HostPointCloud h = HostPointCloud::organized(16, 16, true, false);
  for (int i = 0; i < 256; ++i) {
    h.xyz[3 * i] = static_cast<float>(i % 16);
    h.xyz[3 * i + 1] = static_cast<float>(i / 16);
    h.xyz[3 * i + 2] = 500;
    const ColorRGBA_SRGB c = codeAt(i);
    h.rgba[4 * i] = c.r;
    h.rgba[4 * i + 1] = c.g;
    h.rgba[4 * i + 2] = c.b;
    h.rgba[4 * i + 3] = c.a;
  }
  return h;
}

std::vector<ColorRGBA_SRGB> codesOf(const HostPointCloud& h) {
  std::vector<ColorRGBA_SRGB> c(h.rgba.size() / 4);
  for (std::size_t i = 0; i < c.size(); ++i) c[i] = {h.rgba[4 * i], h.rgba[4 * i + 1], h.rgba[4 * i + 2], h.rgba[4 * i + 3]};
  return c;
}

template <class C>
void expectSameBytes(const std::vector<C>& got, const std::vector<C>& want, const char* what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  EXPECT_EQ(std::memcmp(got.data(), want.data(), got.size() * sizeof(C)), 0) << what;
}

/// The kernels' mean of sRGB codes in linear light: each code decoded through the
/// conversion table and scaled to a fraction of 2^24, the integer mean rounded half up,
/// encoded as convert<>() encodes a float (round(255 * encode(x)) in double).
std::uint8_t linearLightMean(const std::vector<std::uint8_t>& codes) {
  const detail::ColorTables& t = detail::hostColorTables();
  std::uint64_t sum = 0;
  for (std::uint8_t c : codes) sum += static_cast<std::uint32_t>(t.srgbToFloat[c] * 16777216.0f);
  const std::uint64_t mean = (sum + codes.size() / 2) / codes.size();
  const double x = static_cast<double>(static_cast<float>(mean) * (1.0f / 16777216.0f));
  const double e = x <= 0.0031308 ? x * 12.92 : 1.055 * std::pow(x, 1.0 / 2.4) - 0.055;
  return static_cast<std::uint8_t>(std::lround(255.0 * std::min(std::max(e, 0.0), 1.0)));
}

TEST_P(CloudColorSpaceTest, SrgbCodesRoundTripExactly) {
  const HostPointCloud h = everyCode();
  const std::vector<ColorRGBA_SRGB> want = codesOf(h);
  const PointCloud cloud = PointCloud::fromHost(h, dev());
  EXPECT_EQ(cloud.colorSpace(), ColorSpace::srgb);
  EXPECT_EQ(cloud.toHost().rgba, h.rgba);
  expectSameBytes(cloud.imageDeviceArray<ColorRGBA_SRGB>(sq()).toHost(), want, "ColorRGBA_SRGB");
  // The other formats are what the converters give for the codes.
  const DeviceArray<ColorRGBA_SRGB> codes = DeviceArray<ColorRGBA_SRGB>::fromHost(want.data(), 16, 16, dev());
  expectSameBytes(cloud.imageDeviceArray<ColorRGBA>(sq()).toHost(), convert<ColorRGBA>(codes, sq()).toHost(),
                  "ColorRGBA");
  expectSameBytes(cloud.imageDeviceArray<ColorRGBAf>(sq()).toHost(), convert<ColorRGBAf>(codes, sq()).toHost(),
                  "ColorRGBAf");
  expectSameBytes(cloud.imageDeviceArray<ColorBGR_SRGB>(sq()).toHost(), convert<ColorBGR_SRGB>(codes, sq()).toHost(),
                  "ColorBGR_SRGB");
  expectSameBytes(cloud.imageDeviceArray<ColorRGB>(sq()).toHost(), convert<ColorRGB>(codes, sq()).toHost(), "ColorRGB");

  const UnorganizedPointCloud points = cloud.toUnorganizedPointCloud();
  EXPECT_EQ(points.colorSpace(), ColorSpace::srgb);
  EXPECT_EQ(points.toHost().rgba, h.rgba);
  const UnorganizedPointCloud uploaded = UnorganizedPointCloud::fromHost(h, dev());
  EXPECT_EQ(uploaded.colorSpace(), ColorSpace::srgb);
  expectSameBytes(uploaded.deviceColors<ColorRGBA_SRGB>(sq()).toHost(), want, "unorganized");
  expectSameBytes(uploaded.clone(dev()).deviceColors<ColorRGBA_SRGB>(sq()).toHost(), want, "clone");

  const PointCloud zeroCopy(cloud.storedXYZ(), codes);
  EXPECT_EQ(zeroCopy.colorSpace(), ColorSpace::srgb);
  EXPECT_EQ(zeroCopy.toHost().rgba, h.rgba);

  const Frame2D frame = Frame2D::fromHost(want.data(), 16, 16, dev());
  EXPECT_EQ(frame.colorSpace(), ColorSpace::srgb);
  expectSameBytes(frame.imageDeviceArray<ColorRGBA_SRGB>(sq()).toHost(), want, "Frame2D");
  expectSameBytes(frame.imageDeviceArray<ColorRGBA>(sq()).toHost(), convert<ColorRGBA>(codes, sq()).toHost(),
                  "Frame2D linear");
  auto dst = DeviceArray<ColorBGRA_SRGB>::allocate(16, 16, dev());
  frame.imageDeviceArray<ColorBGRA_SRGB>(dst.view(), sq());
  expectSameBytes(dst.toHost(), convert<ColorBGRA_SRGB>(codes, sq()).toHost(), "Frame2D into");
}

TEST_P(CloudColorSpaceTest, UniformBlocksAndVoxelsKeepTheirCode) {
  // 2 x 512: block b (columns 2b, 2b + 1) holds code b / 2 ... every code, twice.
  HostPointCloud h = HostPointCloud::organized(2, 512, true, false);
  for (int r = 0; r < 2; ++r)
    for (int c = 0; c < 512; ++c) {
      const std::size_t i = static_cast<std::size_t>(r * 512 + c);
      h.xyz[3 * i] = static_cast<float>(c);
      h.xyz[3 * i + 1] = static_cast<float>(r);
      h.xyz[3 * i + 2] = 500;
      const ColorRGBA_SRGB code = codeAt(c / 2);
      h.rgba[4 * i] = code.r;
      h.rgba[4 * i + 1] = code.g;
      h.rgba[4 * i + 2] = code.b;
      h.rgba[4 * i + 3] = code.a;
    }
  const HostPointCloud down = PointCloud::fromHost(h, dev()).downsampled(Downsampling::by2x2).toHost();
  ASSERT_EQ(down.rgba.size(), 4u * 256u);
  for (int b = 0; b < 256; ++b) {
    const ColorRGBA_SRGB code = codeAt(b);
    EXPECT_EQ(down.rgba[4 * b], code.r) << b;
    EXPECT_EQ(down.rgba[4 * b + 1], code.g) << b;
    EXPECT_EQ(down.rgba[4 * b + 2], code.b) << b;
    EXPECT_EQ(down.rgba[4 * b + 3], code.a) << b;
  }
  // Voxels of 2 x 2 mm anchored at (0, 0): the same blocks.
  const HostPointCloud voxels = UnorganizedPointCloud::fromHost(h, dev()).voxelDownsampled(2.0f, 1).toHost();
  ASSERT_EQ(voxels.rgba.size(), 4u * 256u);
  for (int b = 0; b < 256; ++b) EXPECT_EQ(voxels.rgba[4 * b], codeAt(b).r) << b;
}

TEST_P(CloudColorSpaceTest, MeansAreTakenInLinearLight) {
  // 2 x 2 blocks of black and white in every mix, and random blocks.
  HostPointCloud h = HostPointCloud::organized(2, 64, true, false);
  std::vector<std::uint8_t> bytes = datest::randomBytes(h.rgba.size(), 7);
  for (int c = 0; c < 8; ++c)  // first four blocks: 0, 1, 2, 3 white pixels of 4
    for (int r = 0; r < 2; ++r)
      for (int ch = 0; ch < 3; ++ch)
        bytes[4 * static_cast<std::size_t>(r * 64 + c) + static_cast<std::size_t>(ch)] =
            (r * 2 + c % 2) < c / 2 ? 255 : 0;
  h.rgba = bytes;
  for (std::size_t i = 0; i < h.size(); ++i) {
    h.xyz[3 * i] = static_cast<float>(i % 64);
    h.xyz[3 * i + 1] = static_cast<float>(i / 64);
    h.xyz[3 * i + 2] = 500;
  }
  const HostPointCloud down = PointCloud::fromHost(h, dev()).downsampled(Downsampling::by2x2).toHost();
  const HostPointCloud voxels = UnorganizedPointCloud::fromHost(h, dev()).voxelDownsampled(2.0f, 1).toHost();
  ASSERT_EQ(down.rgba.size(), 4u * 32u);
  ASSERT_EQ(voxels.rgba.size(), 4u * 32u);
  for (int b = 0; b < 32; ++b)
    for (int ch = 0; ch < 4; ++ch) {
      std::vector<std::uint8_t> block;
      for (int r = 0; r < 2; ++r)
        for (int dc = 0; dc < 2; ++dc) block.push_back(bytes[4 * static_cast<std::size_t>(r * 64 + 2 * b + dc) + ch]);
      unsigned sum = 0;
      for (std::uint8_t v : block) sum += v;
      const std::uint8_t want = ch == 3 ? static_cast<std::uint8_t>((sum + 2) / 4) : linearLightMean(block);
      EXPECT_EQ(down.rgba[4 * b + ch], want) << "block " << b << " channel " << ch;
      EXPECT_EQ(voxels.rgba[4 * b + ch], want) << "voxel " << b << " channel " << ch;
    }
  // Half white, half black is half the light: sRGB 188, not the code mean 128.
  EXPECT_EQ(down.rgba[4 * 2], 188);
}

TEST_P(CloudColorSpaceTest, LinearCloudsKeepTheirIntegerMeans) {
  std::vector<PointXYZ> xyz(4 * 4);
  for (std::size_t i = 0; i < xyz.size(); ++i) xyz[i] = {static_cast<float>(i % 4), static_cast<float>(i / 4), 500};
  std::vector<ColorRGBA> rgba(xyz.size());
  const std::vector<std::uint8_t> bytes = datest::randomBytes(4 * rgba.size(), 9);
  std::memcpy(rgba.data(), bytes.data(), bytes.size());
  const PointCloud cloud = PointCloud::fromHost(4, 4, xyz.data(), rgba.data(), nullptr, dev());
  EXPECT_EQ(cloud.colorSpace(), ColorSpace::linear);
  const std::vector<ColorRGBA> down = cloud.downsampled(Downsampling::by2x2).storedColors().toHost();
  ASSERT_EQ(down.size(), 4u);
  for (int b = 0; b < 4; ++b) {
    const int r0 = (b / 2) * 2, c0 = (b % 2) * 2;
    unsigned sum = 0;
    for (int r = r0; r < r0 + 2; ++r)
      for (int c = c0; c < c0 + 2; ++c) sum += rgba[static_cast<std::size_t>(r * 4 + c)].g;
    EXPECT_EQ(down[static_cast<std::size_t>(b)].g, (sum + 2) / 4) << b;
  }
  // toHost encodes linear codes as before.
  const DeviceArray<ColorRGBA> stored = cloud.storedColors();
  const std::vector<ColorRGBA_SRGB> encoded = convert<ColorRGBA_SRGB>(stored, sq()).toHost();
  const HostPointCloud back = cloud.toHost();
  for (std::size_t i = 0; i < encoded.size(); ++i) EXPECT_EQ(back.rgba[4 * i], encoded[i].r) << i;
}

TEST_P(CloudColorSpaceTest, HolesAreFilledInLinearLight) {
  // One row: black, a missing point, white; the hole gets half the light.
  std::vector<PointXYZ> xyz = {{0, 0, 500}, {NAN, NAN, NAN}, {2, 0, 500}};
  std::vector<ColorRGBA_SRGB> srgb = {{0, 0, 0, 255}, {0, 0, 0, 0}, {255, 255, 255, 255}};
  const DeviceArray<PointXYZ> dxyz = DeviceArray<PointXYZ>::fromHost(xyz.data(), 1, 3, dev());
  const PointCloud cloud(dxyz, DeviceArray<ColorRGBA_SRGB>::fromHost(srgb.data(), 1, 3, dev()));
  const PointCloud filled = cloud.holesFilled(1, 10.0f);
  EXPECT_EQ(filled.colorSpace(), ColorSpace::srgb);
  const std::vector<ColorRGBA_SRGB> got = filled.imageDeviceArray<ColorRGBA_SRGB>(sq()).toHost();
  EXPECT_EQ(got[1].r, 188);
  EXPECT_EQ(got[1].a, 255);
  EXPECT_EQ(got[0].r, 0);
  EXPECT_EQ(got[2].r, 255);
}

TEST_P(CloudColorSpaceTest, ExtendConvertsTheOtherCloudToThisSpace) {
  const HostPointCloud h = everyCode();
  const UnorganizedPointCloud srgb = UnorganizedPointCloud::fromHost(h, dev());
  const DeviceArray<ColorRGBA> linearColors = srgb.deviceColors<ColorRGBA>(sq());
  const UnorganizedPointCloud linear(srgb.devicePointsXYZ(sq()), linearColors);
  ASSERT_EQ(linear.colorSpace(), ColorSpace::linear);

  UnorganizedPointCloud a = srgb;
  a.extend(linear);
  EXPECT_EQ(a.colorSpace(), ColorSpace::srgb);
  const std::vector<ColorRGBA_SRGB> aCodes = a.deviceColors<ColorRGBA_SRGB>(sq()).toHost();
  const std::vector<ColorRGBA_SRGB> encoded = convert<ColorRGBA_SRGB>(linearColors, sq()).toHost();
  ASSERT_EQ(aCodes.size(), 512u);
  EXPECT_EQ(std::memcmp(aCodes.data(), codesOf(h).data(), 256 * sizeof(ColorRGBA_SRGB)), 0);
  EXPECT_EQ(std::memcmp(aCodes.data() + 256, encoded.data(), 256 * sizeof(ColorRGBA_SRGB)), 0);

  UnorganizedPointCloud b = linear;
  b.extend(srgb);
  EXPECT_EQ(b.colorSpace(), ColorSpace::linear);
  const std::vector<ColorRGBA> bCodes = b.storedColors().toHost();
  const std::vector<ColorRGBA> want = linearColors.toHost();
  EXPECT_EQ(std::memcmp(bCodes.data(), want.data(), 256 * sizeof(ColorRGBA)), 0);
  EXPECT_EQ(std::memcmp(bCodes.data() + 256, want.data(), 256 * sizeof(ColorRGBA)), 0);

  // Painting with a linear colour makes the cloud linear.
  a.paintUniformColor(ColorRGBA{10, 20, 30, 40});
  EXPECT_EQ(a.colorSpace(), ColorSpace::linear);
  EXPECT_EQ(a.deviceColors<ColorRGBA>(sq()).toHost()[0].g, 20);
}

TEST_P(CloudColorSpaceTest, ProjectionGivesLinearColours) {
  const HostPointCloud h = everyCode();
  const PointCloud cloud = PointCloud::fromHost(h, dev());
  PinholeCamera camera = PinholeCamera::withFieldOfView(16, 16, 60.0);
  const RGBDImage image = projectToRGBDImage(cloud, camera);
  ASSERT_TRUE(image.colors.isValid());
  const std::vector<ColorRGBA> got = image.colors.toHost();
  const DeviceArray<ColorRGBA> all = cloud.imageDeviceArray<ColorRGBA>(sq());
  const std::vector<ColorRGBA> linear = all.toHost();
  // Every projected colour is the linear conversion of some point's sRGB code.
  for (const ColorRGBA& c : got) {
    if (c.r == 0 && c.g == 0 && c.b == 0 && c.a == 0) continue;
    bool found = false;
    for (const ColorRGBA& l : linear) found = found || (l.r == c.r && l.g == c.g && l.b == c.b && l.a == c.a);
    EXPECT_TRUE(found);
  }
}

DATEST_INSTANTIATE_OVER_DEVICES(CloudColorSpaceTest);

}  // namespace
