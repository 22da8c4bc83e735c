// devicearray — XYZ text files (one point per line): reading and writing HostPointCloud.
//
// Host only: nothing here touches a GPU, takes a stream or blocks on device work.
// Every failure throws devicearray::Error.
#pragma once

#include <string>

#include "devicearray/host_point_cloud.hpp"
#include "devicearray/output_files.hpp"
#include "devicearray/point_cloud_file_options.hpp"

namespace devicearray {

/// Reads an XYZ text file: one point per line, values separated by spaces or tabs.
/// The column count of the first point line decides what every line holds:
///  * 3 columns: x y z
///  * 6 columns: x y z r g b
///  * 9 columns: x y z r g b nx ny nz
/// (the layout CloudCompare, MeshLab and Open3D's xyzrgb write). Colours written as
/// integers are 8-bit codes taken as they are; when any colour is written with a
/// decimal point or exponent, the float rule of readPly() applies (in [0, 255] when any
/// value exceeds 1, else in [0, 1]). Alpha reads as 255. Blank lines and lines
/// beginning with '#' are skipped; lines may be at most 65536 characters. A point with
/// a non-finite coordinate ("nan") reads as missing. The file declares no grid: give
/// options.height / width to read a whole grid written in row order.
///
/// The file declares no point count, so memory grows with the points read (about 8
/// bytes per byte of text at most). Blocking. Throws InvalidArgument naming the file,
/// the line and the problem (a wrong column count, a value that is not a number or
/// does not fit a float, a colour outside [0, 255]), and when the file cannot be
/// opened or read.
HostPointCloud readXyz(const std::string& path, const PointCloudReadOptions& options = {});

/// Writes `cloud` as XYZ text: x y z, then r g b (integer codes in options.colorSpace)
/// if it has colours, then nx ny nz if it also has normals and options.normals (the
/// layout has no place for normals without colours: those are not written). Floats
/// are written with enough digits to read back bit-exactly; missing points of an
/// organized cloud are written as "nan nan nan" (kept in row order) unless
/// options.organized is false. Replaces `path` safely as writePly() does. Blocking.
/// Throws InvalidArgument when the cloud fails validate() or is empty (or has no valid
/// point to write), and when the file cannot be written.
void writeXyz(const std::string& path, const HostPointCloud& cloud, const PointCloudWriteOptions& options = {});

}  // namespace devicearray
