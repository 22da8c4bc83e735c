// The backends of this build as objects, so that the core lists devices, explains a
// missing backend, synchronizes a raw handle and adopts native objects without naming
// CUDA or OpenCL. Each backend implements Backend in its own directory (src/cuda/,
// src/opencl/); a backend this build was configured without is a "not built" Backend
// that has no devices and says why.
#pragma once

#include <cstddef>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <vector>

#include "backend/backend.hpp"

namespace devicearray::detail {

/// What a backend found when it listed its devices.
struct DeviceList {
  std::vector<std::shared_ptr<DeviceImpl>> devices;
  std::string unavailableReason;  ///< why `devices` is empty ("" when it is not)
};

/// One compute backend of the process. The objects are created on first use and never
/// destroyed (devices may be used from static destructors), and are thread-safe.
class Backend {
 public:
  Backend() = default;
  Backend(const Backend&) = delete;
  Backend& operator=(const Backend&) = delete;
  virtual ~Backend() = default;

  virtual ComputeBackend kind() const = 0;
  /// "CUDA" or "OpenCL", for messages.
  const char* name() const { return kind() == ComputeBackend::cuda ? "CUDA" : "OpenCL"; }
  /// The backend's devices in ordinal order, listed once, on the first call of this or
  /// unavailableReason(). Empty, never an exception, when the backend is not built or
  /// has no driver or no usable device.
  std::vector<std::shared_ptr<DeviceImpl>> devices() const;
  /// Why devices() is empty, for messages ("" when it is not).
  std::string unavailableReason() const;
  /// synchronizeStream(): blocks until the work enqueued so far on `queue`, a raw handle
  /// of any device of this backend (cudaStream_t / cl_command_queue), is complete.
  virtual void synchronizeNative(void* queue) const = 0;
  /// ComputeDevice::fromOpenCL (the public entry that adopts native handles, named by
  /// the messages): a device made of the caller's context, device and queue. A backend
  /// whose devices cannot be adopted refuses with Unsupported.
  virtual std::shared_ptr<DeviceImpl> adoptNative(void* context, void* device, void* queue) const = 0;
  /// Page-locked host memory of at least `bytes`, to be released with freePinnedHost;
  /// nullptr when the backend has none to give (no such memory, or no device).
  virtual void* allocatePinnedHost(std::size_t bytes) const {
    (void)bytes;
    return nullptr;
  }
  virtual void freePinnedHost(void* p) const noexcept { (void)p; }

 private:
  /// Lists the devices (called once). A missing driver or device is a reason in the
  /// list, not an exception.
  virtual DeviceList listDevices() const = 0;
  const DeviceList& deviceList() const;

  mutable std::once_flag listed_;
  mutable std::unique_ptr<const DeviceList> list_;  // set once, under listed_
};

/// Every backend of the library, built or not: CUDA first, then OpenCL (the order of
/// ComputeDevice::all()).
std::span<const Backend* const> backends();
/// The backend of `kind`.
const Backend& backendOf(ComputeBackend kind);
/// Page-locked host memory from the first backend that has some, given back to it when
/// the last owner drops the pointer; null when no backend has any.
std::shared_ptr<void> allocatePinnedHostBuffer(std::size_t bytes);

}  // namespace devicearray::detail
