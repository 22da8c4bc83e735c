// Registries of backends this build was configured without: they contribute no
// devices, and say why, so ComputeDevice::defaultDevice() can explain itself.
#include "backend/backend.hpp"

namespace devicearray::detail {

#ifndef DEVICEARRAY_HAS_CUDA
std::vector<std::shared_ptr<DeviceImpl>> cudaDevices() { return {}; }
std::string cudaUnavailableReason() { return "this build of devicearray has no CUDA backend (DEVICEARRAY_WITH_CUDA=OFF)"; }
void* allocatePinnedHost(std::size_t) { return nullptr; }
void freePinnedHost(void*) noexcept {}
void cudaSynchronizeNative(void*) {
  fail(ErrorCode::BackendUnavailable, "synchronizeStream: this build of devicearray has no CUDA backend");
}
#endif

#ifndef DEVICEARRAY_HAS_OPENCL
std::vector<std::shared_ptr<DeviceImpl>> openclDevices() { return {}; }
std::string openclUnavailableReason() {
  return "this build of devicearray has no OpenCL backend (DEVICEARRAY_WITH_OPENCL=OFF)";
}
void openclFinishNative(void*) {
  fail(ErrorCode::BackendUnavailable, "synchronizeStream: this build of devicearray has no OpenCL backend");
}
std::shared_ptr<DeviceImpl> openclAdopt(void*, void*, void*) {
  fail(ErrorCode::BackendUnavailable,
       "ComputeDevice::fromOpenCL: this build of devicearray has no OpenCL backend (DEVICEARRAY_WITH_OPENCL=OFF)");
}
#endif

}  // namespace devicearray::detail
