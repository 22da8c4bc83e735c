// devicearray — element type codes (numerically identical to OpenCV's), Range and Scalar.
#pragma once

#include <climits>
#include <cstddef>

namespace devicearray {

using uchar = unsigned char;

/// Channel depth codes; the values are OpenCV's CV_8U ... CV_16F.
enum class Depth : int { U8 = 0, S8 = 1, U16 = 2, S16 = 3, S32 = 4, F32 = 5, F64 = 6, F16 = 7 };

/// Bits of a type code that hold the depth (OpenCV's CV_CN_SHIFT); channels - 1 sits above them.
inline constexpr int kDepthBits = 3;
/// The depth bits of a type code (OpenCV's CV_MAT_DEPTH_MASK).
inline constexpr int kDepthMask = (1 << kDepthBits) - 1;
/// Most channels a type code can hold (OpenCV's CV_CN_MAX).
inline constexpr int kMaxChannels = 512;
/// The bits a valid type code may use (OpenCV's CV_MAT_TYPE_MASK).
inline constexpr int kTypeMask = (kMaxChannels << kDepthBits) - 1;

/// CV_MAKETYPE(depth, channels). Channels must be in 1..512; constant-evaluated misuse
/// fails to compile, run-time misuse is checked by every function that takes a type code.
constexpr int makeType(Depth depth, int channels) {
  return (static_cast<int>(depth) & kDepthMask) + ((channels - 1) << kDepthBits);
}
constexpr Depth depthOf(int type) { return static_cast<Depth>(type & kDepthMask); }
constexpr int channelsOf(int type) { return ((type & kTypeMask) >> kDepthBits) + 1; }

/// Bytes of one channel value of the given depth.
constexpr std::size_t depthSize(Depth depth) {
  switch (depth) {
    case Depth::U8: case Depth::S8: return 1;
    case Depth::U16: case Depth::S16: case Depth::F16: return 2;
    case Depth::S32: case Depth::F32: return 4;
    case Depth::F64: return 8;
  }
  return 0;
}

/// True when `type` is a valid type code (any depth, 1..512 channels, no stray bits).
constexpr bool isValidType(int type) { return type >= 0 && type <= kTypeMask; }

/// Half-open interval [start, end) along one axis, with OpenCV's meaning.
struct Range {
  int start = 0;  ///< first index of the interval
  int end = 0;    ///< one past the last index
  /// The empty interval [0, 0).
  Range() = default;
  /// The interval [s, e). Not validated here: functions taking a Range check it
  /// against their axis and throw OutOfRange.
  Range(int s, int e) : start(s), end(e) {}
  /// The whole axis (OpenCV's Range::all(): start == INT_MIN, end == INT_MAX).
  static Range all() { return Range(INT_MIN, INT_MAX); }
  /// end - start (meaningless for all()).
  int size() const { return end - start; }
  /// True when the interval holds no index.
  bool empty() const { return start == end; }
  /// True for Range::all().
  bool isAll() const { return start == INT_MIN && end == INT_MAX; }
  friend bool operator==(const Range& a, const Range& b) { return a.start == b.start && a.end == b.end; }
};

/// Up to four channel values, like cv::Scalar: Scalar{b, g, r, a}; unspecified values are 0.
struct Scalar {
  double val[4] = {0, 0, 0, 0};  ///< channel values 0..3
  /// All four values 0.
  constexpr Scalar() = default;
  /// Values for channels 0..3; unspecified ones are 0.
  constexpr Scalar(double v0, double v1 = 0, double v2 = 0, double v3 = 0) : val{v0, v1, v2, v3} {}
  /// `v` in all four channels.
  static constexpr Scalar all(double v) { return Scalar(v, v, v, v); }
  /// Value of channel `i` (0..3, unchecked, as cv::Scalar).
  constexpr double operator[](int i) const { return val[i]; }
  /// Value of channel `i` (0..3, unchecked, as cv::Scalar).
  constexpr double& operator[](int i) { return val[i]; }
};

}  // namespace devicearray
