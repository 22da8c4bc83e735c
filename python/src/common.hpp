// Shared pieces of the Python bindings: the type-erased DeviceArray, dtype
// mapping between numpy and the library's depths, and the binding entry points
// of each source file.
#pragma once

#include <nanobind/nanobind.h>
// Every file casts strings: one type caster for std::string in the whole module
// (a file without it would instantiate nanobind's generic caster, an ODR clash).
#include <nanobind/stl/string.h>

#include <climits>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "devicearray/devicearray.hpp"
#include "devicearray/dlpack.hpp"

namespace devicearray::python {

namespace nb = nanobind;

// ------------------------------------------------------------ DeviceArray ----

/// Calls fn.template operator()<Format>() for the format `id` names and returns its result.
template <class Fn>
auto withFormat(FormatId id, Fn&& fn) -> decltype(fn.template operator()<PointXYZ>());

/// One Python class for DeviceArray<Format> of all 14 formats: the format plus the
/// array's memory as a GpuMatND (DeviceArray<F>::toGpuMatND / fromGpuMatND are O(1)
/// and exact inverses, so the typed array is rebuilt on demand).
class AnyDeviceArray {
 public:
  explicit AnyDeviceArray(FormatId format) : format_(format) {}
  template <class F>
  AnyDeviceArray(const DeviceArray<F>& array) : format_(F::id), mat_(array.toGpuMatND()) {}  // NOLINT

  FormatId format() const { return format_; }
  const GpuMatND& mat() const { return mat_; }

  /// fn(DeviceArray<Format>) for this array's format.
  template <class Fn>
  auto visit(Fn&& fn) const {
    return withFormat(format_, [&]<class F>() { return fn(DeviceArray<F>::fromGpuMatND(mat_)); });
  }

 private:
  FormatId format_;
  GpuMatND mat_;
};

template <class Fn>
auto withFormat(FormatId id, Fn&& fn) -> decltype(fn.template operator()<PointXYZ>()) {
  using Result = decltype(fn.template operator()<PointXYZ>());
  if constexpr (std::is_void_v<Result>) {
    bool done = false;
    AllFormats::forEach([&]<class F>() {
      if (!done && F::id == id) {
        fn.template operator()<F>();
        done = true;
      }
    });
    if (!done) throw Error(ErrorCode::InvalidArgument, "unknown format id " + std::to_string(static_cast<int>(id)));
  } else {
    std::optional<Result> out;
    AllFormats::forEach([&]<class F>() {
      if (!out && F::id == id) out.emplace(fn.template operator()<F>());
    });
    if (!out) throw Error(ErrorCode::InvalidArgument, "unknown format id " + std::to_string(static_cast<int>(id)));
    return std::move(*out);
  }
}

/// str(value). Takes a handle on purpose: nb::str(obj.attr(...)) converts through
/// the copy constructor, which wraps a non-str object instead of calling str().
inline std::string pyStr(nb::handle value) { return nb::cast<std::string>(nb::str(value)); }

/// The name of `value`'s type, for messages.
inline std::string typeName(nb::handle value) { return pyStr(nb::handle(Py_TYPE(value.ptr())).attr("__name__")); }

/// A path given as str or os.PathLike (bytes paths are refused: the library takes text).
inline std::string pathFrom(nb::handle value, const char* what) {
  nb::object path = nb::module_::import_("os").attr("fspath")(value);
  if (!PyUnicode_Check(path.ptr()))
    throw nb::type_error((std::string(what) + " must be a str or os.PathLike of str, not " + typeName(value)).c_str());
  return nb::cast<std::string>(path);
}

inline ComputeDevice deviceOrDefault(const std::optional<ComputeDevice>& device) {
  return device ? *device : ComputeDevice::defaultDevice();
}

/// Runs fn(sq) with the GIL released on `stream`, or, when `stream` is null, on the
/// device's own queue followed by a wait (the no-stream overloads block, like the
/// C++ API).
template <class Fn>
auto onStreamOrBlocking(const ComputeDevice& device, const Stream* stream, Fn&& fn) {
  nb::gil_scoped_release release;
  if (stream != nullptr) return fn(stream->handle());
  const StreamOrQueue sq = device.sdkStreamOrQueue();
  auto result = fn(sq);
  synchronizeStream(sq);
  return result;
}

/// An empty DeviceArray of `format`.
AnyDeviceArray emptyArray(FormatId format);

// ------------------------------------------------ one object, many threads ----
//
// Python threads share objects, and the bindings release the GIL while the device
// works. A method that read or changed `self` with the GIL released could see (or
// leave) it half-changed by another thread. So every such method works on a copy
// (a few reference counts): readers take a snapshot with the GIL held; writers
// change a copy and store it back with the GIL held. Each Python-level call then
// sees `self` before or after another thread's call, never in between.

/// fn(snapshot of self) with the GIL released.
template <class T, class Fn>
auto readReleased(const T& self, Fn&& fn) {
  const T snapshot = self;
  nb::gil_scoped_release release;
  return fn(snapshot);
}

/// fn(copy of self) with the GIL released, then self = copy (GIL held). On an
/// exception `self` is left as it was.
template <class T, class Fn>
void updateReleased(T& self, Fn&& fn) {
  T copy = self;
  {
    nb::gil_scoped_release release;
    fn(copy);
  }
  self = std::move(copy);
}

// ---------------------------------------------------- host memory in flight ----

/// Keeps `host` (a Python object owning host memory that work enqueued on `stream`
/// reads or writes) alive until that work completes: an event is recorded on
/// `stream` now and the reference is dropped once it has completed. Call with the
/// GIL held, right after enqueueing.
void holdUntilComplete(const Stream& stream, nb::object host);
/// The mark of the next held object (GIL held): taken before a wait that releases
/// the GIL, it tells the objects held before the wait from those held during it.
std::uint64_t heldHostObjectMark();
/// Drops the references whose work has completed, and those held before the mark
/// `heldBefore` for the native stream / queue `finishedQueue`, which the host has just
/// waited for (nullptr: none). Non-blocking; GIL held.
void releaseCompletedHostObjects(void* finishedQueue = nullptr, std::uint64_t heldBefore = 0);
/// Blocks until all held work has completed and drops every reference (at
/// interpreter exit, before the objects' memory goes away).
void waitForHeldHostObjects();

// ------------------------------------------------------- numpy on the host ----

/// A numpy array (anything numpy.asarray accepts) with the host view the library
/// uploads from; `keep` owns the memory the view points into.
struct HostInput {
  nb::object keep;
  std::vector<int> shape;          ///< every numpy axis
  std::vector<std::size_t> steps;  ///< byte strides of every numpy axis
  Depth depth = Depth::U8;
  const void* data = nullptr;
};

/// `obj` as numpy.asarray sees it (C-contiguous when `packed`, or when its strides
/// cannot be described); ValueError / TypeError naming `fn`.
HostInput hostInput(nb::handle obj, bool packed, const char* fn);
/// A HostMat view of `in`; with channels > 1 its last axis is folded into the type's
/// channels.
HostMat hostView(const HostInput& in, int channels);

// ------------------------------------------------------ checked arguments ----
// Python values checked once at the boundary: TypeError for a wrong type,
// ValueError for a wrong value, each naming `what`.

/// A Python int (not bool) in [min, max].
long long intArgument(nb::handle value, const char* what, long long min = LLONG_MIN, long long max = LLONG_MAX);
/// A Python bool (or numpy.bool_).
bool boolArgument(nb::handle value, const char* what);
/// A tuple of exactly `n` items.
nb::tuple tupleArgument(nb::handle value, std::size_t n, const char* what);
/// Whether `handle` (an integer the caller passed as a cl_command_queue or a
/// cudaStream_t other than the special 0, 1, 2) can be an object's address at all:
/// the first page is never mapped, and driver objects are pointer-aligned.
/// Passing anything else to the driver would crash instead of failing.
bool plausiblePointer(std::uintptr_t handle);

// ------------------------------------------------------------- matrices ----

/// A 4x4 row-major matrix from a numpy array / nested sequence (4x4) or 16 numbers;
/// TypeError / ValueError naming `fn` otherwise.
Matrix4x4 matrixFrom(nb::handle obj, const char* fn);
/// A 4x4 float32 numpy array.
nb::object matrixTo(const Matrix4x4& m);

// ----------------------------------------------------------------- dtypes ----

/// numpy dtype (anything numpy.dtype() accepts) -> Depth; ValueError naming `fn`
/// for dtypes without a Depth.
Depth depthFromDtype(nb::handle dtype, const char* fn);
/// Depth -> numpy.dtype.
nb::object dtypeOf(Depth depth);
/// Array-interface type string ("<f4", "|u1", ...).
const char* typestrOf(Depth depth);

/// `type` may be an int (an OpenCV type code) or a numpy dtype-like (one channel).
int typeFromPython(nb::handle type, const char* fn);

// ------------------------------------------------------ layout of arrays ----

/// DLPack/array-API shape of an array with OpenCV conventions: every axis, plus a
/// channel axis when channels > 1.
std::vector<std::int64_t> shapeOf(const GpuMatND& mat);
/// Strides in elements (channel values) matching shapeOf(); ValueError when a step
/// is not a multiple of the channel size.
std::vector<std::int64_t> stridesOf(const GpuMatND& mat);
std::vector<std::int64_t> stridesInBytesOf(const GpuMatND& mat);
nb::tuple toTuple(const std::vector<std::int64_t>& v);

/// Blocking download of `mat` into a new, writable, C-contiguous numpy array of
/// shape shapeOf(mat). Releases the GIL while copying.
nb::object toNumpy(const GpuMatND& mat);

/// Fails with InvalidState when `mat` is empty (naming `fn`).
void requireNonEmpty(const GpuMatND& mat, const char* fn);

// ------------------------------------------------------- binding entries ----

void bindDevices(nb::module_& m);
void bindArrays(nb::module_& m);
void bindProtocols(nb::module_& m);
void bindPointClouds(nb::module_& m);
void bindCameraData(nb::module_& m);
void bindFramePipeline(nb::module_& m);
void bindFrameLoop(nb::module_& m);
void bindRegistration(nb::module_& m);
void bindFiles(nb::module_& m);
void bindTesting(nb::module_& m);

// ------------------------------------------------ array-API protocols ----

/// Python exception type for each ErrorCode (ValueError, IndexError, MemoryError,
/// RuntimeError), as the module's exception translator raises them.
PyObject* exceptionFor(ErrorCode code);

/// GpuMatND's limit on axes (OpenCV's CV_MAX_DIM).
constexpr int kMaxAxes = 32;
/// The Depth of a DLPack dtype; nullopt for dtypes without one (and lanes != 1).
std::optional<Depth> depthOfDLType(const DLDataType& t);

/// The name of the capsule that holds a DLPack C exchange API table.
constexpr const char* kExchangeApiCapsuleName = "dlpack_exchange_api";
/// This process's DLPack C exchange API table (see dlpack_exchange.cpp).
const DLPackExchangeAPI& dlpackExchangeApi();
/// The capsule every array type publishes as `__dlpack_c_exchange_api__`.
nb::object dlpackExchangeApiCapsule();

/// array.__dlpack__(stream=, max_version=, dl_device=, copy=): a capsule owning a
/// DLPack tensor of `mat` (see protocols.cpp for the exact rules).
nb::object dlpackCapsule(const GpuMatND& mat, nb::handle stream, nb::handle maxVersion, nb::handle dlDevice,
                         nb::handle copy);
/// array.__dlpack_device__(): (kDLCUDA, ordinal) or (kDLOpenCL, index).
nb::tuple dlpackDevice(const GpuMatND& mat);
/// array.__cuda_array_interface__ (v3); AttributeError unless on CUDA.
nb::dict cudaArrayInterface(const GpuMatND& mat);
/// array.__array__(dtype=None, copy=None): a host copy (copy=False is refused).
nb::object arrayForNumpy(const GpuMatND& mat, nb::handle dtype, nb::handle copy);

/// Adds the array-API attributes and protocols to a class whose instances yield a
/// GpuMatND through `get` (GpuMatND itself, DeviceArray via toGpuMatND()).
template <class Class, class Get>
void addArrayProtocols(Class& cls, Get get) {
  using T = typename Class::Type;
  cls.def_prop_ro("shape", [get](const T& self) { return toTuple(shapeOf(get(self))); },
                  "Array-API shape: every axis, plus the channel axis when there is more than one channel.")
      .def_prop_ro("strides", [get](const T& self) { return toTuple(stridesOf(get(self))); },
                   "Strides in elements (channel values), matching shape.")
      .def_prop_ro("strides_in_bytes", [get](const T& self) { return toTuple(stridesInBytesOf(get(self))); },
                   "Strides in bytes, matching shape.")
      .def_prop_ro("ndim", [get](const T& self) { return shapeOf(get(self)).size(); })
      .def_prop_ro("dtype", [get](const T& self) {
        const GpuMatND m = get(self);
        requireNonEmpty(m, "dtype");
        return dtypeOf(depthOf(m.type()));
      }, "numpy dtype of one channel value.")
      .def("to_numpy", [get](const T& self) { return toNumpy(get(self)); },
           "Blocking: an independent, writable, C-contiguous numpy copy of shape `shape`.")
      .def("__array__", [get](const T& self, nb::handle dtype, nb::handle copy) {
        return arrayForNumpy(get(self), dtype, copy);
      }, nb::arg("dtype") = nb::none(), nb::kw_only(), nb::arg("copy") = nb::none(),
         "numpy.asarray() support: a blocking host copy.")
      .def("__dlpack__", [get](const T& self, nb::handle stream, nb::handle maxVersion, nb::handle dlDevice,
                               nb::handle copy) { return dlpackCapsule(get(self), stream, maxVersion, dlDevice, copy); },
           nb::kw_only(), nb::arg("stream") = nb::none(), nb::arg("max_version") = nb::none(),
           nb::arg("dl_device") = nb::none(), nb::arg("copy") = nb::none(),
           "DLPack export per the Python array-API standard (zero-copy unless a copy is requested).")
      .def("__dlpack_device__", [get](const T& self) { return dlpackDevice(get(self)); })
      .def_prop_ro("__cuda_array_interface__", [get](const T& self) { return cudaArrayInterface(get(self)); },
                   "CUDA Array Interface v3 (CUDA arrays only; AttributeError otherwise).");
  // On the type, where the DLPack C exchange API looks for it.
  cls.attr("__dlpack_c_exchange_api__") = dlpackExchangeApiCapsule();
}

}  // namespace devicearray::python
