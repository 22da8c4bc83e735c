// GpuMatND, DeviceArray (all 14 formats behind one class), Format, from_numpy,
// convert and convert_into.
#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <bit>
#include <climits>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include "common.hpp"

namespace devicearray::python {

namespace {

nb::object numpy() { return nb::module_::import_("numpy"); }


/// Byte strides of a numpy array with the ones of length-1 axes replaced by the
/// packed value: numpy leaves any stride on such axes (x[None], a.T of a row), and
/// they are never stepped over.
std::vector<std::size_t> canonicalSteps(const std::vector<int>& shape, const std::vector<Py_ssize_t>& strides,
                                        std::size_t elem, bool& usable) {
  std::vector<std::size_t> steps(shape.size());
  std::size_t packed = elem;
  usable = true;
  for (std::size_t i = shape.size(); i-- > 0;) {
    if (shape[i] == 1) {
      steps[i] = packed;
    } else if (strides[i] <= 0 || static_cast<std::size_t>(strides[i]) % elem != 0) {
      usable = false;  // negative, broadcast (0) or unaligned (a view of a structured array)
    } else {
      steps[i] = static_cast<std::size_t>(strides[i]);
    }
    packed *= static_cast<std::size_t>(shape[i]);
  }
  // Descending steps with a contiguous last axis is a HostMat view; anything else
  // (transposed, interleaved) is packed first.
  for (std::size_t i = 0; usable && i < steps.size(); ++i) {
    const std::size_t inner = i + 1 < steps.size() ? steps[i + 1] * static_cast<std::size_t>(shape[i + 1]) : elem;
    if (shape[i] > 1 && (steps[i] < inner || (i + 1 == steps.size() && steps[i] != elem))) usable = false;
  }
  return steps;
}

}  // namespace

/// Throws unless every axis length is in [1, INT_MAX] (a device layout's lengths are int).
void checkAxisLengths(const std::vector<Py_ssize_t>& shape, const char* fn) {
  for (std::size_t i = 0; i < shape.size(); ++i)
    if (shape[i] < 1 || shape[i] > INT_MAX)
      throw Error(shape[i] < 1 ? ErrorCode::InvalidArgument : ErrorCode::OutOfRange,
                  std::string(fn) + ": axis " + std::to_string(i) + " has length " + std::to_string(shape[i]) +
                      "; lengths must be in [1, " + std::to_string(INT_MAX) + "]");
}

HostInput hostInput(nb::handle obj, bool packed, const char* fn) {
  HostInput in;
  nb::object np = numpy();
  in.keep = np.attr("asarray")(obj);
  in.depth = depthFromDtype(in.keep.attr("dtype"), fn);
  // Checked before packing: numpy.ascontiguousarray turns a 0-d array into shape (1,),
  // and would first allocate a broadcast view's every element (terabytes for a
  // zero-stride axis longer than any device layout).
  if (nb::cast<int>(in.keep.attr("ndim")) == 0)
    throw Error(ErrorCode::InvalidArgument, std::string(fn) + ": a 0-d array (scalar) has no device layout");
  checkAxisLengths(nb::cast<std::vector<Py_ssize_t>>(in.keep.attr("shape")), fn);
  if (packed) in.keep = np.attr("ascontiguousarray")(in.keep);
  for (int attempt = 0;; ++attempt) {
    Py_buffer view;
    if (PyObject_GetBuffer(in.keep.ptr(), &view, PyBUF_RECORDS_RO) != 0) throw nb::python_error();
    in.data = view.buf;
    in.shape.clear();
    std::vector<Py_ssize_t> strides(view.strides, view.strides + view.ndim);
    std::vector<Py_ssize_t> shape(view.shape, view.shape + view.ndim);
    PyBuffer_Release(&view);  // `keep` owns the memory; the buffer view itself is not needed
    checkAxisLengths(shape, fn);
    for (Py_ssize_t length : shape) in.shape.push_back(static_cast<int>(length));
    bool usable = false;
    in.steps = canonicalSteps(in.shape, strides, depthSize(in.depth), usable);
    if (usable) return in;
    // A C-contiguous copy always passes; a second failure would be a bug here, and
    // must not loop.
    if (attempt > 0)
      throw Error(ErrorCode::InvalidState, std::string(fn) + ": cannot describe the packed array's layout");
    in.keep = np.attr("ascontiguousarray")(in.keep);
  }
}

/// A HostMat view of `in`; with channels > 1 its last axis is folded into the
/// type's channels.
HostMat hostView(const HostInput& in, int channels) {
  std::vector<int> size = in.shape;
  std::vector<std::size_t> steps = in.steps;
  if (channels > 1) {
    size.pop_back();
    steps.pop_back();
  }
  return HostMat(size, makeType(in.depth, channels), const_cast<void*>(in.data), steps);
}

namespace {

/// The memory of a host array that a copy writes into, exported for as long as
/// `keep` (a memoryview) lives, so that it can be neither freed nor resized.
struct HostDestination {
  nb::object keep;
  void* data = nullptr;
  std::size_t bytes = 0;
  std::size_t itemsize = 1;
  const char* format = "B";  ///< the buffer's struct format, alive as long as `keep`
};

HostDestination hostDestination(nb::handle dst, const char* fn) {
  PyObject* view = PyMemoryView_FromObject(dst.ptr());
  if (view == nullptr) {
    PyErr_Clear();
    throw nb::type_error((std::string(fn) + ": dst must be a writable, C-contiguous host array (numpy), not " +
                          pyStr(nb::handle(Py_TYPE(dst.ptr())).attr("__name__")))
                             .c_str());
  }
  HostDestination out{nb::steal(view)};
  const Py_buffer* b = PyMemoryView_GET_BUFFER(view);
  if (b->readonly) throw nb::value_error((std::string(fn) + ": dst is read-only").c_str());
  // A packed temporary in its place would receive the copy and be freed before
  // the copy ran, leaving dst unchanged: refuse instead.
  if (PyBuffer_IsContiguous(b, 'C') == 0)
    throw nb::value_error((std::string(fn) + ": dst must be C-contiguous (numpy.empty or numpy.ascontiguousarray "
                                             "gives such an array)")
                              .c_str());
  out.data = b->buf;
  out.bytes = static_cast<std::size_t>(b->len);
  out.itemsize = static_cast<std::size_t>(b->itemsize);
  out.format = b->format != nullptr ? b->format : "B";
  return out;
}

/// A continuous deep copy of `m` on its own device (copy.copy / copy.deepcopy); an empty
/// array's copy is empty. Blocking.
GpuMatND deepCopy(const GpuMatND& m) {
  return readReleased(m, [](const GpuMatND& x) { return x.empty() ? x : x.clone(); });
}

/// A packed deep copy of `a` on its own device (copy.copy / copy.deepcopy). Blocking.
AnyDeviceArray deepCopy(const AnyDeviceArray& a) {
  return a.visit([](const auto& x) {
    nb::gil_scoped_release release;
    return AnyDeviceArray{x.isEmpty() ? x : x.clone(x.device())};
  });
}

/// Whether `dst`'s items are the values of a format of `depth` (float32 or uint8):
/// their buffer format, without a native or little-endian byte-order prefix.
bool holdsValuesOf(const HostDestination& dst, Depth depth) {
  std::string_view code = dst.format;
  const bool nativeOrder = !code.empty() && (code[0] == '@' || code[0] == '=' ||
                                              (code[0] == '<' && std::endian::native == std::endian::little));
  if (nativeOrder) code.remove_prefix(1);
  if (depth == Depth::F32) return code == "f" && dst.itemsize == 4;
  return (code == "B" || code == "b" || code == "c") && dst.itemsize == 1;
}

/// A typed destination must hold the array's value type, and at least as many values;
/// bytes (uint8, bytearray) take its bytes whatever they hold, as the documented raw
/// copy does. Anything else would be filled with reinterpreted bytes (float32 values
/// read as float64, say).
template <class F>
void checkTypedDestination(const HostDestination& dst, const DeviceArray<F>& a, const char* fn) {
  const Depth depth = F::depth;
  const bool bytes = holdsValuesOf(dst, Depth::U8);
  if (!bytes && !holdsValuesOf(dst, depth))
    throw nb::value_error((std::string(fn) + ": dst holds '" + dst.format + "' items of " +
                           std::to_string(dst.itemsize) + " bytes; the array's values are " +
                           (depth == Depth::F32 ? "float32" : "uint8") + " (or pass a uint8 array for the raw bytes)")
                              .c_str());
  // A larger destination is fine (one buffer of the largest frame, reused for clouds
  // whose point counts vary): the values fill its start.
  const std::size_t values = a.size() * static_cast<std::size_t>(F::channels);
  if (!bytes && dst.bytes / dst.itemsize < values)
    throw nb::value_error((std::string(fn) + ": dst holds " + std::to_string(dst.bytes / dst.itemsize) +
                           " values; the array has " + std::to_string(values))
                              .c_str());
}


/// How a numpy array maps onto `target`: the last axis becomes the channels when
/// `target` has more than one channel and the array is target's size + [channels]
/// of target's depth; otherwise every axis is a dimension (one channel).
int channelsForUpload(const HostInput& in, const GpuMatND& target) {
  if (target.empty() || target.channels() == 1 || in.depth != depthOf(target.type())) return 1;
  std::vector<int> expected = target.size;
  expected.push_back(target.channels());
  return in.shape == expected ? target.channels() : 1;
}

// ----------------------------------------------------------- indexing ----

/// self[key]: O(1) view. Slices of step 1 (clamped like numpy's), integers (the
/// axis is dropped, except that the last remaining axis is kept with length 1) and
/// one Ellipsis; the channel axis only accepts `:`.
GpuMatND indexView(const GpuMatND& m, nb::handle key) {
  requireNonEmpty(m, "GpuMatND.__getitem__");
  std::vector<nb::handle> items;
  if (nb::isinstance<nb::tuple>(key)) {
    for (nb::handle h : nb::borrow<nb::tuple>(key)) items.push_back(h);
  } else {
    items.push_back(key);
  }
  const int dims = m.dims;
  const int axes = dims + (m.channels() > 1 ? 1 : 0);
  // Expand the Ellipsis into full slices.
  std::vector<nb::handle> expanded;
  bool sawEllipsis = false;
  for (nb::handle h : items) {
    if (h.ptr() == Py_Ellipsis) {
      if (sawEllipsis) throw nb::index_error("GpuMatND.__getitem__: an index can only have a single ellipsis");
      sawEllipsis = true;
      const int fill = axes - static_cast<int>(items.size()) + 1;
      for (int i = 0; i < fill; ++i) expanded.push_back(nb::none());
    } else {
      expanded.push_back(h);
    }
  }
  if (static_cast<int>(expanded.size()) > axes)
    throw nb::index_error(("GpuMatND.__getitem__: too many indices: " + std::to_string(expanded.size()) +
                           " given, the array has " + std::to_string(axes) + " axes")
                              .c_str());
  std::vector<Range> ranges(static_cast<std::size_t>(dims), Range::all());
  std::vector<bool> drop(static_cast<std::size_t>(dims), false);
  for (std::size_t i = 0; i < expanded.size(); ++i) {
    nb::handle h = expanded[i];
    const bool channelAxis = static_cast<int>(i) >= dims;
    const Py_ssize_t length = channelAxis ? m.channels() : m.size[i];
    if (h.is_none() && i < items.size() && !sawEllipsis && items[i].is_none())
      throw nb::index_error("GpuMatND.__getitem__: None (newaxis) is not supported");
    if (h.is_none()) continue;  // from the Ellipsis
    if (PySlice_Check(h.ptr())) {
      Py_ssize_t start = 0, stop = 0, step = 0;
      if (PySlice_Unpack(h.ptr(), &start, &stop, &step) < 0) throw nb::python_error();
      const Py_ssize_t n = PySlice_AdjustIndices(length, &start, &stop, step);
      if (step != 1)
        throw nb::index_error(("GpuMatND.__getitem__: slice step " + std::to_string(step) + " on axis " +
                               std::to_string(i) + " is not supported (views need step 1; copy on the host instead)")
                                  .c_str());
      if (channelAxis) {
        if (n != length)
          throw nb::index_error("GpuMatND.__getitem__: the channel axis is interleaved in the element type and "
                                "only accepts ':'");
        continue;
      }
      if (n <= 0)
        throw nb::index_error(("GpuMatND.__getitem__: the slice selects no element of axis " + std::to_string(i) +
                               " (length " + std::to_string(length) + "); zero-length axes are not supported")
                                  .c_str());
      ranges[i] = Range(static_cast<int>(start), static_cast<int>(stop));
    } else if (PyIndex_Check(h.ptr())) {
      if (channelAxis)
        throw nb::index_error("GpuMatND.__getitem__: the channel axis is interleaved in the element type and "
                              "only accepts ':'");
      Py_ssize_t idx = PyNumber_AsSsize_t(h.ptr(), PyExc_IndexError);
      if (idx == -1 && PyErr_Occurred()) throw nb::python_error();
      if (idx < 0) idx += length;
      if (idx < 0 || idx >= length)
        throw nb::index_error(("GpuMatND.__getitem__: index " + nb::cast<std::string>(nb::repr(h)) +
                               " is out of bounds for axis " + std::to_string(i) + " with length " +
                               std::to_string(length))
                                  .c_str());
      ranges[i] = Range(static_cast<int>(idx), static_cast<int>(idx) + 1);
      drop[i] = true;
    } else {
      throw nb::type_error(("GpuMatND.__getitem__: indices must be slices, integers or '...', not " +
                            pyStr(nb::handle(reinterpret_cast<PyObject*>(Py_TYPE(h.ptr()))))
                           ).c_str());
    }
  }
  GpuMatND view = m(ranges);
  std::vector<int> dropped;
  for (int i = 0; i < dims; ++i)
    if (drop[static_cast<std::size_t>(i)]) dropped.push_back(i);
  if (dropped.empty()) return view;
  return squeeze(view, dropped);
}

// --------------------------------------------------------- DeviceArray ----

nb::object toNumpyArray(const AnyDeviceArray& a) {
  return a.visit([](const auto& arr) {
    const GpuMatND m = arr.toGpuMatND();
    if (m.empty()) throw Error(ErrorCode::InvalidState, "DeviceArray.to_numpy: the array is empty");
    return toNumpy(m);
  });
}

template <class F>
AnyDeviceArray fromNumpyAs(const HostInput& in, const ComputeDevice& device) {
  constexpr const char* fn = "from_numpy";
  const FormatInfo& info = formatInfo<F>();
  const std::vector<int>& s = in.shape;
  auto describe = [&] {
    std::string shape = "(";
    for (std::size_t i = 0; i < s.size(); ++i) shape += (i ? ", " : "") + std::to_string(s[i]);
    return shape + (s.size() == 1 ? ",)" : ")");
  };
  if (in.depth != F::depth)
    throw Error(ErrorCode::InvalidArgument,
                std::string(fn) + ": format " + std::string(info.name) + " holds " +
                    pyStr(dtypeOf(F::depth)) + " values, the array has dtype " +
                    pyStr(dtypeOf(in.depth)));
  const int c = F::channels;
  const bool organized = c > 1 ? s.size() == 3 : s.size() == 2;
  const bool unorganized = c > 1 ? s.size() == 2 : s.size() == 1;
  if ((!organized && !unorganized) || (c > 1 && s.back() != c))
    throw Error(ErrorCode::InvalidArgument,
                std::string(fn) + ": format " + std::string(info.name) + " needs shape " +
                    (c > 1 ? "(H, W, " + std::to_string(c) + ") or (N, " + std::to_string(c) + ")"
                           : std::string("(H, W) or (N,)")) +
                    ", the array has shape " + describe());
  const auto* data = static_cast<const F*>(in.data);
  nb::gil_scoped_release release;
  if (organized) return AnyDeviceArray{DeviceArray<F>::fromHost(data, s[0], s[1], device)};
  return AnyDeviceArray{DeviceArray<F>::fromHost(data, static_cast<std::size_t>(s[0]), device)};
}

AnyDeviceArray convertArray(const AnyDeviceArray& src, FormatId to, const StreamOrQueue& sq) {
  return withFormat(to, [&]<class To>() {
    return src.visit([&]<class From>(const DeviceArray<From>& a) -> AnyDeviceArray {
      if constexpr (isConvertible<To, From>) {
        return AnyDeviceArray{convert<To>(a, sq)};
      } else {
        throw Error(ErrorCode::InvalidArgument,
                    "convert: there is no conversion from " + std::string(formatInfo<From>().name) + " to " +
                        std::string(formatInfo<To>().name) +
                        " (supported: identity, PointXYZ <-> PointXYZW, PointXYZ/PointXYZW -> PointZ, colour -> "
                        "colour)");
      }
    });
  });
}

void convertArrayInto(const AnyDeviceArray& dst, const AnyDeviceArray& src, const StreamOrQueue& sq) {
  dst.visit([&]<class To>(const DeviceArray<To>& d) {
    src.visit([&]<class From>(const DeviceArray<From>& s) {
      if constexpr (isConvertible<To, From>) {
        if (d.isEmpty()) throw Error(ErrorCode::InvalidArgument, "convert_into: the destination array is empty");
        convertInto(d.view(), s, sq);
      } else {
        throw Error(ErrorCode::InvalidArgument, "convert_into: there is no conversion from " +
                                                    std::string(formatInfo<From>().name) + " to " +
                                                    std::string(formatInfo<To>().name));
      }
    });
  });
}

ComputeDevice deviceOf(const AnyDeviceArray& a) {
  return a.visit([](const auto& arr) { return arr.device(); });
}

}  // namespace

AnyDeviceArray emptyArray(FormatId format) {
  return AnyDeviceArray(format);
}

void bindArrays(nb::module_& m) {
  // ------------------------------------------------------------ Format --
  auto format = nb::enum_<FormatId>(m, "Format", "The 14 DeviceArray formats (docs/data-layout.md has each one's shape and bytes).");
  for (const FormatInfo& info : formatInfos()) format.value(info.name.data(), info.id);  // the names are NUL-terminated literals
  m.def("format_channels", [](FormatId f) { return formatInfo(f).channels; }, nb::arg("format").noconvert(),
        "Channel values per element of `format`.");
  m.def("format_dtype", [](FormatId f) { return dtypeOf(formatInfo(f).depth); }, nb::arg("format").noconvert(),
        "numpy dtype of one channel value of `format`.");
  m.def("format_itemsize", [](FormatId f) { return formatInfo(f).bytes; }, nb::arg("format").noconvert(),
        "Bytes per element of `format`.");

  // ---------------------------------------------------------- GpuMatND --
  auto gpuMatND = nb::class_<GpuMatND>(
      m, "GpuMatND",
      "cv::cuda::GpuMatND on CUDA and OpenCL: reference-counted device storage plus size, step (bytes) and an "
      "OpenCV type code. Slicing gives O(1) views that keep the storage alive.");
  gpuMatND.def(nb::init<>(), "An empty array.")
      .def("__init__",
           [](GpuMatND* self, std::vector<int> size, nb::handle type, std::optional<ComputeDevice> device) {
             const int t = typeFromPython(type, "GpuMatND");
             const ComputeDevice d = deviceOrDefault(device);
             nb::gil_scoped_release release;
             new (self) GpuMatND(std::move(size), t, d);
           },
           nb::arg("size"), nb::arg("type"), nb::arg("device") = nb::none(),
           "Allocates `size` (one entry per axis) of `type` (an OpenCV type code, or a numpy dtype for one "
           "channel) on `device` (default device). Contents are uninitialized.")
      .def_ro("flags", &GpuMatND::flags,
              "OpenCV-style flags: the type code and the CONTINUOUS / SUBMATRIX bits (read only: they describe the "
              "memory, which a new value would not change)")
      .def_ro("dims", &GpuMatND::dims)
      .def_ro("size", &GpuMatND::size, "Length of each axis (without the channel axis).")
      .def_ro("step", &GpuMatND::step, "Byte step of each axis (step[-1] == elem_size()).")
      .def("clone", [](const GpuMatND& self) { return readReleased(self, [](const GpuMatND& m) { return m.clone(); }); },
           "Continuous deep copy. Blocking.")
      .def("clone",
           [](const GpuMatND& self, Stream& s) {
             return readReleased(self, [&](const GpuMatND& m) { return m.clone(s); });
           },
           nb::arg("stream"), "Continuous deep copy enqueued on `stream`. Non-blocking.")
      // copy.copy and copy.deepcopy give a deep copy on the same device, as numpy's do
      // (Open3D users write copy.deepcopy(cloud) before transforming one).
      .def("__copy__", [](const GpuMatND& self) { return deepCopy(self); })
      .def("__deepcopy__", [](const GpuMatND& self, nb::handle) { return deepCopy(self); }, nb::arg("memo"))
      .def("to",
           [](const GpuMatND& self, const ComputeDevice& device) {
             return readReleased(self, [&](const GpuMatND& m) {
               if (!m.empty() && m.device() == device) return m;
               return m.clone(device);
             });
           },
           nb::arg("device"),
           "This array on `device`: itself (sharing the memory) when it is already there, else a continuous deep "
           "copy, peer-to-peer where the devices reach each other's memory and staged through host memory otherwise "
           "(another backend, another OpenCL context). Blocking.")
      .def("copy_to",
           [](const GpuMatND& self, GpuMatND& dst, Stream* stream) {
             const GpuMatND src = self;
             updateReleased(dst, [&](GpuMatND& d) {
               if (stream != nullptr) src.copyTo(d, *stream);
               else src.copyTo(d);
             });
           },
           nb::arg("dst"), nb::arg("stream") = nb::none(),
           "Copies into `dst`, in place when it has this size and type (on any device), else into a new continuous "
           "array on this device (without `stream`) or on the stream's device. Without `stream`: blocking; with it: "
           "enqueued.")
      .def("create",
           [](GpuMatND& self, std::vector<int> size, nb::handle type) {
             const int t = typeFromPython(type, "GpuMatND.create");
             updateReleased(self, [&](GpuMatND& m) { m.create(std::move(size), t); });
           },
           nb::arg("size"), nb::arg("type"))
      .def("upload",
           [](GpuMatND& self, nb::handle array, Stream* stream) {
             const HostInput in = hostInput(array, false, "GpuMatND.upload");
             const HostMat host = hostView(in, channelsForUpload(in, self));
             updateReleased(self, [&](GpuMatND& m) {
               if (stream != nullptr) m.upload(host, *stream);
               else m.upload(host);
             });
             // The copy may still be reading `host` (possibly a packed temporary).
             if (stream != nullptr) holdUntilComplete(*stream, in.keep);
           },
           nb::arg("array"), nb::arg("stream") = nb::none(),
           "Copies a numpy array to the device, recreating this array when size or type differ. An array of this "
           "size plus a channel axis fills a multi-channel array in place. Without `stream`: blocking; with it: "
           "enqueued (the library keeps the host data alive until the copy has run, but `array` must not be "
           "changed before the stream completes).")
      .def("download",
           [](const GpuMatND& self, Stream* stream) -> nb::object {
             const GpuMatND m = self;
             if (stream == nullptr) return toNumpy(m);
             requireNonEmpty(m, "GpuMatND.download");
             GpuMatND ordered;
             {
               nb::gil_scoped_release release;
               ordered = m.clone(*stream);  // ordered after the stream's work
             }
             return toNumpy(ordered);  // blocking
           },
           nb::arg("stream") = nb::none(),
           "A numpy copy. Without `stream`: blocking. With `stream`: the copy is taken after the work enqueued on "
           "`stream` so far (and completes before returning).")
      .def("elem_size", &GpuMatND::elemSize)
      .def("elem_size1", &GpuMatND::elemSize1)
      .def("empty", &GpuMatND::empty)
      .def("external", &GpuMatND::external)
      .def("is_continuous", &GpuMatND::isContinuous)
      .def("is_submatrix", &GpuMatND::isSubmatrix)
      .def("total", &GpuMatND::total)
      .def("total_mem_size", &GpuMatND::totalMemSize)
      .def("type", &GpuMatND::type)
      .def("depth", &GpuMatND::depth)
      .def("channels", &GpuMatND::channels)
      .def("device", &GpuMatND::device)
      .def("backend", &GpuMatND::backend)
      .def("release", &GpuMatND::release)
      .def("swap", [](GpuMatND& a, GpuMatND& b) { a.swap(b); }, nb::arg("other"))
      .def("get_device_ptr", [](const GpuMatND& self) { return reinterpret_cast<std::uintptr_t>(self.getDevicePtr()); },
           "CUDA: the device address of the first element. OpenCL: RuntimeError.")
      .def("get_opencl_buffer",
           [](const GpuMatND& self) {
             const OpenCLBufferPtr b = self.getOpenCLBuffer();
             return std::make_pair(reinterpret_cast<std::uintptr_t>(b.buffer), b.offset);
           },
           "OpenCL: (cl_mem, byte offset) of the first element. CUDA: RuntimeError.")
      .def("__getitem__", &indexView, nb::arg("key"),
           "O(1) view: slices of step 1, integers (the axis is dropped) and '...'. Other steps raise IndexError.")
      .def("__len__", [](const GpuMatND& self) { return self.empty() ? 0 : self.size[0]; })
      .def("__repr__", [](const GpuMatND& self) {
        if (self.empty()) return std::string("<devicearray.GpuMatND empty>");
        std::string shape;
        for (std::int64_t s : shapeOf(self)) shape += (shape.empty() ? "" : ", ") + std::to_string(s);
        return "<devicearray.GpuMatND shape=(" + shape + ") dtype=" +
               pyStr(dtypeOf(depthOf(self.type()))) + " on " + self.device().toString() +
               ">";
      });
  // By value: the protocols release the GIL and must not see another thread's change.
  addArrayProtocols(gpuMatND, [](const GpuMatND& self) { return self; });

  // ------------------------------------------------------- DeviceArray --
  auto deviceArray = nb::class_<AnyDeviceArray>(
      m, "DeviceArray",
      "DeviceArray<Format> for every format: an owning, reference-counted, tightly packed device array with the "
      "DeviceArray layout ([H,W,C] | [H,W] | [N,C] | [N]).");
  deviceArray
      .def("__init__", [](AnyDeviceArray* self, FormatId f) { new (self) AnyDeviceArray(emptyArray(f)); },
           nb::arg("format").noconvert(), "An empty array of `format`.")
      .def_static(
          "allocate",
          [](FormatId f, int height, int width, std::optional<ComputeDevice> device) {
            const ComputeDevice d = deviceOrDefault(device);
            nb::gil_scoped_release release;
            return withFormat(f, [&]<class F>() { return AnyDeviceArray{DeviceArray<F>::allocate(height, width, d)}; });
          },
          nb::arg("format").noconvert(), nb::arg("height"), nb::arg("width"), nb::arg("device") = nb::none(),
          "Organized height x width array (uninitialized). Blocking.")
      .def_static(
          "allocate",
          [](FormatId f, std::size_t count, std::optional<ComputeDevice> device) {
            const ComputeDevice d = deviceOrDefault(device);
            nb::gil_scoped_release release;
            return withFormat(f, [&]<class F>() { return AnyDeviceArray{DeviceArray<F>::allocate(count, d)}; });
          },
          nb::arg("format").noconvert(), nb::arg("count"), nb::arg("device") = nb::none(),
          "Unorganized array of `count` elements (uninitialized). Blocking.")
      .def_prop_ro("format", &AnyDeviceArray::format)
      .def("size", [](const AnyDeviceArray& a) { return a.visit([](const auto& x) { return x.size(); }); },
           "Points / pixels (not channels).")
      .def("size_in_bytes",
           [](const AnyDeviceArray& a) { return a.visit([](const auto& x) { return x.sizeInBytes(); }); })
      .def("backend", [](const AnyDeviceArray& a) { return a.visit([](const auto& x) { return x.backend(); }); })
      .def("device", &deviceOf)
      .def("device_pointer",
           [](const AnyDeviceArray& a) {
             return a.visit([](const auto& x) { return reinterpret_cast<std::uintptr_t>(x.devicePointer()); });
           },
           "CUDA: device address of element 0. OpenCL: the cl_mem (element 0 at byte_offset()).")
      .def("byte_offset", [](const AnyDeviceArray& a) { return a.visit([](const auto& x) { return x.byteOffset(); }); })
      .def("is_empty", [](const AnyDeviceArray& a) { return a.visit([](const auto& x) { return x.isEmpty(); }); })
      .def("is_valid", [](const AnyDeviceArray& a) { return a.visit([](const auto& x) { return x.isValid(); }); })
      .def("is_organized",
           [](const AnyDeviceArray& a) { return a.visit([](const auto& x) { return x.isOrganized(); }); })
      .def("height", [](const AnyDeviceArray& a) { return a.visit([](const auto& x) { return x.height(); }); })
      .def("width", [](const AnyDeviceArray& a) { return a.visit([](const auto& x) { return x.width(); }); })
      .def("__copy__", [](const AnyDeviceArray& a) { return deepCopy(a); })
      .def("__deepcopy__", [](const AnyDeviceArray& a, nb::handle) { return deepCopy(a); }, nb::arg("memo"))
      .def("to",
           [](const AnyDeviceArray& a, const ComputeDevice& device) {
             return a.visit([&]<class F>(const DeviceArray<F>& x) {
               nb::gil_scoped_release release;
               if (!x.isEmpty() && x.device() == device) return AnyDeviceArray{x};
               return AnyDeviceArray{x.clone(device)};
             });
           },
           nb::arg("device"),
           "This array on `device`: itself (sharing the memory) when it is already there, else a packed deep copy, "
           "peer-to-peer where the devices reach each other's memory and staged through host memory otherwise. "
           "Blocking.")
      .def("to_host", &toNumpyArray, "Blocking: a numpy copy of shape `shape` (same as to_numpy()).")
      .def("copy_to_host",
           [](const AnyDeviceArray& a, nb::handle dst, Stream& stream) {
             const HostDestination out = hostDestination(dst, "DeviceArray.copy_to_host");
             {
               nb::gil_scoped_release release;
               a.visit([&]<class F>(const DeviceArray<F>& x) {
                 checkTypedDestination(out, x, "DeviceArray.copy_to_host");
                 x.copyToHost(static_cast<F*>(out.data), out.bytes, stream.handle());
               });
             }
             holdUntilComplete(stream, out.keep);
           },
           nb::arg("dst"), nb::arg("stream"),
           "Enqueues a copy into the writable, C-contiguous host array `dst` on `stream`: numpy of the array's value "
           "type (float32 or uint8) with at least as many values (they fill its start), or any uint8 buffer of at "
           "least size_in_bytes() bytes (the raw bytes); the library keeps `dst` alive until the copy has run. Read it after the stream completes. "
           "A non-contiguous, read-only or differently typed `dst` is a ValueError.")
      .def("to_gpu_mat_nd", [](const AnyDeviceArray& a) { return a.visit([](const auto& x) { return x.toGpuMatND(); }); },
           "A GpuMatND sharing this memory (size (H, W) or (N,), channels in the type).")
      .def_static(
          "from_gpu_mat_nd",
          [](const GpuMatND& mat, FormatId f) {
            return withFormat(f, [&]<class F>() { return AnyDeviceArray{DeviceArray<F>::fromGpuMatND(mat)}; });
          },
          nb::arg("mat"), nb::arg("format").noconvert(), "Shares the memory of a continuous GpuMatND of the format's type.")
      .def("convert",
           [](const AnyDeviceArray& a, FormatId to, Stream* stream) {
             const ComputeDevice d = deviceOf(a);
             return onStreamOrBlocking(d, stream, [&](const StreamOrQueue& sq) { return convertArray(a, to, sq); });
           },
           nb::arg("to").noconvert(), nb::arg("stream") = nb::none(),
           "A new array converted to format `to`. With `stream`: enqueued, non-blocking; without: blocking.")
      .def("__repr__", [](const AnyDeviceArray& a) {
        const std::string name(formatInfo(a.format()).name);
        return a.visit([&](const auto& x) {
          if (x.isEmpty()) return "<devicearray.DeviceArray " + name + " empty>";
          std::string shape;
          for (int s : x.shape()) shape += (shape.empty() ? "" : ", ") + std::to_string(s);
          return "<devicearray.DeviceArray " + name + " shape=(" + shape + ") on " + x.device().toString() + ">";
        });
      });
  addArrayProtocols(deviceArray, [](const AnyDeviceArray& a) {
    return a.visit([](const auto& x) { return x.toGpuMatND(); });
  });

  // ------------------------------------------------------------ functions --
  m.def(
      "from_numpy",
      [](nb::handle array, std::optional<FormatId> format, std::optional<ComputeDevice> device) -> nb::object {
        const ComputeDevice d = deviceOrDefault(device);
        if (!format) {
          const HostInput in = hostInput(array, false, "from_numpy");
          const HostMat host = hostView(in, 1);
          GpuMatND out;
          {
            nb::gil_scoped_release release;
            out = GpuMatND(in.shape, makeType(in.depth, 1), d);
            out.upload(host);
          }
          return nb::cast(std::move(out));
        }
        const HostInput in = hostInput(array, true, "from_numpy");
        return nb::cast(withFormat(*format, [&]<class F>() { return fromNumpyAs<F>(in, d); }));
      },
      nb::arg("array"), nb::arg("format").noconvert() = nb::none(), nb::arg("device") = nb::none(),
      "Blocking upload of a numpy array (non-contiguous input is packed). Without `format`: a GpuMatND of the "
      "array's shape and dtype (one channel; the last axis is not folded). With `format`: a DeviceArray, the array "
      "being (H, W, C) / (N, C) (or (H, W) / (N,) for one-channel formats) of the format's dtype.");
  m.def(
      "convert",
      [](const AnyDeviceArray& src, FormatId to, Stream* stream) {
        return onStreamOrBlocking(deviceOf(src), stream,
                                  [&](const StreamOrQueue& sq) { return convertArray(src, to, sq); });
      },
      nb::arg("src"), nb::arg("to").noconvert(), nb::arg("stream") = nb::none(),
      "A new array of format `to` converted from `src` (point layouts, colour channel order, alpha, sRGB, 8-bit <-> float). With `stream`: enqueued, non-blocking; without: blocking.");
  m.def(
      "convert_into",
      [](const AnyDeviceArray& dst, const AnyDeviceArray& src, Stream* stream) {
        onStreamOrBlocking(deviceOf(src), stream, [&](const StreamOrQueue& sq) {
          convertArrayInto(dst, src, sq);
          return 0;
        });
      },
      nb::arg("dst"), nb::arg("src"), nb::arg("stream") = nb::none(),
      "Converts `src` into the memory of `dst` (same size and device).");
}

}  // namespace devicearray::python
