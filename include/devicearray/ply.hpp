// devicearray — PLY files: reading and writing HostPointCloud.
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

enum class PlyFormat { ascii, binaryLittleEndian, binaryBigEndian };

/// Reads a PLY file (ascii, binary_little_endian or binary_big_endian, version 1.0).
///
/// The "vertex" element must have x, y, z (any scalar type; integers are exact, doubles
/// are narrowed to float, see PointCloudReadOptions::warning). Optional vertex
/// properties, under the names the common tools write (the first one declared is read):
///  * colour: red / r / diffuse_red, green / g / diffuse_green, blue / b / diffuse_blue
///    [, alpha / a / diffuse_alpha]. uchar is taken as is, ushort scaled by 255/65535,
///    other integers clamped to [0, 255]. Float or double colours are in [0, 255] when
///    any float colour value in the file exceeds 1 and in [0, 1] (scaled by 255)
///    otherwise; both are rounded and clamped. A missing alpha reads as 255; an alpha
///    without red, green and blue is ignored (the cloud has no colours).
///  * normals: nx / normal_x, ny / normal_y, nz / normal_z.
///  * snr.
/// Other scalar vertex properties (curvature, intensity, ...) are skipped; other
/// elements (faces, ...) are checked for well-formedness and skipped.
///
/// Organized clouds: only structured header fields declare a grid, never a comment:
/// "obj_info height H" / "obj_info width W" (what writePly writes), "obj_info num_rows
/// H" / "obj_info num_cols W" (PCL, VTK and camera vendors) or PCL's "camera" element
/// (its first record's viewporty rows of viewportx columns). Then H × W must equal the
/// vertex count and vertex i is point (i / W, i % W). A single row from num_rows or the
/// camera element is how PCL writes an unorganized cloud: it reads as unorganized.
/// options.height / options.width state the grid of a file that holds one in row order
/// without declaring it.
///
/// A vertex with a non-finite x, y or z (inf, or NaN in only some of them) reads as a
/// missing point: NaN in all three. Ascii numbers too small for their type (1e-50 as
/// a float) read as the nearest value it holds (a denormal or 0).
///
/// Hostile input is bounded: anything that does not begin with the line "ply" is
/// refused after its first five bytes; the header may be at most 16 MiB with lines of at
/// most 4096 characters, ascii body lines at most 65536; the header is parsed in time
/// linear in its size. The body is decoded record by record and never read further
/// than the header declares: bytes after the last record of a binary file are ignored
/// (as Open3D and plyfile do), an ascii file may end in blank lines only. A regular file
/// is checked against its size before anything is allocated; from a pipe or device the
/// cloud grows with the records that actually arrive.
///
/// Blocking. Throws InvalidArgument, naming the file, the header line or byte offset
/// and the problem, for any malformed or inconsistent file (bad magic or header,
/// unknown format or type, list properties in "vertex", a body shorter than the header
/// says, counts the file size cannot hold, non-numeric or out-of-range ascii values,
/// over-long lines or headers, H × W != vertex count, a grid in `options` that the file
/// contradicts), and when the file cannot be opened or read. Bytes of the file quoted
/// in a message are hex-escaped.
HostPointCloud readPly(const std::string& path, const PointCloudReadOptions& options = {});

/// Writes `cloud` as PLY 1.0 in `format`: x y z (float), then red green blue alpha
/// (uchar, in options.colorSpace) if it has colours, nx ny nz (float) if it has normals
/// and options.normals, snr (float) if it has SNR. Organized clouds (unless
/// options.organized is false: then only the valid points, unorganized) get "obj_info
/// height H" / "obj_info width W" and keep their missing (NaN) points; a point with any
/// non-finite coordinate is written as missing (NaN, NaN, NaN), never as an inf point;
/// ascii writes NaN as "nan" and floats with enough digits to read back bit-exactly.
///
/// Safe replacement: the file is written to a temporary `.<name>.tmp-XXXXXX` in the
/// same directory and renamed over `path` only when complete, so `path` holds the old
/// file or the new one, never a partial one; a replaced file keeps its permissions, a
/// new one gets 0666 & ~umask. When `path` exists and is not a regular file (a device
/// such as /dev/null, a FIFO) the bytes go to it directly and it is never removed.
/// See removeUnfinishedOutputFiles() for interrupted writes.
///
/// Blocking. Throws InvalidArgument when the cloud fails validate() or is empty (or has
/// no valid point when only valid points are written), and when the file cannot be
/// created or written (the temporary is removed; an existing `path` is left as it was).
void writePly(const std::string& path, const HostPointCloud& cloud,
              PlyFormat format = PlyFormat::binaryLittleEndian, const PointCloudWriteOptions& options = {});

}  // namespace devicearray
