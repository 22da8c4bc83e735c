// devicearray — the element formats of DeviceArray (the format catalog of
// docs/data-layout.md).
//
// Each format is a standard-layout struct whose size is its bytes/element,
// so a DeviceArray<Format> is exactly an array of Format in device memory and
// `toHost()` returns a std::vector<Format>. Every format carries:
//   using ValueType = float | std::uint8_t;   // element type of one channel
//   static constexpr int channels;            // channels per element (the last axis)
//   static constexpr Depth depth;             // the Depth code of ValueType
//   static constexpr FormatId id;             // runtime identity (FormatId below)
//
// Colour meaning: the non-SRGB 8-bit formats and ColorRGBAf hold
// linear-light values (ColorRGBAf in [0, 1]); the _SRGB formats hold values
// encoded with the IEC 61966-2-1 transfer function. Alpha is always linear.
// Missing points are NaN.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string_view>
#include <type_traits>
#include <vector>

#include "devicearray/types.hpp"

namespace devicearray {

/// Runtime identity of a format: for the CLI `layout` command, the Python
/// `Format` enum and anything that picks a format from a string.
enum class FormatId : int {
  PointXYZ,
  PointXYZW,
  PointZ,
  SNR,
  NormalXYZ,
  ColorRGBA,
  ColorBGRA,
  ColorRGBA_SRGB,
  ColorBGRA_SRGB,
  ColorRGBAf,
  ColorRGB,
  ColorBGR,
  ColorRGB_SRGB,
  ColorBGR_SRGB,
};
inline constexpr int kFormatCount = 14;

/// A 3-D point (millimetres in the camera frame for point clouds); NaN in x, y and z
/// marks a missing point.
struct PointXYZ {
  using ValueType = float;  ///< type of one channel value
  static constexpr int channels = 3;  ///< channels per element
  static constexpr Depth depth = Depth::F32;  ///< Depth code of ValueType
  static constexpr FormatId id = FormatId::PointXYZ;  ///< run-time identity
  /// Coordinates in memory order.
  ///@{
  float x, y, z;
  ///@}
};

/// PointXYZ padded to 16 bytes for aligned vector loads; w is 1.
struct PointXYZW {
  using ValueType = float;  ///< type of one channel value
  static constexpr int channels = 4;  ///< channels per element
  static constexpr Depth depth = Depth::F32;  ///< Depth code of ValueType
  static constexpr FormatId id = FormatId::PointXYZW;  ///< run-time identity
  /// Coordinates in memory order; w is 1.
  ///@{
  float x, y, z, w;
  ///@}
};

/// Depth map: the z coordinate only.
struct PointZ {
  using ValueType = float;  ///< type of one channel value
  static constexpr int channels = 1;  ///< channels per element
  static constexpr Depth depth = Depth::F32;  ///< Depth code of ValueType
  static constexpr FormatId id = FormatId::PointZ;  ///< run-time identity
  float z;  ///< the depth in millimetres (NaN = missing)
};

/// Signal-to-noise ratio of each point.
struct SNR {
  using ValueType = float;  ///< type of one channel value
  static constexpr int channels = 1;  ///< channels per element
  static constexpr Depth depth = Depth::F32;  ///< Depth code of ValueType
  static constexpr FormatId id = FormatId::SNR;  ///< run-time identity
  float value;  ///< signal-to-noise ratio (>= 0)
};

/// A unit surface normal (NaN where none could be computed).
struct NormalXYZ {
  using ValueType = float;  ///< type of one channel value
  static constexpr int channels = 3;  ///< channels per element
  static constexpr Depth depth = Depth::F32;  ///< Depth code of ValueType
  static constexpr FormatId id = FormatId::NormalXYZ;  ///< run-time identity
  /// Coordinates in memory order.
  ///@{
  float x, y, z;
  ///@}
};

/// Linear-light 8-bit colour with alpha, in r, g, b, a order.
struct ColorRGBA {
  using ValueType = std::uint8_t;  ///< type of one channel value
  static constexpr int channels = 4;  ///< channels per element
  static constexpr Depth depth = Depth::U8;  ///< Depth code of ValueType
  static constexpr FormatId id = FormatId::ColorRGBA;  ///< run-time identity
  /// Channel values in memory order (0..255).
  ///@{
  std::uint8_t r, g, b, a;
  ///@}
};

/// Linear-light 8-bit colour with alpha, in b, g, r, a order (OpenCV's).
struct ColorBGRA {
  using ValueType = std::uint8_t;  ///< type of one channel value
  static constexpr int channels = 4;  ///< channels per element
  static constexpr Depth depth = Depth::U8;  ///< Depth code of ValueType
  static constexpr FormatId id = FormatId::ColorBGRA;  ///< run-time identity
  /// Channel values in memory order (0..255).
  ///@{
  std::uint8_t b, g, r, a;
  ///@}
};

/// sRGB-encoded 8-bit colour with linear alpha, in r, g, b, a order.
struct ColorRGBA_SRGB {  // NOLINT(readability-identifier-naming): the DeviceArray reference's name
  using ValueType = std::uint8_t;  ///< type of one channel value
  static constexpr int channels = 4;  ///< channels per element
  static constexpr Depth depth = Depth::U8;  ///< Depth code of ValueType
  static constexpr FormatId id = FormatId::ColorRGBA_SRGB;  ///< run-time identity
  /// Channel values in memory order (0..255).
  ///@{
  std::uint8_t r, g, b, a;
  ///@}
};

/// sRGB-encoded 8-bit colour with linear alpha, in b, g, r, a order.
struct ColorBGRA_SRGB {  // NOLINT(readability-identifier-naming)
  using ValueType = std::uint8_t;  ///< type of one channel value
  static constexpr int channels = 4;  ///< channels per element
  static constexpr Depth depth = Depth::U8;  ///< Depth code of ValueType
  static constexpr FormatId id = FormatId::ColorBGRA_SRGB;  ///< run-time identity
  /// Channel values in memory order (0..255).
  ///@{
  std::uint8_t b, g, r, a;
  ///@}
};

/// Linear-light colour in [0, 1] with linear alpha.
struct ColorRGBAf {
  using ValueType = float;  ///< type of one channel value
  static constexpr int channels = 4;  ///< channels per element
  static constexpr Depth depth = Depth::F32;  ///< Depth code of ValueType
  static constexpr FormatId id = FormatId::ColorRGBAf;  ///< run-time identity
  /// Channel values in memory order, in [0, 1].
  ///@{
  float r, g, b, a;
  ///@}
};

/// Linear-light 8-bit colour, in r, g, b order (3 bytes: not 4-byte aligned).
struct ColorRGB {
  using ValueType = std::uint8_t;  ///< type of one channel value
  static constexpr int channels = 3;  ///< channels per element
  static constexpr Depth depth = Depth::U8;  ///< Depth code of ValueType
  static constexpr FormatId id = FormatId::ColorRGB;  ///< run-time identity
  /// Channel values in memory order (0..255).
  ///@{
  std::uint8_t r, g, b;
  ///@}
};

/// Linear-light 8-bit colour, in b, g, r order (3 bytes: not 4-byte aligned).
struct ColorBGR {
  using ValueType = std::uint8_t;  ///< type of one channel value
  static constexpr int channels = 3;  ///< channels per element
  static constexpr Depth depth = Depth::U8;  ///< Depth code of ValueType
  static constexpr FormatId id = FormatId::ColorBGR;  ///< run-time identity
  /// Channel values in memory order (0..255).
  ///@{
  std::uint8_t b, g, r;
  ///@}
};

/// sRGB-encoded 8-bit colour, in r, g, b order.
struct ColorRGB_SRGB {  // NOLINT(readability-identifier-naming)
  using ValueType = std::uint8_t;  ///< type of one channel value
  static constexpr int channels = 3;  ///< channels per element
  static constexpr Depth depth = Depth::U8;  ///< Depth code of ValueType
  static constexpr FormatId id = FormatId::ColorRGB_SRGB;  ///< run-time identity
  /// Channel values in memory order (0..255).
  ///@{
  std::uint8_t r, g, b;
  ///@}
};

/// sRGB-encoded 8-bit colour, in b, g, r order.
struct ColorBGR_SRGB {  // NOLINT(readability-identifier-naming)
  using ValueType = std::uint8_t;  ///< type of one channel value
  static constexpr int channels = 3;  ///< channels per element
  static constexpr Depth depth = Depth::U8;  ///< Depth code of ValueType
  static constexpr FormatId id = FormatId::ColorBGR_SRGB;  ///< run-time identity
  /// Channel values in memory order (0..255).
  ///@{
  std::uint8_t b, g, r;
  ///@}
};

/// A compile-time list of formats.
template <class... Formats>
struct FormatList {
  static constexpr std::size_t size = sizeof...(Formats);  ///< number of formats in the list
  /// Calls `fn.template operator()<Format>()` for each format, in order.
  template <class Fn>
  static constexpr void forEach(Fn&& fn) {
    (fn.template operator()<Formats>(), ...);
  }
};

/// All 14 formats, in FormatId order.
using AllFormats = FormatList<PointXYZ, PointXYZW, PointZ, SNR, NormalXYZ, ColorRGBA, ColorBGRA,
                              ColorRGBA_SRGB, ColorBGRA_SRGB, ColorRGBAf, ColorRGB, ColorBGR,
                              ColorRGB_SRGB, ColorBGR_SRGB>;
/// The nine colour formats; each converts to each other.
using ColorFormats = FormatList<ColorRGBA, ColorBGRA, ColorRGBA_SRGB, ColorBGRA_SRGB, ColorRGBAf, ColorRGB,
                                ColorBGR, ColorRGB_SRGB, ColorBGR_SRGB>;

template <class T, class List> struct IsInFormatList;
template <class T, class... Formats>
struct IsInFormatList<T, FormatList<Formats...>> : std::bool_constant<(std::is_same_v<T, Formats> || ...)> {};

/// True for the 14 formats of the catalog.
template <class T>
inline constexpr bool isFormat = IsInFormatList<T, AllFormats>::value;
template <class T>
inline constexpr bool isColorFormat = IsInFormatList<T, ColorFormats>::value;

/// True when convert<To, From> exists: the identity (a copy),
/// PointXYZ <-> PointXYZW, PointXYZ / PointXYZW -> PointZ, and any colour format
/// to any other.
template <class To, class From>
inline constexpr bool isConvertible =
    isFormat<To> && isFormat<From> &&
    (std::is_same_v<To, From> || (isColorFormat<To> && isColorFormat<From>) ||
     (std::is_same_v<From, PointXYZ> && std::is_same_v<To, PointXYZW>) ||
     (std::is_same_v<From, PointXYZW> && std::is_same_v<To, PointXYZ>) ||
     ((std::is_same_v<From, PointXYZ> || std::is_same_v<From, PointXYZW>) && std::is_same_v<To, PointZ>));

/// Runtime description of a format.
struct FormatInfo {
  FormatId id;            ///< which format
  std::string_view name;  ///< the C++ type name, e.g. "ColorRGBA_SRGB"
  int channels;           ///< channels per element
  Depth depth;            ///< Depth code of one channel value
  std::size_t bytes;      ///< bytes per element (sizeof the format struct)
  bool isColor;           ///< one of the nine colour formats
  bool isSRGB;            ///< values are sRGB-encoded (alpha stays linear)
  /// Channel index of r, g, b, a within an element (-1: absent); colour formats only.
  ///@{
  int red, green, blue, alpha;
  ///@}

  /// The description of format `F`, whose C++ type name is `name`.
  template <class F>
  static constexpr FormatInfo of(std::string_view name) {
    FormatInfo info{F::id, name, F::channels, F::depth, sizeof(F), isColorFormat<F>, false, -1, -1, -1, -1};
    if constexpr (isColorFormat<F>) {
      info.isSRGB = name.ends_with("_SRGB");
      info.red = static_cast<int>(offsetof(F, r) / sizeof(typename F::ValueType));
      info.green = static_cast<int>(offsetof(F, g) / sizeof(typename F::ValueType));
      info.blue = static_cast<int>(offsetof(F, b) / sizeof(typename F::ValueType));
      if constexpr (F::channels == 4) info.alpha = static_cast<int>(offsetof(F, a) / sizeof(typename F::ValueType));
    }
    return info;
  }
};

/// The runtime table, indexed by FormatId.
inline constexpr FormatInfo kFormatInfos[kFormatCount] = {
    FormatInfo::of<PointXYZ>("PointXYZ"),
    FormatInfo::of<PointXYZW>("PointXYZW"),
    FormatInfo::of<PointZ>("PointZ"),
    FormatInfo::of<SNR>("SNR"),
    FormatInfo::of<NormalXYZ>("NormalXYZ"),
    FormatInfo::of<ColorRGBA>("ColorRGBA"),
    FormatInfo::of<ColorBGRA>("ColorBGRA"),
    FormatInfo::of<ColorRGBA_SRGB>("ColorRGBA_SRGB"),
    FormatInfo::of<ColorBGRA_SRGB>("ColorBGRA_SRGB"),
    FormatInfo::of<ColorRGBAf>("ColorRGBAf"),
    FormatInfo::of<ColorRGB>("ColorRGB"),
    FormatInfo::of<ColorBGR>("ColorBGR"),
    FormatInfo::of<ColorRGB_SRGB>("ColorRGB_SRGB"),
    FormatInfo::of<ColorBGR_SRGB>("ColorBGR_SRGB"),
};

/// Every format's description, in FormatId order.
constexpr std::span<const FormatInfo> formatInfos() noexcept { return kFormatInfos; }

/// The description of `id`. `id` must be one of the enumerators (checked at compile
/// time in constant expressions; an out-of-range run-time value yields PointXYZ's entry
/// rather than reading out of bounds).
constexpr const FormatInfo& formatInfo(FormatId id) noexcept {
  const int i = static_cast<int>(id);
  return kFormatInfos[(i >= 0 && i < kFormatCount) ? i : 0];
}

template <class F>
constexpr const FormatInfo& formatInfo() noexcept {
  static_assert(isFormat<F>, "formatInfo<F>: F is not one of the 14 DeviceArray formats");
  return kFormatInfos[static_cast<int>(F::id)];
}

/// "ColorRGBA_SRGB" -> FormatId::ColorRGBA_SRGB (exact, case-sensitive match);
/// std::nullopt for an unknown name. Never throws.
constexpr std::optional<FormatId> formatFromName(std::string_view name) noexcept {
  for (const FormatInfo& info : kFormatInfos)
    if (info.name == name) return info.id;
  return std::nullopt;
}

constexpr std::string_view toString(FormatId id) noexcept { return formatInfo(id).name; }

/// The layout of a DeviceArray (docs/data-layout.md): shape [H,W,C] | [H,W] | [N,C] | [N] and
/// row-major strides (elements and bytes).
struct ArrayLayout {
  std::vector<int> shape;           ///< [H, W, C] | [H, W] | [N, C] | [N]
  std::vector<int> strides;         ///< elements
  std::vector<int> stridesInBytes;  ///< bytes
  std::size_t size = 0;             ///< points / pixels, not channels
  std::size_t sizeInBytes = 0;      ///< size * bytes per element
};

/// Layout of an organized height x width array of `format`. Does not allocate or block.
/// Throws InvalidArgument for a non-positive height or width, OutOfRange when a stride in
/// bytes does not fit in int or the byte count overflows std::size_t.
ArrayLayout organizedLayout(FormatId format, int height, int width);
/// Layout of an unorganized array of `count` elements. Throws InvalidArgument for
/// count == 0, OutOfRange when count exceeds INT_MAX (shape entries are int) or the
/// byte count overflows.
ArrayLayout unorganizedLayout(FormatId format, std::size_t count);

// ------------------------------------------------------------ layout checks --
#define DEVICEARRAY_CHECK_FORMAT_(F, bytes)                                                        \
  static_assert(std::is_standard_layout_v<F> && std::is_trivially_copyable_v<F>,                \
                #F " must be a standard-layout, trivially copyable struct");                      \
  static_assert(sizeof(F) == (bytes), #F " must have its catalog bytes/element");                  \
  static_assert(sizeof(F) == F::channels * sizeof(F::ValueType), #F " must have no padding");      \
  static_assert(depthSize(F::depth) == sizeof(F::ValueType), #F "::depth must match ValueType")
DEVICEARRAY_CHECK_FORMAT_(PointXYZ, 12);
DEVICEARRAY_CHECK_FORMAT_(PointXYZW, 16);
DEVICEARRAY_CHECK_FORMAT_(PointZ, 4);
DEVICEARRAY_CHECK_FORMAT_(SNR, 4);
DEVICEARRAY_CHECK_FORMAT_(NormalXYZ, 12);
DEVICEARRAY_CHECK_FORMAT_(ColorRGBA, 4);
DEVICEARRAY_CHECK_FORMAT_(ColorBGRA, 4);
DEVICEARRAY_CHECK_FORMAT_(ColorRGBA_SRGB, 4);
DEVICEARRAY_CHECK_FORMAT_(ColorBGRA_SRGB, 4);
DEVICEARRAY_CHECK_FORMAT_(ColorRGBAf, 16);
DEVICEARRAY_CHECK_FORMAT_(ColorRGB, 3);
DEVICEARRAY_CHECK_FORMAT_(ColorBGR, 3);
DEVICEARRAY_CHECK_FORMAT_(ColorRGB_SRGB, 3);
DEVICEARRAY_CHECK_FORMAT_(ColorBGR_SRGB, 3);
#undef DEVICEARRAY_CHECK_FORMAT_

// Member order is the memory order of docs/data-layout.md (x, y, z[, w]; r, g, b, a / b, g, r, a).
static_assert(offsetof(PointXYZ, x) == 0 && offsetof(PointXYZ, y) == 4 && offsetof(PointXYZ, z) == 8);
static_assert(offsetof(PointXYZW, x) == 0 && offsetof(PointXYZW, y) == 4 && offsetof(PointXYZW, z) == 8 &&
              offsetof(PointXYZW, w) == 12);
static_assert(offsetof(NormalXYZ, x) == 0 && offsetof(NormalXYZ, y) == 4 && offsetof(NormalXYZ, z) == 8);
static_assert(offsetof(ColorRGBA, r) == 0 && offsetof(ColorRGBA, g) == 1 && offsetof(ColorRGBA, b) == 2 &&
              offsetof(ColorRGBA, a) == 3);
static_assert(offsetof(ColorBGRA, b) == 0 && offsetof(ColorBGRA, g) == 1 && offsetof(ColorBGRA, r) == 2 &&
              offsetof(ColorBGRA, a) == 3);
static_assert(offsetof(ColorRGBA_SRGB, r) == 0 && offsetof(ColorRGBA_SRGB, a) == 3);
static_assert(offsetof(ColorBGRA_SRGB, b) == 0 && offsetof(ColorBGRA_SRGB, a) == 3);
static_assert(offsetof(ColorRGBAf, r) == 0 && offsetof(ColorRGBAf, g) == 4 && offsetof(ColorRGBAf, b) == 8 &&
              offsetof(ColorRGBAf, a) == 12);
static_assert(offsetof(ColorRGB, r) == 0 && offsetof(ColorRGB, b) == 2);
static_assert(offsetof(ColorBGR, b) == 0 && offsetof(ColorBGR, r) == 2);
static_assert(offsetof(ColorRGB_SRGB, r) == 0 && offsetof(ColorRGB_SRGB, b) == 2);
static_assert(offsetof(ColorBGR_SRGB, b) == 0 && offsetof(ColorBGR_SRGB, r) == 2);
static_assert(AllFormats::size == kFormatCount);
static_assert([] {
  int i = 0;
  bool inOrder = true;
  AllFormats::forEach([&]<class F>() { inOrder = inOrder && static_cast<int>(F::id) == i++; });
  for (int k = 0; k < kFormatCount; ++k) inOrder = inOrder && static_cast<int>(kFormatInfos[k].id) == k;
  return inOrder;
}(), "AllFormats and kFormatInfos must list the formats in FormatId order");
static_assert(formatInfo<ColorBGRA_SRGB>().isSRGB && formatInfo<ColorBGRA_SRGB>().red == 2 &&
              formatInfo<ColorBGRA_SRGB>().alpha == 3 && !formatInfo<ColorRGBAf>().isSRGB &&
              formatInfo<ColorBGR>().alpha == -1);

}  // namespace devicearray
