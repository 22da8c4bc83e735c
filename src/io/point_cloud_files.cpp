// The point-cloud reader of a file's extension.
#include "devicearray/point_cloud_files.hpp"

#include <algorithm>
#include <cctype>
#include <filesystem>

#include "devicearray/pcd.hpp"
#include "devicearray/ply.hpp"
#include "devicearray/xyz.hpp"
#include "io/io_detail.hpp"
#include "io/point_cloud_file_format.hpp"

namespace devicearray {

namespace io_detail {

std::optional<PointCloudFileFormat> formatOfExtension(const std::string& path) {
  std::string ext = std::filesystem::path(path).extension().string();
  std::transform(ext.begin(), ext.end(), ext.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  if (ext == ".ply") return PointCloudFileFormat::ply;
  if (ext == ".pcd") return PointCloudFileFormat::pcd;
  if (ext == ".xyz") return PointCloudFileFormat::xyz;
  return std::nullopt;
}

HostPointCloud readPointCloudAs(PointCloudFileFormat format, const std::string& path,
                                const PointCloudReadOptions& options) {
  switch (format) {
    case PointCloudFileFormat::ply: return readPly(path, options);
    case PointCloudFileFormat::pcd: return readPcd(path, options);
    case PointCloudFileFormat::xyz: break;
  }
  return readXyz(path, options);
}

}  // namespace io_detail

PointCloudFileFormat pointCloudFileFormatOf(const std::string& path) {
  if (const auto format = io_detail::formatOfExtension(path)) return *format;
  io_detail::invalid("cannot tell the format of '" + io_detail::printable(path) +
                     "' from its extension (expected .ply, .pcd or .xyz)");
}

HostPointCloud readPointCloudFile(const std::string& path, const PointCloudReadOptions& options) {
  return io_detail::readPointCloudAs(pointCloudFileFormatOf(path), path, options);
}

}  // namespace devicearray
