// The CUDA Backend (backend/backend_registry.hpp): the list of devices, built once and
// never destroyed, synchronizing a raw stream, and page-locked host memory. A
// machine without a driver gets no devices and the runtime's reason, never an
// exception.
#include <algorithm>
#include <string>

#include "backend/backend_registry.hpp"
#include "cuda/cuda_device.hpp"

namespace devicearray::detail::cuda {
namespace {

DeviceList listCudaDevices() {
  DeviceList r;
  int count = 0;
  const cudaError_t err = cudaGetDeviceCount(&count);
  if (err != cudaSuccess) {
    (void)cudaGetLastError();
    const std::string name = cudaGetErrorName(err);
    if (err == cudaErrorInsufficientDriver)
      r.unavailableReason = "no CUDA driver, or the driver is older than the CUDA runtime (" + name + ")";
    else if (err == cudaErrorNoDevice)
      r.unavailableReason = "no CUDA device found (" + name + ")";
    else
      r.unavailableReason = "CUDA is not usable (" + name + ": " + cudaGetErrorString(err) + ")";
    return r;
  }
  noteBackendInitialised(ComputeBackend::cuda);
  if (count == 0) {
    r.unavailableReason = "no CUDA device found";
    return r;
  }
  for (int i = 0; i < count; ++i) {
    cudaDeviceProp prop{};
    if (cudaGetDeviceProperties(&prop, i) != cudaSuccess) {
      (void)cudaGetLastError();
      continue;
    }
    r.devices.push_back(std::make_shared<CudaDevice>(i, prop));
  }
  if (r.devices.empty()) r.unavailableReason = "no CUDA device could be queried";
  return r;
}

class CudaBackend final : public Backend {
 public:
  ComputeBackend kind() const override { return ComputeBackend::cuda; }

  void synchronizeNative(void* stream) const override {
    const cudaError_t err = cudaStreamSynchronize(static_cast<cudaStream_t>(stream));
    if (err != cudaSuccess)
      fail(ErrorCode::BackendError, std::string("synchronizeStream: cudaStreamSynchronize: ") + cudaGetErrorName(err) +
                                        ": " + cudaGetErrorString(err));
  }

  std::shared_ptr<DeviceImpl> adoptNative(void*, void*, void*) const override {
    fail(ErrorCode::Unsupported,
         "ComputeDevice::fromOpenCL: CUDA devices are not adopted from native handles: every CUDA device is its "
         "primary context, which ComputeDevice::cuda already uses");
  }

  void* allocatePinnedHost(std::size_t bytes) const override {
    if (devices().empty()) return nullptr;
    requireNotForked("page-locked host allocation");
    void* p = nullptr;
    const cudaError_t err = cudaHostAlloc(&p, std::max<std::size_t>(bytes, 1), cudaHostAllocPortable);
    if (err == cudaErrorMemoryAllocation) {
      (void)cudaGetLastError();
      fail(ErrorCode::OutOfMemory, "HostMat::pinned: cannot allocate " + std::to_string(bytes) +
                                       " bytes of page-locked host memory");
    }
    check(err, "cudaHostAlloc");
    return p;
  }

  void freePinnedHost(void* p) const noexcept override {
    if (p == nullptr || forkedAfterInit()) return;  // in a forked child: the parent's page-locked memory, leaked
    if (cudaFreeHost(p) != cudaSuccess) (void)cudaGetLastError();
  }

 private:
  DeviceList listDevices() const override { return listCudaDevices(); }
};

}  // namespace

const Backend& backendObject() {
  // Leaked on purpose, with its devices: they must outlive every static object that may
  // hold an allocation, and the runtime's own teardown order at exit.
  static const Backend* const instance = new CudaBackend;
  return *instance;
}

}  // namespace devicearray::detail::cuda
