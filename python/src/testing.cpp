// devicearray._testing: C-level probes of DLPack capsules for the test suite
// (capsule names, tensor fields, counting deleter calls). Not public API.
#include <nanobind/nanobind.h>
#include <nanobind/stl/string.h>

#include <atomic>
#include <cstdint>
#include <string>

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
    auto* ctx = new CountingContext();
    if (versioned) {
      auto* v = static_cast<DLManagedTensorVersioned*>(p);
      ctx->managerCtx = v->manager_ctx;
      ctx->versionedDeleter = v->deleter;
      v->manager_ctx = ctx;
      v->deleter = &countingVersionedDeleter;
    } else {
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

  m.def("set_flags", [](nb::handle capsule, std::uint64_t flags) {
    bool versioned = false;
    void* p = unconsumedTensor(capsule, versioned);
    if (!versioned) throw nb::value_error("a legacy capsule has no flags");
    static_cast<DLManagedTensorVersioned*>(p)->flags = flags;
  }, nb::arg("capsule"), nb::arg("flags"), "Overwrites a versioned tensor's flags.");
}

}  // namespace devicearray::python
