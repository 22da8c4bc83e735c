// read_point_cloud / write_point_cloud (PLY, PCD, XYZ by extension) and read_image /
// write_image (8- and 16-bit PNG): the library's file readers and writers with the
// upload and download around them.
#include <nanobind/nanobind.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>

#include <algorithm>
#include <cctype>
#include <cstring>
#include <optional>
#include <string>
#include <vector>

#include "common.hpp"

namespace devicearray::python {

namespace {

/// The file format `path`'s extension names, as a ValueError naming the function.
PointCloudFileFormat cloudFileOf(const std::string& path, const char* fn) {
  try {
    return pointCloudFileFormatOf(path);
  } catch (const Error& e) {
    throw nb::value_error((std::string(fn) + ": " + e.what()).c_str());
  }
}

ColorSpace colorSpaceFrom(const std::string& name, const char* fn) {
  if (name == "srgb") return ColorSpace::srgb;
  if (name == "linear") return ColorSpace::linear;
  throw nb::value_error((std::string(fn) + ": color_space must be 'srgb' or 'linear', not '" + name + "'").c_str());
}

/// Issues the library's warnings (collected while the GIL was released) as Python
/// UserWarnings.
void issueWarnings(const std::vector<std::string>& warnings) {
  if (warnings.empty()) return;
  nb::object warn = nb::module_::import_("warnings").attr("warn");
  for (const std::string& w : warnings) warn(w, nb::handle(PyExc_UserWarning), 2);
}

/// The host cloud `cloud` (a PointCloud or UnorganizedPointCloud) downloads to, with
/// the organized cloud's device normals when `normals` (an unorganized cloud brings the
/// normals it carries).
HostPointCloud hostCloudOf(nb::handle cloud, bool normals, const char* fn) {
  PointCloud organized;
  if (nb::try_cast(cloud, organized, /*convert=*/false)) {
    nb::gil_scoped_release release;
    HostPointCloud host = organized.toHost();
    if (normals) {
      const StreamOrQueue sq = organized.device().sdkStreamOrQueue();
      const DeviceArray<NormalXYZ> normalsOnDevice = organized.deviceNormalsXYZ(sq);
      synchronizeStream(sq);
      const std::vector<NormalXYZ> n = normalsOnDevice.toHost();
      host.normals.resize(3 * n.size());
      std::memcpy(host.normals.data(), n.data(), host.normals.size() * sizeof(float));
    }
    return host;
  }
  UnorganizedPointCloud points;
  if (nb::try_cast(cloud, points, /*convert=*/false)) {
    if (normals && !points.hasNormals() && !points.isEmpty())
      throw nb::value_error((std::string(fn) + ": the UnorganizedPointCloud has no normals to write; call "
                                               "estimate_normals() first or pass normals=False")
                                .c_str());
    nb::gil_scoped_release release;
    return points.toHost();
  }
  throw nb::type_error((std::string(fn) + ": cloud must be a PointCloud or an UnorganizedPointCloud, not " +
                        typeName(cloud))
                           .c_str());
}

/// A PNG's image on the device: 8-bit images as a Frame2D (its sRGB samples kept as
/// they are), 16-bit ones (depth maps, mostly) as a GpuMatND of uint16 holding the
/// samples as they are: (H, W) for gray, (H, W, C) otherwise.
nb::object imageToDevice(const HostImage& image, const ComputeDevice& device) {
  if (image.bitDepth == 8) {
    Frame2D frame;
    {
      nb::gil_scoped_release release;
      frame = Frame2D::fromHost(image, device);
    }
    return nb::cast(std::move(frame));
  }
  // Channels as a last axis, as from_numpy makes them.
  const std::vector<int> shape = image.channels == 1 ? std::vector<int>{image.height, image.width}
                                                     : std::vector<int>{image.height, image.width, image.channels};
  const int type = makeType(Depth::U16, 1);
  GpuMatND mat;
  {
    nb::gil_scoped_release release;
    HostMat view(shape, type, const_cast<std::uint8_t*>(image.data.data()));
    mat = GpuMatND(shape, type, device);
    mat.upload(view);
  }
  return nb::cast(std::move(mat));
}

/// The host image of a Frame2D (8-bit sRGB RGBA) or of a GpuMatND of uint8 or uint16,
/// (H, W) or (H, W, C) with C in 1, 3, 4.
HostImage hostImageOf(nb::handle image) {
  Frame2D frame;
  if (nb::try_cast(image, frame, /*convert=*/false)) {
    if (frame.isEmpty()) throw nb::value_error("write_image: the Frame2D is empty");
    nb::gil_scoped_release release;
    const StreamOrQueue sq = frame.device().sdkStreamOrQueue();
    const DeviceArray<ColorRGBA_SRGB> encoded = frame.imageDeviceArray<ColorRGBA_SRGB>(sq);
    synchronizeStream(sq);
    const std::vector<ColorRGBA_SRGB> pixels = encoded.toHost();
    HostImage host(frame.height(), frame.width(), 4, 8);
    std::memcpy(host.data.data(), pixels.data(), host.data.size());
    return host;
  }
  GpuMatND mat;
  if (nb::try_cast(image, mat, /*convert=*/false)) {
    const int depth = mat.depth();
    // (H, W) with 1, 3 or 4 channels in its type, or (H, W, C) of one channel.
    const int channels = mat.dims == 3 && mat.channels() == 1 ? mat.size[2] : mat.channels();
    const bool shapeOk = (mat.dims == 2 || (mat.dims == 3 && mat.channels() == 1)) &&
                         (channels == 1 || channels == 3 || channels == 4);
    if (mat.empty() || !shapeOk || (depth != static_cast<int>(Depth::U8) && depth != static_cast<int>(Depth::U16)))
      throw nb::value_error("write_image: a GpuMatND must be a non-empty uint8 or uint16 array of shape (H, W) or "
                            "(H, W, C) with 1, 3 or 4 channels");
    nb::gil_scoped_release release;
    HostImage host(mat.size[0], mat.size[1], channels, depth == static_cast<int>(Depth::U8) ? 8 : 16);
    HostMat view(mat.size, mat.type(), host.data.data());
    mat.download(view);
    return host;
  }
  throw nb::type_error(("write_image: image must be a Frame2D or a GpuMatND, not " + typeName(image)).c_str());
}

}  // namespace

void bindFiles(nb::module_& m) {
  m.def(
      "read_point_cloud",
      [](nb::handle pathArg, std::optional<ComputeDevice> device, int height, int width,
         const std::string& colorSpace) -> nb::object {
        constexpr const char* fn = "read_point_cloud";
        const std::string path = pathFrom(pathArg, "read_point_cloud: path");
        const PointCloudFileFormat kind = cloudFileOf(path, fn);
        std::vector<std::string> warnings;
        PointCloudReadOptions options;
        options.height = height;
        options.width = width;
        options.colorSpace = colorSpaceFrom(colorSpace, fn);
        options.warning = [&](const std::string& w) { warnings.push_back(w); };
        const ComputeDevice target = deviceOrDefault(device);
        std::optional<PointCloud> organized;
        std::optional<UnorganizedPointCloud> points;
        {
          nb::gil_scoped_release release;
          (void)kind;  // checked above, before the GIL was released
          const HostPointCloud host = readPointCloudFile(path, options);
          if (host.isOrganized())
            organized = PointCloud::fromHost(host, target);
          else
            points = UnorganizedPointCloud::fromHost(host, target);
        }
        issueWarnings(warnings);
        return organized ? nb::cast(std::move(*organized)) : nb::cast(std::move(*points));
      },
      nb::arg("path"), nb::arg("device") = nb::none(), nb::kw_only(), nb::arg("height") = 0, nb::arg("width") = 0,
      nb::arg("color_space") = "srgb",
      "Reads a .ply, .pcd or .xyz file (by extension) onto `device` (default: the default device): a PointCloud "
      "when the file declares a grid (or `height` x `width` states the grid of a file holding one in row order), "
      "an UnorganizedPointCloud of its valid points otherwise. `color_space`: how the file's colours are encoded "
      "('srgb' or 'linear'). Normals in the file are kept by an UnorganizedPointCloud (a PointCloud computes "
      "its own). Coordinates that "
      "lose precision as float32 give one UserWarning. Blocking; raises ValueError naming the file and the "
      "line or byte offset for a malformed file.");

  m.def(
      "write_point_cloud",
      [](nb::handle pathArg, nb::handle cloud, bool binary, const std::string& colorSpace, bool normals) {
        constexpr const char* fn = "write_point_cloud";
        const std::string path = pathFrom(pathArg, "write_point_cloud: path");
        const PointCloudFileFormat kind = cloudFileOf(path, fn);
        PointCloudWriteOptions options;
        options.colorSpace = colorSpaceFrom(colorSpace, fn);
        options.normals = normals;
        const HostPointCloud host = hostCloudOf(cloud, normals, fn);
        nb::gil_scoped_release release;
        switch (kind) {
          case PointCloudFileFormat::ply:
            writePly(path, host, binary ? PlyFormat::binaryLittleEndian : PlyFormat::ascii, options);
            break;
          case PointCloudFileFormat::pcd: writePcd(path, host, binary ? PcdFormat::binary : PcdFormat::ascii, options); break;
          case PointCloudFileFormat::xyz: writeXyz(path, host, options); break;
        }
      },
      nb::arg("path"), nb::arg("cloud"), nb::kw_only(), nb::arg("binary") = true, nb::arg("color_space") = "srgb",
      nb::arg("normals") = false,
      "Writes a PointCloud (organized, missing points kept as NaN) or an UnorganizedPointCloud as .ply, .pcd or "
      ".xyz (by extension; .xyz is always text). `binary`: binary little-endian PLY / binary PCD, else ascii. "
      "`color_space`: 'srgb' (what viewers expect) or 'linear'. `normals`: also write the PointCloud's normals "
      "(computed on the device). Replaces the file safely (a temporary renamed when complete). Blocking.");

  m.def(
      "read_image",
      [](nb::handle pathArg, std::optional<ComputeDevice> device) {
        const std::string path = pathFrom(pathArg, "read_image: path");
        HostImage image;
        {
          nb::gil_scoped_release release;
          image = readPng(path);
        }
        return imageToDevice(image, deviceOrDefault(device));
      },
      nb::arg("path"), nb::arg("device") = nb::none(),
      "Reads a PNG onto `device`: an 8-bit image as a Frame2D (its sRGB samples kept as they are), a 16-bit "
      "one (a depth map) as a GpuMatND of uint16 with the samples as they are, shape (H, W) for gray, (H, W, C) "
      "for RGB / RGBA. Blocking.");

  m.def(
      "write_image",
      [](nb::handle pathArg, nb::handle image) {
        const std::string path = pathFrom(pathArg, "write_image: path");
        const HostImage host = hostImageOf(image);
        nb::gil_scoped_release release;
        writePng(path, host);
      },
      nb::arg("path"), nb::arg("image"),
      "Writes a Frame2D as an 8-bit sRGB RGBA PNG, or a GpuMatND of uint8 / uint16, shape (H, W) or (H, W, C) with "
      "C in 1, 3, 4, as an 8- / 16-bit gray, RGB or RGBA PNG (a 16-bit depth map stays 16-bit). Replaces the file safely. "
      "Blocking.");
}

}  // namespace devicearray::python
