// PointCloud camera filters: SNR noise removal, outlier removal, edge-preserving depth
// smoothing and hole repair. Kernels: src/kernels/camera_filters.h.
#include <cmath>
#include <string>

#include "backend/filter_signatures.h"
#include "pointcloud/pointcloud_internal.hpp"

namespace devicearray {

namespace kernels = detail::kernels;
namespace pc = detail::pc;

namespace {

void checkFinite(float value, const char* what, const char* fn) {
  if (!std::isfinite(value))
    pc::raise(ErrorCode::InvalidArgument, fn, std::string(what) + " must be finite, not " + std::to_string(value));
}

void checkDistance(float value, const char* what, const char* fn) {
  checkFinite(value, what, fn);
  if (value < 0)
    pc::raise(ErrorCode::InvalidArgument, fn, std::string(what) + " must be >= 0, not " + std::to_string(value));
}

detail::LaunchGeometry pixelGrid(const PointCloud& cloud) {
  return detail::LaunchGeometry::grid(static_cast<std::size_t>(cloud.width()), static_cast<std::size_t>(cloud.height()));
}

}  // namespace

// ------------------------------------------------------------------ noise ----

PointCloud PointCloud::noiseFiltered(float snrThreshold, StreamOrQueue sq) const {
  constexpr const char* fn = "PointCloud::noiseFiltered";
  const auto q = pc::queueOf(device(), sq, fn);
  checkFinite(snrThreshold, "the SNR threshold", fn);
  if (!hasSNRs()) pc::raise(ErrorCode::InvalidState, fn, "the cloud has no SNR values");
  PointCloud out = *this;
  out.xyz_ = pc::allocateOrganized<PointXYZ>(*q, height_, width_, fn);
  detail::OrderedUse use(*q, {pc::storageOf(xyz_), pc::storageOf(snrs_), pc::storageOf(out.xyz_)});
  detail::launch<kernels::da_cf_snr>(*q, detail::LaunchGeometry::items(size()), pc::i64(size()), snrThreshold, pc::arg(snrs_),
                                     pc::arg(xyz_), pc::arg(out.xyz_));
  use.commit();
  return out;
}
PointCloud PointCloud::noiseFiltered(float snrThreshold) const {
  PointCloud out = noiseFiltered(snrThreshold, device().sdkStreamOrQueue());
  pc::finishDeviceQueue(device());
  return out;
}
void PointCloud::filterNoise(float snrThreshold, StreamOrQueue sq) { *this = noiseFiltered(snrThreshold, sq); }
void PointCloud::filterNoise(float snrThreshold) { *this = noiseFiltered(snrThreshold); }

// --------------------------------------------------------------- outliers ----

PointCloud PointCloud::outliersFiltered(float maxDistance, StreamOrQueue sq) const {
  constexpr const char* fn = "PointCloud::outliersFiltered";
  const auto q = pc::queueOf(device(), sq, fn);
  checkDistance(maxDistance, "the maximum distance", fn);
  PointCloud out = *this;
  out.xyz_ = pc::allocateOrganized<PointXYZ>(*q, height_, width_, fn);
  detail::OrderedUse use(*q, {pc::storageOf(xyz_), pc::storageOf(out.xyz_)});
  detail::launch<kernels::da_cf_outlier>(*q, pixelGrid(*this), width_, height_, maxDistance, pc::arg(xyz_),
                                         pc::arg(out.xyz_));
  use.commit();
  return out;
}
PointCloud PointCloud::outliersFiltered(float maxDistance) const {
  PointCloud out = outliersFiltered(maxDistance, device().sdkStreamOrQueue());
  pc::finishDeviceQueue(device());
  return out;
}
void PointCloud::filterOutliers(float maxDistance, StreamOrQueue sq) { *this = outliersFiltered(maxDistance, sq); }
void PointCloud::filterOutliers(float maxDistance) { *this = outliersFiltered(maxDistance); }

// -------------------------------------------------------------- smoothing ----

PointCloud PointCloud::depthSmoothed(float sigma, float maxDepthDifference, int radius, StreamOrQueue sq) const {
  constexpr const char* fn = "PointCloud::depthSmoothed";
  const auto q = pc::queueOf(device(), sq, fn);
  checkFinite(sigma, "sigma", fn);
  if (sigma <= 0) pc::raise(ErrorCode::InvalidArgument, fn, "sigma must be > 0, not " + std::to_string(sigma));
  checkDistance(maxDepthDifference, "the maximum depth difference", fn);
  if (radius < 0 || radius > DA_CF_MAX_SMOOTHING_RADIUS)
    pc::raise(ErrorCode::InvalidArgument, fn,
              "the window radius must be in [0, " + std::to_string(DA_CF_MAX_SMOOTHING_RADIUS) + "], not " +
                  std::to_string(radius));
  if (radius == 0)
    radius = static_cast<int>(std::fmin(std::ceil(2.0 * sigma), double{DA_CF_MAX_SMOOTHING_RADIUS}));
  PointCloud out = *this;
  out.xyz_ = pc::allocateOrganized<PointXYZ>(*q, height_, width_, fn);
  detail::OrderedUse use(*q, {pc::storageOf(xyz_), pc::storageOf(out.xyz_)});
  detail::launch<kernels::da_cf_smooth>(*q, pixelGrid(*this), width_, height_, radius, sigma, maxDepthDifference,
                                        pc::arg(xyz_), pc::arg(out.xyz_));
  use.commit();
  return out;
}
PointCloud PointCloud::depthSmoothed(float sigma, float maxDepthDifference, int radius) const {
  PointCloud out = depthSmoothed(sigma, maxDepthDifference, radius, device().sdkStreamOrQueue());
  pc::finishDeviceQueue(device());
  return out;
}
void PointCloud::smoothDepth(float sigma, float maxDepthDifference, int radius, StreamOrQueue sq) {
  *this = depthSmoothed(sigma, maxDepthDifference, radius, sq);
}
void PointCloud::smoothDepth(float sigma, float maxDepthDifference, int radius) {
  *this = depthSmoothed(sigma, maxDepthDifference, radius);
}

// ------------------------------------------------------------------ holes ----

PointCloud PointCloud::holesFilled(int maxHoleSize, float maxDepthDifference, StreamOrQueue sq) const {
  constexpr const char* fn = "PointCloud::holesFilled";
  constexpr int kLargestHole = 1024;
  const auto q = pc::queueOf(device(), sq, fn);
  if (maxHoleSize < 1 || maxHoleSize > kLargestHole)
    pc::raise(ErrorCode::InvalidArgument, fn,
              "the hole size must be in [1, " + std::to_string(kLargestHole) + "], not " + std::to_string(maxHoleSize));
  checkDistance(maxDepthDifference, "the maximum depth difference", fn);
  PointCloud out = *this;
  out.xyz_ = pc::allocateOrganized<PointXYZ>(*q, height_, width_, fn);
  if (hasColors()) out.colors_ = pc::allocateOrganized<ColorRGBA>(*q, height_, width_, fn);
  if (hasSNRs()) out.snrs_ = pc::allocateOrganized<SNR>(*q, height_, width_, fn);
  const pc::SrgbTables tables = pc::srgbTables(*q);
  detail::OrderedUse use(*q, {pc::storageOf(xyz_), pc::storageOf(colors_), pc::storageOf(snrs_), pc::storageOf(out.xyz_),
                      pc::storageOf(out.colors_), pc::storageOf(out.snrs_), tables.owner.get()});
  detail::launch<kernels::da_cf_fill>(*q, pixelGrid(*this), width_, height_, maxHoleSize, maxDepthDifference,
                                      hasColors() ? 1 : 0, colorSpace_ == ColorSpace::srgb ? 1 : 0, hasSNRs() ? 1 : 0,
                                      pc::arg(xyz_), pc::argOr(colors_, xyz_), pc::argOr(snrs_, xyz_), pc::arg(out.xyz_),
                                      pc::argOr(out.colors_, out.xyz_), pc::argOr(out.snrs_, out.xyz_), tables.decode,
                                      tables.encode);
  use.commit();
  return out;
}
PointCloud PointCloud::holesFilled(int maxHoleSize, float maxDepthDifference) const {
  PointCloud out = holesFilled(maxHoleSize, maxDepthDifference, device().sdkStreamOrQueue());
  pc::finishDeviceQueue(device());
  return out;
}
void PointCloud::fillHoles(int maxHoleSize, float maxDepthDifference, StreamOrQueue sq) {
  *this = holesFilled(maxHoleSize, maxDepthDifference, sq);
}
void PointCloud::fillHoles(int maxHoleSize, float maxDepthDifference) {
  *this = holesFilled(maxHoleSize, maxDepthDifference);
}

}  // namespace devicearray
