#include "io/point_cloud_file_support.hpp"

#include <cmath>
#include <limits>

#include "core/color_tables.hpp"

namespace devicearray::io_detail {

void finishReadCloud(HostPointCloud& cloud, std::int64_t fileHeight, std::int64_t fileWidth, std::size_t where,
                     const PointCloudReadOptions& options, const Reporter& rep) {
  convertColors(cloud.rgba, options.colorSpace, ColorSpace::srgb);
  const auto fail = [&](const std::string& what) {
    if (where > 0) rep.atLine(where, what);
    rep.general(what);
  };
  if (options.height < 0 || options.width < 0 || (options.height == 0) != (options.width == 0))
    rep.general("the grid given in the read options, " + std::to_string(options.height) + " x " +
                std::to_string(options.width) + ", must be two positive numbers (or both 0 for the file's own)");
  std::int64_t height = fileHeight, width = fileWidth;
  if (options.height > 0) {
    if (fileHeight > 0 && (fileHeight != options.height || fileWidth != options.width))
      fail("the file declares a " + std::to_string(fileHeight) + " x " + std::to_string(fileWidth) +
           " grid, the read options " + std::to_string(options.height) + " x " + std::to_string(options.width));
    height = options.height;
    width = options.width;
  }
  if (height <= 0 || width <= 0) return;
  const std::uint64_t hw = static_cast<std::uint64_t>(height) * static_cast<std::uint64_t>(width);
  if (hw != cloud.size())
    fail("organized size " + std::to_string(height) + " x " + std::to_string(width) + " = " + std::to_string(hw) +
         " points does not match the " + std::to_string(cloud.size()) + " points of the file");
  cloud.height = static_cast<int>(height);
  cloud.width = static_cast<int>(width);
}

void convertColors(std::vector<std::uint8_t>& rgba, ColorSpace from, ColorSpace to) {
  if (from == to) return;
  const detail::ColorTables& t = detail::hostColorTables();
  const std::uint8_t* table = to == ColorSpace::linear ? t.srgbToLinear : t.linearToSrgb;
  for (std::size_t i = 0; i < rgba.size(); ++i)
    if (i % 4 != 3) rgba[i] = table[rgba[i]];
}

std::uint8_t floatColorToByte(double v, bool range255) {
  const double scaled = range255 ? v : v * 255.0;
  if (!(scaled > 0.0)) return 0;  // also NaN
  if (scaled >= 255.0) return 255;
  return static_cast<std::uint8_t>(std::lround(scaled));
}

HostPointCloud cloudForWriting(const HostPointCloud& cloud, const PointCloudWriteOptions& options,
                               const char* function, const std::string& path) {
  cloud.validate();
  const std::string prefix = std::string(function) + ": '" + printable(path) + "': ";
  if (cloud.empty()) invalid(prefix + "the cloud has no points");
  if (options.colorSpace != ColorSpace::srgb && options.colorSpace != ColorSpace::linear)
    invalid(prefix + "unknown ColorSpace value " + std::to_string(static_cast<int>(options.colorSpace)));
  HostPointCloud out;
  const bool validOnly = !options.organized;
  const bool withNormals = options.normals && cloud.hasNormals();
  if (!validOnly) {
    out = cloud;
    if (!withNormals) out.normals.clear();
  } else {
    const std::size_t n = cloud.size();
    for (std::size_t i = 0; i < n; ++i) {
      if (!cloud.isValid(i)) continue;
      out.xyz.insert(out.xyz.end(), &cloud.xyz[3 * i], &cloud.xyz[3 * i] + 3);
      if (cloud.hasColors()) out.rgba.insert(out.rgba.end(), &cloud.rgba[4 * i], &cloud.rgba[4 * i] + 4);
      if (cloud.hasSNR()) out.snr.push_back(cloud.snr[i]);
      if (withNormals) out.normals.insert(out.normals.end(), &cloud.normals[3 * i], &cloud.normals[3 * i] + 3);
    }
    if (out.empty()) invalid(prefix + "the cloud has no valid point (and only valid points are to be written)");
  }
  convertColors(out.rgba, ColorSpace::srgb, options.colorSpace);
  return out;
}

const float* writtenXyz(const HostPointCloud& cloud, std::size_t i) {
  static constexpr float kMissing[3] = {std::numeric_limits<float>::quiet_NaN(),
                                        std::numeric_limits<float>::quiet_NaN(),
                                        std::numeric_limits<float>::quiet_NaN()};
  return cloud.isValid(i) ? &cloud.xyz[3 * i] : kMissing;
}

}  // namespace devicearray::io_detail
