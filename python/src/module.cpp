// The `devicearray._devicearray` extension: error translation, dtype mapping and
// the helpers shared by the binding files.
#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <climits>
#include <cstring>
#include <string>
#include <vector>

#include "common.hpp"

namespace devicearray::python {

// Python exception for each ErrorCode: argument errors are ValueError,
// index/range errors IndexError, allocation failures MemoryError, the rest
// RuntimeError. BufferError is raised directly by the DLPack code where the
// array-API standard asks for it.
PyObject* exceptionFor(ErrorCode code) {
  switch (code) {
    case ErrorCode::InvalidArgument: return PyExc_ValueError;
    case ErrorCode::OutOfRange: return PyExc_IndexError;
    case ErrorCode::OutOfMemory: return PyExc_MemoryError;
    case ErrorCode::Unsupported:
    case ErrorCode::BackendUnavailable:
    case ErrorCode::BackendError:
    case ErrorCode::InvalidState: return PyExc_RuntimeError;
  }
  return PyExc_RuntimeError;
}

namespace {

struct DtypeName {
  const char* name;
  Depth depth;
};
constexpr DtypeName kDtypes[] = {
    {"uint8", Depth::U8},   {"int8", Depth::S8},     {"uint16", Depth::U16},  {"int16", Depth::S16},
    {"int32", Depth::S32},  {"float32", Depth::F32}, {"float64", Depth::F64}, {"float16", Depth::F16},
};

nb::object numpyModule() { return nb::module_::import_("numpy"); }

}  // namespace

// ----------------------------------------------------------------- dtypes ----

Depth depthFromDtype(nb::handle dtype, const char* fn) {
  nb::object dt = numpyModule().attr("dtype")(dtype);
  const std::string name = pyStr(dt.attr("name"));
  if (nb::cast<bool>(dt.attr("isnative")))
    for (const DtypeName& d : kDtypes)
      if (name == d.name) return d.depth;
  throw Error(ErrorCode::InvalidArgument,
              std::string(fn) + ": dtype " + pyStr(dt) +
                  " has no devicearray depth (supported, native byte order: uint8, int8, uint16, int16, int32, "
                  "float32, float64, float16)");
}

nb::object dtypeOf(Depth depth) {
  for (const DtypeName& d : kDtypes)
    if (d.depth == depth) return numpyModule().attr("dtype")(d.name);
  throw Error(ErrorCode::InvalidArgument, "dtypeOf: invalid depth " + std::to_string(static_cast<int>(depth)));
}

const char* typestrOf(Depth depth) {
  switch (depth) {
    case Depth::U8: return "|u1";
    case Depth::S8: return "|i1";
    case Depth::U16: return "<u2";
    case Depth::S16: return "<i2";
    case Depth::S32: return "<i4";
    case Depth::F32: return "<f4";
    case Depth::F64: return "<f8";
    case Depth::F16: return "<f2";
  }
  throw Error(ErrorCode::InvalidArgument, "typestrOf: invalid depth " + std::to_string(static_cast<int>(depth)));
}

int typeFromPython(nb::handle type, const char* fn) {
  if (PyLong_Check(type.ptr()) && !PyBool_Check(type.ptr())) {
    const long long code = nb::cast<long long>(type);
    if (code < 0 || code > INT_MAX || !isValidType(static_cast<int>(code)))
      throw Error(ErrorCode::InvalidArgument, std::string(fn) + ": type code " + std::to_string(code) +
                                                  " is not a valid OpenCV type code (depth and 1..512 "
                                                  "channels, as CV_MAKETYPE makes)");
    return static_cast<int>(code);
  }
  return makeType(depthFromDtype(type, fn), 1);
}

// ------------------------------------------------------ layout of arrays ----

void requireNonEmpty(const GpuMatND& mat, const char* fn) {
  if (mat.empty()) throw Error(ErrorCode::InvalidState, std::string(fn) + ": the array is empty");
}

std::vector<std::int64_t> shapeOf(const GpuMatND& mat) {
  if (mat.empty()) return {};
  std::vector<std::int64_t> shape(mat.size.begin(), mat.size.end());
  if (mat.channels() > 1) shape.push_back(mat.channels());
  return shape;
}

std::vector<std::int64_t> stridesInBytesOf(const GpuMatND& mat) {
  if (mat.empty()) return {};
  std::vector<std::int64_t> strides;
  for (int i = 0; i < mat.dims; ++i)
    strides.push_back(static_cast<std::int64_t>(i < static_cast<int>(mat.step.size()) ? mat.step[i] : mat.elemSize()));
  if (mat.channels() > 1) strides.push_back(static_cast<std::int64_t>(mat.elemSize1()));
  return strides;
}

std::vector<std::int64_t> stridesOf(const GpuMatND& mat) {
  std::vector<std::int64_t> strides = stridesInBytesOf(mat);
  const auto elem1 = static_cast<std::int64_t>(mat.empty() ? 1 : mat.elemSize1());
  for (std::size_t i = 0; i < strides.size(); ++i) {
    if (strides[i] % elem1 != 0)
      throw Error(ErrorCode::InvalidArgument, "strides: step[" + std::to_string(i) + "] = " +
                                                  std::to_string(strides[i]) + " bytes is not a multiple of the " +
                                                  std::to_string(elem1) + "-byte element; use strides_in_bytes");
    strides[i] /= elem1;
  }
  return strides;
}

nb::tuple toTuple(const std::vector<std::int64_t>& v) {
  nb::list out;
  for (std::int64_t x : v) out.append(x);
  return nb::tuple(out);
}

nb::object toNumpy(const GpuMatND& mat) {
  requireNonEmpty(mat, "to_numpy");
  std::vector<std::int64_t> shape = shapeOf(mat);
  nb::list pyShape;
  for (std::int64_t s : shape) pyShape.append(s);
  nb::object out = numpyModule().attr("empty")(nb::tuple(pyShape), dtypeOf(depthOf(mat.type())));
  auto view = nb::cast<nb::ndarray<nb::device::cpu, nb::c_contig>>(out);
  // The numpy array has exactly the array's size and type, so download() writes
  // into it in place instead of reallocating.
  HostMat host(mat.size, mat.type(), view.data());
  {
    nb::gil_scoped_release release;
    mat.download(host);
  }
  return out;
}

}  // namespace devicearray::python

NB_MODULE(_devicearray, m) {
  namespace py = devicearray::python;
  using devicearray::Error;
  m.doc() = "devicearray: safe, fast handles to GPU-resident arrays on CUDA and OpenCL.";

  nanobind::register_exception_translator([](const std::exception_ptr& p, void*) {
    try {
      std::rethrow_exception(p);
    } catch (const Error& e) {
      PyErr_SetString(py::exceptionFor(e.code()), e.what());
    } catch (const nanobind::cast_error&) {
      // Arguments are checked where they are taken; this is the net under a value of
      // the wrong type deeper inside (a bare "std::bad_cast" says nothing).
      PyErr_SetString(PyExc_TypeError, "devicearray: a value has the wrong type for this call");
    }
  });

  // Enqueued copies may still read or write host arrays when the interpreter exits;
  // wait for them while those arrays are still alive.
  m.def("_wait_for_held_host_objects", &py::waitForHeldHostObjects,
        "At exit: waits for the copies that still use host arrays, then releases those arrays.");
  nanobind::module_::import_("atexit").attr("register")(m.attr("_wait_for_held_host_objects"));

  py::bindDevices(m);
  py::bindArrays(m);
  py::bindProtocols(m);
  py::bindPointClouds(m);
  py::bindCameraData(m);
  py::bindFramePipeline(m);
  py::bindFrameLoop(m);
  py::bindRegistration(m);
  py::bindFiles(m);
  nanobind::module_ testing = m.def_submodule("_testing", "Private helpers for the devicearray test suite.");
  py::bindTesting(testing);
}
