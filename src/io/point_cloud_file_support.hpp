// What the point-cloud file readers and writers (PLY, PCD, XYZ) share beyond bytes and
// numbers: the grid a file's points form, colour spaces, float colour scales, and the
// cloud a writer puts into a file.
#pragma once

#include <cstdint>
#include <string>

#include "devicearray/host_point_cloud.hpp"
#include "devicearray/point_cloud_file_options.hpp"
#include "io/record_io.hpp"

namespace devicearray::io_detail {

/// The last step of every reader: makes `cloud` (its points read in file order)
/// organized when the file or the options give a grid, and its colours sRGB.
/// `fileHeight` / `fileWidth`: the grid the file's structured header declares, 0 for
/// none; `where` names the header line for messages (0: none). Throws (via `rep`) when
/// options give only one of height and width, when they contradict the file's grid, or
/// when the grid does not hold exactly the points read.
void finishReadCloud(HostPointCloud& cloud, std::int64_t fileHeight, std::int64_t fileWidth, std::size_t where,
                     const PointCloudReadOptions& options, const Reporter& rep);

/// Re-encodes 8-bit colour channels (r, g, b; alpha left as it is) between colour spaces.
void convertColors(std::vector<std::uint8_t>& rgba, ColorSpace from, ColorSpace to);

/// A float colour value as an 8-bit code. Files hold float colours either in [0, 1] or
/// in [0, 255]; `range255` says which (see floatColorsAre255()). Rounded, clamped to
/// [0, 255]; NaN reads as 0.
std::uint8_t floatColorToByte(double v, bool range255);

/// The rule every reader applies to float colours: they are in [0, 255] when any of the
/// file's float colour values exceeds 1, in [0, 1] otherwise.
inline bool floatColorsAre255(double largestValue) { return largestValue > 1.0; }

/// The cloud a writer puts into a file: `cloud` checked (validate(), not empty: else
/// InvalidArgument naming `function` and `path`), reduced to its valid points when
/// options.organized is false, without normals when options.normals is false, colours
/// in options.colorSpace.
HostPointCloud cloudForWriting(const HostPointCloud& cloud, const PointCloudWriteOptions& options,
                               const char* function, const std::string& path);

/// The coordinates point `i` of `cloud` is written with: its own when they are all
/// finite, else NaN, NaN, NaN (an inf point is written as missing, never as inf).
const float* writtenXyz(const HostPointCloud& cloud, std::size_t i);

}  // namespace devicearray::io_detail
