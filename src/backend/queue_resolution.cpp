// StreamOrQueue -> queue of a device, for every public call that takes a stream.
#include <string>

#include "backend/backend.hpp"

namespace devicearray::detail {

std::shared_ptr<QueueImpl> DeviceImpl::queueFor(const StreamOrQueue& sq, const char* fn) {
  if (sq.backend() != backend())
    fail(ErrorCode::InvalidArgument, std::string(fn) + ": a " + toString(sq.backend()) +
                                         " stream/queue cannot order work on " +
                                         ComputeDevice(shared_from_this()).toString());
  const std::shared_ptr<QueueImpl>& sdk = libraryQueue();
  void* native = sq.native();
  if (native == sdk->native() || (backend() == ComputeBackend::opencl && native == nullptr)) return sdk;
  return wrapQueue(native);
}

}  // namespace devicearray::detail
