// devicearray — PCD files (the Point Cloud Library's format): reading and writing
// HostPointCloud.
//
// A malformed file never causes an allocation larger than the file could justify.
//
// Host only: nothing here touches a GPU, takes a stream or blocks on device work.
// Every failure throws devicearray::Error.
#pragma once

#include <string>

#include "devicearray/host_point_cloud.hpp"
#include "devicearray/output_files.hpp"
#include "devicearray/point_cloud_file_options.hpp"

namespace devicearray {

/// How the points of a PCD file are stored (its DATA line): text, packed binary
/// records, or LZF-compressed binary with the fields stored one after another.
enum class PcdFormat {
  ascii,            ///< DATA ascii: one point per line
  binary,           ///< DATA binary: packed little-endian records
  binaryCompressed  ///< DATA binary_compressed: LZF, each field's values stored together
};

/// Reads a PCD file (VERSION 0.7 and older headers; DATA ascii, binary or
/// binary_compressed). Header lines: FIELDS, SIZE, TYPE (I, U: 1, 2, 4 or 8 bytes; F: 4
/// or 8), COUNT (default 1), WIDTH, HEIGHT (default 1), VIEWPOINT (read and ignored),
/// POINTS (default WIDTH × HEIGHT; must equal it), DATA last; '#' lines are comments.
///
/// Fields: x, y, z (any type, COUNT 1; required), rgb or rgba (4 bytes, COUNT 1: the
/// packed 0xAARRGGBB of PCL, stored as F or U; in ascii as an unsigned integer or as
/// the float with those bits; "rgb" reads opaque, "rgba" keeps its alpha), normal_x,
/// normal_y, normal_z, snr. Every other field (curvature, intensity, any COUNT) is
/// skipped. HEIGHT > 1 is an organized cloud of HEIGHT rows of WIDTH points (PCL keeps
/// missing points as NaN); HEIGHT 1 is unorganized unless options give a grid. A point
/// with a non-finite x, y or z reads as missing (NaN in all three); values and
/// narrowing follow readPly().
///
/// Hostile input is bounded as for readPly(): header of at most 16 MiB with lines of at
/// most 65536 characters, parsed in linear time; counts checked against a regular
/// file's size before anything is allocated; binary_compressed data may declare at
/// most 88 bytes (LZF's largest expansion) per compressed byte, and every LZF reference
/// is checked. Bytes after the last point are ignored (binary) or must be blank lines
/// (ascii).
///
/// Blocking. Throws InvalidArgument naming the file, the header line, body line or
/// byte offset and the problem, for any malformed or inconsistent file, and when the
/// file cannot be opened or read.
HostPointCloud readPcd(const std::string& path, const PointCloudReadOptions& options = {});

/// Writes `cloud` as a PCD 0.7 file in `format`: fields x y z (F 4), rgba (U 4, PCL's
/// packed 0xAARRGGBB, in options.colorSpace) if it has colours, normal_x normal_y
/// normal_z (F 4) with its normals when options.normals, snr (F 4) if it has SNR.
/// An organized cloud is written as WIDTH × HEIGHT with its NaN points (unless
/// options.organized is false: then its valid points only, HEIGHT 1). Replaces `path`
/// safely as writePly() does. Blocking. Throws InvalidArgument when the cloud fails
/// validate() or is empty (or has no valid point to write), when binary_compressed data
/// would exceed 4 GiB, and when the file cannot be written (an existing `path` is left
/// as it was).
void writePcd(const std::string& path, const HostPointCloud& cloud, PcdFormat format = PcdFormat::binary,
              const PointCloudWriteOptions& options = {});

}  // namespace devicearray
