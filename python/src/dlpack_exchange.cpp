// The producer side of the DLPack C exchange API: the one DLPackExchangeAPI table
// of this process, published as `__dlpack_c_exchange_api__` on every array type
// that has __dlpack__ (GpuMatND, DeviceArray), so a consumer written in C can take
// and hand back our arrays without calling Python.
//
// Stream rules, the same as __dlpack__'s:
//   CUDA:   an exported tensor is ready on the library's own stream of its device
//           (device-side wait for the library's work on the memory from any other
//           stream; the host never waits), and current_work_stream reports that
//           stream, which is where the consumer is to work.
//   OpenCL: DLPack names no current work stream for OpenCL, so current_work_stream
//           refuses it and an export finishes the library's work on the memory
//           first, as __dlpack__(stream=None) does there.
// Every entry point catches everything: a C caller sees -1 and a Python exception.
#include <nanobind/nanobind.h>

#include <climits>
#include <cstdint>
#include <exception>
#include <optional>
#include <string>
#include <vector>

#include "common.hpp"

namespace devicearray::python {

namespace {

/// Sets the Python error for the exception in flight (called from a catch block).
void setPythonErrorFromCurrentException() {
  try {
    throw;
  } catch (nb::python_error& e) {
    e.restore();
  } catch (const nb::builtin_exception& e) {
    // The few kinds this file raises itself.
    PyErr_SetString(e.type() == nb::exception_type::type_error ? PyExc_TypeError : PyExc_BufferError, e.what());
  } catch (const Error& e) {
    const bool notDescribable = e.code() == ErrorCode::InvalidArgument || e.code() == ErrorCode::Unsupported;
    PyErr_SetString(notDescribable ? PyExc_BufferError : exceptionFor(e.code()), e.what());
  } catch (const std::exception& e) {
    PyErr_SetString(PyExc_RuntimeError, e.what());
  } catch (...) {
    PyErr_SetString(PyExc_RuntimeError, "devicearray: unknown C++ exception in the DLPack exchange API");
  }
}

/// The memory of a GpuMatND or DeviceArray instance (subclasses included).
GpuMatND arrayOf(nb::handle obj) {
  if (nb::isinstance<GpuMatND>(obj)) return *nb::inst_ptr<GpuMatND>(obj);
  if (nb::isinstance<AnyDeviceArray>(obj)) return nb::inst_ptr<AnyDeviceArray>(obj)->mat();
  throw nb::type_error(("__dlpack_c_exchange_api__: expected a devicearray GpuMatND or DeviceArray, got " +
                        pyStr(nb::handle(reinterpret_cast<PyObject*>(Py_TYPE(obj.ptr()))).attr("__name__")))
                           .c_str());
}

DLManagedTensorVersioned* exportNoSync(const GpuMatND& mat) {
  if (mat.empty())
    throw nb::buffer_error("__dlpack_c_exchange_api__: the array is empty; there is nothing to export");
  if (mat.backend() == ComputeBackend::cuda) {
    const ComputeDevice device = mat.device();
    return toDLPackVersioned(readyOnConsumerStream(mat, device.sdkStreamOrQueue()));
  }
  nb::gil_scoped_release release;
  return toDLPackVersioned(mat);
}

extern "C" int managedTensorFromPyObject(void* pyObject, DLManagedTensorVersioned** out) {
  try {
    if (out == nullptr) throw nb::buffer_error("__dlpack_c_exchange_api__: managed_tensor_from_py_object: out is NULL");
    *out = exportNoSync(arrayOf(nb::handle(static_cast<PyObject*>(pyObject))));
    return 0;
  } catch (...) {
    setPythonErrorFromCurrentException();
    return -1;
  }
}

extern "C" int managedTensorToPyObject(DLManagedTensorVersioned* tensor, void** outPyObject) {
  try {
    if (outPyObject == nullptr) {
      // Ownership was passed: release the tensor even though the call cannot succeed.
      if (tensor != nullptr && tensor->deleter != nullptr) tensor->deleter(tensor);
      throw nb::buffer_error("__dlpack_c_exchange_api__: managed_tensor_to_py_object: out_py_object is NULL");
    }
    *outPyObject = nb::cast(fromDLPack(tensor)).release().ptr();  // fromDLPack owns the tensor from here
    return 0;
  } catch (...) {
    setPythonErrorFromCurrentException();
    return -1;
  }
}

// The refusals set the error directly: a consumer asks for every OpenCL tensor, and
// a C++ exception would cost more than the whole exchange.
extern "C" int currentWorkStream(DLDeviceType deviceType, std::int32_t deviceId, void** outStream) {
  if (outStream == nullptr) {
    PyErr_SetString(PyExc_BufferError, "__dlpack_c_exchange_api__: current_work_stream: out is NULL");
    return -1;
  }
  switch (static_cast<int>(deviceType)) {
    case kDLCPU:
    case kDLCUDAHost: *outStream = nullptr; return 0;
    case kDLOpenCL:
      PyErr_SetString(PyExc_BufferError,
                      "__dlpack_c_exchange_api__: current_work_stream is not supported for OpenCL devices (DLPack "
                      "defines no current work stream there; exported OpenCL tensors are finished before they are "
                      "handed out)");
      return -1;
    case kDLCUDA:
      try {
        *outStream = ComputeDevice::cuda(deviceId).nativeStreamHandle();
        return 0;
      } catch (...) {
        setPythonErrorFromCurrentException();
        return -1;
      }
    default:
      PyErr_Format(PyExc_BufferError,
                   "__dlpack_c_exchange_api__: current_work_stream: device type %d is not a devicearray device",
                   static_cast<int>(deviceType));
      return -1;
  }
}

/// The device a prototype names: a CUDA ordinal, or the index among the OpenCL
/// devices of ComputeDevice::all() (what exported tensors report).
ComputeDevice deviceOfPrototype(const DLDevice& d) {
  if (d.device_type == kDLCUDA) return ComputeDevice::cuda(d.device_id);
  if (d.device_type == kDLOpenCL) return ComputeDevice::opencl(d.device_id);
  throw Error(ErrorCode::Unsupported, "managed_tensor_allocator: device type " +
                                          std::to_string(static_cast<int>(d.device_type)) +
                                          " is not a devicearray device (kDLCUDA or kDLOpenCL)");
}

/// The Python exception type named in the allocator's error report.
const char* errorKindOf(ErrorCode code) {
  switch (code) {
    case ErrorCode::InvalidArgument: return "ValueError";
    case ErrorCode::OutOfRange: return "IndexError";
    case ErrorCode::OutOfMemory: return "MemoryError";
    case ErrorCode::Unsupported: return "BufferError";
    default: return "RuntimeError";
  }
}

// Touches no Python object, so a consumer may call it without the GIL.
extern "C" int managedTensorAllocator(DLTensor* prototype, DLManagedTensorVersioned** out, void* errorCtx,
                                      void (*setError)(void* errorCtx, const char* kind, const char* message)) {
  auto report = [&](const char* kind, const char* message) {
    if (setError != nullptr) setError(errorCtx, kind, message);
    return -1;
  };
  try {
    if (prototype == nullptr || out == nullptr)
      return report("ValueError", "managed_tensor_allocator: prototype and out must not be NULL");
    const DLTensor& p = *prototype;
    const std::optional<Depth> depth = depthOfDLType(p.dtype);
    if (!depth)
      return report("BufferError", "managed_tensor_allocator: the dtype has no devicearray depth (supported: "
                                   "uint8, int8, uint16, int16, int32, float32, float64, float16; lanes 1)");
    if (p.ndim < 1 || p.ndim > kMaxAxes || p.shape == nullptr)
      return report("ValueError", ("managed_tensor_allocator: ndim " + std::to_string(p.ndim) + " (needs 1.." +
                                   std::to_string(kMaxAxes) + " and a shape)")
                                      .c_str());
    std::vector<int> size;
    for (int i = 0; i < p.ndim; ++i) {
      if (p.shape[i] < 1 || p.shape[i] > INT_MAX)
        return report("ValueError", ("managed_tensor_allocator: axis " + std::to_string(i) + " has length " +
                                     std::to_string(p.shape[i]) + " (needs 1..INT_MAX)")
                                        .c_str());
      size.push_back(static_cast<int>(p.shape[i]));
    }
    *out = toDLPackVersioned(GpuMatND(size, makeType(*depth, 1), deviceOfPrototype(p.device)));
    return 0;
  } catch (const Error& e) {
    return report(errorKindOf(e.code()), e.what());
  } catch (const std::bad_alloc&) {
    return report("MemoryError", "managed_tensor_allocator: out of host memory");
  } catch (const std::exception& e) {
    return report("RuntimeError", e.what());
  } catch (...) {
    return report("RuntimeError", "managed_tensor_allocator: unknown C++ exception");
  }
}

}  // namespace

const DLPackExchangeAPI& dlpackExchangeApi() {
  static const DLPackExchangeAPI api = [] {
    DLPackExchangeAPI a{};
    a.header.version = DLPackVersion{DLPACK_MAJOR_VERSION, DLPACK_MINOR_VERSION};
    a.header.prev_api = nullptr;
    a.managed_tensor_allocator = &managedTensorAllocator;
    a.managed_tensor_from_py_object_no_sync = &managedTensorFromPyObject;
    a.managed_tensor_to_py_object_no_sync = &managedTensorToPyObject;
    // Not offered: a borrowed DLTensor would need int64 shape and stride arrays that
    // GpuMatND does not keep (it stores int sizes and byte steps).
    a.dltensor_from_py_object_no_sync = nullptr;
    a.current_work_stream = &currentWorkStream;
    return a;
  }();
  return api;
}

nb::object dlpackExchangeApiCapsule() {
  // One capsule for every array type; the table it points to is static.
  static PyObject* capsule = [] {
    auto* table = const_cast<DLPackExchangeAPI*>(&dlpackExchangeApi());
    PyObject* c = PyCapsule_New(table, kExchangeApiCapsuleName, nullptr);
    if (c == nullptr) throw nb::python_error();
    return c;
  }();
  return nb::borrow(capsule);
}

}  // namespace devicearray::python
