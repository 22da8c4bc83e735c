// The array-API / DLPack protocols: __dlpack__ with versioned and
// legacy capsules and the CUDA stream handshake, __dlpack_device__,
// __cuda_array_interface__ v3, __array__, and from_dlpack for producers (through
// their DLPack C exchange API when their type has one), raw capsules and
// CUDA-array-interface objects. (Our own exchange API table: dlpack_exchange.cpp.)
//
// Capsule rules followed to the letter: the producer's capsule is named
// "dltensor_versioned" (or "dltensor"); a consumer takes ownership by renaming it
// to "used_dltensor_versioned" ("used_dltensor") and then owes the deleter call;
// the capsule's destructor calls the deleter only when no consumer took it, never
// calls into Python, and so is safe at interpreter shutdown.
#include <nanobind/nanobind.h>
#include <nanobind/stl/optional.h>

#include <climits>
#include <cstdint>
#include <cstring>
#include <iterator>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "common.hpp"

namespace devicearray::python {

std::optional<Depth> depthOfDLType(const DLDataType& t) {
  if (t.lanes != 1) return std::nullopt;
  if (t.code == kDLUInt && t.bits == 8) return Depth::U8;
  if (t.code == kDLInt && t.bits == 8) return Depth::S8;
  if (t.code == kDLUInt && t.bits == 16) return Depth::U16;
  if (t.code == kDLInt && t.bits == 16) return Depth::S16;
  if (t.code == kDLInt && t.bits == 32) return Depth::S32;
  if (t.code == kDLFloat && t.bits == 32) return Depth::F32;
  if (t.code == kDLFloat && t.bits == 64) return Depth::F64;
  if (t.code == kDLFloat && t.bits == 16) return Depth::F16;
  return std::nullopt;
}

namespace {

constexpr const char* kVersionedName = "dltensor_versioned";
constexpr const char* kUsedVersionedName = "used_dltensor_versioned";
constexpr const char* kLegacyName = "dltensor";
constexpr const char* kUsedLegacyName = "used_dltensor";

// ---------------------------------------------------------------- capsules ----

/// Runs `deleter` on a capsule that no consumer took. Keeps any pending Python
/// exception intact (destructors may run while one is being raised).
template <class Tensor>
void destroyUnconsumed(PyObject* capsule, const char* name) {
  if (!PyCapsule_IsValid(capsule, name)) return;  // renamed: a consumer owns the tensor
  PyObject *type = nullptr, *value = nullptr, *traceback = nullptr;
  PyErr_Fetch(&type, &value, &traceback);
  auto* tensor = static_cast<Tensor*>(PyCapsule_GetPointer(capsule, name));
  if (tensor != nullptr && tensor->deleter != nullptr) tensor->deleter(tensor);
  PyErr_Restore(type, value, traceback);
}

extern "C" void versionedCapsuleDestructor(PyObject* capsule) {
  destroyUnconsumed<DLManagedTensorVersioned>(capsule, kVersionedName);
}
extern "C" void legacyCapsuleDestructor(PyObject* capsule) {
  destroyUnconsumed<DLManagedTensor>(capsule, kLegacyName);
}

nb::object capsuleOf(DLManagedTensorVersioned* tensor) {
  PyObject* capsule = PyCapsule_New(tensor, kVersionedName, &versionedCapsuleDestructor);
  if (capsule == nullptr) {
    tensor->deleter(tensor);
    throw nb::python_error();
  }
  return nb::steal(capsule);
}

nb::object capsuleOf(DLManagedTensor* tensor) {
  PyObject* capsule = PyCapsule_New(tensor, kLegacyName, &legacyCapsuleDestructor);
  if (capsule == nullptr) {
    tensor->deleter(tensor);
    throw nb::python_error();
  }
  return nb::steal(capsule);
}

// ------------------------------------------------------------ handshakes ----

/// How the consumer wants the data ordered (array-API `stream` argument).
struct ConsumerStream {
  bool synchronize = true;  ///< false for stream=-1: the consumer orders it itself
  bool blocking = false;    ///< no stream to wait on: finish the library's work on the host
  void* native = nullptr;   ///< the consumer's cudaStream_t / cl_command_queue
};

ConsumerStream parseConsumerStream(const GpuMatND& mat, nb::handle stream) {
  ConsumerStream out;
  const bool cuda = mat.backend() == ComputeBackend::cuda;
  if (stream.is_none()) {
    // CUDA: None means the legacy default stream; OpenCL has no convention, so the
    // library's work is finished before the tensor is handed out.
    if (!cuda) out.blocking = true;
    return out;
  }
  const long long value = intArgument(stream, "__dlpack__: stream (a cudaStream_t / cl_command_queue)", -1);
  if (value == -1) {
    out.synchronize = false;
    return out;
  }
  const auto handle = static_cast<std::uintptr_t>(value);
  if (cuda) {
    if (value == 0)
      throw nb::value_error("__dlpack__: stream=0 is ambiguous and not allowed on CUDA (use 1 for the legacy "
                            "default stream, 2 for the per-thread default stream)");
    if (value > 2 && !plausiblePointer(handle))
      throw nb::value_error(("__dlpack__: stream=" + std::to_string(value) + " is not a cudaStream_t").c_str());
    out.native = value == 1 ? nullptr : reinterpret_cast<void*>(handle);
  } else {
    // 1 and 2 are CUDA's default streams, which array-API consumers pass by habit;
    // no OpenCL queue can have such an address.
    if (!plausiblePointer(handle))
      throw nb::buffer_error(("__dlpack__: stream=" + std::to_string(value) + " is not a cl_command_queue; this "
                              "array is on OpenCL (CUDA stream numbers do not apply; pass None to have the "
                              "library's work finished first, or the integer value of your cl_command_queue)")
                                 .c_str());
    out.native = reinterpret_cast<void*>(handle);
  }
  return out;
}

/// The array to export: the same memory made ready on the consumer's stream, or the
/// plain array when the export itself must finish the library's work on the host.
GpuMatND orderForConsumer(const GpuMatND& mat, const ConsumerStream& consumer) {
  if (consumer.blocking) return mat;
  if (!consumer.synchronize) return readyOnConsumerStream(mat, std::nullopt);
  if (mat.backend() == ComputeBackend::cuda) return readyOnConsumerStream(mat, CUDAStreamPtr{consumer.native});
  return readyOnConsumerStream(mat, OpenCLCommandQueuePtr{consumer.native});
}

int dlpackDeviceId(const ComputeDevice& device) { return device.ordinal() < 0 ? 0 : device.ordinal(); }

template <class Fn>
auto asBufferError(Fn&& fn) -> decltype(fn()) {
  try {
    return fn();
  } catch (const Error& e) {
    if (e.code() == ErrorCode::InvalidArgument || e.code() == ErrorCode::Unsupported) throw nb::buffer_error(e.what());
    throw;
  }
}

// ---------------------------------------------------------------- import ----

/// Runs the deleter of a tensor the consumer owns when it goes out of scope.
template <class Tensor>
struct OwnedTensor {
  Tensor* tensor;
  ~OwnedTensor() {
    if (tensor != nullptr && tensor->deleter != nullptr) tensor->deleter(tensor);
  }
};

/// Copies a host (kDLCPU / kDLCUDAHost) tensor to `device`. Blocking.
GpuMatND uploadHostTensor(const DLTensor& t, const ComputeDevice& device) {
  constexpr const char* fn = "from_dlpack";
  const std::optional<Depth> depth = depthOfDLType(t.dtype);
  if (!depth)
    throw nb::buffer_error("from_dlpack: the host tensor's dtype has no devicearray depth (supported: uint8, int8, "
                           "uint16, int16, int32, float32, float64, float16; lanes 1)");
  if (t.ndim < 1 || t.ndim > kMaxAxes || t.shape == nullptr || t.data == nullptr)
    throw Error(ErrorCode::InvalidArgument, std::string(fn) + ": host tensor with ndim " + std::to_string(t.ndim) +
                                                " (needs 1.." + std::to_string(kMaxAxes) +
                                                ", non-null shape and data)");
  const std::size_t elem = depthSize(*depth);
  std::vector<int> size;
  std::vector<std::size_t> steps;
  for (int i = 0; i < t.ndim; ++i) {
    if (t.shape[i] < 1 || t.shape[i] > INT_MAX)
      throw Error(ErrorCode::InvalidArgument, std::string(fn) + ": host tensor axis " + std::to_string(i) +
                                                  " has length " + std::to_string(t.shape[i]));
    size.push_back(static_cast<int>(t.shape[i]));
    if (t.strides != nullptr && t.strides[i] < 1)
      throw Error(ErrorCode::InvalidArgument, std::string(fn) + ": host tensor axis " + std::to_string(i) +
                                                  " has stride " + std::to_string(t.strides[i]) +
                                                  " (only positive strides are supported)");
    if (t.strides != nullptr) steps.push_back(static_cast<std::size_t>(t.strides[i]) * elem);
  }
  // The producer's memory is not ours to check, but an extent that no process can
  // address (a stride or offset of 2^60) is a corrupt tensor, not a copy to attempt.
  // Measured from the data pointer, whose top bits may carry a tag (AArch64 MTE).
  constexpr std::uint64_t kAddressable = std::uint64_t{1} << 57;  // x86-64 5-level paging, AArch64 52-bit
  std::uint64_t end = 0;
  bool overflow = __builtin_add_overflow(std::uint64_t{t.byte_offset}, std::uint64_t{elem}, &end);
  std::uint64_t packed = 1;  // the stride of axis i when the tensor has none (C order)
  for (int i = t.ndim; i-- > 0 && !overflow;) {
    const std::uint64_t step = t.strides != nullptr ? static_cast<std::uint64_t>(t.strides[i]) : packed;
    std::uint64_t reach = 0;
    overflow = __builtin_mul_overflow(static_cast<std::uint64_t>(t.shape[i] - 1), step, &reach) ||
               __builtin_mul_overflow(reach, std::uint64_t{elem}, &reach) || __builtin_add_overflow(end, reach, &end) ||
               __builtin_mul_overflow(packed, static_cast<std::uint64_t>(t.shape[i]), &packed);
  }
  if (overflow || end > kAddressable)
    throw Error(ErrorCode::OutOfRange, std::string(fn) + ": the host tensor's byte_offset " +
                                           std::to_string(t.byte_offset) +
                                           " and strides reach past any addressable memory");
  const int type = makeType(*depth, 1);
  HostMat host(size, type, static_cast<unsigned char*>(t.data) + t.byte_offset, steps);
  GpuMatND out(size, type, device);
  out.upload(host);
  return out;
}

bool isHostDevice(int type) { return type == kDLCPU || type == kDLCUDAHost; }

struct Imported {
  GpuMatND mat;
  bool copied = false;  ///< a host tensor was copied to the device
};

/// Imports a tensor the caller owns (a DLManagedTensorVersioned when `versioned`,
/// else a DLManagedTensor); its deleter runs exactly once, also on failure.
Imported importOwnedTensor(void* pointer, bool versioned, const std::optional<ComputeDevice>& device,
                           std::optional<bool> copy) {
  const DLTensor& t = versioned ? static_cast<DLManagedTensorVersioned*>(pointer)->dl_tensor
                                : static_cast<DLManagedTensor*>(pointer)->dl_tensor;
  Imported out;
  const bool supportedVersion = !versioned || static_cast<DLManagedTensorVersioned*>(pointer)->version.major == 1;
  if (supportedVersion && isHostDevice(t.device.device_type)) {
    // Host memory cannot be wrapped: copy it to the device (array-API from_dlpack
    // may copy when copy is not False).
    OwnedTensor<DLManagedTensorVersioned> ownV{versioned ? static_cast<DLManagedTensorVersioned*>(pointer) : nullptr};
    OwnedTensor<DLManagedTensor> ownL{versioned ? nullptr : static_cast<DLManagedTensor*>(pointer)};
    if (copy && !*copy)
      throw nb::buffer_error("from_dlpack: the tensor is in host memory; importing it needs a copy but copy=False");
    const ComputeDevice target = device ? *device : ComputeDevice::defaultDevice();
    nb::gil_scoped_release release;
    out.mat = uploadHostTensor(t, target);
    out.copied = true;
    return out;
  }
  // With the GIL held: wrapping device memory never waits for a device, and the import
  // is shorter than releasing and taking the GIL back.
  try {
    if (versioned) {
      auto* v = static_cast<DLManagedTensorVersioned*>(pointer);
      out.mat = device ? fromDLPack(v, *device) : fromDLPack(v);
    } else {
      auto* l = static_cast<DLManagedTensor*>(pointer);
      out.mat = device ? fromDLPack(l, *device) : fromDLPack(l);
    }
  } catch (const Error& e) {
    if (e.code() == ErrorCode::Unsupported) throw nb::buffer_error(e.what());
    throw;
  }
  return out;
}

/// Takes a DLPack capsule (renaming it "used_...") and imports its tensor:
/// zero-copy for device tensors, a copy to `device` for host tensors (refused with
/// copy=False).
Imported importCapsule(nb::handle capsule, const std::optional<ComputeDevice>& device, std::optional<bool> copy) {
  const char* name = PyCapsule_GetName(capsule.ptr());
  if (name == nullptr && PyErr_Occurred()) throw nb::python_error();
  const std::string n = name == nullptr ? "" : name;
  if (n == kUsedVersionedName || n == kUsedLegacyName)
    throw nb::buffer_error("from_dlpack: the capsule was already consumed (its name is \"used_...\"); a DLPack "
                           "capsule can be imported only once");
  if (n != kVersionedName && n != kLegacyName)
    throw nb::value_error(("from_dlpack: not a DLPack capsule (name \"" + n + "\")").c_str());
  const bool versioned = n == kVersionedName;
  void* pointer = PyCapsule_GetPointer(capsule.ptr(), name);
  if (pointer == nullptr) throw nb::python_error();
  // Renaming first: from here on we own the tensor and run its deleter exactly
  // once, also when the import fails.
  if (PyCapsule_SetName(capsule.ptr(), versioned ? kUsedVersionedName : kUsedLegacyName) != 0)
    throw nb::python_error();
  return importOwnedTensor(pointer, versioned, device, copy);
}

/// The library's own stream of CUDA device `ordinal`, as the array-API int (1 for
/// the legacy default stream).
std::optional<std::pair<ComputeDevice, long long>> libraryStreamFor(int deviceType, int ordinal) {
  if (deviceType != kDLCUDA) return std::nullopt;
  const ComputeDevice device = ComputeDevice::cuda(ordinal);
  const auto handle = reinterpret_cast<std::uintptr_t>(device.nativeStreamHandle());
  return std::make_pair(device, handle == 0 ? 1LL : static_cast<long long>(handle));
}

/// Later library work on any queue waits for the consumer-side handshake that the
/// producer made on the library's own queue of `device`.
void recordHandshake(const GpuMatND& mat, const ComputeDevice& device) {
  orderAfterProducerStream(mat, device.sdkStreamOrQueue());
}

/// obj.__dlpack__(stream=..., max_version=...), falling back to the forms older
/// producers accept. Copies are made by the importer, never requested here.
nb::object callProducer(nb::handle obj, nb::handle stream) {
  nb::object method = obj.attr("__dlpack__");
  try {
    return method(nb::arg("stream") = stream,
                  nb::arg("max_version") = nb::make_tuple(DLPACK_MAJOR_VERSION, DLPACK_MINOR_VERSION));
  } catch (nb::python_error& e) {
    if (!e.matches(PyExc_TypeError)) throw;
  }
  // Producers from before the max_version / copy keywords (DLPack < 1.0).
  if (stream.is_none()) return method();
  try {
    return method(nb::arg("stream") = stream);
  } catch (nb::python_error& e) {
    if (!e.matches(PyExc_TypeError)) throw;
  }
  return method(stream);
}

// ------------------------------------------------ C exchange API import ----

std::string typeName(PyTypeObject* type) { return type->tp_name == nullptr ? "?" : type->tp_name; }

[[noreturn]] void badExchangeApi(PyTypeObject* type, const std::string& why) {
  throw nb::buffer_error(("from_dlpack: " + typeName(type) + ".__dlpack_c_exchange_api__ " + why).c_str());
}

/// Checks a type's `__dlpack_c_exchange_api__` and returns the table of major
/// version 1 (walking prev_api), or nullptr when the type offers only newer major
/// versions (then __dlpack__, which negotiates versions, is used instead).
/// BufferError for anything malformed or too old.
const DLPackExchangeAPI* validExchangeApi(PyTypeObject* type, PyObject* attribute) {
  if (!PyCapsule_CheckExact(attribute))
    badExchangeApi(type, std::string("is a ") + typeName(Py_TYPE(attribute)) + ", not a PyCapsule");
  const char* name = PyCapsule_GetName(attribute);
  if (name == nullptr || std::strcmp(name, kExchangeApiCapsuleName) != 0) {
    PyErr_Clear();
    badExchangeApi(type, std::string("is a capsule named \"") + (name == nullptr ? "" : name) + "\", not \"" +
                             kExchangeApiCapsuleName + "\"");
  }
  const auto* header = static_cast<const DLPackExchangeAPIHeader*>(PyCapsule_GetPointer(attribute, name));
  if (header == nullptr) {
    PyErr_Clear();
    badExchangeApi(type, "holds a NULL pointer");
  }
  // A chain that loops or runs on is malformed; real ones have a handful of links.
  constexpr int kMaxChain = 16;
  int links = 0;
  for (const DLPackExchangeAPIHeader* h = header; h != nullptr && links < kMaxChain; h = h->prev_api, ++links) {
    if (h->version.major > DLPACK_MAJOR_VERSION) continue;
    if (h->version.major < DLPACK_MAJOR_VERSION || h->version.minor < 3)
      badExchangeApi(type, "has version " + std::to_string(h->version.major) + "." + std::to_string(h->version.minor) +
                               "; the C exchange API needs DLPack 1.3 or later");
    const auto* api = reinterpret_cast<const DLPackExchangeAPI*>(h);
    if (api->managed_tensor_from_py_object_no_sync == nullptr)
      badExchangeApi(type, "has a NULL managed_tensor_from_py_object_no_sync");
    if (api->current_work_stream == nullptr) badExchangeApi(type, "has a NULL current_work_stream");
    return api;
  }
  if (links == kMaxChain) badExchangeApi(type, "has a prev_api chain that does not end");
  return nullptr;
}

/// The exchange API of `type`, or nullptr when it has none we can use. The
/// attribute is looked up on the type and its bases (where an instance's class
/// attribute lives); _PyType_Lookup raises nothing for a missing name, so the many
/// types without one stay cheap. Validated tables are cached per type with the
/// capsule they came from (held, so its identity proves the entry current: a table
/// installed or replaced later is seen). GIL held.
const DLPackExchangeAPI* exchangeApiOf(PyTypeObject* type) {
  static PyObject* const attributeName = PyUnicode_InternFromString("__dlpack_c_exchange_api__");
  if (attributeName == nullptr) throw nb::python_error();
  PyObject* attribute = _PyType_Lookup(type, attributeName);
  if (attribute == nullptr) return nullptr;

  struct Entry {
    PyTypeObject* type = nullptr;
    PyObject* capsule = nullptr;
    const DLPackExchangeAPI* api = nullptr;
  };
  static Entry cache[8];
  static std::size_t nextSlot = 0;
  for (const Entry& e : cache)
    if (e.type == type && e.capsule == attribute) return e.api;
  const DLPackExchangeAPI* api = validExchangeApi(type, attribute);
  Entry& slot = cache[nextSlot++ % std::size(cache)];
  Py_INCREF(attribute);
  Py_XDECREF(slot.capsule);
  slot = Entry{type, attribute, api};
  return api;
}

/// Imports `obj` through its type's exchange API: the producer hands over an owned
/// tensor without a capsule or a Python call and without ordering anything, so the
/// library's later work on the memory is ordered after the producer's current work
/// stream (what __dlpack__'s stream handshake achieves). A producer that names no
/// OpenCL work stream hands out finished OpenCL data, as __dlpack__(stream=None)
/// does there.
Imported importThroughExchangeApi(nb::handle obj, const DLPackExchangeAPI& api,
                                  const std::optional<ComputeDevice>& device, std::optional<bool> copy) {
  PyTypeObject* type = Py_TYPE(obj.ptr());
  DLManagedTensorVersioned* tensor = nullptr;
  const int status = api.managed_tensor_from_py_object_no_sync(obj.ptr(), &tensor);
  if (status != 0 || PyErr_Occurred()) {
    // On failure the producer keeps the tensor; a success that also set an error is
    // a failure whose tensor is ours to release.
    if (status == 0 && tensor != nullptr && tensor->deleter != nullptr) tensor->deleter(tensor);
    if (!PyErr_Occurred())
      badExchangeApi(type, "managed_tensor_from_py_object_no_sync failed (returned " + std::to_string(status) +
                               ") without setting a Python error");
    throw nb::python_error();
  }
  if (tensor == nullptr) badExchangeApi(type, "managed_tensor_from_py_object_no_sync returned no tensor");

  // The tensor is ours from here: every path below runs its deleter exactly once.
  void* producerStream = nullptr;
  bool ordered = false;
  const int deviceType = tensor->version.major == 1 ? static_cast<int>(tensor->dl_tensor.device.device_type) : 0;
  if (deviceType == kDLCUDA || deviceType == kDLOpenCL) {
    const DLDevice d = tensor->dl_tensor.device;
    const int streamStatus = api.current_work_stream(d.device_type, d.device_id, &producerStream);
    ordered = streamStatus == 0 && !PyErr_Occurred();
    if (!ordered && deviceType == kDLOpenCL) {
      PyErr_Clear();
    } else if (!ordered) {
      if (tensor->deleter != nullptr) tensor->deleter(tensor);
      if (!PyErr_Occurred())
        badExchangeApi(type, "current_work_stream failed (returned " + std::to_string(streamStatus) +
                                 ") without setting a Python error");
      throw nb::python_error();
    }
  }
  Imported imported = importOwnedTensor(tensor, /*versioned=*/true, device, copy);
  if (ordered && !imported.copied) {
    if (imported.mat.backend() == ComputeBackend::cuda)
      orderAfterProducerStream(imported.mat, CUDAStreamPtr{producerStream});
    else if (producerStream != nullptr)
      orderAfterProducerStream(imported.mat, OpenCLCommandQueuePtr{producerStream});
  }
  return imported;
}

// ---------------------------------------- __cuda_array_interface__ import ----

/// Keeps the producer object alive for as long as the imported memory is used.
struct InterfaceOwner {
  DLManagedTensor tensor{};
  PyObject* object = nullptr;
  std::vector<std::int64_t> shape;
  std::vector<std::int64_t> strides;
};

bool interpreterFinalizing() {
#if PY_VERSION_HEX >= 0x030D0000
  return Py_IsFinalizing() != 0;
#else
  return _Py_IsFinalizing() != 0;
#endif
}

extern "C" void interfaceOwnerDeleter(DLManagedTensor* self) {
  auto* owner = static_cast<InterfaceOwner*>(self->manager_ctx);
  // The last handle may go on any thread. While the interpreter shuts down only the
  // thread that holds the GIL may touch objects (another thread taking the GIL then
  // would hang); such an object is left to the interpreter, after it is gone too.
  if (owner->object != nullptr && Py_IsInitialized()) {
    if (PyGILState_Check() == 1) {
      Py_DECREF(owner->object);
    } else if (!interpreterFinalizing()) {
      PyGILState_STATE state = PyGILState_Ensure();
      Py_DECREF(owner->object);
      PyGILState_Release(state);
    }
  }
  delete owner;
}

std::optional<Depth> depthOfTypestr(const std::string& s) {
  if (s.size() < 3) return std::nullopt;
  const char order = s[0];
  const std::string kind = s.substr(1);
  const bool little = order == '<' || order == '|' || order == '=';
  if (!little) return std::nullopt;
  if (kind == "u1") return Depth::U8;
  if (kind == "i1") return Depth::S8;
  if (kind == "u2") return Depth::U16;
  if (kind == "i2") return Depth::S16;
  if (kind == "i4") return Depth::S32;
  if (kind == "f4") return Depth::F32;
  if (kind == "f8") return Depth::F64;
  if (kind == "f2") return Depth::F16;
  return std::nullopt;
}

GpuMatND importCudaArrayInterface(nb::handle obj) {
  constexpr const char* fn = "from_dlpack(__cuda_array_interface__)";
  nb::object interface = obj.attr("__cuda_array_interface__");
  if (!PyDict_Check(interface.ptr()))
    throw nb::type_error("from_dlpack: __cuda_array_interface__ must be a dict");
  nb::dict cai = nb::borrow<nb::dict>(interface);
  for (const char* key : {"typestr", "data", "shape"})
    if (!cai.contains(key))
      throw nb::value_error((std::string("from_dlpack: __cuda_array_interface__ has no '") + key + "'").c_str());
  if (cai.contains("mask") && !cai["mask"].is_none())
    throw nb::buffer_error("from_dlpack: masked __cuda_array_interface__ arrays are not supported");
  if (!PyUnicode_Check(cai["typestr"].ptr()))
    throw nb::type_error("from_dlpack: __cuda_array_interface__['typestr'] must be a str");
  const std::string typestr = nb::cast<std::string>(cai["typestr"]);
  const std::optional<Depth> depth = depthOfTypestr(typestr);
  if (!depth)
    throw nb::buffer_error(("from_dlpack: __cuda_array_interface__ typestr '" + typestr +
                            "' has no devicearray depth (little-endian u1 i1 u2 i2 i4 f2 f4 f8)")
                               .c_str());
  nb::tuple data = tupleArgument(cai["data"], 2, "from_dlpack: __cuda_array_interface__['data'] (pointer, read_only)");
  const auto pointer = static_cast<std::uintptr_t>(
      intArgument(data[0], "from_dlpack: __cuda_array_interface__['data'][0] (pointer)", 0));
  if (boolArgument(data[1], "from_dlpack: __cuda_array_interface__['data'][1] (read_only)"))
    throw nb::buffer_error("from_dlpack: read-only __cuda_array_interface__ arrays are not supported (GpuMatND "
                           "has no read-only mode)");
  auto owner = std::make_unique<InterfaceOwner>();
  const std::size_t elem = depthSize(*depth);
  std::vector<int> size;
  nb::handle shape = cai["shape"];
  if (!PyTuple_Check(shape.ptr()))
    throw nb::type_error("from_dlpack: __cuda_array_interface__['shape'] must be a tuple of ints");
  for (nb::handle h : nb::borrow<nb::tuple>(shape)) {
    const long long len = intArgument(h, "from_dlpack: __cuda_array_interface__['shape'] item");
    if (len < 1 || len > INT_MAX)
      throw Error(ErrorCode::InvalidArgument, std::string(fn) + ": axis length " + std::to_string(len) +
                                                  " (lengths must be in [1, INT_MAX])");
    owner->shape.push_back(len);
    size.push_back(static_cast<int>(len));
  }
  if (size.empty()) throw nb::buffer_error("from_dlpack: 0-d __cuda_array_interface__ arrays are not supported");
  std::vector<std::size_t> steps;
  if (cai.contains("strides") && !cai["strides"].is_none()) {
    nb::handle strides = cai["strides"];
    if (!PyTuple_Check(strides.ptr()) || nb::borrow<nb::tuple>(strides).size() != size.size())
      throw nb::type_error("from_dlpack: __cuda_array_interface__['strides'] must be None or a tuple of one int "
                           "per axis");
    for (nb::handle h : nb::borrow<nb::tuple>(strides)) {
      const long long bytes = intArgument(h, "from_dlpack: __cuda_array_interface__['strides'] item");
      if (bytes < 1 || bytes % static_cast<long long>(elem) != 0)
        throw nb::buffer_error(("from_dlpack: __cuda_array_interface__ stride " + std::to_string(bytes) +
                                " is not a positive multiple of the element size")
                                   .c_str());
      owner->strides.push_back(bytes / static_cast<long long>(elem));
      steps.push_back(static_cast<std::size_t>(bytes));
    }
  }
  // The producer's pending work: the array is ready on "stream" (v3).
  std::optional<long long> stream;
  if (cai.contains("stream") && !cai["stream"].is_none()) {
    const long long s = intArgument(cai["stream"], "from_dlpack: __cuda_array_interface__['stream']", 0);
    if (s == 0) throw nb::value_error("from_dlpack: __cuda_array_interface__ stream 0 is not allowed");
    if (s > 2 && !plausiblePointer(static_cast<std::uintptr_t>(s)))
      throw nb::value_error(("from_dlpack: __cuda_array_interface__ stream " + std::to_string(s) +
                             " is not a cudaStream_t")
                                .c_str());
    stream = s;
  }

  const int type = makeType(*depth, 1);
  // The pointer's device decides where the array lives (the external-memory
  // constructor finds and verifies it).
  const ComputeDevice device = GpuMatND(size, type, reinterpret_cast<void*>(pointer), steps).device();

  DLTensor& t = owner->tensor.dl_tensor;
  t.data = reinterpret_cast<void*>(pointer);
  t.device = DLDevice{kDLCUDA, device.ordinal()};
  t.ndim = static_cast<std::int32_t>(owner->shape.size());
  t.dtype = DLDataType{static_cast<std::uint8_t>(*depth == Depth::F32 || *depth == Depth::F64 || *depth == Depth::F16
                                                     ? kDLFloat
                                                     : (*depth == Depth::U8 || *depth == Depth::U16 ? kDLUInt : kDLInt)),
                       static_cast<std::uint8_t>(elem * 8), 1};
  t.shape = owner->shape.data();
  t.strides = owner->strides.empty() ? nullptr : owner->strides.data();
  t.byte_offset = 0;
  owner->tensor.deleter = &interfaceOwnerDeleter;
  owner->object = obj.ptr();
  Py_INCREF(owner->object);
  owner->tensor.manager_ctx = owner.get();
  DLManagedTensor* tensor = &owner.release()->tensor;
  GpuMatND out = fromDLPack(tensor, device);  // runs the deleter (drops the reference) on failure
  if (stream)
    orderAfterProducerStream(
        out, CUDAStreamPtr{*stream == 1 ? nullptr : reinterpret_cast<void*>(static_cast<std::uintptr_t>(*stream))});
  return out;
}

}  // namespace

// ------------------------------------------------------------------ export ----

nb::object dlpackCapsule(const GpuMatND& mat, nb::handle stream, nb::handle maxVersion, nb::handle dlDevice,
                         nb::handle copy) {
  if (mat.empty()) throw nb::buffer_error("__dlpack__: the array is empty; there is nothing to export");
  bool versioned = false;
  if (!maxVersion.is_none()) {
    nb::tuple v = tupleArgument(maxVersion, 2, "__dlpack__: max_version (major, minor)");
    for (nb::handle part : v)
      if (!PyLong_Check(part.ptr()) || PyBool_Check(part.ptr()))
        throw nb::type_error("__dlpack__: max_version must be a (major, minor) tuple of ints");
    // Any major >= 1, however large, is a consumer of versioned capsules.
    versioned = PyObject_RichCompareBool(v[0].ptr(), nb::int_(1).ptr(), Py_GE) == 1;
    if (PyObject_RichCompareBool(v[0].ptr(), nb::int_(0).ptr(), Py_LT) == 1 ||
        PyObject_RichCompareBool(v[1].ptr(), nb::int_(0).ptr(), Py_LT) == 1)
      throw nb::value_error("__dlpack__: max_version must not be negative");
  }
  std::optional<bool> copyRequest;
  if (!copy.is_none()) copyRequest = boolArgument(copy, "__dlpack__: copy");

  const ComputeDevice device = mat.device();
  const int ownType = mat.backend() == ComputeBackend::cuda ? kDLCUDA : kDLOpenCL;
  const int ownId = dlpackDeviceId(device);
  bool toHost = false;
  if (!dlDevice.is_none()) {
    nb::tuple d = tupleArgument(dlDevice, 2, "__dlpack__: dl_device (device_type, device_id)");
    const long long type = intArgument(d[0], "__dlpack__: dl_device[0] (device_type)");
    const long long id = intArgument(d[1], "__dlpack__: dl_device[1] (device_id)");
    if (type == kDLCPU && id == 0) {
      if (copyRequest && !*copyRequest)
        throw nb::buffer_error("__dlpack__: dl_device=(kDLCPU, 0) needs a copy of the device memory but copy=False");
      toHost = true;
    } else if (type != ownType || id != ownId) {
      throw nb::buffer_error(("__dlpack__: cannot export to dl_device (" + std::to_string(type) + ", " +
                              std::to_string(id) + "); the array lives on (" + std::to_string(ownType) + ", " +
                              std::to_string(ownId) + ") and can also be copied to (kDLCPU=1, 0)")
                                 .c_str());
    }
  }

  if (toHost) {
    if (!stream.is_none())
      throw nb::value_error("__dlpack__: stream must be None when exporting to the host (dl_device=(kDLCPU, 0))");
    return asBufferError([&]() -> nb::object {
      if (versioned) {
        DLManagedTensorVersioned* t;
        {
          nb::gil_scoped_release release;
          t = toDLPackVersionedHostCopy(mat);
        }
        return capsuleOf(t);
      }
      DLManagedTensor* t;
      {
        nb::gil_scoped_release release;
        t = toDLPackHostCopy(mat);
      }
      return capsuleOf(t);
    });
  }

  const ConsumerStream consumer = parseConsumerStream(mat, stream);
  return asBufferError([&]() -> nb::object {
    DLManagedTensorVersioned* v = nullptr;
    DLManagedTensor* l = nullptr;
    {
      nb::gil_scoped_release release;
      GpuMatND source = mat;
      if (copyRequest && *copyRequest) {
        // A device copy made on the library's own queue, then handed over like any array.
        Stream own = Stream::wrap(device, device.sdkStreamOrQueue());
        source = mat.clone(own);
      }
      const GpuMatND ordered = orderForConsumer(source, consumer);
      if (versioned) {
        v = toDLPackVersioned(ordered);
        if (copyRequest && *copyRequest) v->flags |= DLPACK_FLAG_BITMASK_IS_COPIED;
      } else {
        l = toDLPack(ordered);
      }
    }
    return versioned ? capsuleOf(v) : capsuleOf(l);
  });
}

nb::tuple dlpackDevice(const GpuMatND& mat) {
  if (mat.empty()) throw nb::buffer_error("__dlpack_device__: the array is empty");
  const ComputeDevice device = mat.device();
  return nb::make_tuple(mat.backend() == ComputeBackend::cuda ? static_cast<int>(kDLCUDA) : static_cast<int>(kDLOpenCL),
                        dlpackDeviceId(device));
}

nb::dict cudaArrayInterface(const GpuMatND& mat) {
  if (mat.empty()) throw nb::attribute_error("__cuda_array_interface__: the array is empty");
  if (mat.backend() != ComputeBackend::cuda)
    throw nb::attribute_error("__cuda_array_interface__ is only available for CUDA arrays (this one is on OpenCL)");
  const ComputeDevice device = mat.device();
  // The data is ready on the library's own stream: it waits (device-side) for the
  // library's work on the memory from every other queue.
  {
    nb::gil_scoped_release release;
    readyOnConsumerStream(mat, device.sdkStreamOrQueue());
  }
  const auto handle = reinterpret_cast<std::uintptr_t>(device.nativeStreamHandle());
  nb::dict d;
  d["shape"] = toTuple(shapeOf(mat));
  d["typestr"] = typestrOf(depthOf(mat.type()));
  d["data"] = nb::make_tuple(reinterpret_cast<std::uintptr_t>(mat.getDevicePtr()), false);
  d["version"] = 3;
  d["strides"] = mat.isContinuous() ? nb::none() : nb::object(toTuple(stridesInBytesOf(mat)));
  nb::list descr;
  descr.append(nb::make_tuple("", typestrOf(depthOf(mat.type()))));
  d["descr"] = descr;
  d["stream"] = handle == 0 ? std::uintptr_t{1} : handle;
  return d;
}

nb::object arrayForNumpy(const GpuMatND& mat, nb::handle dtype, nb::handle copy) {
  if (!copy.is_none() && !boolArgument(copy, "__array__: copy"))
    throw nb::value_error("__array__: device memory cannot be viewed by numpy without a copy (copy=False)");
  nb::object out = toNumpy(mat);
  if (!dtype.is_none()) out = out.attr("astype")(dtype, nb::arg("copy") = false);
  return out;
}

void bindProtocols(nb::module_& m) {
  m.attr("kDLCPU") = static_cast<int>(kDLCPU);
  m.attr("kDLCUDA") = static_cast<int>(kDLCUDA);
  m.attr("kDLOpenCL") = static_cast<int>(kDLOpenCL);

  m.def(
      "from_dlpack",
      [](nb::handle obj, std::optional<ComputeDevice> device, std::optional<bool> copy) -> nb::object {
        const bool wantCopy = copy && *copy;
        auto finish = [&](Imported imported) {
          if (wantCopy && !imported.copied) {
            nb::gil_scoped_release release;
            imported.mat = imported.mat.clone();
          }
          return nb::cast(std::move(imported.mat));
        };
        if (PyCapsule_CheckExact(obj.ptr())) return finish(importCapsule(obj, device, copy));
        if (const DLPackExchangeAPI* api = exchangeApiOf(Py_TYPE(obj.ptr())))
          return finish(importThroughExchangeApi(obj, *api, device, copy));
        if (nb::hasattr(obj, "__dlpack__")) {
          int deviceType = kDLCPU;
          int deviceId = 0;
          if (nb::hasattr(obj, "__dlpack_device__")) {
            nb::object reported = obj.attr("__dlpack_device__")();
            nb::tuple d = tupleArgument(reported, 2, "from_dlpack: the result of __dlpack_device__()");
            deviceType = static_cast<int>(intArgument(d[0], "from_dlpack: __dlpack_device__()[0]", 0, INT_MAX));
            deviceId = static_cast<int>(intArgument(d[1], "from_dlpack: __dlpack_device__()[1]", 0, INT_MAX));
          }
          // On CUDA the producer makes its data ready on the library's own stream.
          const auto own = libraryStreamFor(deviceType, deviceId);
          nb::object stream = own ? nb::cast(own->second) : nb::none();
          Imported imported = importCapsule(callProducer(obj, stream), device, copy);
          if (own && !imported.copied && imported.mat.backend() == ComputeBackend::cuda &&
              imported.mat.device() == own->first)
            recordHandshake(imported.mat, own->first);
          return finish(std::move(imported));
        }
        if (nb::hasattr(obj, "__cuda_array_interface__")) {
          return finish(Imported{importCudaArrayInterface(obj), false});
        }
        throw nb::type_error("from_dlpack: expected an object with __dlpack__, a DLPack capsule, or an object with "
                             "__cuda_array_interface__");
      },
      nb::arg("obj"), nb::kw_only(), nb::arg("device") = nb::none(), nb::arg("copy") = nb::none(),
      "Imports any DLPack producer (through its type's DLPack C exchange API, __dlpack_c_exchange_api__, when it "
      "has one; else __dlpack__ called with keyword arguments and, on CUDA, the library's own stream), a raw "
      "DLPack capsule, or a __cuda_array_interface__ object, zero-copy (the producer stays alive as long as the "
      "memory is used). Host tensors are copied to `device` (default device). Returns a GpuMatND with every axis "
      "as a dimension.");
}

}  // namespace devicearray::python
