// What the two halves of the frame pipeline share: the stage value's checks
// (frame_pipeline_stages.cpp) and the run (frame_pipeline.cpp).
#pragma once

#include <optional>
#include <string>

#include "devicearray/frame_pipeline.hpp"
#include "devicearray/point_cloud.hpp"

namespace devicearray::pipeline_detail {

/// A number as a person reads it: %g with up to 9 significant digits, so 1e-9 stays
/// 1e-09 instead of 0.000000, and a float written so reads back bit-exactly.
std::string numberText(double value);

/// The block side k of a k x k downsample; 1 without one.
int downsampleFactor(const std::optional<Downsampling>& downsample);

/// Whether `stages` remove outliers of the unorganized cloud (statistical or radius):
/// stages that need the compacted cloud and its point count.
inline bool removesOutliers(const PipelineStages& stages) {
  return stages.statisticalOutliers || stages.radiusOutliers;
}

/// Throws InvalidArgument, naming the frame `name`, when `stages` need SNR values a frame
/// of height x width lacks (`hasSNR`), or a downsample block larger than the frame.
void checkFrameFits(const PipelineStages& stages, int height, int width, bool hasSNR, const std::string& name);

/// The matrix that carries normals along the affine map `m` (x -> A x + t): A^-T, with
/// no translation; normals mapped by it are renormalized afterwards. Throws
/// InvalidArgument when A is singular.
Matrix4x4 normalMatrixOf(const Matrix4x4& m);

/// The normals stage on the device (`cloud` downsampled, not yet transformed): central
/// differences, or the plane fit over stages.normalWindow. With `onlyWhereKept` and an
/// ROI, the plane fit skips the points the ROI removes after the transform: for a result
/// that drops those points, whose normals nobody then sees.
DeviceArray<NormalXYZ> gridNormals(const PointCloud& cloud, const PipelineStages& stages, bool onlyWhereKept,
                                   StreamOrQueue sq);

}  // namespace devicearray::pipeline_detail
