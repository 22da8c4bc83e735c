// Point-to-plane ICP between two unorganized clouds (kernels:
// src/kernels/pointcloud_registration.h). The device pairs the points and sums the 6x6
// normal equations; the host solves them in double and composes the transform.
#include "devicearray/registration.hpp"

#include <algorithm>
#include <array>
#include <cmath>

#include "backend/registration_signatures.h"
#include "pointcloud/neighbour_grid.hpp"
#include "pointcloud/normal_estimation.hpp"
#include "pointcloud/pointcloud_internal.hpp"
#include "pointcloud/scratch_layout.hpp"

namespace devicearray {

namespace pc = detail::pc;

namespace {

using Transform = std::array<double, 16>;  // row-major, affine

Transform toDouble(const Matrix4x4& m) {
  Transform t{};
  for (std::size_t i = 0; i < 16; ++i) t[i] = m[i];
  return t;
}

Matrix4x4 toFloat(const Transform& t) {
  Matrix4x4 m{};
  for (std::size_t i = 0; i < 16; ++i) m[i] = static_cast<float>(t[i]);
  return m;
}

Transform compose(const Transform& a, const Transform& b) {
  Transform r{};
  for (int i = 0; i < 4; ++i)
    for (int j = 0; j < 4; ++j) {
      double s = 0;
      for (int k = 0; k < 4; ++k) s += a[4 * i + k] * b[4 * k + j];
      r[static_cast<std::size_t>(4 * i + j)] = s;
    }
  return r;
}

/// Solves A x = b for a symmetric positive definite 6x6 A (Cholesky); false when A is
/// singular to working precision (the correspondences do not fix all six degrees of
/// freedom).
bool solveSymmetric6(std::array<double, 36> a, std::array<double, 6> b, std::array<double, 6>& x) {
  double largest = 0;
  for (int i = 0; i < 6; ++i) largest = std::max(largest, a[static_cast<std::size_t>(7 * i)]);
  if (!(largest > 0)) return false;
  for (int j = 0; j < 6; ++j) {
    double d = a[static_cast<std::size_t>(7 * j)];
    for (int k = 0; k < j; ++k) d -= a[static_cast<std::size_t>(6 * j + k)] * a[static_cast<std::size_t>(6 * j + k)];
    if (!(d > 1e-12 * largest)) return false;
    const double l = std::sqrt(d);
    a[static_cast<std::size_t>(7 * j)] = l;
    for (int i = j + 1; i < 6; ++i) {
      double s = a[static_cast<std::size_t>(6 * i + j)];
      for (int k = 0; k < j; ++k)
        s -= a[static_cast<std::size_t>(6 * i + k)] * a[static_cast<std::size_t>(6 * j + k)];
      a[static_cast<std::size_t>(6 * i + j)] = s / l;
    }
  }
  for (int i = 0; i < 6; ++i) {  // L y = b
    double s = b[static_cast<std::size_t>(i)];
    for (int k = 0; k < i; ++k) s -= a[static_cast<std::size_t>(6 * i + k)] * b[static_cast<std::size_t>(k)];
    b[static_cast<std::size_t>(i)] = s / a[static_cast<std::size_t>(7 * i)];
  }
  for (int i = 5; i >= 0; --i) {  // L^T x = y
    double s = b[static_cast<std::size_t>(i)];
    for (int k = i + 1; k < 6; ++k) s -= a[static_cast<std::size_t>(6 * k + i)] * x[static_cast<std::size_t>(k)];
    x[static_cast<std::size_t>(i)] = s / a[static_cast<std::size_t>(7 * i)];
  }
  return true;
}

/// The rigid motion p -> R(w) (p - c) + c + t, R(w) the rotation by |w| about w.
Transform smallMotion(const std::array<double, 6>& x, const std::array<double, 3>& c) {
  const double wx = x[0], wy = x[1], wz = x[2];
  const double theta = std::sqrt(wx * wx + wy * wy + wz * wz);
  // R = I + a [w]x + b [w]x^2 (Rodrigues), with the series where theta is tiny.
  const double a = theta < 1e-8 ? 1.0 : std::sin(theta) / theta;
  const double b = theta < 1e-8 ? 0.5 : (1.0 - std::cos(theta)) / (theta * theta);
  const double k[9] = {0, -wz, wy, wz, 0, -wx, -wy, wx, 0};
  double k2[9];
  for (int i = 0; i < 3; ++i)
    for (int j = 0; j < 3; ++j) {
      double s = 0;
      for (int m = 0; m < 3; ++m) s += k[3 * i + m] * k[3 * m + j];
      k2[3 * i + j] = s;
    }
  Transform t{};
  for (int i = 0; i < 3; ++i)
    for (int j = 0; j < 3; ++j)
      t[static_cast<std::size_t>(4 * i + j)] = (i == j ? 1.0 : 0.0) + a * k[3 * i + j] + b * k2[3 * i + j];
  for (int i = 0; i < 3; ++i) {
    double rc = 0;
    for (int j = 0; j < 3; ++j) rc += t[static_cast<std::size_t>(4 * i + j)] * c[static_cast<std::size_t>(j)];
    t[static_cast<std::size_t>(4 * i + 3)] = c[static_cast<std::size_t>(i)] - rc + x[static_cast<std::size_t>(3 + i)];
  }
  t[15] = 1.0;
  return t;
}

void checkParameters(const LocalPointCloudRegistrationParameters& p, const char* fn) {
  if (!(std::isfinite(p.maxCorrespondenceDistance) && p.maxCorrespondenceDistance > 0.0f))
    pc::raise(ErrorCode::InvalidArgument, fn,
              "maxCorrespondenceDistance is " + std::to_string(p.maxCorrespondenceDistance) +
                  "; it must be finite and > 0");
  if (p.maxIterations < 0)
    pc::raise(ErrorCode::InvalidArgument, fn,
              "maxIterations is " + std::to_string(p.maxIterations) + "; it must be >= 0");
  const float thresholds[3] = {p.rmsChangeThreshold, p.coverageChangeThreshold, p.minSourceCoverage};
  const char* names[3] = {"rmsChangeThreshold", "coverageChangeThreshold", "minSourceCoverage"};
  for (int i = 0; i < 3; ++i)
    if (!(std::isfinite(thresholds[i]) && thresholds[i] >= 0.0f))
      pc::raise(ErrorCode::InvalidArgument, fn,
                std::string(names[i]) + " is " + std::to_string(thresholds[i]) + "; it must be finite and >= 0");
  // Coverage is a fraction: above 1, minSourceCoverage could never be met.
  for (int i = 1; i < 3; ++i)
    if (thresholds[i] > 1.0f)
      pc::raise(ErrorCode::InvalidArgument, fn,
                std::string(names[i]) + " is " + std::to_string(thresholds[i]) +
                    "; it is a fraction of the source points and must be in [0, 1]");
}

}  // namespace

LocalPointCloudRegistrationResult localPointCloudRegistration(const UnorganizedPointCloud& target,
                                                              const UnorganizedPointCloud& source,
                                                              const LocalPointCloudRegistrationParameters& parameters,
                                                              const Matrix4x4& initialTransform,
                                                              const StreamOrQueue& sq) {
  constexpr const char* fn = "localPointCloudRegistration";
  checkParameters(parameters, fn);
  pc::checkAffine(initialTransform, fn);
  if (target.isEmpty()) pc::raise(ErrorCode::InvalidArgument, fn, "the target cloud has no points");
  if (source.isEmpty()) pc::raise(ErrorCode::InvalidArgument, fn, "the source cloud has no points");
  if (target.device() != source.device())
    pc::raise(ErrorCode::InvalidArgument, fn,
              "the target lives on " + target.device().toString() + " but the source on " +
                  source.device().toString());
  const auto q = pc::queueOf(target.device(), sq, fn);
  const std::size_t targetCount = target.size(), sourceCount = source.size();
  const detail::BufferRef targetXyz = pc::bufferOf(target.storedXYZ());
  const detail::BufferRef sourceXyz = pc::bufferOf(source.storedXYZ());
  const Matrix4x4& targetPose = target.transformationMatrix();
  const DeviceArray<NormalXYZ> targetNormals =
      target.hasNormals() ? target.storedNormals()
                          : pc::estimateNormals(*q, targetXyz, targetCount, UnorganizedPointCloud::kDefaultNormalNeighbours,
                                                {targetPose[3], targetPose[7], targetPose[11]}, fn);

  // Cells as large as the correspondence distance: one ring finds every candidate.
  const pc::NeighbourGrid grid(*q, targetXyz, targetCount, parameters.maxCorrespondenceDistance, fn);
  const int groups = static_cast<int>(
      std::clamp<std::size_t>((sourceCount + DA_ICP_GROUP - 1) / DA_ICP_GROUP, 1, DA_ICP_MAX_GROUPS));
  pc::ScratchLayout layout;
  const std::size_t sortedNormalsAt = layout.add(3 * targetCount, sizeof(float), fn);
  const std::size_t partialsAt = layout.add(static_cast<std::size_t>(groups) * DA_ICP_TERMS, sizeof(float), fn);
  const std::size_t sumsAt = layout.add(4 + DA_ICP_TERMS, sizeof(double), fn);
  const auto scratch = layout.allocate(*q);
  grid.gatherSorted(*q, pc::bufferOf(targetNormals), {scratch.get(), sortedNormalsAt});

  // Each step linearizes the rotation about the moved source's centroid, where rotation
  // and translation are least coupled.
  std::array<double, 3> sourceCentroid{0, 0, 0};
  {
    detail::OrderedUse use(*q, {pc::storageOf(source.storedXYZ()), scratch.get()});
    q->device()->primitives().sumValidXYZ(*q, sourceXyz, sourceCount, {scratch.get(), sumsAt});
    use.commit();
    double sums[4];
    pc::readBack(*q, scratch.get(), sumsAt, sums, sizeof(sums));
    if (sums[3] > 0) sourceCentroid = {sums[0] / sums[3], sums[1] / sums[3], sums[2] / sums[3]};
  }
  std::array<double, 3> centre{};
  const float maxDist2 = parameters.maxCorrespondenceDistance * parameters.maxCorrespondenceDistance;
  auto evaluate = [&](const Matrix4x4& m, float* sums) {
    detail::OrderedUse use(*q, {pc::storageOf(source.storedXYZ()), grid.storage(), scratch.get()});
    detail::launch<detail::kernels::da_icp_terms>(
        *q, detail::LaunchGeometry::groups(static_cast<std::size_t>(groups), DA_ICP_GROUP), pc::i64(sourceCount), groups,
        maxDist2, grid.mask(), m[0], m[1], m[2], m[3], m[4], m[5], m[6], m[7], m[8], m[9], m[10], m[11],
        static_cast<float>(centre[0]), static_cast<float>(centre[1]), static_cast<float>(centre[2]), sourceXyz,
        grid.grid(), grid.sortedXyz(), pc::arg(scratch, sortedNormalsAt), grid.claims(), grid.slotKeys(),
        grid.slotRanges(), pc::arg(scratch, partialsAt));
    detail::launch<detail::kernels::da_icp_sum>(*q, detail::LaunchGeometry::items(DA_ICP_TERMS), groups, pc::arg(scratch, partialsAt),
                                        pc::arg(scratch, sumsAt));
    use.commit();
    pc::readBack(*q, scratch.get(), sumsAt, sums, DA_ICP_TERMS * sizeof(float));
  };

  Transform estimate = toDouble(initialTransform);
  bool converged = false;
  float coverage = 0.0f, rms = std::nanf("");
  float previousCoverage = 0.0f, previousRms = 0.0f;
  for (int iteration = 0;; ++iteration) {
    for (std::size_t i = 0; i < 3; ++i)
      centre[i] = estimate[4 * i] * sourceCentroid[0] + estimate[4 * i + 1] * sourceCentroid[1] +
                  estimate[4 * i + 2] * sourceCentroid[2] + estimate[4 * i + 3];
    float sums[DA_ICP_TERMS];
    evaluate(toFloat(estimate), sums);
    const double pairs = sums[28];
    coverage = static_cast<float>(pairs / static_cast<double>(sourceCount));
    rms = pairs > 0 ? static_cast<float>(std::sqrt(std::max(0.0, double(sums[27])) / pairs)) : std::nanf("");
    if (iteration > 0 && std::fabs(rms - previousRms) < parameters.rmsChangeThreshold &&
        std::fabs(coverage - previousCoverage) < parameters.coverageChangeThreshold) {
      converged = true;
      break;
    }
    if (iteration == parameters.maxIterations || pairs < 6) break;
    std::array<double, 36> a{};
    std::array<double, 6> b{}, x{};
    for (int u = 0, t = 0; u < 6; ++u)
      for (int v = u; v < 6; ++v, ++t)
        a[static_cast<std::size_t>(6 * u + v)] = a[static_cast<std::size_t>(6 * v + u)] = sums[t];
    for (int u = 0; u < 6; ++u) b[static_cast<std::size_t>(u)] = -double(sums[21 + u]);
    if (!solveSymmetric6(a, b, x)) break;
    estimate = compose(smallMotion(x, centre), estimate);
    previousCoverage = coverage;
    previousRms = rms;
  }
  return LocalPointCloudRegistrationResult(toFloat(estimate), converged && coverage >= parameters.minSourceCoverage,
                                           coverage, rms);
}

LocalPointCloudRegistrationResult localPointCloudRegistration(const UnorganizedPointCloud& target,
                                                              const UnorganizedPointCloud& source,
                                                              const LocalPointCloudRegistrationParameters& parameters,
                                                              const Matrix4x4& initialTransform) {
  if (target.isEmpty())
    pc::raise(ErrorCode::InvalidArgument, "localPointCloudRegistration", "the target cloud has no points");
  return localPointCloudRegistration(target, source, parameters, initialTransform,
                                     target.device().sdkStreamOrQueue());
}

}  // namespace devicearray
