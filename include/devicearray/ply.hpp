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

namespace devicearray {

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

}  // namespace devicearray
