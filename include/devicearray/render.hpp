// devicearray — the preview renderer: an 8-bit RGB picture of a HostPointCloud
// (colour, colour-mapped depth, normals).
//
// Host only: nothing here touches a GPU, takes a stream or blocks on device work.
// Every failure throws devicearray::Error.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>

#include "devicearray/host_image.hpp"
#include "devicearray/host_point_cloud.hpp"
#include "devicearray/pinhole_camera.hpp"

namespace devicearray {

enum class RenderView {
  color,    ///< the cloud's colours (gray Lambert shading when it has none)
  depth,    ///< z, colour-mapped (near = warm, far = cool) between robust percentiles
  normals,  ///< normals in the usual normal-map colours: RGB = (nx + 1, 1 - ny, 1 - nz) / 2
            ///< (x right, y up, z towards the viewer), so a surface facing the camera is lilac-blue
  all,      ///< colour | depth | normals side by side
};

/// How renderCloud() places points in the picture.
enum class RenderProjection {
  automatic,  ///< `grid` for organized clouds, `pinhole` for unorganized ones
  grid,       ///< point (row, col) is pixel (row, col), scaled to the output size (organized only)
  pinhole,    ///< project through a pinhole camera with a z-buffer, splatting each point
};

/// The default RenderOptions::memoryLimitBytes: 2 GiB (an 8192 x 8192 colour view needs
/// about 0.7 GiB, a 16384 x 16384 one about 2.8 GiB).
inline constexpr std::size_t kDefaultRenderMemoryLimit = std::size_t{2} << 30;

/// What renderCloud() draws and how.
struct RenderOptions {
  RenderView view = RenderView::color;                        ///< what to show
  RenderProjection projection = RenderProjection::automatic;  ///< how points map to pixels
  /// Output size of one view; 0 = the cloud's grid size (organized) or 1280 × 800
  /// (unorganized), keeping the other axis' aspect ratio when only one is given.
  ///@{
  int width = 0;
  int height = 0;
  ///@}
  /// Pinhole projection only. When fx > 0 this camera is used as given (the cloud is in
  /// its frame) and its width × height is the size of one view. When fx <= 0 a camera
  /// looking along +z is fitted so that every valid point is in the picture: at the
  /// origin when all valid points have z > 0 (a camera's own frame), else far enough
  /// behind the cloud.
  PinholeCamera camera{0, 0, 0.0, 0.0, 0.0, 0.0};
  /// Pinhole projection only: each point covers a (2r+1) × (2r+1) square of output
  /// pixels; -1 = r chosen from the point density so that neighbouring splats touch.
  int pointRadius = -1;
  std::uint8_t background[3] = {24, 24, 28};  ///< RGB of pixels no point covers
  /// The most host memory renderCloud() may need, in bytes (pixel map, normals, depth
  /// buffer and the image: about 11 to 40 bytes per pixel of one view); a larger
  /// picture is refused with OutOfRange before anything is allocated. 0 = no limit.
  std::size_t memoryLimitBytes = kDefaultRenderMemoryLimit;
  /// Called with the fraction done (0..1, ending with 1) from the calling thread, at
  /// most about 200 times; may be empty.
  std::function<void(double)> progress;

  /// Throws InvalidArgument for negative sizes, a radius below -1 or above 64, or an
  /// explicitly given camera (fx > 0) that fails PinholeCamera::validate().
  void validate() const;
};

/// Renders a preview of `cloud` as an 8-bit RGB image. Blocking. Throws
/// InvalidArgument when the cloud fails validate(), is empty or has no valid point,
/// when `grid` projection is asked for an unorganized cloud, or when the options are
/// invalid; OutOfRange when the requested image size overflows or would need more
/// memory than options.memoryLimitBytes.
HostImage renderCloud(const HostPointCloud& cloud, const RenderOptions& options = {});

}  // namespace devicearray
