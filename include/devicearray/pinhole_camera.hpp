// devicearray — PinholeCamera: the intrinsics of a 3-D camera, for synthetic scenes
// and the renderer's projection.
//
// Host only: nothing here touches a GPU, takes a stream or blocks on device work.
// Every failure throws devicearray::Error.
#pragma once

#include "devicearray/error.hpp"

namespace devicearray {

/// A pinhole camera: pixel (u, v) = (fx * x / z + cx, fy * y / z + cy), with the pixel
/// centre of column c at u = c (so cx = (width - 1) / 2 centres the optical axis).
struct PinholeCamera {
  int width = 1920;    ///< image columns
  int height = 1200;   ///< image rows
  double fx = 1650.0;  ///< horizontal focal length, pixels
  double fy = 1650.0;  ///< vertical focal length, pixels
  double cx = 959.5;   ///< principal point, column
  double cy = 599.5;   ///< principal point, row

  /// A camera of width × height pixels with the given horizontal field of view
  /// (degrees, 1..179), square pixels and a centred principal point. Throws
  /// InvalidArgument for non-positive sizes or a field of view out of range.
  static PinholeCamera withFieldOfView(int width, int height, double horizontalFovDegrees);
  /// Throws InvalidArgument for non-positive sizes or focal lengths, or non-finite values.
  void validate() const;
};

}  // namespace devicearray
