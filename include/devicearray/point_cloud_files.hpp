// devicearray — a point-cloud file read by its extension (.ply, .pcd, .xyz), for
// tools that take whichever format a user hands them.
//
// Host only: nothing here touches a GPU, takes a stream or blocks on device work.
// Every failure throws devicearray::Error.
#pragma once

#include <string>

#include "devicearray/host_point_cloud.hpp"
#include "devicearray/point_cloud_file_options.hpp"

namespace devicearray {

enum class PointCloudFileFormat { ply, pcd, xyz };

/// The format `path`'s extension names: .ply, .pcd or .xyz, in any letter case. Throws
/// InvalidArgument, naming the path, for any other extension.
PointCloudFileFormat pointCloudFileFormatOf(const std::string& path);

/// readPly, readPcd or readXyz, as `path`'s extension names. Blocking; throws what
/// that reader throws, and InvalidArgument for an unknown extension.
HostPointCloud readPointCloudFile(const std::string& path, const PointCloudReadOptions& options = {});

}  // namespace devicearray
