// devicearray — point clouds and images that live on one ComputeDevice.
//
// Storage. A PointCloud is organized (height x width, point (r, c) at r * width + c)
// and holds XYZ (PointXYZ, NaN = missing point), optionally colour and SNR. Colour is
// stored as the 8-bit RGBA codes it arrived in, together with their colour space
// (colorSpace()): ColorSpace::srgb for colours that came sRGB-encoded (host clouds,
// hence files and the synthetic scene; ColorRGBA_SRGB arrays), ColorSpace::linear for
// linear ColorRGBA arrays. Nothing is lost on the way in: an sRGB cloud hands its codes
// back unchanged through every *_SRGB format and toHost(), and every other colour
// format is what convert<>() gives for those codes. Operations that combine colours
// (block and voxel means, hole filling) average in linear light — sRGB codes are
// decoded, averaged and encoded again — so the results are physically meaningful
// averages of light in either space. Alpha is linear in both.
//
// Streams (docs/stream-queue-context.md). Every operation has an overload taking a
// StreamOrQueue: it enqueues its work there, returns without blocking (unless stated)
// and what it hands out is ready on that stream. The overloads without a stream run on
// the device's own queue and block until their work is complete. Operations whose
// output size depends on the data (toUnorganizedPointCloud, voxelDownsampled) hand out
// an UnorganizedPointCloud whose size is known after an event, and
// UnorganizedPointCloud::center leaves its translation on the device until
// transformationMatrix() reads it: see that class.
//
// Errors. Every function throws devicearray::Error: InvalidArgument for bad input
// (named in the message), InvalidState for an empty cloud where data is required,
// OutOfMemory, BackendError. Operations give the strong guarantee: a throwing call
// leaves the cloud unchanged (device work already enqueued may have written only
// memory that no handle of the cloud refers to).
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <type_traits>
#include <vector>

#include "devicearray/device.hpp"
#include "devicearray/device_array.hpp"
#include "devicearray/formats.hpp"
#include "devicearray/gpu_mat_nd.hpp"
#include "devicearray/host_mat.hpp"
#include "devicearray/io.hpp"

namespace devicearray {

enum class Downsampling { by2x2, by3x3, by4x4 };

/// Row-major 4x4 matrix: element (r, c) at index 4 * r + c. Point transforms require
/// an affine matrix (last row 0 0 0 1).
using Matrix4x4 = std::array<float, 16>;

/// The identity matrix.
constexpr Matrix4x4 identityMatrix4x4() { return {1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1}; }

/// An oriented box: origin O, points A and B spanning its base, and the extent
/// [minExtent, maxExtent] along the base normal n = normalize((A - O) x (B - O)).
/// A point p is inside when its projections onto A - O and B - O lie within
/// [0, |A - O|] and [0, |B - O|] and (p - O) . n lies within [minExtent, maxExtent].
struct RegionOfInterestBox {
  PointXYZ origin{0, 0, 0};  ///< O, a corner of the base
  PointXYZ pointA{0, 0, 0};  ///< A: O -> A is one edge of the base
  PointXYZ pointB{0, 0, 0};  ///< B: O -> B is the other edge of the base
  float minExtent = 0;       ///< lower bound of (p - O) . n
  float maxExtent = 0;       ///< upper bound of (p - O) . n
};

class UnorganizedPointCloud;
namespace detail {
class PointCountWord;
class PendingPointCount;
class PendingTransformation;
struct PointArrays;
}

namespace detail {
/// Internal: stored 8-bit colour codes (a ColorRGBA array) seen as the sRGB codes they
/// hold, and back — the same memory, no conversion.
///@{
DeviceArray<ColorRGBA_SRGB> srgbView(const DeviceArray<ColorRGBA>& codes);
DeviceArray<ColorRGBA> storedCodes(const DeviceArray<ColorRGBA_SRGB>& codes);
///@}
}  // namespace detail

/// An organized point cloud on one device.
///
/// Copies share the device memory (like GpuMat); in-place operations (transform, mask,
/// maskByRegionOfInterest) write that shared memory, so every copy — and every
/// DeviceArray the cloud was built from zero-copy — sees them. Use the *ed variants
/// (transformed, masked, ...) for an independent result. downsample() replaces the
/// cloud's arrays with new ones (copies keep the old ones).
class PointCloud {
 public:
  /// An empty cloud (height() == width() == 0).
  PointCloud() = default;

  /// Zero-copy: the cloud uses the given arrays. `xyz` must be organized and non-empty;
  /// `colors` and `snrs` are optional (empty) or organized with xyz's height, width and
  /// device. Throws InvalidArgument otherwise. Non-blocking (no device work).
  explicit PointCloud(DeviceArray<PointXYZ> xyz, DeviceArray<ColorRGBA> colors = {}, DeviceArray<SNR> snrs = {});
  /// As above with sRGB-encoded colours, kept as they are (colorSpace() is srgb). A
  /// template only so that `{}` for the colours keeps choosing the constructor above.
  template <class Color>
    requires std::is_same_v<Color, ColorRGBA_SRGB>
  PointCloud(DeviceArray<PointXYZ> xyz, DeviceArray<Color> colors, DeviceArray<SNR> snrs = {})
      : PointCloud(std::move(xyz), detail::storedCodes(colors), std::move(snrs)) {
    if (hasColors()) colorSpace_ = ColorSpace::srgb;
  }

  /// Uploads an organized host cloud (its sRGB colours are kept as they are: colorSpace()
  /// is srgb; normals are not uploaded — they are computed from XYZ). Blocking. Throws
  /// InvalidArgument when the cloud fails validate() or is not organized.
  static PointCloud fromHost(const HostPointCloud& cloud, const ComputeDevice& device = ComputeDevice::defaultDevice());
  /// Uploads height x width points from raw host arrays (colors: linear RGBA; colors
  /// and snrs may be null). Blocking. Throws InvalidArgument for null xyz or bad sizes.
  static PointCloud fromHost(int height, int width, const PointXYZ* xyz, const ColorRGBA* colors, const SNR* snrs,
                             const ComputeDevice& device = ComputeDevice::defaultDevice());

  /// Downloads XYZ, sRGB-encoded colours (the stored codes of an sRGB cloud, unchanged)
  /// and SNR (normals left empty). Blocking.
  /// Throws InvalidState for an empty cloud.
  HostPointCloud toHost() const;
  /// A deep copy on `device`, which may be another device of any backend (peer copies
  /// where the devices reach each other's memory, staged through host memory
  /// otherwise), with the same transformationMatrix(). Blocking. Throws InvalidState for
  /// an empty cloud, InvalidArgument for an invalid device.
  PointCloud clone(const ComputeDevice& device) const;

  /// Rows of the cloud (0 when empty).
  int height() const noexcept { return height_; }
  /// Columns of the cloud (0 when empty).
  int width() const noexcept { return width_; }
  /// height() * width() points (valid or missing).
  std::size_t size() const noexcept { return static_cast<std::size_t>(height_) * static_cast<std::size_t>(width_); }
  /// True for a default-constructed cloud.
  bool isEmpty() const noexcept { return xyz_.isEmpty(); }
  /// Whether the cloud has colours / SNR values.
  ///@{
  bool hasColors() const noexcept { return colors_.isValid(); }
  bool hasSNRs() const noexcept { return snrs_.isValid(); }
  ///@}
  /// The colour space of the stored colour codes (see Storage above; linear for a cloud
  /// without colours).
  ColorSpace colorSpace() const noexcept { return colorSpace_; }
  /// Throws InvalidState for an empty cloud.
  ComputeDevice device() const;

  // ---- data access: each returns a new array (a copy), computed on `sq` ----
  /// The points as a new organized array (a copy: writing it leaves the cloud alone),
  /// allocated and computed on `sq`; returns without blocking, ready on `sq`. PointXYZW
  /// has w = 1; PointZ keeps z only. Missing points are NaN. Throws InvalidState for an
  /// empty cloud, InvalidArgument for a stream of another device or backend.
  ///@{
  DeviceArray<PointXYZ> devicePointsXYZ(StreamOrQueue sq) const;
  DeviceArray<PointXYZW> devicePointsXYZW(StreamOrQueue sq) const;
  DeviceArray<PointZ> devicePointsZ(StreamOrQueue sq) const;
  ///@}
  /// Throws InvalidState when the cloud has no SNR.
  DeviceArray<SNR> deviceSNRs(StreamOrQueue sq) const;
  /// Unit normals from the cross product of the horizontal and vertical central
  /// differences of neighbouring valid points (one-sided at borders and next to holes),
  /// NaN where they cannot be computed, oriented towards the camera. The camera is
  /// where the accumulated transformationMatrix() moved the sensor origin, so normals
  /// of a transformed cloud are the rotated normals of the original.
  DeviceArray<NormalXYZ> deviceNormalsXYZ(StreamOrQueue sq) const;
  /// Unit normals of the plane that best fits (least squares: the covariance's
  /// eigenvector of the smallest eigenvalue) the valid points of the windowSize x
  /// windowSize window around each point, oriented towards the camera as above. Points
  /// of the window that lie beyond a depth edge (farther than three grid steps per
  /// window ring, a step being the distance to the nearest valid 4-neighbour) are left
  /// out unless fewer than 3 remain or they lie on a line. Every valid point whose
  /// window holds at least 3 valid points that do not all lie on a line gets a normal;
  /// NaN elsewhere. Far less sensitive to depth noise than the central differences, at
  /// the cost of a larger footprint: kDefaultNormalWindowSize suits the depth noise of
  /// a structured-light camera at full resolution (docs/stitching.md). Throws
  /// InvalidArgument unless windowSize is odd and in [3, 15].
  DeviceArray<NormalXYZ> deviceNormalsXYZ(int windowSize, StreamOrQueue sq) const;
  /// deviceNormalsXYZ(windowSize, sq) for a frame loop that masks the cloud by a region
  /// of interest afterwards: fitted only at the points that maskByRegionOfInterest(keptBy)
  /// keeps once the cloud is transformed by boxFromCloud (identityMatrix4x4() when the box
  /// is in this cloud's frame). The points it removes get NaN without the cost of a fit,
  /// except those within rounding of the box's faces, which are fitted. Every fitted
  /// normal is the one deviceNormalsXYZ(windowSize, sq) gives, since the neighbours are
  /// the whole grid's. Throws what deviceNormalsXYZ(windowSize, sq), transform() and
  /// maskByRegionOfInterest() throw for the window, the matrix and the box.
  DeviceArray<NormalXYZ> deviceNormalsXYZ(int windowSize, const RegionOfInterestBox& keptBy,
                                          const Matrix4x4& boxFromCloud, StreamOrQueue sq) const;
  /// The window that keeps the median normal error under 2 degrees on the synthetic
  /// scene (1920 x 1200) at its default depth noise.
  static constexpr int kDefaultNormalWindowSize = 11;
  /// The colour image in any of the nine colour formats, converted from the stored
  /// codes in their colour space. Throws InvalidState when the cloud has no colours.
  template <class Color>
  DeviceArray<Color> imageDeviceArray(StreamOrQueue sq) const {
    static_assert(isColorFormat<Color>, "PointCloud::imageDeviceArray<Color>: Color must be a colour format");
    const DeviceArray<ColorRGBA>& codes = requireColors("PointCloud::imageDeviceArray");
    if (colorSpace_ == ColorSpace::srgb) return convert<Color>(detail::srgbView(codes), sq);
    return convert<Color>(codes, sq);
  }

  // ---- operations ----
  /// Replaces the cloud by its k x k block reduction: SNR^2-weighted mean of the valid
  /// points, mean colour of all k*k pixels (in linear light, see Storage), sqrt of the
  /// sum of the valid SNR^2; the new size is floor(H/k) x floor(W/k). Throws InvalidArgument when that is 0 x something, or for
  /// an invalid enum value.
  ///@{
  void downsample(Downsampling d);
  void downsample(Downsampling d, StreamOrQueue sq);
  PointCloud downsampled(Downsampling d) const;
  PointCloud downsampled(Downsampling d, StreamOrQueue sq) const;
  ///@}

  /// Applies `m` (affine, finite) to the valid points and sets transformationMatrix()
  /// to m * transformationMatrix().
  ///@{
  void transform(const Matrix4x4& m);
  void transform(const Matrix4x4& m, StreamOrQueue sq);
  PointCloud transformed(const Matrix4x4& m) const;
  PointCloud transformed(const Matrix4x4& m, StreamOrQueue sq) const;
  ///@}
  /// The product of all transforms applied since construction (identity at first).
  const Matrix4x4& transformationMatrix() const noexcept { return transform_; }

  /// Points whose mask value is 0 become missing. The mask is height x width, one
  /// byte per pixel (non-zero = keep): a GpuMatND of type makeType(Depth::U8, 1) of size
  /// {H, W} on this device (row steps allowed), or host data. Size or type mismatch →
  /// InvalidArgument.
  ///@{
  void mask(const GpuMatND& mask);
  void mask(const GpuMatND& mask, StreamOrQueue sq);
  void mask(const HostMat& mask);
  void mask(const std::uint8_t* mask, int height, int width);
  void mask(const std::vector<bool>& mask, int height, int width);
  PointCloud masked(const GpuMatND& mask) const;
  PointCloud masked(const GpuMatND& mask, StreamOrQueue sq) const;
  PointCloud masked(const HostMat& mask) const;
  ///@}

  /// Points outside `box` become missing. Degenerate boxes (coincident or collinear
  /// O, A, B; minExtent > maxExtent; non-finite values) → InvalidArgument.
  ///@{
  void maskByRegionOfInterest(const RegionOfInterestBox& box);
  void maskByRegionOfInterest(const RegionOfInterestBox& box, StreamOrQueue sq);
  PointCloud maskedByRegionOfInterest(const RegionOfInterestBox& box) const;
  PointCloud maskedByRegionOfInterest(const RegionOfInterestBox& box, StreamOrQueue sq) const;
  ///@}
  /// transform(m, sq), then maskByRegionOfInterest(box, sq), in one pass over the points:
  /// the same points bit for bit and the same transformationMatrix(), for half the memory
  /// traffic (a frame loop's transform is followed by its ROI). Throws what the two throw.
  ///@{
  void transformAndMaskByRegionOfInterest(const Matrix4x4& m, const RegionOfInterestBox& box);
  void transformAndMaskByRegionOfInterest(const Matrix4x4& m, const RegionOfInterestBox& box, StreamOrQueue sq);
  ///@}

  // ---- camera filters (docs/filters.md) ----
  // Each reads the whole cloud and writes new arrays: the in-place form replaces the
  // cloud's arrays (as downsample() does; copies keep the old ones), the *ed form returns
  // a cloud that shares the arrays the filter does not change. transformationMatrix() is
  // kept. Empty cloud → InvalidState; a parameter out of range → InvalidArgument.

  /// SNR noise removal: points whose SNR is below `snrThreshold` (or NaN) become missing.
  /// `snrThreshold` must be finite. Throws InvalidState when the cloud has no SNR.
  ///@{
  void filterNoise(float snrThreshold);
  void filterNoise(float snrThreshold, StreamOrQueue sq);
  PointCloud noiseFiltered(float snrThreshold) const;
  PointCloud noiseFiltered(float snrThreshold, StreamOrQueue sq) const;
  ///@}

  /// Outlier removal: a valid point becomes missing when none of the valid points among
  /// its 8 grid neighbours lies within `maxDistance` (3-D Euclidean distance, mm) of it,
  /// i.e. when its nearest valid grid neighbour is farther than `maxDistance` (isolated
  /// points, with no valid neighbour, are removed too). `maxDistance` finite and >= 0.
  ///@{
  void filterOutliers(float maxDistance);
  void filterOutliers(float maxDistance, StreamOrQueue sq);
  PointCloud outliersFiltered(float maxDistance) const;
  PointCloud outliersFiltered(float maxDistance, StreamOrQueue sq) const;
  ///@}

  /// Edge-preserving Gaussian smoothing of depth: each valid point's z becomes the
  /// weighted mean z' of the valid points q in its (2 radius + 1)^2 window whose depth
  /// differs from its own by at most `maxDepthDifference` (mm), with weights
  /// exp(-(dr^2 + dc^2) / (2 sigma^2)) (sigma in pixels); x and y scale by z' / z, so the
  /// point stays on its camera ray. `radius` 0 picks ceil(2 sigma), capped at 15.
  /// Missing points and points with z == 0 are unchanged. sigma finite and > 0,
  /// maxDepthDifference finite and >= 0, radius in [0, 15].
  ///@{
  void smoothDepth(float sigma, float maxDepthDifference, int radius = 0);
  void smoothDepth(float sigma, float maxDepthDifference, int radius, StreamOrQueue sq);
  PointCloud depthSmoothed(float sigma, float maxDepthDifference, int radius = 0) const;
  PointCloud depthSmoothed(float sigma, float maxDepthDifference, int radius, StreamOrQueue sq) const;
  ///@}

  /// Hole repair: a missing point is filled from the run of missing points along its row
  /// and the one along its column, each used when it holds at most `maxHoleSize` points,
  /// both its ends are valid points with z != 0 and their depths differ by at most
  /// `maxDepthDifference` (mm). From a run: depth and ray slopes x/z, y/z interpolated
  /// linearly between its ends (on an untransformed pinhole cloud the point lands on its
  /// pixel's ray); the row and column estimates are averaged when both qualify. Colour
  /// (rounded) and SNR are interpolated with the same weights. One pass: filled points
  /// do not feed other holes. maxHoleSize in [1, 1024]; maxDepthDifference finite and >= 0.
  ///@{
  void fillHoles(int maxHoleSize, float maxDepthDifference);
  void fillHoles(int maxHoleSize, float maxDepthDifference, StreamOrQueue sq);
  PointCloud holesFilled(int maxHoleSize, float maxDepthDifference) const;
  PointCloud holesFilled(int maxHoleSize, float maxDepthDifference, StreamOrQueue sq) const;
  ///@}

  /// The valid points in row-major order (exclusive scan of validity + scatter), with
  /// their colour and SNR and this cloud's transformationMatrix(). The stream overload
  /// only enqueues: its result's point count stays on the device until something reads
  /// it (see UnorganizedPointCloud, "size known after an event"). The overload without a
  /// stream blocks and returns a cloud whose size is known.
  ///@{
  UnorganizedPointCloud toUnorganizedPointCloud() const;
  UnorganizedPointCloud toUnorganizedPointCloud(StreamOrQueue sq) const;
  ///@}
  /// As above, carrying `normals` (this cloud's, from deviceNormalsXYZ(): organized,
  /// of this cloud's height, width and device) into the unorganized cloud with their
  /// points. Throws InvalidArgument for normals of another shape or device, InvalidState
  /// for an empty cloud.
  ///@{
  UnorganizedPointCloud toUnorganizedPointCloud(const DeviceArray<NormalXYZ>& normals) const;
  UnorganizedPointCloud toUnorganizedPointCloud(const DeviceArray<NormalXYZ>& normals, StreamOrQueue sq) const;
  ///@}

  /// The voxel grid of the valid points: what toUnorganizedPointCloud().voxelDownsampled(
  /// voxelSize, minPointsPerVoxel) returns (the same voxels, bit for bit, in the same
  /// order, with this cloud's transformationMatrix()), without the compaction between
  /// the two: the grid's missing points are skipped where they are. The overloads with
  /// `normals` (this cloud's, as for toUnorganizedPointCloud) average them into the
  /// voxels as UnorganizedPointCloud::voxelDownsampled does a cloud's normals. Blocking
  /// and stream forms, errors and output order as UnorganizedPointCloud::voxelDownsampled;
  /// InvalidState for an empty cloud.
  ///@{
  UnorganizedPointCloud voxelDownsampled(float voxelSize, int minPointsPerVoxel) const;
  UnorganizedPointCloud voxelDownsampled(float voxelSize, int minPointsPerVoxel, StreamOrQueue sq) const;
  UnorganizedPointCloud voxelDownsampled(const DeviceArray<NormalXYZ>& normals, float voxelSize,
                                         int minPointsPerVoxel) const;
  UnorganizedPointCloud voxelDownsampled(const DeviceArray<NormalXYZ>& normals, float voxelSize, int minPointsPerVoxel,
                                         StreamOrQueue sq) const;
  ///@}

  /// Internal: the stored arrays (shared, not copied). The colour codes are in
  /// colorSpace() whatever the array's type says.
  ///@{
  const DeviceArray<PointXYZ>& storedXYZ() const noexcept { return xyz_; }
  const DeviceArray<ColorRGBA>& storedColors() const noexcept { return colors_; }
  const DeviceArray<SNR>& storedSNRs() const noexcept { return snrs_; }
  ///@}
  /// Internal: the same cloud with its colour codes replaced by `codes` (same size and
  /// device) in colour space `space`.
  PointCloud withStoredColors(DeviceArray<ColorRGBA> codes, ColorSpace space) const;

 private:
  const DeviceArray<ColorRGBA>& requireColors(const char* fn) const;

  DeviceArray<PointXYZ> xyz_;
  DeviceArray<ColorRGBA> colors_;  // 8-bit codes in colorSpace_
  DeviceArray<SNR> snrs_;
  ColorSpace colorSpace_ = ColorSpace::linear;
  int height_ = 0;
  int width_ = 0;
  Matrix4x4 transform_ = identityMatrix4x4();
};

/// N valid points with optional colour (8-bit codes in colorSpace(), as for PointCloud),
/// SNR and unit normals, on one device. Copies share device memory, as for PointCloud. A
/// cloud of 0 points is allowed (its arrays are empty); it still knows its device when
/// it came from a device operation.
///
/// Size known after an event. The stream overloads of PointCloud::toUnorganizedPointCloud
/// and voxelDownsampled never block: their result's arrays are allocated at a capacity
/// (the input's point count), the points past the count are missing (NaN) points, and
/// the count itself stays in device memory: isSizeKnown() is false until it is read.
/// transform/transformed, deviceCentroid, the stream overloads of center and
/// voxelDownsampled consume it as it is, without a host read (missing points are
/// ignored by all of them), so a frame chain unorganize -> transform -> center -> voxel
/// enqueues without a host synchronization and the host runs ahead of the device.
/// Everything else resolves the count first, once per cloud, blocking until the work
/// that produces it is done: size(), isEmpty(), downloads and clones, the other
/// device* accessors, the stored*() arrays and every other operation (normals, outlier
/// removal, extend, paintUniformColor, centroid, the blocking center: these need the
/// exact point count on the host). Once resolved, the cloud's arrays are the first
/// size() elements of the capacity arrays. An error found on the device while producing
/// the cloud (a voxel size too small for the cloud's extent) is thrown by the call that
/// resolves the count. Resolving is thread-safe: const calls on one cloud from several
/// threads stay safe.
///
/// Transformation known after an event. center(sq) translates the points by minus a
/// centroid that stays in device memory, so transformationMatrix() holds a translation
/// the host has not read yet. Transforms, centring again and every operation that hands
/// out a cloud with this one's matrix (the *ed forms, voxelDownsampled, the outlier
/// removals, clone, extend) carry it on without a read; the calls that need the matrix on
/// the host read it, once per cloud, blocking until the centring's work is done:
/// transformationMatrix() and what uses it (estimateNormals, whose viewpoint it is, and
/// localPointCloudRegistration's target). When the centred cloud had no valid point, the
/// call that reads the matrix throws InvalidState (the message centroid() gives), and
/// every later one does too. Reading is thread-safe as resolving the count is.
class UnorganizedPointCloud {
 public:
  UnorganizedPointCloud() = default;
  /// Zero-copy. `xyz` must be non-empty (organized arrays are taken as their H*W
  /// points); `colors`/`snrs`/`normals` optional with the same size and device. The
  /// points should be valid: missing (NaN) points are ignored by voxelDownsampled() and
  /// centroid(). Throws InvalidArgument.
  explicit UnorganizedPointCloud(DeviceArray<PointXYZ> xyz, DeviceArray<ColorRGBA> colors = {},
                                 DeviceArray<SNR> snrs = {}, DeviceArray<NormalXYZ> normals = {});
  /// As above with sRGB-encoded colours, kept as they are (colorSpace() is srgb); a
  /// template for the reason PointCloud's is.
  template <class Color>
    requires std::is_same_v<Color, ColorRGBA_SRGB>
  UnorganizedPointCloud(DeviceArray<PointXYZ> xyz, DeviceArray<Color> colors, DeviceArray<SNR> snrs = {},
                        DeviceArray<NormalXYZ> normals = {})
      : UnorganizedPointCloud(std::move(xyz), detail::storedCodes(colors), std::move(snrs), std::move(normals)) {
    if (hasColors()) colorSpace_ = ColorSpace::srgb;
  }
  /// Uploads the valid points of a host cloud (organized or not; sRGB colours are kept
  /// as they are: colorSpace() is srgb; normals are kept when the host cloud has them).
  /// Blocking. Throws InvalidArgument when the cloud fails validate().
  static UnorganizedPointCloud fromHost(const HostPointCloud& cloud,
                                       const ComputeDevice& device = ComputeDevice::defaultDevice());
  /// Downloads an unorganized HostPointCloud (sRGB colours: an sRGB cloud's codes
  /// unchanged; normals when the cloud has them). Blocking.
  HostPointCloud toHost() const;
  /// A deep copy on `device` (as PointCloud::clone), with the same
  /// transformationMatrix(); a cloud of 0 points gives one that knows `device`.
  /// Blocking. Throws InvalidState when the cloud has never been on a device,
  /// InvalidArgument for an invalid device.
  UnorganizedPointCloud clone(const ComputeDevice& device) const;

  /// Number of points. Resolves a count still on the device (blocking; see above).
  std::size_t size() const;
  /// True for a cloud without points. Resolves a count still on the device.
  bool isEmpty() const;
  /// False while the point count is still in device memory (size() would wait for it).
  bool isSizeKnown() const noexcept;
  /// A copy (sharing the arrays) that reads the point count and the translation of a
  /// stream center() from device memory again, at the next call that needs them, where
  /// this cloud has read them once and keeps what it read. For the results of stream
  /// calls captured into a CUDA graph, which every launch rewrites: after a launch (and
  /// its synchronization), reread() gives that launch's cloud. A cloud whose size and
  /// matrix were known from the start gives a plain copy. Non-blocking.
  UnorganizedPointCloud reread() const;
  /// Whether the cloud has colours / SNR values.
  ///@{
  bool hasColors() const noexcept { return colors_.isValid(); }
  bool hasSNRs() const noexcept { return snrs_.isValid(); }
  bool hasNormals() const noexcept { return normals_.isValid(); }
  ///@}
  /// The colour space of the stored colour codes (linear for a cloud without colours).
  ColorSpace colorSpace() const noexcept { return colorSpace_; }
  /// Throws InvalidState when the cloud has never been on a device.
  ComputeDevice device() const;

  /// Copies computed on `sq`; empty arrays for a cloud of 0 points.
  ///@{
  DeviceArray<PointXYZ> devicePointsXYZ(StreamOrQueue sq) const;
  DeviceArray<PointXYZW> devicePointsXYZW(StreamOrQueue sq) const;
  ///@}
  /// Throws InvalidState when the cloud (with points) has no SNR.
  DeviceArray<SNR> deviceSNRs(StreamOrQueue sq) const;
  /// Throws InvalidState when the cloud (with points) has no normals.
  DeviceArray<NormalXYZ> deviceNormalsXYZ(StreamOrQueue sq) const;
  /// The colours in any colour format, converted from the stored codes in their colour
  /// space. Throws InvalidState when the cloud (with points) has no colours.
  template <class Color>
  DeviceArray<Color> deviceColors(StreamOrQueue sq) const {
    static_assert(isColorFormat<Color>, "UnorganizedPointCloud::deviceColors<Color>: Color must be a colour format");
    if (isEmpty()) return DeviceArray<Color>();
    const DeviceArray<ColorRGBA>& codes = requireColors("UnorganizedPointCloud::deviceColors");
    if (colorSpace_ == ColorSpace::srgb) return convert<Color>(detail::srgbView(codes), sq);
    return convert<Color>(codes, sq);
  }

  /// Gives the cloud normals (replacing any it has; a new array, so copies keep theirs):
  /// the normal of the plane that best fits each point's `neighbours` nearest points
  /// (itself included; least squares through the covariance), found through a
  /// voxel-hash grid on the device whose cells follow the cloud's point spacing. Oriented
  /// towards the viewpoint, where transformationMatrix() moved the sensor origin (the
  /// origin for a cloud straight from a camera). NaN where fewer than 3 points are near
  /// or they lie on a line. The default keeps the median error under 2 degrees on the
  /// synthetic scene (1920 x 1200) at its default depth noise (docs/stitching.md).
  /// Throws InvalidArgument unless neighbours is in [3, 256]. Blocking / on `sq` (the
  /// stream overload waits a few times for the point spacing).
  ///@{
  static constexpr int kDefaultNormalNeighbours = 100;
  void estimateNormals(int neighbours = kDefaultNormalNeighbours);
  void estimateNormals(int neighbours, StreamOrQueue sq);
  ///@}

  /// One point per occupied voxel of edge `voxelSize` (grid anchored at the cloud's
  /// min corner): SNR^2-weighted mean position (plain mean without SNR or when all
  /// weights are 0), mean colour (in linear light, see Storage), SNR = sqrt(sum SNR^2),
  /// normal = the normalized sum of the voxel's normals (NaN when they cancel); voxels
  /// with fewer than `minPointsPerVoxel` points are dropped. Output order: ascending voxel key
  /// (x-major, then y, then z voxel index), so it is deterministic. Throws
  /// InvalidArgument for voxelSize not finite and > 0, minPointsPerVoxel < 1, or a voxel
  /// size so small that an axis needs 2^21 - 1 or more voxels. The overload without a
  /// stream blocks and throws that at once; the stream overload never blocks, neither to
  /// read the voxel count nor this cloud's count (the result's size is known after an
  /// event, see above): it throws the too-small error from the call that resolves the
  /// result's count.
  ///@{
  UnorganizedPointCloud voxelDownsampled(float voxelSize, int minPointsPerVoxel) const;
  UnorganizedPointCloud voxelDownsampled(float voxelSize, int minPointsPerVoxel, StreamOrQueue sq) const;
  ///@}

  /// Statistical outlier removal (Open3D's definition): for each point, the mean d of
  /// its distances to its `neighbours` nearest points, the point itself counted among
  /// them at distance 0; over all points, the mean m and the sample standard deviation s
  /// (divided by N - 1) of those d. A point stays when d <= m + stdRatio * s. The
  /// neighbours are exact: they are searched on a voxel-hash grid whose cells follow the
  /// point spacing, and points whose nearest neighbours lie farther away (isolated ones)
  /// are searched again on coarser grids. With fewer than `neighbours` points in the
  /// cloud, d is the mean over all of them. Missing points are dropped. The kept points
  /// keep their order, colours, SNR and normals. Throws InvalidArgument unless
  /// neighbours is in [1, 32] and stdRatio is finite and >= 0. Blocking / on `sq` (the
  /// stream overload waits a few times: for the point spacing, for the points left after
  /// each grid, for the mean and deviation and for the kept count).
  ///@{
  UnorganizedPointCloud statisticalOutliersRemoved(int neighbours, float stdRatio) const;
  UnorganizedPointCloud statisticalOutliersRemoved(int neighbours, float stdRatio, StreamOrQueue sq) const;
  void removeStatisticalOutliers(int neighbours, float stdRatio);
  void removeStatisticalOutliers(int neighbours, float stdRatio, StreamOrQueue sq);
  ///@}

  /// Radius outlier removal (Open3D's definition): a point stays when more than
  /// `minPoints` points lie closer than `radius` (mm) to it, the point itself counted,
  /// i.e. when at least `minPoints` other points do. Missing points are dropped. The kept
  /// points keep their order, colours, SNR and normals. Throws InvalidArgument unless
  /// radius is finite and > 0 and minPoints >= 1. Blocking / on `sq` (the stream overload
  /// waits once, for the kept count).
  ///@{
  UnorganizedPointCloud radiusOutliersRemoved(float radius, int minPoints) const;
  UnorganizedPointCloud radiusOutliersRemoved(float radius, int minPoints, StreamOrQueue sq) const;
  void removeRadiusOutliers(float radius, int minPoints);
  void removeRadiusOutliers(float radius, int minPoints, StreamOrQueue sq);
  ///@}

  /// As PointCloud::transform (affine, accumulated into transformationMatrix()); normals
  /// are turned by the matrix's rotation part (the upper-left 3x3, taken as a rotation).
  /// Neither form reads a matrix that center(sq) left on the device.
  ///@{
  void transform(const Matrix4x4& m);
  void transform(const Matrix4x4& m, StreamOrQueue sq);
  UnorganizedPointCloud transformed(const Matrix4x4& m) const;
  UnorganizedPointCloud transformed(const Matrix4x4& m, StreamOrQueue sq) const;
  ///@}
  /// The product of all transforms applied since construction (identity at first),
  /// centring included. After center(sq) it reads the centroid from the device the first
  /// time (blocking until the centring's work is done; see "Transformation known after an
  /// event" above) and throws InvalidState there when the centred cloud had no valid
  /// point; otherwise it returns at once. The reference stays valid until the cloud
  /// changes.
  const Matrix4x4& transformationMatrix() const;

  /// Appends `other`'s points (new arrays; this cloud's transformationMatrix() is
  /// kept). Both must be on the same device (else InvalidArgument) and have the same
  /// attributes (colours, SNR, normals) unless one has no points. Colours keep this
  /// cloud's colorSpace(): `other`'s are converted to it when they are in the other
  /// space (as convert<>() converts them), so the spaces never mix; a cloud without
  /// points takes `other`'s. Blocking / on `sq`.
  ///@{
  void extend(const UnorganizedPointCloud& other);
  void extend(const UnorganizedPointCloud& other, StreamOrQueue sq);
  ///@}

  /// Sets every point's colour (adds colours if the cloud has none; new array, so
  /// copies of the cloud keep theirs). `color` is linear by its type, so the cloud's
  /// colorSpace() becomes linear.
  ///@{
  void paintUniformColor(ColorRGBA color);
  void paintUniformColor(ColorRGBA color, StreamOrQueue sq);
  ///@}

  /// Mean of the valid points, computed on the device in double precision. Blocking
  /// (the stream overload waits for its own reduction only). Throws InvalidState when
  /// the cloud has no valid point.
  ///@{
  std::array<float, 3> centroid() const;
  std::array<float, 3> centroid(StreamOrQueue sq) const;
  ///@}
  /// The mean of the valid points as a new one-point array on `sq`, computed as
  /// centroid() computes it (sums in double, divided on the device to the float the host
  /// division gives; the same values for a cloud whose size is known), without a host
  /// read: it only enqueues (a cloud whose count is still on the device is summed over
  /// the capacity, whose missing points it ignores, so the count is never resolved). A cloud without a valid point (or without points) gives a point of NaN, the
  /// device's way of saying what centroid() throws InvalidState for. Throws InvalidState
  /// for a cloud that has never been on a device, InvalidArgument for a stream of
  /// another device or backend.
  DeviceArray<PointXYZ> deviceCentroid(StreamOrQueue sq) const;
  /// Translates the valid points so that their centroid is at the origin. The
  /// translation is a transform like any other: it is accumulated into
  /// transformationMatrix(). Throws InvalidState for a cloud without points (at once).
  /// The blocking form reads the centroid first and throws InvalidState there when no
  /// point is valid, leaving the cloud unchanged. The stream overload never blocks: the
  /// points are moved on the device by the deviceCentroid() it enqueues, and the
  /// translation joins transformationMatrix() when that is next read (see
  /// "Transformation known after an event"); a cloud without a valid point is left as it
  /// is, and the read throws the InvalidState.
  ///@{
  void center();
  void center(StreamOrQueue sq);
  ///@}

  /// Internal: assembles a cloud from its parts (colour codes in `colorSpace`), and the
  /// stored arrays (shared, not copied).
  ///@{
  static UnorganizedPointCloud fromParts(ComputeDevice device, DeviceArray<PointXYZ> xyz, DeviceArray<ColorRGBA> colors,
                                         DeviceArray<SNR> snrs, const Matrix4x4& transform,
                                         DeviceArray<NormalXYZ> normals = {},
                                         ColorSpace colorSpace = ColorSpace::linear);
  /// fromCapacity takes arrays at a capacity whose points past the count are missing, and
  /// the count still in device memory. The stored arrays resolve the count first.
  static UnorganizedPointCloud fromCapacity(ComputeDevice device, DeviceArray<PointXYZ> xyz,
                                            DeviceArray<ColorRGBA> colors, DeviceArray<SNR> snrs,
                                            const Matrix4x4& transform, DeviceArray<NormalXYZ> normals,
                                            std::shared_ptr<detail::PointCountWord> count,
                                            ColorSpace colorSpace = ColorSpace::linear);
  const DeviceArray<PointXYZ>& storedXYZ() const;
  const DeviceArray<ColorRGBA>& storedColors() const;
  const DeviceArray<SNR>& storedSNRs() const;
  const DeviceArray<NormalXYZ>& storedNormals() const;
  ///@}

 private:
  const DeviceArray<ColorRGBA>& requireColors(const char* fn) const;
  /// The arrays trimmed to a count still on the device (read once, thread-safely; the
  /// cloud's own arrays stay the capacity ones). Only while pending_ is set.
  const detail::PointArrays& trimmedArrays() const;
  /// Makes the trimmed arrays the cloud's own (a no-op once the size is known): for the
  /// operations that replace some of the arrays.
  void settleSize();
  /// Appends `m` to the accumulated transformation, or, when `centroid` is given, the
  /// translation by minus its point (read from the device when the matrix is needed).
  void accumulate(const Matrix4x4& m, DeviceArray<PointXYZ> centroid = {});
  /// This cloud with `source`'s transformation, still to be read from the device when
  /// it is.
  UnorganizedPointCloud withTransformationOf(const UnorganizedPointCloud& source) &&;

  ComputeDevice device_;
  // While pending_ is set: arrays at a capacity, missing points past the count.
  DeviceArray<PointXYZ> xyz_;
  DeviceArray<ColorRGBA> colors_;
  DeviceArray<SNR> snrs_;
  DeviceArray<NormalXYZ> normals_;
  ColorSpace colorSpace_ = ColorSpace::linear;
  std::shared_ptr<detail::PendingPointCount> pending_;
  Matrix4x4 transform_ = identityMatrix4x4();
  // After center(sq): the whole transformation, transform_ unused.
  std::shared_ptr<const detail::PendingTransformation> pendingTransform_;
};

/// An H x W colour image on one device, stored as the 8-bit RGBA codes it arrived in
/// with their colour space (as for PointCloud): srgb for sRGB images (HostImage, the
/// *_SRGB formats), linear otherwise.
class Frame2D {
 public:
  Frame2D() = default;
  /// Zero-copy. `image` must be organized and non-empty (InvalidArgument).
  explicit Frame2D(DeviceArray<ColorRGBA> image);
  /// Zero-copy, sRGB codes kept as they are (colorSpace() is srgb); a template for the
  /// reason PointCloud's is.
  template <class Color>
    requires std::is_same_v<Color, ColorRGBA_SRGB>
  explicit Frame2D(DeviceArray<Color> image) : Frame2D(detail::storedCodes(image)) {
    colorSpace_ = ColorSpace::srgb;
  }
  /// Uploads an image of any colour format: 8-bit sRGB formats are stored as
  /// ColorRGBA_SRGB (exact), the others as linear ColorRGBA (converted on the device).
  /// Blocking. Throws InvalidArgument for null data or bad sizes.
  template <class Color>
  static Frame2D fromHost(const Color* data, int height, int width,
                          const ComputeDevice& device = ComputeDevice::defaultDevice()) {
    static_assert(isColorFormat<Color>, "Frame2D::fromHost<Color>: Color must be a colour format");
    using Stored = std::conditional_t<formatInfo<Color>().isSRGB, ColorRGBA_SRGB, ColorRGBA>;
    const DeviceArray<Color> staged = DeviceArray<Color>::fromHost(data, height, width, device);
    DeviceArray<Stored> image = convert<Stored>(staged, device.sdkStreamOrQueue());
    synchronizeStream(device.sdkStreamOrQueue());
    return Frame2D(std::move(image));
  }
  /// Uploads an 8- or 16-bit gray, RGB or RGBA host image whose samples are sRGB-encoded
  /// (what PNG files hold); 16-bit samples are rounded to 8 bits. Blocking. Throws
  /// InvalidArgument when the image fails validate() or is empty.
  static Frame2D fromHost(const HostImage& image, const ComputeDevice& device = ComputeDevice::defaultDevice());

  /// Rows (0 when empty).
  int height() const noexcept { return image_.height(); }
  /// Columns (0 when empty).
  int width() const noexcept { return image_.width(); }
  /// height() * width() pixels.
  std::size_t size() const noexcept { return image_.size(); }
  /// True for a default-constructed frame.
  bool isEmpty() const noexcept { return image_.isEmpty(); }
  /// The colour space of the stored codes.
  ColorSpace colorSpace() const noexcept { return colorSpace_; }
  /// Throws InvalidState for an empty frame.
  ComputeDevice device() const;

  /// A new array holding the image in `Color`, converted from the stored codes in their
  /// colour space on `sq`. Throws InvalidState for an empty frame.
  template <class Color>
  DeviceArray<Color> imageDeviceArray(StreamOrQueue sq) const {
    static_assert(isColorFormat<Color>, "Frame2D::imageDeviceArray<Color>: Color must be a colour format");
    const DeviceArray<ColorRGBA>& image = requireImage("Frame2D::imageDeviceArray");
    if (colorSpace_ == ColorSpace::srgb) return convert<Color>(detail::srgbView(image), sq);
    return convert<Color>(image, sq);
  }
  /// Writes the image in `Color` into `dst` (same height and width, same device),
  /// enqueued on `sq`. Throws InvalidArgument on a size or device mismatch, InvalidState
  /// for an empty frame or an empty/expired `dst`.
  template <class Color>
  void imageDeviceArray(const DeviceArrayView<Color>& dst, StreamOrQueue sq) const {
    static_assert(isColorFormat<Color>, "Frame2D::imageDeviceArray<Color>: Color must be a colour format");
    const DeviceArray<ColorRGBA>& image = requireImage("Frame2D::imageDeviceArray");
    checkDestination(dst.isValid(), dst.height(), dst.width(), dst.isOrganized(),
                     dst.isValid() ? dst.device() : ComputeDevice());
    if (colorSpace_ == ColorSpace::srgb) convertInto(dst, detail::srgbView(image), sq);
    else convertInto(dst, image, sq);
  }

  /// Internal: the stored image (shared; codes in colorSpace()).
  const DeviceArray<ColorRGBA>& storedImage() const noexcept { return image_; }

 private:
  const DeviceArray<ColorRGBA>& requireImage(const char* fn) const;
  void checkDestination(bool valid, int height, int width, bool organized, const ComputeDevice& device) const;

  DeviceArray<ColorRGBA> image_;  // 8-bit codes in colorSpace_
  ColorSpace colorSpace_ = ColorSpace::linear;
};

}  // namespace devicearray
