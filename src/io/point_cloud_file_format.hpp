// Choosing a point-cloud reader by a path's extension: shared by readPointCloudFile and
// the frame pipeline's input, which reads every other path as PLY.
#pragma once

#include <optional>
#include <string>

#include "devicearray/point_cloud_files.hpp"

namespace devicearray::io_detail {

/// The format `path`'s extension names (.ply, .pcd or .xyz, any letter case); nullopt
/// for any other extension or none.
std::optional<PointCloudFileFormat> formatOfExtension(const std::string& path);

/// readPly, readPcd or readXyz of `path`, as `format` says.
HostPointCloud readPointCloudAs(PointCloudFileFormat format, const std::string& path,
                                const PointCloudReadOptions& options = {});

}  // namespace devicearray::io_detail
