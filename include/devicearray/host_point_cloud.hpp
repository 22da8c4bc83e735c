// devicearray — HostPointCloud: a point cloud in host memory, what the PLY files,
// the synthetic scenes and the renderer work on and what the device-side classes
// (PointCloud, UnorganizedPointCloud) are built from and downloaded into.
//
// Conventions of every host-side cloud:
//  * Coordinates are in the camera frame of a 3-D camera: x right, y down, z forward
//    (away from the camera), in millimetres, like the 3-D camera SDK's point clouds.
//  * A missing point has NaN in all three of x, y, z. Organized clouds keep their
//    missing points so that point (row, col) stays at index row * width + col.
//  * Colours are 8-bit sRGB-encoded RGBA (what PLY viewers and PNG files expect).
//
// Host only: nothing here touches a GPU, takes a stream or blocks on device work.
// Every failure throws devicearray::Error.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "devicearray/error.hpp"

namespace devicearray {

/// A point cloud in host memory, organized (an image grid of height × width points,
/// as a 3-D camera produces) or unorganized (a list of points).
///
/// The cloud is organized exactly when height > 0 and width > 0; then size() ==
/// height * width. Unorganized clouds have height == width == 0 and size() points.
/// Every attribute array is either empty (the attribute is absent) or holds exactly
/// size() × its channel count values, point after point (the same interleaved,
/// row-major order as `DeviceArray<PointXYZ>`, `<ColorRGBA_SRGB>`, `<SNR>`, `<NormalXYZ>`).
struct HostPointCloud {
  int height = 0;                  ///< rows of an organized cloud; 0 when unorganized
  int width = 0;                   ///< columns of an organized cloud; 0 when unorganized
  std::vector<float> xyz;          ///< 3 per point, millimetres; NaN x, y, z = missing point
  std::vector<std::uint8_t> rgba;  ///< 4 per point (sRGB-encoded, alpha 255 = opaque) or empty
  std::vector<float> snr;          ///< 1 per point (signal-to-noise ratio, ≥ 0) or empty
  std::vector<float> normals;      ///< 3 per point (unit length or NaN) or empty

  /// An organized cloud of height × width missing points (NaN) and, as requested,
  /// zero-filled attributes. Throws InvalidArgument for non-positive sizes and
  /// OutOfRange when the point count overflows.
  static HostPointCloud organized(int height, int width, bool withColors = false, bool withSNR = false,
                                  bool withNormals = false);

  /// True when height and width are both positive.
  bool isOrganized() const noexcept { return height > 0 && width > 0; }
  /// Number of points (valid or missing): xyz.size() / 3.
  std::size_t size() const noexcept { return xyz.size() / 3; }
  /// True when the cloud has no points.
  bool empty() const noexcept { return xyz.empty(); }
  /// Whether the attribute is present (its array is not empty).
  ///@{
  bool hasColors() const noexcept { return !rgba.empty(); }
  bool hasSNR() const noexcept { return !snr.empty(); }
  bool hasNormals() const noexcept { return !normals.empty(); }
  ///@}
  /// Points whose x, y and z are all finite.
  std::size_t validCount() const noexcept;
  /// True when point `i` has finite x, y and z. Precondition: i < size().
  bool isValid(std::size_t i) const noexcept;

  /// Checks the invariants above (height/width both zero or both positive, sizes that
  /// match, xyz a multiple of 3, height*width == size() when organized). Throws
  /// InvalidArgument naming the first violated rule.
  void validate() const;
};

}  // namespace devicearray
