// devicearray — host-side point clouds and images, their files (PLY, PNG), a
// synthetic 3-D camera scene and a preview renderer.
//
// Everything in this header runs on the host only: nothing here touches a GPU,
// takes a stream or blocks on device work. The device-side classes (PointCloud,
// UnorganizedPointCloud, Frame2D) are built from and downloaded into these types.
//
// Conventions shared by every function below:
//  * Coordinates are in the camera frame of a 3-D camera: x right, y down, z forward
//    (away from the camera), in millimetres, like the 3-D camera SDK's point clouds.
//  * A missing point has NaN in all three of x, y, z. Organized clouds keep their
//    missing points so that point (row, col) stays at index row * width + col.
//  * Colours are 8-bit sRGB-encoded RGBA (what PLY viewers and PNG files expect).
//  * Every failure throws devicearray::Error; nothing aborts, and a malformed file
//    never causes an allocation larger than the file could justify.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "devicearray/error.hpp"

namespace devicearray {

// ------------------------------------------------------------ point clouds ---

/// A point cloud in host memory, organized (an image grid of height × width points,
/// as a 3-D camera produces) or unorganized (a list of points).
///
/// The cloud is organized exactly when height > 0 and width > 0; then size() ==
/// height * width. Unorganized clouds have height == width == 0 and size() points.
/// Every attribute array is either empty (the attribute is absent) or holds exactly
/// size() × its channel count values, point after point (the same interleaved,
/// row-major order as `DeviceArray<PointXYZ>`, `<ColorRGBA_SRGB>`, `<SNR>`, `<NormalXYZ>`).
struct HostPointCloud {
  int height = 0;                  ///< rows of an organized cloud; 0 when unorganized
  int width = 0;                   ///< columns of an organized cloud; 0 when unorganized
  std::vector<float> xyz;          ///< 3 per point, millimetres; NaN x, y, z = missing point
  std::vector<std::uint8_t> rgba;  ///< 4 per point (sRGB-encoded, alpha 255 = opaque) or empty
  std::vector<float> snr;          ///< 1 per point (signal-to-noise ratio, ≥ 0) or empty
  std::vector<float> normals;      ///< 3 per point (unit length or NaN) or empty

  /// An organized cloud of height × width missing points (NaN) and, as requested,
  /// zero-filled attributes. Throws InvalidArgument for non-positive sizes and
  /// OutOfRange when the point count overflows.
  static HostPointCloud organized(int height, int width, bool withColors = false, bool withSNR = false,
                                  bool withNormals = false);

  /// True when height and width are both positive.
  bool isOrganized() const noexcept { return height > 0 && width > 0; }
  /// Number of points (valid or missing): xyz.size() / 3.
  std::size_t size() const noexcept { return xyz.size() / 3; }
  /// True when the cloud has no points.
  bool empty() const noexcept { return xyz.empty(); }
  /// Whether the attribute is present (its array is not empty).
  ///@{
  bool hasColors() const noexcept { return !rgba.empty(); }
  bool hasSNR() const noexcept { return !snr.empty(); }
  bool hasNormals() const noexcept { return !normals.empty(); }
  ///@}
  /// Points whose x, y and z are all finite.
  std::size_t validCount() const noexcept;
  /// True when point `i` has finite x, y and z. Precondition: i < size().
  bool isValid(std::size_t i) const noexcept;

  /// Checks the invariants above (height/width both zero or both positive, sizes that
  /// match, xyz a multiple of 3, height*width == size() when organized). Throws
  /// InvalidArgument naming the first violated rule.
  void validate() const;
};

// ------------------------------------------------------------------ images ---

/// An 8- or 16-bit image in host memory: height rows of width pixels, each pixel
/// `channels` interleaved samples (1 gray, 3 RGB, 4 RGBA), rows tightly packed.
///
/// 16-bit samples are stored as std::uint16_t in host byte order (the byte vector is
/// simply their storage), so `data` is exactly the memory of a cv::Mat / HostMat of
/// type makeType(bitDepth == 8 ? Depth::U8 : Depth::U16, channels) and the file
/// functions take care of PNG's big-endian order.
struct HostImage {
  int height = 0;    ///< rows
  int width = 0;     ///< pixels per row
  int channels = 0;  ///< 1, 3 or 4
  int bitDepth = 8;  ///< 8 or 16
  std::vector<std::uint8_t> data;  ///< the samples, row after row (16-bit ones in host byte order)

  /// An empty image.
  HostImage() = default;
  /// A zero-filled (black, transparent) image. Throws InvalidArgument for non-positive
  /// sizes, channels not in {1, 3, 4} or bitDepth not in {8, 16}; OutOfRange when the
  /// byte count overflows.
  HostImage(int height, int width, int channels, int bitDepth = 8);

  /// True when the image has no data.
  bool empty() const noexcept { return data.empty(); }
  /// 1 (8-bit) or 2 (16-bit).
  std::size_t bytesPerSample() const noexcept { return bitDepth == 16 ? 2 : 1; }
  /// bytesPerSample() * channels.
  std::size_t bytesPerPixel() const noexcept { return bytesPerSample() * static_cast<std::size_t>(channels); }
  /// bytesPerPixel() * width (rows are tightly packed).
  std::size_t rowBytes() const noexcept { return bytesPerPixel() * static_cast<std::size_t>(width); }
  /// rowBytes() * height.
  std::size_t sizeInBytes() const noexcept { return rowBytes() * static_cast<std::size_t>(height); }

  /// Start of row `y` (unchecked; use validate() first).
  ///@{
  std::uint8_t* row(int y) noexcept { return data.data() + rowBytes() * static_cast<std::size_t>(y); }
  const std::uint8_t* row(int y) const noexcept { return data.data() + rowBytes() * static_cast<std::size_t>(y); }
  ///@}

  /// Sample `c` of pixel (y, x) as an integer in [0, 255] or [0, 65535]. Throws
  /// OutOfRange for coordinates outside the image.
  unsigned sample(int y, int x, int c) const;
  /// Sets sample `c` of pixel (y, x). Throws OutOfRange for coordinates outside the
  /// image and InvalidArgument for a value above the bit depth's maximum.
  void setSample(int y, int x, int c, unsigned value);

  /// Checks channels, bit depth, sizes and data.size() == sizeInBytes(). Throws
  /// InvalidArgument naming the first violated rule.
  void validate() const;
};

// --------------------------------------------------------------------- PLY ---

enum class PlyFormat { ascii, binaryLittleEndian, binaryBigEndian };

/// Reads a PLY file (ascii, binary_little_endian or binary_big_endian, version 1.0).
///
/// The "vertex" element must have x, y, z (float or double). Optional vertex
/// properties: red, green, blue [, alpha] (uchar as is; ushort scaled by 255/65535;
/// float or double in [0, 1] scaled by 255 and clamped; a missing alpha reads as 255),
/// nx, ny, nz (float or double), snr (float or double). Other scalar vertex properties
/// are skipped; other elements (faces, ...) are checked for well-formedness and skipped.
///
/// Organized clouds: the header lines "obj_info height H" and "obj_info width W"
/// (both or neither, H × W == vertex count) make the result an organized H × W cloud
/// whose vertex i is point (i / W, i % W). "comment height H" / "comment width W" are
/// read the same way for files written by tools that cannot emit obj_info.
///
/// A vertex with a non-finite x, y or z (inf, or NaN in only some of them) reads as a
/// missing point: NaN in all three.
///
/// Hostile input is bounded: anything that does not begin with the line "ply" is
/// refused after its first five bytes; the header may be at most 16 MiB with lines of at
/// most 4096 characters, ascii body lines at most 65536; the header is parsed in time
/// linear in its size. The body is decoded record by record and never read further
/// than the header declares (one more byte tells trailing data). A regular file is
/// checked against its size before anything is allocated; from a pipe or device the
/// cloud grows with the records that actually arrive.
///
/// Blocking. Throws InvalidArgument, naming the file, the header line or byte offset
/// and the problem, for any malformed or inconsistent file (bad magic or header,
/// unknown format or type, list properties in "vertex", a body shorter or longer than
/// the header says, counts the file size cannot hold, non-numeric or out-of-range
/// ascii values, over-long lines or headers, H × W != vertex count), and when the file
/// cannot be opened or read. Bytes of the file quoted in a message are hex-escaped.
HostPointCloud readPly(const std::string& path);

/// Writes `cloud` as PLY 1.0 in `format`: x y z (float), then red green blue alpha
/// (uchar) if it has colours, nx ny nz (float) if it has normals, snr (float) if it has
/// SNR. Organized clouds get "obj_info height H" / "obj_info width W" and keep their
/// missing (NaN) points; a point with any non-finite coordinate is written as missing
/// (NaN, NaN, NaN), never as an inf point; ascii writes NaN as "nan" and floats with
/// enough digits to read back bit-exactly.
///
/// Safe replacement: the file is written to a temporary `.<name>.tmp-XXXXXX` in the
/// same directory and renamed over `path` only when complete, so `path` holds the old
/// file or the new one, never a partial one; a replaced file keeps its permissions, a
/// new one gets 0666 & ~umask. When `path` exists and is not a regular file (a device
/// such as /dev/null, a FIFO) the bytes go to it directly and it is never removed.
/// See removeUnfinishedOutputFiles() for interrupted writes.
///
/// Blocking. Throws InvalidArgument when the cloud fails validate() or is empty, and
/// when the file cannot be created or written (the temporary is removed; an existing
/// `path` is left as it was).
void writePly(const std::string& path, const HostPointCloud& cloud,
              PlyFormat format = PlyFormat::binaryLittleEndian);

// --------------------------------------------------------------------- PNG ---

/// Reads a PNG file into an 8- or 16-bit image with 1, 3 or 4 channels: palette
/// images become RGB (RGBA with transparency), gray+alpha becomes RGBA, 1/2/4-bit gray
/// becomes 8-bit, interlaced files are de-interlaced. No gamma or colour-space
/// conversion is applied. The first 8 bytes must be the PNG signature. Before the
/// pixels are allocated, the size the header declares must fit what the file can hold
/// (deflate packs at most 1032 bytes into one); from a pipe or device, whose size says
/// nothing, an image may decode to at most 1 GiB. Blocking. Throws InvalidArgument
/// (naming the file and libpng's complaint) for a missing, unreadable, malformed or
/// impossibly large file, Unsupported when the library was built without libpng.
HostImage readPng(const std::string& path);

/// Writes `image` as a non-interlaced PNG (gray, RGB or RGBA; 8 or 16 bits), replacing
/// `path` safely as writePly() does (a temporary file renamed when complete; devices
/// and FIFOs written directly and never removed). Blocking. Throws InvalidArgument
/// when the image fails validate() or is empty, or when the file cannot be written
/// (an existing `path` is left as it was); Unsupported without libpng.
void writePng(const std::string& path, const HostImage& image);

/// Removes the temporary files of writePly() / writePng() calls still in progress in
/// this process. Async-signal-safe (it only reads lock-free atomics and calls unlink),
/// so a SIGINT / SIGTERM handler can call it before _exit(): an interrupted write then
/// leaves the old file intact and no temporary behind. Does not block.
void removeUnfinishedOutputFiles() noexcept;

/// Whether this build can read and write PNG files.
bool pngSupported() noexcept;

// ----------------------------------------------------------- pinhole camera ---

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

// --------------------------------------------------------- synthetic scenes ---

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
  /// Called with the fraction done (0..1) from the calling thread, a few hundred times
  /// at most; may be empty.
  std::function<void(double)> progress;

  /// Throws InvalidArgument naming the bad field (camera, non-finite or negative
  /// baseline/noise, probability outside [0, 1], negative minSNR).
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

// ---------------------------------------------------------------- previews ---

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

/// Normals of an organized cloud from its grid, as PointCloud defines them: the unit
/// cross product of the horizontal and vertical central differences of neighbouring
/// valid points (one-sided at borders and next to holes), oriented towards the camera
/// (n · p < 0), NaN where a point is missing or has no valid neighbour along an axis.
/// Returns 3 floats per point. Blocking. Throws InvalidArgument for an unorganized or
/// invalid cloud.
std::vector<float> estimateOrganizedNormals(const HostPointCloud& cloud);

}  // namespace devicearray
