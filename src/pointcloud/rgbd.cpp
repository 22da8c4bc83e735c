// RGB-D: point clouds from depth images and z-buffered projection into depth and colour
// images. Kernels: src/kernels/rgbd.h.
#include "devicearray/rgbd.hpp"

#include <cmath>
#include <string>

#include "backend/rgbd_signatures.h"
#include "pointcloud/pointcloud_internal.hpp"
#include "pointcloud/scratch_layout.hpp"

namespace devicearray {

namespace kernels = detail::kernels;
namespace pc = detail::pc;

namespace {

void checkScale(float depthScale, const char* fn) {
  if (!std::isfinite(depthScale) || depthScale <= 0)
    pc::raise(ErrorCode::InvalidArgument, fn,
              "the depth scale must be finite and > 0, not " + std::to_string(depthScale));
}

void checkCamera(const PinholeCamera& camera, const char* fn) {
  try {
    camera.validate();
  } catch (const Error& e) {
    pc::raise(ErrorCode::InvalidArgument, fn, e.what());
  }
}

/// 1 for an F32 depth type, 0 for U16; InvalidArgument otherwise.
int isFloatDepth(Depth depth, const char* fn) {
  if (depth == Depth::U16) return 0;
  if (depth == Depth::F32) return 1;
  pc::raise(ErrorCode::InvalidArgument, fn,
            "a depth image holds Depth::U16 or Depth::F32 values, not depth code " +
                std::to_string(static_cast<int>(depth)));
}

int checkDepthImage(const GpuMatND& depth, const PinholeCamera& camera, const char* fn) {
  if (depth.empty()) pc::raise(ErrorCode::InvalidArgument, fn, "the depth image is empty");
  if (depth.channels() != 1)
    pc::raise(ErrorCode::InvalidArgument, fn,
              "the depth image must have 1 channel, not " + std::to_string(depth.channels()));
  const int isFloat = isFloatDepth(depthOf(depth.type()), fn);
  if (depth.dims != 2 || depth.size[0] != camera.height || depth.size[1] != camera.width)
    pc::raise(ErrorCode::InvalidArgument, fn,
              "the depth image must be 2-D " + std::to_string(camera.height) + "x" + std::to_string(camera.width) +
                  " like the camera, but has " + std::to_string(depth.dims) + " dims" +
                  (depth.dims == 2 ? " of " + std::to_string(depth.size[0]) + "x" + std::to_string(depth.size[1])
                                   : ""));
  if (depth.step.back() != depth.elemSize())
    pc::raise(ErrorCode::InvalidArgument, fn, "depth pixels must be contiguous within a row");
  return isFloat;
}

PointCloud fromDepth(const GpuMatND& depth, float depthScale, const PinholeCamera& camera,
                     DeviceArray<ColorRGBA> colors, ColorSpace colorSpace, StreamOrQueue sq, const char* fn) {
  checkCamera(camera, fn);
  checkScale(depthScale, fn);
  const int isFloat = checkDepthImage(depth, camera, fn);
  const ComputeDevice device = depth.device();
  if (colors.isValid()) {
    if (!colors.isOrganized() || colors.height() != camera.height || colors.width() != camera.width)
      pc::raise(ErrorCode::InvalidArgument, fn,
                "the colour image is " + std::to_string(colors.height()) + "x" + std::to_string(colors.width()) +
                    (colors.isOrganized() ? "" : " (unorganized)") + " but the depth image is " +
                    std::to_string(camera.height) + "x" + std::to_string(camera.width));
    if (colors.device() != device)
      pc::raise(ErrorCode::InvalidArgument, fn,
                "the colour image lives on " + colors.device().toString() + " but the depth image on " +
                    device.toString());
  }
  const auto q = pc::queueOf(device, sq, fn);
  DeviceArray<PointXYZ> xyz = pc::allocateOrganized<PointXYZ>(*q, camera.height, camera.width, fn);
  detail::Allocation* depthStorage = detail::allocationOf(depth).get();
  detail::OrderedUse use(*q, {depthStorage, pc::storageOf(xyz)});
  detail::launch<kernels::da_rgbd_from_depth>(
      *q, detail::LaunchGeometry::grid(static_cast<std::size_t>(camera.width), static_cast<std::size_t>(camera.height)),
      camera.width, camera.height, static_cast<std::int64_t>(depth.step[0]), isFloat, depthScale,
      static_cast<float>(camera.fx), static_cast<float>(camera.fy), static_cast<float>(camera.cx),
      static_cast<float>(camera.cy), detail::BufferRef{depthStorage, detail::offsetOf(depth)}, pc::arg(xyz));
  use.commit();
  // The cloud owns its colours: a copy, so later writes to the caller's image leave it alone.
  if (colors.isValid()) colors = convert<ColorRGBA>(colors, sq);
  return PointCloud(std::move(xyz)).withStoredColors(std::move(colors), colorSpace);
}

RGBDImage project(const ComputeDevice& device, const DeviceArray<PointXYZ>& xyz, const DeviceArray<ColorRGBA>& rgba,
                  const PinholeCamera& camera, Depth depthType, float depthScale, const Matrix4x4& m,
                  StreamOrQueue sq, const char* fn) {
  checkCamera(camera, fn);
  checkScale(depthScale, fn);
  const int isFloat = isFloatDepth(depthType, fn);
  pc::checkAffine(m, fn);
  const auto q = pc::queueOf(device, sq, fn);
  const std::size_t pixels =
      pc::checkedBytes(static_cast<std::size_t>(camera.height), static_cast<std::size_t>(camera.width), fn);
  const std::size_t n = xyz.size();
  pc::checkPointCount(n, fn);

  pc::ScratchLayout layout;
  const std::size_t zbufferAt = layout.add(pixels, sizeof(std::uint32_t), fn);
  const std::size_t winnerAt = layout.add(pixels, sizeof(std::uint32_t), fn);
  const auto scratch = layout.allocate(*q);

  const std::size_t elem = isFloat ? sizeof(float) : sizeof(std::uint16_t);
  const int type = makeType(depthType, 1);
  const std::size_t rowBytes = pc::checkedBytes(static_cast<std::size_t>(camera.width), elem, fn);
  GpuMatND depth = detail::makeGpuMatND(q->device()->allocate(pc::checkedBytes(pixels, elem, fn), *q), 0,
                                        {camera.height, camera.width}, type, {rowBytes, elem});
  DeviceArray<ColorRGBA> colors;
  if (rgba.isValid()) colors = pc::allocateOrganized<ColorRGBA>(*q, camera.height, camera.width, fn);
  detail::Allocation* depthStorage = detail::allocationOf(depth).get();

  detail::OrderedUse use(*q, {pc::storageOf(xyz), pc::storageOf(rgba), scratch.get(), depthStorage, pc::storageOf(colors)});
  detail::launch<kernels::da_rgbd_clear>(*q, detail::LaunchGeometry::items(pixels), pc::i64(pixels),
                                         pc::arg(scratch, zbufferAt), pc::arg(scratch, winnerAt));
  // Pass 0 keeps the nearest depth of each pixel, pass 1 the lowest index at that depth.
  for (int pass = 0; pass < 2 && n > 0; ++pass)
    detail::launch<kernels::da_rgbd_project>(*q, detail::LaunchGeometry::items(n), pc::i64(n), pass, camera.width,
                                             camera.height, static_cast<float>(camera.fx),
                                             static_cast<float>(camera.fy), static_cast<float>(camera.cx),
                                             static_cast<float>(camera.cy), m[0], m[1], m[2], m[3], m[4], m[5], m[6],
                                             m[7], m[8], m[9], m[10], m[11], pc::arg(xyz), pc::arg(scratch, zbufferAt),
                                             pc::arg(scratch, winnerAt));
  detail::launch<kernels::da_rgbd_write>(
      *q, detail::LaunchGeometry::grid(static_cast<std::size_t>(camera.width), static_cast<std::size_t>(camera.height)),
      camera.width, camera.height, isFloat, depthScale, static_cast<std::int64_t>(rowBytes), rgba.isValid() ? 1 : 0,
      pc::arg(scratch, zbufferAt), pc::arg(scratch, winnerAt),
      rgba.isValid() ? detail::BufferRef(pc::bufferOf(rgba)) : pc::arg(scratch, zbufferAt),
      detail::BufferRef{depthStorage, 0},
      colors.isValid() ? detail::BufferRef(pc::bufferOf(colors)) : pc::arg(scratch, winnerAt));
  use.commit();
  return RGBDImage{std::move(depth), std::move(colors)};
}

}  // namespace

// ------------------------------------------------------------ from depth ----

PointCloud pointCloudFromDepthImage(const GpuMatND& depth, float depthScale, const PinholeCamera& camera,
                                    StreamOrQueue sq) {
  return fromDepth(depth, depthScale, camera, {}, ColorSpace::linear, sq, "pointCloudFromDepthImage");
}
PointCloud pointCloudFromDepthImage(const GpuMatND& depth, float depthScale, const PinholeCamera& camera,
                                    const DeviceArray<ColorRGBA>& colors, StreamOrQueue sq) {
  constexpr const char* fn = "pointCloudFromDepthImage";
  if (colors.isEmpty()) pc::raise(ErrorCode::InvalidArgument, fn, "the colour image is empty");
  return fromDepth(depth, depthScale, camera, colors, ColorSpace::linear, sq, fn);
}
PointCloud detail::pointCloudFromSrgbDepthImage(const GpuMatND& depth, float depthScale, const PinholeCamera& camera,
                                                const DeviceArray<ColorRGBA_SRGB>& colors, StreamOrQueue sq) {
  constexpr const char* fn = "pointCloudFromDepthImage";
  if (colors.isEmpty()) pc::raise(ErrorCode::InvalidArgument, fn, "the colour image is empty");
  return fromDepth(depth, depthScale, camera, detail::storedCodes(colors), ColorSpace::srgb, sq, fn);
}
PointCloud pointCloudFromDepthImage(const GpuMatND& depth, float depthScale, const PinholeCamera& camera) {
  if (depth.empty()) pc::raise(ErrorCode::InvalidArgument, "pointCloudFromDepthImage", "the depth image is empty");
  const ComputeDevice device = depth.device();
  PointCloud cloud = pointCloudFromDepthImage(depth, depthScale, camera, device.sdkStreamOrQueue());
  pc::finishDeviceQueue(device);
  return cloud;
}
PointCloud pointCloudFromDepthImage(const GpuMatND& depth, float depthScale, const PinholeCamera& camera,
                                    const DeviceArray<ColorRGBA>& colors) {
  if (depth.empty()) pc::raise(ErrorCode::InvalidArgument, "pointCloudFromDepthImage", "the depth image is empty");
  const ComputeDevice device = depth.device();
  PointCloud cloud = pointCloudFromDepthImage(depth, depthScale, camera, colors, device.sdkStreamOrQueue());
  pc::finishDeviceQueue(device);
  return cloud;
}

// ------------------------------------------------------------ projection ----

RGBDImage projectToRGBDImage(const PointCloud& cloud, const PinholeCamera& camera, Depth depthType, float depthScale,
                             const Matrix4x4& cameraFromCloud, StreamOrQueue sq) {
  RGBDImage out = project(cloud.device(), cloud.storedXYZ(), cloud.storedColors(), camera, depthType, depthScale,
                          cameraFromCloud, sq, "projectToRGBDImage");
  // Each pixel takes one point's colour as it is; the image holds linear ColorRGBA.
  out.colors = pc::inColorSpace(out.colors, cloud.colorSpace(), ColorSpace::linear, sq);
  return out;
}
RGBDImage projectToRGBDImage(const PointCloud& cloud, const PinholeCamera& camera, Depth depthType, float depthScale,
                             const Matrix4x4& cameraFromCloud) {
  const ComputeDevice device = cloud.device();
  RGBDImage out = projectToRGBDImage(cloud, camera, depthType, depthScale, cameraFromCloud, device.sdkStreamOrQueue());
  pc::finishDeviceQueue(device);
  return out;
}
RGBDImage projectToRGBDImage(const UnorganizedPointCloud& cloud, const PinholeCamera& camera, Depth depthType,
                             float depthScale, const Matrix4x4& cameraFromCloud, StreamOrQueue sq) {
  RGBDImage out = project(cloud.device(), cloud.storedXYZ(), cloud.storedColors(), camera, depthType, depthScale,
                          cameraFromCloud, sq, "projectToRGBDImage");
  // Each pixel takes one point's colour as it is; the image holds linear ColorRGBA.
  out.colors = pc::inColorSpace(out.colors, cloud.colorSpace(), ColorSpace::linear, sq);
  return out;
}
RGBDImage projectToRGBDImage(const UnorganizedPointCloud& cloud, const PinholeCamera& camera, Depth depthType,
                             float depthScale, const Matrix4x4& cameraFromCloud) {
  const ComputeDevice device = cloud.device();
  RGBDImage out = projectToRGBDImage(cloud, camera, depthType, depthScale, cameraFromCloud, device.sdkStreamOrQueue());
  pc::finishDeviceQueue(device);
  return out;
}

}  // namespace devicearray
