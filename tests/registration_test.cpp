// localPointCloudRegistration on views of the synthetic scene taken from known camera
// poses (SynthOptions::cameraPose), on every device: the poses are recovered, views
// that do not overlap are reported as such, and bad arguments are refused.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <numbers>
#include <string>

#include "devicearray/devicearray.hpp"
#include "devicearray/io.hpp"
#include "test_support.hpp"

namespace {

using namespace devicearray;

/// Rotation by rx, ry, rz degrees about x, then y, then z, then translation t (mm).
Matrix4x4 pose(double rx, double ry, double rz, double tx, double ty, double tz) {
  const double d = std::numbers::pi / 180.0;
  const double cx = std::cos(rx * d), sx = std::sin(rx * d), cy = std::cos(ry * d), sy = std::sin(ry * d),
               cz = std::cos(rz * d), sz = std::sin(rz * d);
  const double r[9] = {cz * cy, cz * sy * sx - sz * cx, cz * sy * cx + sz * sx, sz * cy, sz * sy * sx + cz * cx,
                       sz * sy * cx - cz * sx, -sy, cy * sx, cy * cx};
  return {float(r[0]), float(r[1]), float(r[2]), float(tx), float(r[3]), float(r[4]), float(r[5]), float(ty),
          float(r[6]), float(r[7]), float(r[8]), float(tz), 0, 0, 0, 1};
}

Matrix4x4 multiply(const Matrix4x4& a, const Matrix4x4& b) {
  Matrix4x4 r{};
  for (int i = 0; i < 4; ++i)
    for (int j = 0; j < 4; ++j) {
      double s = 0;
      for (int k = 0; k < 4; ++k) s += double(a[4 * i + k]) * b[4 * k + j];
      r[std::size_t(4 * i + j)] = float(s);
    }
  return r;
}

/// The rotation angle (degrees) of a^T b and the distance of the translations (mm).
std::pair<double, double> difference(const Matrix4x4& a, const Matrix4x4& b) {
  double trace = 0;
  for (int i = 0; i < 3; ++i)
    for (int k = 0; k < 3; ++k) trace += double(a[4 * k + i]) * b[4 * k + i];
  const double angle = std::acos(std::clamp((trace - 1) / 2, -1.0, 1.0)) * 180.0 / std::numbers::pi;
  const double dt = std::hypot(a[3] - b[3], a[7] - b[7], a[11] - b[11]);
  return {angle, dt};
}

/// A quarter-resolution view of the default scene from `cameraPose`, default noise.
HostPointCloud view(const Matrix4x4& cameraPose) {
  SynthOptions o;
  o.camera = PinholeCamera::withFieldOfView(480, 300, 60.0);
  o.cameraPose = cameraPose;
  o.withColors = false;
  o.withSNR = false;
  return synthesizeScene(o);
}

class RegistrationTest : public testing::TestWithParam<ComputeDevice> {
 protected:
  ComputeDevice dev() const { return GetParam(); }
};

TEST_P(RegistrationTest, RecoversKnownCameraPoses) {
  const UnorganizedPointCloud target = UnorganizedPointCloud::fromHost(view(identityMatrix4x4()), dev());
  struct Case {
    Matrix4x4 truth;
    Matrix4x4 error;  // how far the initial guess is off
  };
  const Case cases[] = {
      {pose(4, -10, 2, 50, -20, 10), pose(0.3, -0.4, 0.2, 3, -2, 2)},
      {pose(-6, 5, -3, -30, 40, -50), pose(-0.4, 0.3, 0.3, -3, 3, -2)},
  };
  for (const Case& c : cases) {
    const UnorganizedPointCloud source = UnorganizedPointCloud::fromHost(view(c.truth), dev());
    // The error is applied in the target's frame, about the scene (1.3 m ahead).
    const Matrix4x4 toScene = pose(0, 0, 0, 0, 0, 1300), fromScene = pose(0, 0, 0, 0, 0, -1300);
    const Matrix4x4 initial = multiply(toScene, multiply(c.error, multiply(fromScene, c.truth)));
    const LocalPointCloudRegistrationResult r = localPointCloudRegistration(target, source, {}, initial);
    const auto [angle, shift] = difference(r.transform(), c.truth);
    EXPECT_TRUE(r.converged());
    EXPECT_LT(angle, 0.1) << "rotation error in degrees";
    EXPECT_LT(shift, 0.5) << "translation error in mm";
    EXPECT_GT(r.sourceCoverage(), 0.5f);
    EXPECT_LE(r.sourceCoverage(), 1.0f);
    EXPECT_GT(r.rootMeanSquareError(), 0.0f);
    EXPECT_LT(r.rootMeanSquareError(), 2.0f);
  }
}

TEST_P(RegistrationTest, NonOverlappingViewsDoNotConverge) {
  // The left and right parts of one view, 100 mm apart: nothing pairs up.
  const HostPointCloud whole = view(identityMatrix4x4());
  HostPointCloud left, right;
  for (std::size_t i = 0; i < whole.size(); ++i) {
    if (!whole.isValid(i)) continue;
    HostPointCloud& part = whole.xyz[3 * i] < -50.0f ? left : whole.xyz[3 * i] > 50.0f ? right : left;
    if (std::fabs(whole.xyz[3 * i]) <= 50.0f) continue;
    part.xyz.insert(part.xyz.end(), whole.xyz.begin() + std::ptrdiff_t(3 * i), whole.xyz.begin() + std::ptrdiff_t(3 * i + 3));
  }
  const UnorganizedPointCloud target = UnorganizedPointCloud::fromHost(left, dev());
  const UnorganizedPointCloud source = UnorganizedPointCloud::fromHost(right, dev());
  const LocalPointCloudRegistrationResult r = localPointCloudRegistration(target, source);
  EXPECT_FALSE(r.converged());
  EXPECT_LT(r.sourceCoverage(), 0.05f);
  // Moved far away: no pair at all.
  const LocalPointCloudRegistrationResult far =
      localPointCloudRegistration(target, target, {}, pose(0, 0, 0, 0, 0, 5000));
  EXPECT_FALSE(far.converged());
  EXPECT_EQ(far.sourceCoverage(), 0.0f);
}

TEST_P(RegistrationTest, IdenticalCloudsGiveIdentityOnTheDevicesStream) {
  const UnorganizedPointCloud cloud = UnorganizedPointCloud::fromHost(view(identityMatrix4x4()), dev());
  LocalPointCloudRegistrationParameters p;
  p.maxCorrespondenceDistance = 5.0f;
  const LocalPointCloudRegistrationResult r =
      localPointCloudRegistration(cloud, cloud, p, identityMatrix4x4(), dev().sdkStreamOrQueue());
  const auto [angle, shift] = difference(r.transform(), identityMatrix4x4());
  EXPECT_TRUE(r.converged());
  EXPECT_LT(angle, 1e-3);
  EXPECT_LT(shift, 1e-2);
  EXPECT_NEAR(r.sourceCoverage(), 1.0f, 1e-3);  // points without a normal pair with none
  EXPECT_LT(r.rootMeanSquareError(), 1e-2f);
}

TEST_P(RegistrationTest, RefusesBadArguments) {
  const UnorganizedPointCloud cloud = UnorganizedPointCloud::fromHost(view(identityMatrix4x4()), dev());
  LocalPointCloudRegistrationParameters p;
  p.maxCorrespondenceDistance = 0.0f;
  datest::expectError(
      ErrorCode::InvalidArgument, [&] { localPointCloudRegistration(cloud, cloud, p); }, "maxCorrespondenceDistance");
  p = {};
  p.maxIterations = -1;
  datest::expectError(
      ErrorCode::InvalidArgument, [&] { localPointCloudRegistration(cloud, cloud, p); }, "maxIterations");
  Matrix4x4 skew = identityMatrix4x4();
  skew[12] = 1.0f;
  datest::expectError(
      ErrorCode::InvalidArgument, [&] { localPointCloudRegistration(cloud, cloud, {}, skew); }, "non-affine");
  datest::expectError(
      ErrorCode::InvalidArgument, [&] { localPointCloudRegistration(cloud, UnorganizedPointCloud(), {}); },
      "empty source");
}

TEST_P(RegistrationTest, RefusesCoverageThresholdsOutsideZeroToOne) {
  const UnorganizedPointCloud cloud = UnorganizedPointCloud::fromHost(view(identityMatrix4x4()), dev());
  const auto expectRefused = [&](const LocalPointCloudRegistrationParameters& p, const std::string& mentions) {
    try {
      (void)localPointCloudRegistration(cloud, cloud, p);
      ADD_FAILURE() << "accepted; expected an error naming " << mentions;
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::InvalidArgument) << e.what();
      EXPECT_NE(std::string(e.what()).find(mentions), std::string::npos) << e.what();
    }
  };
  // A coverage is a fraction of the source points: a minimum above 1 could never be met.
  for (const float value : {1.0001f, 2.0f, 1e30f}) {
    LocalPointCloudRegistrationParameters p;
    p.minSourceCoverage = value;
    expectRefused(p, "minSourceCoverage is " + std::to_string(value) + "; it is a fraction of the source points "
                     "and must be in [0, 1]");
    p = {};
    p.coverageChangeThreshold = value;
    expectRefused(p, "coverageChangeThreshold is " + std::to_string(value) + "; it is a fraction");
  }
  LocalPointCloudRegistrationParameters negative;
  negative.minSourceCoverage = -0.5f;
  expectRefused(negative, "minSourceCoverage is -0.500000; it must be finite and >= 0");
  // The ends of [0, 1] are fractions too.
  LocalPointCloudRegistrationParameters ends;
  ends.maxIterations = 1;
  ends.minSourceCoverage = 1.0f;
  ends.coverageChangeThreshold = 0.0f;
  EXPECT_NO_THROW((void)localPointCloudRegistration(cloud, cloud, ends));
  ends.minSourceCoverage = 0.0f;
  ends.coverageChangeThreshold = 1.0f;
  const LocalPointCloudRegistrationResult r = localPointCloudRegistration(cloud, cloud, ends);
  EXPECT_TRUE(r.converged());
  EXPECT_NEAR(r.sourceCoverage(), 1.0f, 1e-3);
}

DATEST_INSTANTIATE_OVER_DEVICES(RegistrationTest);

}  // namespace
