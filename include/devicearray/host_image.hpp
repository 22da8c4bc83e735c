// devicearray — HostImage: an 8- or 16-bit image in host memory, what the PNG files
// and the renderer work on and what Frame2D is built from.
//
// Host only: nothing here touches a GPU, takes a stream or blocks on device work.
// Every failure throws devicearray::Error.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "devicearray/error.hpp"

namespace devicearray {

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

}  // namespace devicearray
