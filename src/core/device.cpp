// ComputeDevice, Stream, Event and synchronizeStream: thin handles over the
// backend objects of src/backend/backend.hpp.
#include <cstdlib>
#include <string>
#include <utility>

#include "backend/backend.hpp"
#include "backend/backend_registry.hpp"
#include "devicearray/device.hpp"
#include "devicearray/stream.hpp"

namespace devicearray {

using detail::fail;

namespace {

const detail::DeviceImpl& checked(const std::shared_ptr<detail::DeviceImpl>& impl, const char* fn) {
  if (!impl) fail(ErrorCode::InvalidState, std::string(fn) + ": invalid ComputeDevice (default-constructed handle)");
  return *impl;
}

/// The device, for calls that reach its driver (refused in a forked child).
detail::DeviceImpl& mut(const std::shared_ptr<detail::DeviceImpl>& impl, const char* fn) {
  checked(impl, fn);
  detail::requireNotForked(fn);
  return *impl;
}

/// Device `index` of `kind` for ComputeDevice::cuda / ::opencl (`fn`), whose argument
/// is called `indexName` in messages.
ComputeDevice deviceOf(ComputeBackend kind, int index, const char* fn, const char* indexName) {
  detail::requireNotForked(fn);
  const detail::Backend& backend = detail::backendOf(kind);
  const auto devices = backend.devices();
  if (devices.empty())
    fail(ErrorCode::BackendUnavailable, std::string(fn) + ": no " + backend.name() + " device: " +
                                            backend.unavailableReason());
  if (index < 0 || static_cast<std::size_t>(index) >= devices.size())
    fail(ErrorCode::OutOfRange, std::string(fn) + ": " + indexName + " " + std::to_string(index) +
                                    " is outside [0, " + std::to_string(devices.size()) + ")");
  return ComputeDevice(devices[static_cast<std::size_t>(index)]);
}

int parseIndex(const char* name, const char* value) {
  char* end = nullptr;
  const long v = std::strtol(value, &end, 10);
  if (end == value || *end != '\0' || v < 0 || v > 1'000'000)
    fail(ErrorCode::InvalidArgument, std::string("ComputeDevice::defaultDevice: environment variable ") + name +
                                         "='" + value + "' is not a device index (expected 0, 1, ...)");
  return static_cast<int>(v);
}

}  // namespace

// ------------------------------------------------------------- ComputeDevice --

ComputeDevice::ComputeDevice() = default;
ComputeDevice::ComputeDevice(std::shared_ptr<detail::DeviceImpl> impl) : impl_(std::move(impl)) {}
const std::shared_ptr<detail::DeviceImpl>& ComputeDevice::impl() const { return impl_; }

std::vector<ComputeDevice> ComputeDevice::all() {
  detail::requireNotForked("ComputeDevice::all");
  std::vector<ComputeDevice> out;
  for (const detail::Backend* backend : detail::backends())
    for (auto& d : backend->devices()) out.emplace_back(std::move(d));
  return out;
}

ComputeDevice ComputeDevice::cuda(int ordinal) {
  return deviceOf(ComputeBackend::cuda, ordinal, "ComputeDevice::cuda", "ordinal");
}

ComputeDevice ComputeDevice::opencl(int index) {
  return deviceOf(ComputeBackend::opencl, index, "ComputeDevice::opencl", "index");
}

ComputeDevice ComputeDevice::defaultDevice() {
  detail::requireNotForked("ComputeDevice::defaultDevice");
  const char* backend = std::getenv("DEVICEARRAY_BACKEND");
  const char* device = std::getenv("DEVICEARRAY_DEVICE");
  const int index = (device != nullptr && *device != '\0') ? parseIndex("DEVICEARRAY_DEVICE", device) : -1;
  if (backend != nullptr && *backend != '\0') {
    const std::string b = backend;
    if (b == "cuda") return cuda(index < 0 ? 0 : index);
    if (b == "opencl") return opencl(index < 0 ? 0 : index);
    fail(ErrorCode::InvalidArgument, "ComputeDevice::defaultDevice: DEVICEARRAY_BACKEND='" + b +
                                         "' is not a backend (expected 'cuda' or 'opencl')");
  }
  const auto devices = all();
  if (index >= 0) {
    if (static_cast<std::size_t>(index) >= devices.size())
      fail(ErrorCode::OutOfRange, "ComputeDevice::defaultDevice: DEVICEARRAY_DEVICE=" + std::to_string(index) +
                                      " but only " + std::to_string(devices.size()) + " devices exist");
    return devices[static_cast<std::size_t>(index)];
  }
  // all() lists CUDA devices first, then OpenCL GPUs, then other OpenCL devices.
  if (devices.empty()) {
    std::string message = "ComputeDevice::defaultDevice: no usable device";
    for (const detail::Backend* b : detail::backends())
      message += std::string(". ") + b->name() + ": " + b->unavailableReason();
    fail(ErrorCode::BackendUnavailable,
         message + ". Install an NVIDIA driver, or an OpenCL runtime such as pocl-opencl-icd.");
  }
  return devices.front();
}

ComputeDevice ComputeDevice::fromOpenCL(void* clContext, void* clDevice, void* clCommandQueue) {
  detail::requireNotForked("ComputeDevice::fromOpenCL");
  if (clContext == nullptr || clDevice == nullptr || clCommandQueue == nullptr)
    fail(ErrorCode::InvalidArgument, "ComputeDevice::fromOpenCL: context, device and command queue must be non-null");
  return ComputeDevice(detail::backendOf(ComputeBackend::opencl).adoptNative(clContext, clDevice, clCommandQueue));
}

ComputeBackend ComputeDevice::backend() const { return checked(impl_, "ComputeDevice::backend").backend(); }
int ComputeDevice::ordinal() const { return checked(impl_, "ComputeDevice::ordinal").ordinal(); }
std::string ComputeDevice::model() const { return checked(impl_, "ComputeDevice::model").model(); }
std::string ComputeDevice::vendor() const { return checked(impl_, "ComputeDevice::vendor").vendor(); }

std::string ComputeDevice::toString() const {
  if (!impl_) return "<invalid device>";
  const std::string index = impl_->ordinal() < 0 ? std::string("adopted") : std::to_string(impl_->ordinal());
  std::string s = std::string(devicearray::toString(impl_->backend())) + ":" + index + " (" + impl_->model();
  if (impl_->backend() == ComputeBackend::opencl) s += " / " + impl_->vendor();
  return s + ")";
}

void* ComputeDevice::nativeContext() const { return mut(impl_, "ComputeDevice::nativeContext").nativeContext(); }
void* ComputeDevice::nativeDevice() const { return mut(impl_, "ComputeDevice::nativeDevice").nativeDevice(); }
void* ComputeDevice::nativeStreamHandle() const {
  return mut(impl_, "ComputeDevice::nativeStreamHandle").libraryQueue()->native();
}

StreamOrQueue ComputeDevice::sdkStreamOrQueue() const {
  void* h = nativeStreamHandle();
  if (impl_->backend() == ComputeBackend::cuda) return CUDAStreamPtr{h};
  return OpenCLCommandQueuePtr{h};
}

std::size_t ComputeDevice::totalMemory() const { return mut(impl_, "ComputeDevice::totalMemory").totalMemory(); }
std::size_t ComputeDevice::freeMemory() const { return mut(impl_, "ComputeDevice::freeMemory").freeMemory(); }

void synchronizeStream(const StreamOrQueue& sq) {
  detail::requireNotForked("synchronizeStream");
  detail::backendOf(sq.backend()).synchronizeNative(sq.native());
}

// -------------------------------------------------------------------- Stream --

Stream::Stream() : Stream(ComputeDevice::defaultDevice()) {}

Stream::Stream(const ComputeDevice& device) : impl_(mut(device.impl(), "Stream::Stream").createQueue()) {}

Stream::Stream(std::shared_ptr<detail::QueueImpl> impl) : impl_(std::move(impl)) {}

Stream Stream::wrap(const ComputeDevice& device, StreamOrQueue sq) {
  return Stream(mut(device.impl(), "Stream::wrap").queueFor(sq, "Stream::wrap"));
}

bool Stream::queryIfComplete() const {
  detail::requireNotForked("Stream::queryIfComplete");
  return impl_->query();
}

void Stream::waitForCompletion() {
  detail::requireNotForked("Stream::waitForCompletion");
  impl_->synchronize();
}

void Stream::waitEvent(const Event& event) {
  detail::requireNotForked("Stream::waitEvent");
  if (!event.impl()) return;  // never recorded: nothing to wait for
  impl_->waitEvent(*event.impl());
}

StreamOrQueue Stream::handle() const {
  if (impl_->device()->backend() == ComputeBackend::cuda) return CUDAStreamPtr{impl_->native()};
  return OpenCLCommandQueuePtr{impl_->native()};
}

ComputeDevice Stream::device() const { return ComputeDevice(impl_->device()); }

// --------------------------------------------------------------------- Event --

Event::Event(const ComputeDevice& device) : device_(device) { checked(device.impl(), "Event::Event"); }

void Event::record(const Stream& stream) {
  detail::requireNotForked("Event::record");
  if (stream.impl()->device() != device_.impl())
    fail(ErrorCode::InvalidArgument, "Event::record: the stream is on " + stream.device().toString() +
                                         " but the event belongs to " + device_.toString());
  impl_ = device_.impl()->recordTimingEvent(*stream.impl());
}

bool Event::queryIfComplete() const {
  detail::requireNotForked("Event::queryIfComplete");
  return !impl_ || impl_->query();
}

void Event::waitForCompletion() {
  detail::requireNotForked("Event::waitForCompletion");
  if (impl_) impl_->synchronize();
}

float Event::elapsedTime(const Event& start, const Event& end) {
  detail::requireNotForked("Event::elapsedTime");
  if (!start.impl_ || !end.impl_)
    fail(ErrorCode::InvalidState, "Event::elapsedTime: both events must have been recorded");
  if (start.device_ != end.device_)
    fail(ErrorCode::InvalidArgument, "Event::elapsedTime: the events belong to different devices");
  return start.impl_->elapsedMs(*end.impl_);
}

}  // namespace devicearray
