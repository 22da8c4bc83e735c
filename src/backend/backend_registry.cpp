// The list of backends: the built ones from their own directories, and a "not built"
// stand-in for a backend this build was configured without.
#include "backend/backend_registry.hpp"

#include <array>
#include <string>

namespace devicearray::detail {

// Each built backend defines its object in its own directory.
#if defined(DEVICEARRAY_HAS_CUDA)
namespace cuda {
const Backend& backendObject();
}
#endif
#if defined(DEVICEARRAY_HAS_OPENCL)
namespace opencl {
const Backend& backendObject();
}
#endif

namespace {

/// A backend this build was configured without: no devices, and every call that
/// needs the backend fails with BackendUnavailable.
class NotBuiltBackend final : public Backend {
 public:
  NotBuiltBackend(ComputeBackend kind, const char* option) : kind_(kind), option_(option) {}

  ComputeBackend kind() const override { return kind_; }
  void synchronizeNative(void*) const override {
    fail(ErrorCode::BackendUnavailable,
         std::string("synchronizeStream: this build of devicearray has no ") + name() + " backend");
  }
  std::shared_ptr<DeviceImpl> adoptNative(void*, void*, void*) const override {
    fail(ErrorCode::BackendUnavailable, "ComputeDevice::fromOpenCL: " + unavailableReason());
  }

 private:
  DeviceList listDevices() const override {
    return {{}, std::string("this build of devicearray has no ") + name() + " backend (" + option_ + "=OFF)"};
  }

  ComputeBackend kind_;
  std::string option_;
};

}  // namespace

const DeviceList& Backend::deviceList() const {
  std::call_once(listed_, [this] { list_ = std::make_unique<const DeviceList>(listDevices()); });
  return *list_;
}

std::vector<std::shared_ptr<DeviceImpl>> Backend::devices() const {
  const DeviceList& list = deviceList();
  try {
    return list.devices;
  } catch (...) {  // copying the list cannot fail in practice; never throw here
    return {};
  }
}

std::string Backend::unavailableReason() const {
  try {
    return deviceList().unavailableReason;
  } catch (...) {
    return std::string("the ") + name() + " device list could not be built";
  }
}

std::span<const Backend* const> backends() {
  static const std::array<const Backend*, 2> all = {
#if defined(DEVICEARRAY_HAS_CUDA)
      &cuda::backendObject(),
#else
      new NotBuiltBackend(ComputeBackend::cuda, "DEVICEARRAY_WITH_CUDA"),
#endif
#if defined(DEVICEARRAY_HAS_OPENCL)
      &opencl::backendObject(),
#else
      new NotBuiltBackend(ComputeBackend::opencl, "DEVICEARRAY_WITH_OPENCL"),
#endif
  };
  return all;
}

const Backend& backendOf(ComputeBackend kind) {
  for (const Backend* b : backends())
    if (b->kind() == kind) return *b;
  fail(ErrorCode::InvalidArgument, std::string("backendOf: unknown backend ") + toString(kind));
}

std::shared_ptr<void> allocatePinnedHostBuffer(std::size_t bytes) {
  for (const Backend* b : backends())
    if (void* p = b->allocatePinnedHost(bytes)) return std::shared_ptr<void>(p, [b](void* q) { b->freePinnedHost(q); });
  return nullptr;
}

}  // namespace devicearray::detail
