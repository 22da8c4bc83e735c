// PointCloud, UnorganizedPointCloud, Frame2D, Downsampling and RegionOfInterestBox.
// Methods that take `stream` enqueue there and return without blocking; with
// stream=None they run on the device's own queue and block.
#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>
#include <nanobind/stl/array.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>

#include <array>
#include <climits>
#include <cstring>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

#include "common.hpp"

namespace devicearray::python {

namespace {

template <class F>
DeviceArray<F> asFormat(const AnyDeviceArray& a, const char* fn, const char* what) {
  if (a.format() == F::id) return DeviceArray<F>::fromGpuMatND(a.mat());
  throw Error(ErrorCode::InvalidArgument, std::string(fn) + ": " + what + " must be a DeviceArray of format " +
                                              std::string(formatInfo<F>().name) + ", not " +
                                              std::string(formatInfo(a.format()).name));
}

template <class F>
DeviceArray<F> optionalFormat(const std::optional<AnyDeviceArray>& a, const char* fn, const char* what) {
  return a ? asFormat<F>(*a, fn, what) : DeviceArray<F>();
}

ColorRGBA colorFrom(const std::array<int, 4>& c) {
  for (int v : c)
    if (v < 0 || v > 255)
      throw Error(ErrorCode::InvalidArgument,
                  "paint_uniform_color: colour value " + std::to_string(v) + " is outside [0, 255]");
  return ColorRGBA{static_cast<std::uint8_t>(c[0]), static_cast<std::uint8_t>(c[1]), static_cast<std::uint8_t>(c[2]),
                   static_cast<std::uint8_t>(c[3])};
}

/// Colour arrays of the clouds and Frame2D: ColorRGBA (linear) or ColorRGBA_SRGB (kept
/// as its sRGB codes).
bool isSrgbColors(const std::optional<AnyDeviceArray>& a) { return a && a->format() == FormatId::ColorRGBA_SRGB; }

/// The colour space of the stored codes, as the file functions name it.
const char* colorSpaceName(ColorSpace s) { return s == ColorSpace::srgb ? "srgb" : "linear"; }

PointXYZ pointFrom(const std::array<float, 3>& p) { return PointXYZ{p[0], p[1], p[2]}; }
std::array<float, 3> pointTo(const PointXYZ& p) { return {p.x, p.y, p.z}; }

/// An (H, W) uint8 or bool numpy mask, packed, as bytes (non-zero keeps the point).
struct HostMask {
  nb::object keep;
  const std::uint8_t* data = nullptr;
  int height = 0;
  int width = 0;
};

HostMask hostMask(nb::handle obj) {
  nb::object np = nb::module_::import_("numpy");
  nb::object arr = np.attr("asarray")(obj);
  const std::string kind = pyStr(arr.attr("dtype").attr("name"));
  if (kind != "uint8" && kind != "bool")
    throw nb::value_error(("mask: a host mask must be uint8 or bool, not " + kind).c_str());
  if (nb::cast<int>(arr.attr("ndim")) != 2)
    throw nb::value_error(("mask: a host mask must have shape (H, W), got shape " +
                           pyStr(arr.attr("shape")))
                              .c_str());
  HostMask m;
  // bool and uint8 have the same size; a bool mask is read as its 0 / 1 bytes.
  m.keep = np.attr("ascontiguousarray")(arr).attr("view")("uint8");
  Py_buffer view;
  if (PyObject_GetBuffer(m.keep.ptr(), &view, PyBUF_C_CONTIGUOUS) != 0) throw nb::python_error();
  m.data = static_cast<const std::uint8_t*>(view.buf);
  const Py_ssize_t height = view.shape[0], width = view.shape[1];
  PyBuffer_Release(&view);  // `keep` owns the memory
  if (height > INT_MAX || width > INT_MAX)
    throw nb::value_error("mask: the host mask is larger than INT_MAX along an axis");
  m.height = static_cast<int>(height);
  m.width = static_cast<int>(width);
  return m;
}

template <class Fn>
AnyDeviceArray colorArray(FormatId format, Fn&& fn) {
  if (!formatInfo(format).isColor)
    throw Error(ErrorCode::InvalidArgument,
                std::string("format ") + std::string(formatInfo(format).name) + " is not a colour format");
  return withFormat(format, [&]<class F>() -> AnyDeviceArray {
    if constexpr (isColorFormat<F>) return AnyDeviceArray{fn.template operator()<F>()};
    else throw Error(ErrorCode::InvalidArgument, "not a colour format");
  });
}

constexpr const char* kStreamDoc =
    " With `stream`: enqueued there, non-blocking; without: on the device's own queue, blocking.";

/// `item` as a float when it is a Python float, or an int that a float holds exactly
/// (so the value is the one numpy's float32 conversion gives).
bool exactNumber(PyObject* item, float& out) {
  if (PyFloat_CheckExact(item)) {
    out = static_cast<float>(PyFloat_AS_DOUBLE(item));
    return true;
  }
  if (PyLong_CheckExact(item)) {
    int overflow = 0;
    const long long v = PyLong_AsLongLongAndOverflow(item, &overflow);
    if (overflow != 0 || v < -(1LL << 24) || v > (1LL << 24)) return false;
    out = static_cast<float>(v);
    return true;
  }
  return false;
}

/// The fast forms of a matrix, read without numpy: a C-contiguous float32 buffer of
/// 4x4 or 16 values, or a list / tuple of 16 numbers or of 4 rows of 4. A per-frame
/// call spends more on numpy's conversion than on the enqueue. False: anything else,
/// which matrixFrom converts (and diagnoses) through numpy.
bool fastMatrix(PyObject* obj, Matrix4x4& m) {
  if (PyObject_CheckBuffer(obj) != 0) {
    Py_buffer view;
    if (PyObject_GetBuffer(obj, &view, PyBUF_C_CONTIGUOUS | PyBUF_FORMAT | PyBUF_ND) != 0) {
      PyErr_Clear();
      return false;
    }
    const bool ok = view.itemsize == 4 && view.format != nullptr && std::string_view(view.format) == "f" &&
                    ((view.ndim == 2 && view.shape[0] == 4 && view.shape[1] == 4) ||
                     (view.ndim == 1 && view.shape[0] == 16));
    if (ok) std::memcpy(m.data(), view.buf, sizeof(m));
    PyBuffer_Release(&view);
    return ok;
  }
  if (!PyList_Check(obj) && !PyTuple_Check(obj)) return false;
  PyObject** items = PySequence_Fast_ITEMS(obj);
  const Py_ssize_t n = PySequence_Fast_GET_SIZE(obj);
  if (n == 16) {
    for (Py_ssize_t i = 0; i < 16; ++i)
      if (!exactNumber(items[i], m[static_cast<std::size_t>(i)])) return false;
    return true;
  }
  if (n != 4) return false;
  for (Py_ssize_t r = 0; r < 4; ++r) {
    PyObject* row = items[r];
    if ((!PyList_Check(row) && !PyTuple_Check(row)) || PySequence_Fast_GET_SIZE(row) != 4) return false;
    PyObject** values = PySequence_Fast_ITEMS(row);
    for (Py_ssize_t c = 0; c < 4; ++c)
      if (!exactNumber(values[c], m[static_cast<std::size_t>(4 * r + c)])) return false;
  }
  return true;
}

/// A deep copy of `cloud` on its own device (copy.copy / copy.deepcopy). Blocking.
template <class Cloud>
Cloud deepCopy(const Cloud& cloud) {
  return readReleased(cloud, [](const Cloud& c) { return c.isEmpty() ? c : c.clone(c.device()); });
}

}  // namespace

Matrix4x4 matrixFrom(nb::handle obj, const char* fn) {
  if (Matrix4x4 fast{}; fastMatrix(obj.ptr(), fast)) return fast;
  nb::object np = nb::module_::import_("numpy");
  nb::object values;
  try {
    values = np.attr("ascontiguousarray")(obj, nb::arg("dtype") = "float32");
  } catch (nb::python_error& e) {
    if (!e.matches(PyExc_TypeError) && !e.matches(PyExc_ValueError)) throw;
    throw nb::type_error((std::string(fn) + ": the matrix must be 4x4 numbers (or 16, row-major): " + e.what()).c_str());
  }
  const std::string shape = pyStr(values.attr("shape"));
  if (shape != "(4, 4)" && shape != "(16,)")
    throw nb::value_error((std::string(fn) + ": the matrix must be 4x4 (or 16 values, row-major), got shape " + shape)
                              .c_str());
  Py_buffer view;
  if (PyObject_GetBuffer(values.ptr(), &view, PyBUF_C_CONTIGUOUS) != 0) throw nb::python_error();
  Matrix4x4 m{};
  std::memcpy(m.data(), view.buf, sizeof(m));
  PyBuffer_Release(&view);
  return m;
}

nb::object matrixTo(const Matrix4x4& m) {
  nb::list values;
  for (float v : m) values.append(v);
  return nb::module_::import_("numpy").attr("array")(values, nb::arg("dtype") = "float32").attr("reshape")(4, 4);
}

void bindPointClouds(nb::module_& m) {
  nb::enum_<Downsampling>(m, "Downsampling")
      .value("by2x2", Downsampling::by2x2)
      .value("by3x3", Downsampling::by3x3)
      .value("by4x4", Downsampling::by4x4);

  nb::class_<RegionOfInterestBox>(m, "RegionOfInterestBox",
                                  "Oriented box: origin O, points A and B spanning its base, and the extent "
                                  "[min_extent, max_extent] along the base normal.")
      .def("__init__",
           [](RegionOfInterestBox* self, std::array<float, 3> origin, std::array<float, 3> a,
              std::array<float, 3> b, float minExtent, float maxExtent) {
             new (self) RegionOfInterestBox{pointFrom(origin), pointFrom(a), pointFrom(b), minExtent, maxExtent};
           },
           nb::arg("origin"), nb::arg("point_a"), nb::arg("point_b"), nb::arg("min_extent"), nb::arg("max_extent"))
      .def_prop_rw("origin", [](const RegionOfInterestBox& b) { return pointTo(b.origin); },
                   [](RegionOfInterestBox& b, std::array<float, 3> p) { b.origin = pointFrom(p); })
      .def_prop_rw("point_a", [](const RegionOfInterestBox& b) { return pointTo(b.pointA); },
                   [](RegionOfInterestBox& b, std::array<float, 3> p) { b.pointA = pointFrom(p); })
      .def_prop_rw("point_b", [](const RegionOfInterestBox& b) { return pointTo(b.pointB); },
                   [](RegionOfInterestBox& b, std::array<float, 3> p) { b.pointB = pointFrom(p); })
      .def_rw("min_extent", &RegionOfInterestBox::minExtent)
      .def_rw("max_extent", &RegionOfInterestBox::maxExtent);

  // ---------------------------------------------------------- PointCloud --
  nb::class_<PointCloud>(m, "PointCloud",
                         "Organized H x W point cloud on one device: XYZ (NaN = missing), optional RGBA colour "
                         "(sRGB or linear codes, see color_space()) and SNR.")
      .def(nb::init<>())
      .def_ro_static("DEFAULT_NORMAL_WINDOW_SIZE", &PointCloud::kDefaultNormalWindowSize)
      .def("__init__",
           [](PointCloud* self, const AnyDeviceArray& xyz, std::optional<AnyDeviceArray> colors,
              std::optional<AnyDeviceArray> snrs) {
             constexpr const char* fn = "PointCloud";
             auto x = asFormat<PointXYZ>(xyz, fn, "xyz");
             auto s = optionalFormat<SNR>(snrs, fn, "snrs");
             if (isSrgbColors(colors)) {
               auto c = asFormat<ColorRGBA_SRGB>(*colors, fn, "colors");
               nb::gil_scoped_release release;
               new (self) PointCloud(std::move(x), std::move(c), std::move(s));
               return;
             }
             auto c = optionalFormat<ColorRGBA>(colors, fn, "colors");
             nb::gil_scoped_release release;
             new (self) PointCloud(std::move(x), std::move(c), std::move(s));
           },
           nb::arg("xyz"), nb::arg("colors") = nb::none(), nb::arg("snrs") = nb::none(),
           "Zero-copy from organized DeviceArrays (PointXYZ, ColorRGBA or ColorRGBA_SRGB, SNR) of one size and "
           "device; sRGB colours are kept as their codes (color_space() 'srgb').")
      .def(
          "color_space", [](const PointCloud& c) { return colorSpaceName(c.colorSpace()); },
          "'srgb' when the colours are stored as sRGB codes (from files, host clouds and ColorRGBA_SRGB arrays), "
          "'linear' otherwise.")
      .def("height", &PointCloud::height)
      .def("width", &PointCloud::width)
      .def("size", &PointCloud::size)
      .def("is_empty", &PointCloud::isEmpty)
      .def("has_colors", &PointCloud::hasColors)
      .def("has_snrs", &PointCloud::hasSNRs)
      .def("device", &PointCloud::device)
      // copy.copy and copy.deepcopy: a deep copy on the same device (Open3D users write
      // copy.deepcopy(cloud) before transforming one).
      .def("__copy__", [](const PointCloud& self) { return deepCopy(self); })
      .def("__deepcopy__", [](const PointCloud& self, nb::handle) { return deepCopy(self); }, nb::arg("memo"))
      .def("to",
           [](const PointCloud& self, const ComputeDevice& device) {
             return readReleased(self, [&](const PointCloud& c) { return c.device() == device ? c : c.clone(device); });
           },
           nb::arg("device"),
           "This cloud on `device`: itself (sharing the memory) when it is already there, else a deep copy with the "
           "same transformation_matrix(), peer-to-peer where the devices reach each other's memory and staged "
           "through host memory otherwise. Blocking.")
      .def("device_points_xyz",
           [](PointCloud pc, const Stream* s) {
             return AnyDeviceArray{onStreamOrBlocking(pc.device(), s, [&](StreamOrQueue sq) { return pc.devicePointsXYZ(sq); })};
           },
           nb::arg("stream") = nb::none(), (std::string("A new PointXYZ array.") + kStreamDoc).c_str())
      .def("device_points_xyzw",
           [](PointCloud pc, const Stream* s) {
             return AnyDeviceArray{onStreamOrBlocking(pc.device(), s, [&](StreamOrQueue sq) { return pc.devicePointsXYZW(sq); })};
           },
           nb::arg("stream") = nb::none())
      .def("device_points_z",
           [](PointCloud pc, const Stream* s) {
             return AnyDeviceArray{onStreamOrBlocking(pc.device(), s, [&](StreamOrQueue sq) { return pc.devicePointsZ(sq); })};
           },
           nb::arg("stream") = nb::none())
      .def("device_snrs",
           [](PointCloud pc, const Stream* s) {
             return AnyDeviceArray{onStreamOrBlocking(pc.device(), s, [&](StreamOrQueue sq) { return pc.deviceSNRs(sq); })};
           },
           nb::arg("stream") = nb::none())
      .def("device_normals_xyz",
           [](PointCloud pc, const Stream* s, std::optional<int> windowSize, std::optional<RegionOfInterestBox> keptBy,
              nb::handle boxFromCloud) {
             if (keptBy && !windowSize)
               throw nb::value_error("device_normals_xyz: kept_by needs window_size (it restricts the plane fit)");
             if (!keptBy && !boxFromCloud.is_none())
               throw nb::value_error("device_normals_xyz: box_from_cloud needs kept_by");
             const Matrix4x4 pose =
                 boxFromCloud.is_none() ? identityMatrix4x4() : matrixFrom(boxFromCloud, "device_normals_xyz");
             return AnyDeviceArray{onStreamOrBlocking(pc.device(), s, [&](StreamOrQueue sq) {
               if (keptBy) return pc.deviceNormalsXYZ(*windowSize, *keptBy, pose, sq);
               return windowSize ? pc.deviceNormalsXYZ(*windowSize, sq) : pc.deviceNormalsXYZ(sq);
             })};
           },
           nb::arg("stream") = nb::none(), nb::arg("window_size") = nb::none(), nb::arg("kept_by") = nb::none(),
           nb::arg("box_from_cloud") = nb::none(),
           "Unit normals towards the camera: central differences, or with `window_size` (odd, 3..15) a plane fit "
           "over that window (PointCloud.DEFAULT_NORMAL_WINDOW_SIZE suits full-resolution camera noise). With "
           "`kept_by` (a RegionOfInterestBox) the plane fit skips the points that mask_by_region_of_interest("
           "kept_by) removes after transform(box_from_cloud) (4x4; identity when omitted): NaN there, except "
           "within rounding of the box's faces; every fitted normal is the unrestricted one.")
      .def("image_device_array",
           [](PointCloud pc, FormatId format, const Stream* s) {
             return colorArray(format, [&]<class C>() {
               return onStreamOrBlocking(pc.device(), s, [&](StreamOrQueue sq) { return pc.imageDeviceArray<C>(sq); });
             });
           },
           nb::arg("format").noconvert(), nb::arg("stream") = nb::none(), "The colours as a new array of colour format `format`.")
      .def("downsample",
           [](PointCloud& pc, Downsampling d, const Stream* s) {
             updateReleased(pc, [&](auto& cloud) {
               if (s != nullptr) cloud.downsample(d, s->handle());
               else cloud.downsample(d);
             });
           },
           nb::arg("downsampling").noconvert(), nb::arg("stream") = nb::none())
      .def("downsampled",
           [](PointCloud pc, Downsampling d, const Stream* s) {
             nb::gil_scoped_release release;
             return s != nullptr ? pc.downsampled(d, s->handle()) : pc.downsampled(d);
           },
           nb::arg("downsampling").noconvert(), nb::arg("stream") = nb::none())
      .def("transform",
           [](PointCloud& pc, nb::handle matrix, const Stream* s) {
             const Matrix4x4 mat = matrixFrom(matrix, "transform");
             updateReleased(pc, [&](auto& cloud) {
               if (s != nullptr) cloud.transform(mat, s->handle());
               else cloud.transform(mat);
             });
           },
           nb::arg("matrix"), nb::arg("stream") = nb::none(), "Applies a 4x4 row-major rigid transform in place.")
      .def("transformed",
           [](PointCloud pc, nb::handle matrix, const Stream* s) {
             const Matrix4x4 mat = matrixFrom(matrix, "transform");
             nb::gil_scoped_release release;
             return s != nullptr ? pc.transformed(mat, s->handle()) : pc.transformed(mat);
           },
           nb::arg("matrix"), nb::arg("stream") = nb::none())
      .def("transformation_matrix", [](PointCloud pc) { return matrixTo(pc.transformationMatrix()); },
           "The accumulated 4x4 transform (numpy float32).")
      .def("mask",
           [](PointCloud& pc, const GpuMatND& mask, const Stream* s) {
             updateReleased(pc, [&](auto& cloud) {
               if (s != nullptr) cloud.mask(mask, s->handle());
               else cloud.mask(mask);
             });
           },
           nb::arg("mask"), nb::arg("stream") = nb::none(), "Points where the (H, W) uint8 mask is 0 become NaN.")
      .def("mask",
           [](PointCloud& pc, nb::handle mask) {
             const HostMask hm = hostMask(mask);
             updateReleased(pc, [&](PointCloud& cloud) { cloud.mask(hm.data, hm.height, hm.width); });
           },
           nb::arg("mask"), "Host mask: an (H, W) uint8 or bool numpy array.")
      .def("masked",
           [](PointCloud pc, const GpuMatND& mask, const Stream* s) {
             nb::gil_scoped_release release;
             return s != nullptr ? pc.masked(mask, s->handle()) : pc.masked(mask);
           },
           nb::arg("mask"), nb::arg("stream") = nb::none())
      .def("masked",
           [](PointCloud pc, nb::handle mask) {
             const HostMask hm = hostMask(mask);
             HostMat host({hm.height, hm.width}, makeType(Depth::U8, 1), const_cast<std::uint8_t*>(hm.data));
             nb::gil_scoped_release release;
             return pc.masked(host);
           },
           nb::arg("mask"))
      .def("mask_by_region_of_interest",
           [](PointCloud& pc, const RegionOfInterestBox& box, const Stream* s) {
             updateReleased(pc, [&](auto& cloud) {
               if (s != nullptr) cloud.maskByRegionOfInterest(box, s->handle());
               else cloud.maskByRegionOfInterest(box);
             });
           },
           nb::arg("box"), nb::arg("stream") = nb::none())
      .def("transform_and_mask_by_region_of_interest",
           [](PointCloud& pc, nb::handle matrix, const RegionOfInterestBox& box, const Stream* s) {
             const Matrix4x4 mat = matrixFrom(matrix, "transform_and_mask_by_region_of_interest");
             updateReleased(pc, [&](auto& cloud) {
               if (s != nullptr) cloud.transformAndMaskByRegionOfInterest(mat, box, s->handle());
               else cloud.transformAndMaskByRegionOfInterest(mat, box);
             });
           },
           nb::arg("matrix"), nb::arg("box"), nb::arg("stream") = nb::none(),
           "transform(matrix) then mask_by_region_of_interest(box) in one pass over the points: the same "
           "points, bit for bit.")
      .def("masked_by_region_of_interest",
           [](PointCloud pc, const RegionOfInterestBox& box, const Stream* s) {
             nb::gil_scoped_release release;
             return s != nullptr ? pc.maskedByRegionOfInterest(box, s->handle()) : pc.maskedByRegionOfInterest(box);
           },
           nb::arg("box"), nb::arg("stream") = nb::none())
      .def("to_unorganized_point_cloud",
           [](PointCloud pc, const Stream* s, std::optional<AnyDeviceArray> normals) {
             if (normals) {
               auto n = asFormat<NormalXYZ>(*normals, "to_unorganized_point_cloud", "normals");
               nb::gil_scoped_release release;
               return s != nullptr ? pc.toUnorganizedPointCloud(n, s->handle()) : pc.toUnorganizedPointCloud(n);
             }
             nb::gil_scoped_release release;
             return s != nullptr ? pc.toUnorganizedPointCloud(s->handle()) : pc.toUnorganizedPointCloud();
           },
           nb::arg("stream") = nb::none(), nb::arg("normals") = nb::none(),
           "Order-preserving compaction of the valid points. With a stream it only enqueues: the "
           "result's size is read when first needed. `normals` (this cloud's, e.g. from "
           "device_normals_xyz(): a NormalXYZ array of its height and width) go with their points.")
      .def("voxel_downsampled",
           [](PointCloud pc, float voxelSize, int minPoints, const Stream* s, std::optional<AnyDeviceArray> normals) {
             if (normals) {
               auto n = asFormat<NormalXYZ>(*normals, "voxel_downsampled", "normals");
               nb::gil_scoped_release release;
               return s != nullptr ? pc.voxelDownsampled(n, voxelSize, minPoints, s->handle())
                                   : pc.voxelDownsampled(n, voxelSize, minPoints);
             }
             nb::gil_scoped_release release;
             return s != nullptr ? pc.voxelDownsampled(voxelSize, minPoints, s->handle())
                                 : pc.voxelDownsampled(voxelSize, minPoints);
           },
           nb::arg("voxel_size"), nb::arg("min_points_per_voxel"), nb::arg("stream") = nb::none(),
           nb::arg("normals") = nb::none(),
           "The voxel grid of the valid points: to_unorganized_point_cloud(normals=normals)."
           "voxel_downsampled(voxel_size, min_points_per_voxel), bit for bit, without the compaction.");

  // ----------------------------------------------- UnorganizedPointCloud --
  nb::class_<UnorganizedPointCloud>(m, "UnorganizedPointCloud",
                                     "N valid points: XYZ, optional colour, SNR and normals.")
      .def(nb::init<>())
      .def("__init__",
           [](UnorganizedPointCloud* self, const AnyDeviceArray& xyz, std::optional<AnyDeviceArray> colors,
              std::optional<AnyDeviceArray> snrs, std::optional<AnyDeviceArray> normals) {
             constexpr const char* fn = "UnorganizedPointCloud";
             auto x = asFormat<PointXYZ>(xyz, fn, "xyz");
             auto s = optionalFormat<SNR>(snrs, fn, "snrs");
             auto n = optionalFormat<NormalXYZ>(normals, fn, "normals");
             if (isSrgbColors(colors)) {
               auto c = asFormat<ColorRGBA_SRGB>(*colors, fn, "colors");
               nb::gil_scoped_release release;
               new (self) UnorganizedPointCloud(std::move(x), std::move(c), std::move(s), std::move(n));
               return;
             }
             auto c = optionalFormat<ColorRGBA>(colors, fn, "colors");
             nb::gil_scoped_release release;
             new (self) UnorganizedPointCloud(std::move(x), std::move(c), std::move(s), std::move(n));
           },
           nb::arg("xyz"), nb::arg("colors") = nb::none(), nb::arg("snrs") = nb::none(),
           nb::arg("normals") = nb::none())
      .def(
          "color_space", [](const UnorganizedPointCloud& c) { return colorSpaceName(c.colorSpace()); },
          "'srgb' or 'linear': the colour space of the stored colour codes (as PointCloud.color_space).")
      .def_ro_static("DEFAULT_NORMAL_NEIGHBOURS", &UnorganizedPointCloud::kDefaultNormalNeighbours)
      .def("has_normals", &UnorganizedPointCloud::hasNormals)
      .def("device_normals_xyz",
           [](UnorganizedPointCloud pc, const Stream* s) {
             return AnyDeviceArray{
                 onStreamOrBlocking(pc.device(), s, [&](StreamOrQueue sq) { return pc.deviceNormalsXYZ(sq); })};
           },
           nb::arg("stream") = nb::none())
      .def("estimate_normals",
           [](UnorganizedPointCloud& pc, int neighbours, const Stream* s) {
             nb::gil_scoped_release release;
             if (s != nullptr)
               pc.estimateNormals(neighbours, s->handle());
             else
               pc.estimateNormals(neighbours);
           },
           nb::arg("neighbours") = UnorganizedPointCloud::kDefaultNormalNeighbours, nb::arg("stream") = nb::none(),
           "Plane-fit normals over each point's nearest neighbours, towards the viewpoint.")
      // A cloud from a stream call may hold its count on the device: reading it waits.
      .def("size",
           [](const UnorganizedPointCloud& pc) {
             nb::gil_scoped_release release;
             return pc.size();
           },
           "Number of points; waits for a count still on the device (see is_size_known).")
      .def("is_empty",
           [](const UnorganizedPointCloud& pc) {
             nb::gil_scoped_release release;
             return pc.isEmpty();
           })
      .def("is_size_known", &UnorganizedPointCloud::isSizeKnown,
           "False while the point count of a stream call's result is still in device memory.")
      .def("reread", &UnorganizedPointCloud::reread,
           "A copy sharing the arrays that reads the point count (and a stream center()'s translation) "
           "from device memory again: after each launch of a captured CUDA graph, that launch's cloud.")
      .def("has_colors", &UnorganizedPointCloud::hasColors)
      .def("has_snrs", &UnorganizedPointCloud::hasSNRs)
      .def("device", &UnorganizedPointCloud::device)
      .def("__copy__", [](const UnorganizedPointCloud& self) { return deepCopy(self); })
      .def("__deepcopy__", [](const UnorganizedPointCloud& self, nb::handle) { return deepCopy(self); },
           nb::arg("memo"))
      .def("to",
           [](const UnorganizedPointCloud& self, const ComputeDevice& device) {
             return readReleased(self, [&](const UnorganizedPointCloud& c) {
               return c.device() == device ? c : c.clone(device);
             });
           },
           nb::arg("device"), "This cloud on `device`, as PointCloud.to. Blocking.")
      .def("device_points_xyz",
           [](UnorganizedPointCloud pc, const Stream* s) {
             return AnyDeviceArray{onStreamOrBlocking(pc.device(), s, [&](StreamOrQueue sq) { return pc.devicePointsXYZ(sq); })};
           },
           nb::arg("stream") = nb::none())
      .def("device_points_xyzw",
           [](UnorganizedPointCloud pc, const Stream* s) {
             return AnyDeviceArray{onStreamOrBlocking(pc.device(), s, [&](StreamOrQueue sq) { return pc.devicePointsXYZW(sq); })};
           },
           nb::arg("stream") = nb::none())
      .def("device_snrs",
           [](UnorganizedPointCloud pc, const Stream* s) {
             return AnyDeviceArray{onStreamOrBlocking(pc.device(), s, [&](StreamOrQueue sq) { return pc.deviceSNRs(sq); })};
           },
           nb::arg("stream") = nb::none())
      .def("device_colors",
           [](UnorganizedPointCloud pc, FormatId format, const Stream* s) {
             return colorArray(format, [&]<class C>() {
               return onStreamOrBlocking(pc.device(), s, [&](StreamOrQueue sq) { return pc.deviceColors<C>(sq); });
             });
           },
           nb::arg("format").noconvert(), nb::arg("stream") = nb::none())
      .def("voxel_downsampled",
           [](UnorganizedPointCloud pc, float voxelSize, int minPoints, const Stream* s) {
             nb::gil_scoped_release release;
             return s != nullptr ? pc.voxelDownsampled(voxelSize, minPoints, s->handle())
                                 : pc.voxelDownsampled(voxelSize, minPoints);
           },
           nb::arg("voxel_size"), nb::arg("min_points_per_voxel"), nb::arg("stream") = nb::none())
      .def("statistical_outliers_removed",
           [](UnorganizedPointCloud pc, int neighbours, float stdRatio, const Stream* s) {
             nb::gil_scoped_release release;
             return s != nullptr ? pc.statisticalOutliersRemoved(neighbours, stdRatio, s->handle())
                                 : pc.statisticalOutliersRemoved(neighbours, stdRatio);
           },
           nb::arg("neighbours") = 20, nb::arg("std_ratio") = 2.0f, nb::arg("stream") = nb::none(),
           "The points whose mean distance to their `neighbours` nearest points (themselves included) is at most "
           "the cloud's mean of those distances plus std_ratio sample standard deviations (Open3D's statistical "
           "outlier removal), in their order, with their attributes.")
      .def("remove_statistical_outliers",
           [](UnorganizedPointCloud& pc, int neighbours, float stdRatio, const Stream* s) {
             updateReleased(pc, [&](auto& cloud) {
               if (s != nullptr) cloud.removeStatisticalOutliers(neighbours, stdRatio, s->handle());
               else cloud.removeStatisticalOutliers(neighbours, stdRatio);
             });
           },
           nb::arg("neighbours") = 20, nb::arg("std_ratio") = 2.0f, nb::arg("stream") = nb::none(),
           "In-place statistical_outliers_removed.")
      .def("radius_outliers_removed",
           [](UnorganizedPointCloud pc, float radius, int minPoints, const Stream* s) {
             nb::gil_scoped_release release;
             return s != nullptr ? pc.radiusOutliersRemoved(radius, minPoints, s->handle())
                                 : pc.radiusOutliersRemoved(radius, minPoints);
           },
           nb::arg("radius"), nb::arg("min_points"), nb::arg("stream") = nb::none(),
           "The points with at least min_points other points closer than radius (mm) (Open3D's radius outlier "
           "removal, whose count includes the point itself and must exceed min_points), in their order, with "
           "their attributes.")
      .def("remove_radius_outliers",
           [](UnorganizedPointCloud& pc, float radius, int minPoints, const Stream* s) {
             updateReleased(pc, [&](auto& cloud) {
               if (s != nullptr) cloud.removeRadiusOutliers(radius, minPoints, s->handle());
               else cloud.removeRadiusOutliers(radius, minPoints);
             });
           },
           nb::arg("radius"), nb::arg("min_points"), nb::arg("stream") = nb::none(), "In-place radius_outliers_removed.")
      .def("transform",
           [](UnorganizedPointCloud& pc, nb::handle matrix, const Stream* s) {
             const Matrix4x4 mat = matrixFrom(matrix, "transform");
             updateReleased(pc, [&](auto& cloud) {
               if (s != nullptr) cloud.transform(mat, s->handle());
               else cloud.transform(mat);
             });
           },
           nb::arg("matrix"), nb::arg("stream") = nb::none())
      .def("transformed",
           [](UnorganizedPointCloud pc, nb::handle matrix, const Stream* s) {
             const Matrix4x4 mat = matrixFrom(matrix, "transform");
             nb::gil_scoped_release release;
             return s != nullptr ? pc.transformed(mat, s->handle()) : pc.transformed(mat);
           },
           nb::arg("matrix"), nb::arg("stream") = nb::none())
      .def("transformation_matrix",
           [](UnorganizedPointCloud pc) {
             const Matrix4x4* m = nullptr;
             {
               nb::gil_scoped_release release;  // a centring on a stream is read from the device here
               m = &pc.transformationMatrix();
             }
             return matrixTo(*m);
           },
           "The accumulated 4 x 4 transformation; after center(stream) the first call waits for the centroid "
           "(and raises when no point was valid).")
      .def("extend",
           [](UnorganizedPointCloud& pc, UnorganizedPointCloud other, const Stream* s) {
             updateReleased(pc, [&](auto& cloud) {
               if (s != nullptr) cloud.extend(other, s->handle());
               else cloud.extend(other);
             });
           },
           nb::arg("other"), nb::arg("stream") = nb::none())
      .def("paint_uniform_color",
           [](UnorganizedPointCloud& pc, std::array<int, 4> rgba, const Stream* s) {
             const ColorRGBA c = colorFrom(rgba);
             updateReleased(pc, [&](auto& cloud) {
               if (s != nullptr) cloud.paintUniformColor(c, s->handle());
               else cloud.paintUniformColor(c);
             });
           },
           nb::arg("rgba"), nb::arg("stream") = nb::none(), "Sets every colour to linear (r, g, b, a) in [0, 255].")
      .def("centroid",
           [](UnorganizedPointCloud pc, const Stream* s) {
             nb::gil_scoped_release release;
             return s != nullptr ? pc.centroid(s->handle()) : pc.centroid();
           },
           nb::arg("stream") = nb::none(), "Mean of the points (x, y, z).")
      .def("device_centroid",
           [](UnorganizedPointCloud pc, const Stream* s) {
             return AnyDeviceArray{onStreamOrBlocking(pc.device(), s, [&](StreamOrQueue sq) { return pc.deviceCentroid(sq); })};
           },
           nb::arg("stream") = nb::none(),
           "The mean of the valid points as a one-point PointXYZ DeviceArray, computed on the device without a host "
           "read (on `stream`: only enqueued); NaN when no point is valid.")
      .def("center",
           [](UnorganizedPointCloud& pc, const Stream* s) {
             updateReleased(pc, [&](auto& cloud) {
               if (s != nullptr) cloud.center(s->handle());
               else cloud.center();
             });
           },
           nb::arg("stream") = nb::none(),
           "Translates the cloud so that its centroid is the origin. On `stream` it does not wait: the translation "
           "joins transformation_matrix() when that is next read, which raises when no point was valid.");

  // ------------------------------------------------------------- Frame2D --
  nb::class_<Frame2D>(m, "Frame2D",
                     "An H x W colour image on one device (stored as its 8-bit codes: sRGB or linear).")
      .def(nb::init<>())
      .def("__init__",
           [](Frame2D* self, const AnyDeviceArray& image) {
             if (image.format() == FormatId::ColorRGBA_SRGB) {
               auto img = asFormat<ColorRGBA_SRGB>(image, "Frame2D", "image");
               nb::gil_scoped_release release;
               new (self) Frame2D(std::move(img));
               return;
             }
             auto img = asFormat<ColorRGBA>(image, "Frame2D", "image");
             nb::gil_scoped_release release;
             new (self) Frame2D(std::move(img));
           },
           nb::arg("image"),
           "Zero-copy from an organized ColorRGBA or ColorRGBA_SRGB DeviceArray (sRGB codes kept as they are).")
      .def(
          "color_space", [](const Frame2D& f) { return colorSpaceName(f.colorSpace()); },
          "'srgb' or 'linear': the colour space of the stored codes.")
      .def("height", &Frame2D::height)
      .def("width", &Frame2D::width)
      .def("size", &Frame2D::size)
      .def("is_empty", &Frame2D::isEmpty)
      .def("device", &Frame2D::device)
      .def("image_device_array",
           [](Frame2D f, FormatId format, const Stream* s) {
             return colorArray(format, [&]<class C>() {
               return onStreamOrBlocking(f.device(), s, [&](StreamOrQueue sq) { return f.imageDeviceArray<C>(sq); });
             });
           },
           nb::arg("format").noconvert(), nb::arg("stream") = nb::none(), "The image as a new array of colour format `format`.")
      .def("image_device_array",
           [](Frame2D f, const AnyDeviceArray& dst, const Stream* s) {
             dst.visit([&]<class C>(const DeviceArray<C>& d) {
               if constexpr (isColorFormat<C>) {
                 if (d.isEmpty()) throw Error(ErrorCode::InvalidArgument, "Frame2D.image_device_array: dst is empty");
                 onStreamOrBlocking(f.device(), s, [&](StreamOrQueue sq) {
                   f.imageDeviceArray<C>(d.view(), sq);
                   return 0;
                 });
               } else {
                 throw Error(ErrorCode::InvalidArgument, "Frame2D.image_device_array: dst has format " +
                                                             std::string(formatInfo<C>().name) +
                                                             ", which is not a colour format");
               }
             });
           },
           nb::arg("dst"), nb::arg("stream") = nb::none(), "Fills `dst` (an organized colour DeviceArray of this size).");
}

}  // namespace devicearray::python
