// devicearray — synthetic scenes: a realistic organized point cloud of a scene as a
// structured-light 3-D camera sees it, for demos, tests and benchmarks.
//
// Host only: nothing here touches a GPU, takes a stream or blocks on device work.
// Every failure throws devicearray::Error.
#pragma once

#include <array>
#include <cstdint>
#include <functional>

#include "devicearray/host_point_cloud.hpp"
#include "devicearray/pinhole_camera.hpp"

namespace devicearray {

/// What synthesizeScene() builds. The defaults model a structured-light 3-D camera
/// 1.1 m above a floor, looking down at about 40°, with a projector 150 mm to the
/// right of the camera (whose shadows become holes, like on a real camera).
struct SynthOptions {
  PinholeCamera camera = PinholeCamera::withFieldOfView(1920, 1200, 60.0);  ///< the 3-D camera's intrinsics
  std::uint64_t seed = 1;               ///< same seed, same options => bit-identical cloud
  double projectorBaselineMm = 150.0;   ///< projector offset along +x; 0 disables shadows
  double depthNoiseCoefficient = 4e-7;  ///< sigma_z = coefficient * z^2 (z in mm): 0.4 mm at 1 m
  double dropoutProbability = 0.002;    ///< random missing pixels, in [0, 1]
  float minSNR = 2.0f;                  ///< pixels whose SNR falls below this are missing
  bool withColors = true;  ///< give the cloud colours
  bool withSNR = true;     ///< give the cloud SNR values
  bool withNormals = false;  ///< the exact surface normals (a camera computes them later)
  /// Where the camera (with its projector) stands, relative to the default camera 1.1 m
  /// above the floor: a rigid transform, row-major like Matrix4x4, that maps points of
  /// this camera's frame into the default camera's frame (identity: the default view).
  /// Two views of one scene taken from poses Pa and Pb are registered by Pa^-1 Pb
  /// (points of view b into view a's frame).
  std::array<float, 16> cameraPose = {1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1};
  /// Called with the fraction done (0..1) from the calling thread, a few hundred times
  /// at most; may be empty.
  std::function<void(double)> progress;

  /// Throws InvalidArgument naming the bad field (camera, non-finite or negative
  /// baseline/noise, probability outside [0, 1], negative minSNR, a camera pose that is
  /// not a finite rigid transform).
  void validate() const;
};

/// Renders a realistic organized point cloud of a scene as a 3-D camera sees it: a
/// floor with tiles and a few dark stains, several boxes and spheres at different
/// depths (placement and colours vary with `seed`), Lambert-shaded colours, SNR that
/// falls with distance and grazing angle, Gaussian depth noise along each ray with
/// sigma proportional to z², and missing points at projector shadows, depth edges,
/// dark or grazing surfaces (SNR below minSNR), outside the scene and at random
/// dropouts. Deterministic for a given SynthOptions (the random numbers are a function
/// of `seed` and the pixel, independent of the platform's <random>). Blocking, on the
/// calling thread. Throws what SynthOptions::validate() throws, and OutOfRange when the
/// camera's pixel count overflows.
HostPointCloud synthesizeScene(const SynthOptions& options);

}  // namespace devicearray
