// devicearray — PNG files: reading and writing HostImage (through libpng, optional).
//
// A malformed file never causes an allocation larger than the file could justify.
//
// Host only: nothing here touches a GPU, takes a stream or blocks on device work.
// Every failure throws devicearray::Error.
#pragma once

#include <string>

#include "devicearray/host_image.hpp"
#include "devicearray/output_files.hpp"

namespace devicearray {

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

/// Whether this build can read and write PNG files.
bool pngSupported() noexcept;

}  // namespace devicearray
