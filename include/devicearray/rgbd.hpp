// devicearray — RGB-D: organized point clouds from depth images (with an optional colour
// image registered to them) and the projection of a cloud into depth and colour images,
// both for a pinhole camera (PinholeCamera: pixel (u, v) = (fx x / z + cx, fy y / z + cy),
// camera looking along +z, distances in mm).
//
// Depth images are 2-D GpuMatND of height x width (row steps allowed, pixels contiguous
// in a row) of one of two types: makeType(Depth::U16, 1), z = value * depthScale mm,
// 0 = no measurement; or makeType(Depth::F32, 1), z = value * depthScale mm, 0 or
// non-finite = no measurement.
//
// Streams: the overloads with a StreamOrQueue enqueue their work there, allocate their
// results on it and return without blocking; the others run on the device's own queue
// and block until done. Errors: devicearray::Error (InvalidArgument for bad input, named
// in the message; InvalidState for an empty cloud).
#pragma once

#include "devicearray/device.hpp"
#include "devicearray/device_array.hpp"
#include "devicearray/formats.hpp"
#include "devicearray/gpu_mat_nd.hpp"
#include "devicearray/pinhole_camera.hpp"
#include "devicearray/point_cloud.hpp"

namespace devicearray {

/// The organized cloud of a depth image: pixel (r, c) with depth z > 0 becomes the point
/// ((c - cx) z / fx, (r - cy) z / fy, z); pixels without a measurement become missing
/// points. `colors`, when given, is the colour image registered to the depth image (same
/// height and width, same device) and becomes the cloud's colours (a copy: the *_SRGB
/// formats as their sRGB codes, so the cloud's colorSpace() is srgb; the others
/// converted to linear ColorRGBA. Pass sRGB-encoded camera images as a *_SRGB format).
/// The image must be camera.height x camera.width. Throws InvalidArgument for a depth image of another
/// type, size or device, a depthScale not finite and > 0, or a camera that fails
/// validate().
///@{
PointCloud pointCloudFromDepthImage(const GpuMatND& depth, float depthScale, const PinholeCamera& camera,
                                    StreamOrQueue sq);
PointCloud pointCloudFromDepthImage(const GpuMatND& depth, float depthScale, const PinholeCamera& camera);
PointCloud pointCloudFromDepthImage(const GpuMatND& depth, float depthScale, const PinholeCamera& camera,
                                    const DeviceArray<ColorRGBA>& colors, StreamOrQueue sq);
PointCloud pointCloudFromDepthImage(const GpuMatND& depth, float depthScale, const PinholeCamera& camera,
                                    const DeviceArray<ColorRGBA>& colors);
namespace detail {
/// Internal: pointCloudFromDepthImage with an sRGB colour image, kept as its codes.
PointCloud pointCloudFromSrgbDepthImage(const GpuMatND& depth, float depthScale, const PinholeCamera& camera,
                                        const DeviceArray<ColorRGBA_SRGB>& colors, StreamOrQueue sq);
}  // namespace detail
template <class Color>
PointCloud pointCloudFromDepthImage(const GpuMatND& depth, float depthScale, const PinholeCamera& camera,
                                    const DeviceArray<Color>& colors, StreamOrQueue sq) {
  static_assert(isColorFormat<Color>, "pointCloudFromDepthImage: Color must be a colour format");
  if constexpr (formatInfo<Color>().isSRGB)
    return detail::pointCloudFromSrgbDepthImage(depth, depthScale, camera, convert<ColorRGBA_SRGB>(colors, sq), sq);
  else
    return pointCloudFromDepthImage(depth, depthScale, camera, convert<ColorRGBA>(colors, sq), sq);
}
template <class Color>
PointCloud pointCloudFromDepthImage(const GpuMatND& depth, float depthScale, const PinholeCamera& camera,
                                    const DeviceArray<Color>& colors) {
  static_assert(isColorFormat<Color>, "pointCloudFromDepthImage: Color must be a colour format");
  const StreamOrQueue sq = depth.device().sdkStreamOrQueue();
  PointCloud cloud = pointCloudFromDepthImage(depth, depthScale, camera, colors, sq);
  synchronizeStream(sq);
  return cloud;
}
///@}

/// A depth image and the colour image registered to it, on one device.
struct RGBDImage {
  /// camera.height x camera.width, U16 (round(z / depthScale); 0 where no point projects
  /// or the value exceeds 65535) or F32 (z / depthScale; NaN where no point projects).
  GpuMatND depth;
  /// camera.height x camera.width linear RGBA of the point that won each pixel, 0 0 0 0
  /// where none did; empty when the cloud has no colours.
  DeviceArray<ColorRGBA> colors;
};

/// Projects the valid points of `cloud` (organized or not) into depth and colour images
/// of `camera`. Each point p is first moved into the camera's frame, p' =
/// cameraFromCloud p (affine), and lands on pixel (round(fx x'/z' + cx), round(fy y'/z'
/// + cy)) when z' > 0 and the pixel is inside the image. Z-buffer: the nearest point
/// (smallest z') wins a pixel; among points at exactly the same z' the one with the
/// lowest index (row-major for an organized cloud) wins, so the result does not depend
/// on the order the device runs them in. A depth image projected from the cloud of a U16
/// depth image with the same camera and scale equals it. Throws InvalidArgument for a
/// depthType other than Depth::U16 or Depth::F32, a depthScale not finite and > 0, a
/// non-affine or non-finite matrix or an invalid camera; InvalidState for an empty cloud.
///@{
RGBDImage projectToRGBDImage(const PointCloud& cloud, const PinholeCamera& camera, Depth depthType, float depthScale,
                             const Matrix4x4& cameraFromCloud, StreamOrQueue sq);
RGBDImage projectToRGBDImage(const PointCloud& cloud, const PinholeCamera& camera, Depth depthType = Depth::U16,
                             float depthScale = 1.0f, const Matrix4x4& cameraFromCloud = identityMatrix4x4());
RGBDImage projectToRGBDImage(const UnorganizedPointCloud& cloud, const PinholeCamera& camera, Depth depthType,
                             float depthScale, const Matrix4x4& cameraFromCloud, StreamOrQueue sq);
RGBDImage projectToRGBDImage(const UnorganizedPointCloud& cloud, const PinholeCamera& camera,
                             Depth depthType = Depth::U16, float depthScale = 1.0f,
                             const Matrix4x4& cameraFromCloud = identityMatrix4x4());
///@}

}  // namespace devicearray
