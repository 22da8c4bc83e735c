// XYZ text reading and writing: one point per line, the column count of the first
// point line deciding the layout (see xyz.hpp).
#include <cmath>
#include <limits>
#include <string>
#include <string_view>
#include <vector>

#include "devicearray/xyz.hpp"
#include "io/point_cloud_file_support.hpp"
#include "io/record_io.hpp"

namespace devicearray {

using io_detail::invalid;
using io_detail::Reporter;
using io_detail::ScalarType;

namespace {

constexpr std::size_t kMaxLine = 64 * 1024;

bool looksFloat(std::string_view token) { return token.find_first_of(".eEnN") != std::string_view::npos; }

HostPointCloud readXyzImpl(const std::string& path, const PointCloudReadOptions& options) {
  io_detail::ReaderInput input("readXyz", path);
  const Reporter& rep = input.rep();
  io_detail::ByteSource& src = input.src();
  io_detail::NarrowingWarning narrowing(rep, &options.warning);

  HostPointCloud cloud;
  std::vector<float> colors;  // 3 per point as written, until the scale is known
  std::size_t columns = 0;
  bool floatColors = false;
  double largestColor = -std::numeric_limits<double>::infinity();
  while (auto line = src.line(kMaxLine)) {
    const std::size_t ln = src.lineNumber();
    const auto tokens = io_detail::tokenize(*line);
    if (tokens.empty() || tokens[0].front() == '#') continue;
    if (columns == 0) {
      columns = tokens.size();
      if (columns != 3 && columns != 6 && columns != 9)
        rep.atLine(ln, "a point line has " + std::to_string(columns) +
                           " values; expected 3 (x y z), 6 (x y z r g b) or 9 (x y z r g b nx ny nz)");
    } else if (tokens.size() != columns) {
      rep.atLine(ln, "this line has " + std::to_string(tokens.size()) + " values; the first point line has " +
                         std::to_string(columns));
    }
    double values[9];
    for (std::size_t c = 0; c < columns; ++c) {
      auto v = io_detail::parseScalar(tokens[c], ScalarType::f64);
      if (!v) rep.atLine(ln, "value '" + std::string(tokens[c].substr(0, 64)) + "' is not a number");
      values[c] = *v;
    }
    // Coordinates and normals are parsed as float directly: through double they could
    // round twice and miss the float a shortest-form number was printed from.
    const auto asFloat = [&](std::size_t c, const char* what) {
      auto f = io_detail::parseScalar(tokens[c], ScalarType::f32);
      if (!f) rep.atLine(ln, std::string(what) + " '" + std::string(tokens[c].substr(0, 64)) + "' does not fit in a float");
      return static_cast<float>(*f);
    };
    float xyz[3];
    for (std::size_t c = 0; c < 3; ++c) {
      xyz[c] = asFloat(c, "coordinate");
      narrowing.check(values[c], xyz[c]);
    }
    if (!(std::isfinite(xyz[0]) && std::isfinite(xyz[1]) && std::isfinite(xyz[2])))
      xyz[0] = xyz[1] = xyz[2] = std::numeric_limits<float>::quiet_NaN();
    cloud.xyz.insert(cloud.xyz.end(), xyz, xyz + 3);
    if (columns >= 6)
      for (int c = 3; c < 6; ++c) {
        const double v = values[c];
        if (!(v >= 0.0 && v <= 255.0))
          rep.atLine(ln, "colour value '" + std::string(tokens[c].substr(0, 64)) + "' is outside [0, 255]");
        floatColors = floatColors || looksFloat(tokens[c]);
        largestColor = std::max(largestColor, v);
        colors.push_back(static_cast<float>(v));
      }
    if (columns == 9)
      for (std::size_t c = 6; c < 9; ++c) cloud.normals.push_back(asFloat(c, "normal value"));
  }
  if (!colors.empty()) {
    // Integer codes as they are; float colours by the file-wide rule.
    const bool range255 = !floatColors || io_detail::floatColorsAre255(largestColor);
    cloud.rgba.resize(colors.size() / 3 * 4);
    for (std::size_t i = 0; i < colors.size() / 3; ++i) {
      for (int c = 0; c < 3; ++c) cloud.rgba[4 * i + c] = io_detail::floatColorToByte(colors[3 * i + c], range255);
      cloud.rgba[4 * i + 3] = 255;
    }
  }
  io_detail::finishReadCloud(cloud, 0, 0, 0, options, rep);
  return cloud;
}

}  // namespace

HostPointCloud readXyz(const std::string& path, const PointCloudReadOptions& options) {
  return io_detail::translateAllocationFailure("readXyz", [&] { return readXyzImpl(path, options); });
}

void writeXyz(const std::string& path, const HostPointCloud& input, const PointCloudWriteOptions& options) {
  const HostPointCloud cloud = io_detail::cloudForWriting(input, options, "writeXyz", path);
  const bool normals = cloud.hasNormals() && cloud.hasColors();
  io_detail::OutputFile file("writeXyz", path);
  io_detail::BufferedWriter w("writeXyz", file.get(), path);
  for (std::size_t i = 0, n = cloud.size(); i < n; ++i) {
    const float* xyz = io_detail::writtenXyz(cloud, i);
    io_detail::putAsciiFloat(w, xyz[0]);
    io_detail::putAsciiFloats(w, xyz + 1, 2);
    if (cloud.hasColors()) io_detail::putAsciiCodes(w, &cloud.rgba[4 * i], 3);
    if (normals) io_detail::putAsciiFloats(w, &cloud.normals[3 * i], 3);
    w.put("\n", 1);
  }
  w.flush();
  file.commit();
}

}  // namespace devicearray
