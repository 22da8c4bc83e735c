// devicearray._testing: C-level probes of DLPack capsules for the test suite
// (capsule names, tensor fields, counting deleter calls) and of the DLPack C
// exchange API (calling a table's functions, and a configurable fake producer
// table). Not public API.
#include <nanobind/nanobind.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <atomic>
#include <cstdint>
#include <deque>
#include <optional>
#include <string>
#include <vector>

#include "common.hpp"

namespace devicearray::python {

namespace {

std::atomic<long> gDeleterCalls{0};

/// The original owner of an instrumented tensor.
struct CountingContext {
  void* managerCtx = nullptr;
  void (*versionedDeleter)(DLManagedTensorVersioned*) = nullptr;
  void (*legacyDeleter)(DLManagedTensor*) = nullptr;
};

extern "C" void countingVersionedDeleter(DLManagedTensorVersioned* self) {
  gDeleterCalls.fetch_add(1);
  auto* ctx = static_cast<CountingContext*>(self->manager_ctx);
  self->manager_ctx = ctx->managerCtx;
  self->deleter = ctx->versionedDeleter;
  delete ctx;
  if (self->deleter != nullptr) self->deleter(self);
}

extern "C" void countingLegacyDeleter(DLManagedTensor* self) {
  gDeleterCalls.fetch_add(1);
  auto* ctx = static_cast<CountingContext*>(self->manager_ctx);
  self->manager_ctx = ctx->managerCtx;
  self->deleter = ctx->legacyDeleter;
  delete ctx;
  if (self->deleter != nullptr) self->deleter(self);
}

/// The tensor of an unconsumed capsule; TypeError for anything else.
void* unconsumedTensor(nb::handle capsule, bool& versioned) {
  if (!PyCapsule_CheckExact(capsule.ptr())) throw nb::type_error("expected a PyCapsule");
  const char* name = PyCapsule_GetName(capsule.ptr());
  const std::string n = name == nullptr ? "" : name;
  if (n != "dltensor_versioned" && n != "dltensor")
    throw nb::value_error(("the capsule is not an unconsumed DLPack capsule (name \"" + n + "\")").c_str());
  versioned = n == "dltensor_versioned";
  void* p = PyCapsule_GetPointer(capsule.ptr(), name);
  if (p == nullptr) throw nb::python_error();
  return p;
}

/// Routes the deleter of `v` through the counter (see count_deleter_calls).
void instrument(DLManagedTensorVersioned* v) {
  auto* ctx = new CountingContext();
  ctx->managerCtx = v->manager_ctx;
  ctx->versionedDeleter = v->deleter;
  v->manager_ctx = ctx;
  v->deleter = &countingVersionedDeleter;
}

// --------------------------------------------------- C exchange API probes ----

const DLPackExchangeAPI* exchangeApiIn(nb::handle capsule) {
  if (!PyCapsule_IsValid(capsule.ptr(), kExchangeApiCapsuleName))
    throw nb::type_error("expected a PyCapsule named \"dlpack_exchange_api\"");
  return static_cast<const DLPackExchangeAPI*>(PyCapsule_GetPointer(capsule.ptr(), kExchangeApiCapsuleName));
}

/// A fresh "dltensor_versioned" capsule that owns `tensor` (its deleter runs when
/// the capsule goes unconsumed).
nb::object ownedCapsule(DLManagedTensorVersioned* tensor) {
  PyObject* capsule = PyCapsule_New(tensor, "dltensor_versioned", [](PyObject* c) {
    if (!PyCapsule_IsValid(c, "dltensor_versioned")) return;
    auto* v = static_cast<DLManagedTensorVersioned*>(PyCapsule_GetPointer(c, "dltensor_versioned"));
    if (v->deleter != nullptr) v->deleter(v);
  });
  if (capsule == nullptr) {
    tensor->deleter(tensor);
    throw nb::python_error();
  }
  return nb::steal(capsule);
}

/// How the fake producer's functions behave (set by set_fake_exchange).
struct FakeBehaviour {
  std::string fromPy = "ok";  ///< ok | error | silent_error | no_tensor | error_with_tensor
  std::string stream = "ok";  ///< ok | error | silent_error
  long fromPyCalls = 0;
  long streamCalls = 0;
  std::vector<int> lastStreamDevice;
};
FakeBehaviour gFake;

// The fake producer's objects carry the array they stand for in `.array`.
extern "C" int fakeFromPyObject(void* pyObject, DLManagedTensorVersioned** out) {
  ++gFake.fromPyCalls;
  const std::string& mode = gFake.fromPy;
  if (mode == "error") {
    PyErr_SetString(PyExc_ValueError, "fake producer: from_py_object failed");
    return -1;
  }
  if (mode == "silent_error") return -1;
  if (mode == "no_tensor") {
    *out = nullptr;
    return 0;
  }
  PyObject* array = PyObject_GetAttrString(static_cast<PyObject*>(pyObject), "array");
  if (array == nullptr) return -1;
  const int status = dlpackExchangeApi().managed_tensor_from_py_object_no_sync(array, out);
  Py_DECREF(array);
  if (status != 0) return status;
  instrument(*out);
  if (mode == "error_with_tensor") {
    PyErr_SetString(PyExc_ValueError, "fake producer: returned a tensor and an error");
    return 0;
  }
  return 0;
}

extern "C" int fakeCurrentWorkStream(DLDeviceType type, std::int32_t id, void** out) {
  ++gFake.streamCalls;
  gFake.lastStreamDevice = {static_cast<int>(type), static_cast<int>(id)};
  if (gFake.stream == "error") {
    PyErr_SetString(PyExc_RuntimeError, "fake producer: current_work_stream failed");
    return -1;
  }
  if (gFake.stream == "silent_error") return -1;
  return dlpackExchangeApi().current_work_stream(type, id, out);
}

extern "C" void deleteFakeTable(PyObject* capsule) {
  const char* name = PyCapsule_GetName(capsule);
  auto* api = static_cast<DLPackExchangeAPI*>(PyCapsule_GetPointer(capsule, name));
  while (api != nullptr) {
    auto* older = reinterpret_cast<DLPackExchangeAPI*>(api->header.prev_api);
    delete api;
    api = older;
  }
  PyErr_Clear();
}

nb::dict describe(const DLTensor& t) {
  nb::dict d;
  d["data"] = reinterpret_cast<std::uintptr_t>(t.data);
  d["device"] = nb::make_tuple(static_cast<int>(t.device.device_type), t.device.device_id);
  d["ndim"] = t.ndim;
  d["dtype"] = nb::make_tuple(static_cast<int>(t.dtype.code), static_cast<int>(t.dtype.bits),
                              static_cast<int>(t.dtype.lanes));
  nb::list shape, strides;
  for (int i = 0; i < t.ndim; ++i) {
    shape.append(t.shape[i]);
    if (t.strides != nullptr) strides.append(t.strides[i]);
  }
  d["shape"] = nb::tuple(shape);
  d["strides"] = t.strides == nullptr ? nb::none() : nb::object(nb::tuple(strides));
  d["byte_offset"] = t.byte_offset;
  return d;
}

}  // namespace

void bindTesting(nb::module_& m) {
  m.def("capsule_name", [](nb::handle capsule) -> std::string {
    if (!PyCapsule_CheckExact(capsule.ptr())) throw nb::type_error("expected a PyCapsule");
    const char* name = PyCapsule_GetName(capsule.ptr());
    if (name == nullptr && PyErr_Occurred()) throw nb::python_error();
    return name == nullptr ? "" : name;
  }, nb::arg("capsule"), "The capsule's current name.");

  m.def("tensor_info", [](nb::handle capsule) {
    bool versioned = false;
    void* p = unconsumedTensor(capsule, versioned);
    if (!versioned) return describe(static_cast<DLManagedTensor*>(p)->dl_tensor);
    auto* v = static_cast<DLManagedTensorVersioned*>(p);
    nb::dict d = describe(v->dl_tensor);
    d["version"] = nb::make_tuple(v->version.major, v->version.minor);
    d["flags"] = v->flags;
    return d;
  }, nb::arg("capsule"), "The DLTensor fields of an unconsumed capsule (plus version and flags when versioned).");

  m.def("count_deleter_calls", [](nb::handle capsule) {
    bool versioned = false;
    void* p = unconsumedTensor(capsule, versioned);
    if (versioned) {
      instrument(static_cast<DLManagedTensorVersioned*>(p));
    } else {
      auto* ctx = new CountingContext();
      auto* l = static_cast<DLManagedTensor*>(p);
      ctx->managerCtx = l->manager_ctx;
      ctx->legacyDeleter = l->deleter;
      l->manager_ctx = ctx;
      l->deleter = &countingLegacyDeleter;
    }
  }, nb::arg("capsule"),
        "Instruments the tensor of an unconsumed capsule: each call of its deleter increments deleter_calls().");
  m.def("deleter_calls", [] { return gDeleterCalls.load(); });
  m.def("reset_deleter_calls", [] { gDeleterCalls.store(0); });

  m.def("set_version", [](nb::handle capsule, unsigned major, unsigned minor) {
    bool versioned = false;
    void* p = unconsumedTensor(capsule, versioned);
    if (!versioned) throw nb::value_error("a legacy capsule has no version");
    static_cast<DLManagedTensorVersioned*>(p)->version = DLPackVersion{major, minor};
  }, nb::arg("capsule"), nb::arg("major"), nb::arg("minor"), "Overwrites a versioned tensor's version field.");

  // ------------------------------------------------------- C exchange API ----

  m.def("exchange_api_info", [](nb::handle capsule) {
    const DLPackExchangeAPI* api = exchangeApiIn(capsule);
    nb::dict d;
    d["version"] = nb::make_tuple(api->header.version.major, api->header.version.minor);
    d["prev_api"] = api->header.prev_api != nullptr;
    d["managed_tensor_allocator"] = api->managed_tensor_allocator != nullptr;
    d["managed_tensor_from_py_object_no_sync"] = api->managed_tensor_from_py_object_no_sync != nullptr;
    d["managed_tensor_to_py_object_no_sync"] = api->managed_tensor_to_py_object_no_sync != nullptr;
    d["dltensor_from_py_object_no_sync"] = api->dltensor_from_py_object_no_sync != nullptr;
    d["current_work_stream"] = api->current_work_stream != nullptr;
    return d;
  }, nb::arg("capsule"), "Version and which function pointers are set, of an exchange API capsule.");

  m.def("exchange_from_py_object", [](nb::handle capsule, nb::handle obj) {
    DLManagedTensorVersioned* tensor = nullptr;
    if (exchangeApiIn(capsule)->managed_tensor_from_py_object_no_sync(obj.ptr(), &tensor) != 0)
      throw nb::python_error();
    return ownedCapsule(tensor);
  }, nb::arg("capsule"), nb::arg("obj"),
        "Calls managed_tensor_from_py_object_no_sync; the tensor comes back in a \"dltensor_versioned\" capsule.");

  m.def("exchange_to_py_object", [](nb::handle capsule, nb::handle tensorCapsule) {
    bool versioned = false;
    void* p = unconsumedTensor(tensorCapsule, versioned);
    if (!versioned) throw nb::value_error("the exchange API takes versioned tensors");
    if (PyCapsule_SetName(tensorCapsule.ptr(), "used_dltensor_versioned") != 0) throw nb::python_error();
    void* out = nullptr;
    if (exchangeApiIn(capsule)->managed_tensor_to_py_object_no_sync(static_cast<DLManagedTensorVersioned*>(p), &out) !=
        0)
      throw nb::python_error();
    return nb::steal(static_cast<PyObject*>(out));
  }, nb::arg("capsule"), nb::arg("tensor"),
        "Calls managed_tensor_to_py_object_no_sync with the tensor of an unconsumed versioned capsule (consuming it).");

  m.def("exchange_current_work_stream", [](nb::handle capsule, int deviceType, int deviceId) {
    void* stream = nullptr;
    if (exchangeApiIn(capsule)->current_work_stream(static_cast<DLDeviceType>(deviceType), deviceId, &stream) != 0)
      throw nb::python_error();
    return reinterpret_cast<std::uintptr_t>(stream);
  }, nb::arg("capsule"), nb::arg("device_type"), nb::arg("device_id"), "Calls current_work_stream.");

  m.def("exchange_allocate", [](nb::handle capsule, std::vector<std::int64_t> shape, int code, int bits,
                                int deviceType, int deviceId) {
    DLTensor prototype{};
    prototype.ndim = static_cast<std::int32_t>(shape.size());
    prototype.shape = shape.empty() ? nullptr : shape.data();
    prototype.dtype = DLDataType{static_cast<std::uint8_t>(code), static_cast<std::uint8_t>(bits), 1};
    prototype.device = DLDevice{static_cast<DLDeviceType>(deviceType), deviceId};
    struct Report {
      std::string kind, message;
      int calls = 0;
    } report;
    auto setError = [](void* ctx, const char* kind, const char* message) {
      auto* r = static_cast<Report*>(ctx);
      r->kind = kind;
      r->message = message;
      ++r->calls;
    };
    DLManagedTensorVersioned* tensor = nullptr;
    const int status = exchangeApiIn(capsule)->managed_tensor_allocator(&prototype, &tensor, &report, setError);
    if (status != 0) {
      if (report.calls != 1) throw nb::value_error("the allocator failed without exactly one error report");
      return nb::object(nb::make_tuple(report.kind, report.message));
    }
    return ownedCapsule(tensor);
  }, nb::arg("capsule"), nb::arg("shape"), nb::arg("code"), nb::arg("bits"), nb::arg("device_type"),
        nb::arg("device_id"),
        "Calls managed_tensor_allocator: a \"dltensor_versioned\" capsule, or (kind, message) from its error report.");

  m.def("fake_exchange_api", [](std::string name, unsigned major, unsigned minor, bool nullFromPy, bool nullStream,
                                std::optional<std::vector<unsigned>> prevVersion) {
    auto make = [&](unsigned maj, unsigned min) {
      auto* api = new DLPackExchangeAPI(dlpackExchangeApi());
      api->header.version = DLPackVersion{maj, min};
      api->header.prev_api = nullptr;
      api->managed_tensor_from_py_object_no_sync = nullFromPy ? nullptr : &fakeFromPyObject;
      api->current_work_stream = nullStream ? nullptr : &fakeCurrentWorkStream;
      return api;
    };
    DLPackExchangeAPI* api = make(major, minor);
    if (prevVersion) {
      if (prevVersion->size() != 2) {
        delete api;
        throw nb::value_error("prev_version must be [major, minor]");
      }
      api->header.prev_api = &make((*prevVersion)[0], (*prevVersion)[1])->header;
    }
    // Capsules keep a pointer to their name: the names stay (a deque never moves them).
    static std::deque<std::string> names;
    names.push_back(name);
    PyObject* capsule = PyCapsule_New(api, names.back().c_str(), &deleteFakeTable);
    if (capsule == nullptr) throw nb::python_error();
    return nb::steal(capsule);
  }, nb::arg("name") = "dlpack_exchange_api", nb::arg("major") = 1, nb::arg("minor") = 3,
        nb::arg("null_from_py_object") = false, nb::arg("null_current_work_stream") = false,
        nb::arg("prev_version") = nb::none(),
        "A fake exchange API capsule whose from_py_object exports `obj.array` through devicearray's own table "
        "(with counted deleter calls) and whose current_work_stream delegates to devicearray's; "
        "set_fake_exchange makes them fail.");

  m.def("set_fake_exchange", [](std::string fromPy, std::string stream) {
    gFake.fromPy = std::move(fromPy);
    gFake.stream = std::move(stream);
    gFake.fromPyCalls = gFake.streamCalls = 0;
    gFake.lastStreamDevice.clear();
  }, nb::arg("from_py_object") = "ok", nb::arg("current_work_stream") = "ok",
        "Behaviour of the fake table's functions (ok | error | silent_error | no_tensor | error_with_tensor; "
        "ok | error | silent_error) and resets its call counts.");

  m.def("fake_exchange_calls", [] {
    nb::dict d;
    d["from_py_object"] = gFake.fromPyCalls;
    d["current_work_stream"] = gFake.streamCalls;
    d["stream_device"] = gFake.lastStreamDevice.empty()
                             ? nb::none()
                             : nb::object(nb::make_tuple(gFake.lastStreamDevice[0], gFake.lastStreamDevice[1]));
    return d;
  }, "Calls of the fake table's functions since set_fake_exchange, and the device of the last stream query.");

  m.def("set_flags", [](nb::handle capsule, std::uint64_t flags) {
    bool versioned = false;
    void* p = unconsumedTensor(capsule, versioned);
    if (!versioned) throw nb::value_error("a legacy capsule has no flags");
    static_cast<DLManagedTensorVersioned*>(p)->flags = flags;
  }, nb::arg("capsule"), nb::arg("flags"), "Overwrites a versioned tensor's flags.");
}

}  // namespace devicearray::python
