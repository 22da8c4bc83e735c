// devicearray — the options every point-cloud file reader (readPly, readPcd, readXyz)
// and writer (writePly, writePcd, writeXyz) takes.
//
// Host only: nothing here touches a GPU, takes a stream or blocks on device work.
#pragma once

#include <functional>
#include <string>

namespace devicearray {

/// How the colours in a file are encoded. HostPointCloud always holds sRGB-encoded
/// colours (what viewers and most tools expect); a file in linear light is decoded on
/// reading and encoded on writing, 8 bits each way: an sRGB -> linear -> sRGB trip can
/// move a code by up to the spacing of the linear codes there (about one code in the
/// bright half, several in dark shades).
enum class ColorSpace {
  srgb,   ///< sRGB-encoded 8-bit codes (what viewers, PNG and most tools expect)
  linear  ///< linear-light 8-bit codes (what the device's ColorRGBA holds)
};

/// Options of the readers.
struct PointCloudReadOptions {
  /// The grid of a file that holds an organized cloud in row order but does not say so:
  /// height × width must equal the file's point count. Both 0 (the default): the file's
  /// own structured header fields decide (PLY's obj_info / camera element, PCD's
  /// HEIGHT). Both positive and the file declares another grid: InvalidArgument.
  int height = 0;
  int width = 0;  ///< columns of the stated grid (see height)
  /// How the file's colours are encoded; linear ones are converted to sRGB.
  ColorSpace colorSpace = ColorSpace::srgb;
  /// Receives, once per file, the warning that double coordinates lost precision when
  /// they were narrowed to float (by more than 0.01 in the file's unit: coordinates
  /// more than about 2^18 units from the origin). Empty: the warning goes to stderr.
  std::function<void(const std::string&)> warning;
};

/// Options of the writers.
struct PointCloudWriteOptions {
  /// How the file's colours are encoded (the cloud's sRGB colours are converted for
  /// ColorSpace::linear).
  ColorSpace colorSpace = ColorSpace::srgb;
  /// Write the cloud's normals (when it has them).
  bool normals = true;
  /// true: an organized cloud keeps its grid and its missing (NaN) points, so point
  /// (row, col) stays at row * width + col. false: only the valid points are written,
  /// as an unorganized cloud.
  bool organized = true;
};

}  // namespace devicearray
