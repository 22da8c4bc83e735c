// What every backend's events and queues share: an event only meets events and
// queues of the backend that recorded it.
#include <string>

#include "backend/backend.hpp"

namespace devicearray::detail {

float EventImpl::elapsedMs(EventImpl& later) {
  if (later.backend() != backend())
    fail(ErrorCode::InvalidArgument, std::string("Event::elapsedTime: the start event was recorded by the ") +
                                         toString(backend()) + " backend, the end event by the " +
                                         toString(later.backend()) + " backend");
  return doElapsedMs(later);
}

void QueueImpl::waitEvent(EventImpl& event) {
  const ComputeBackend backend = device_->backend();
  if (event.backend() != backend)
    fail(ErrorCode::InvalidArgument, std::string("Stream::waitEvent: the event was recorded by the ") +
                                         toString(event.backend()) + " backend; a " + toString(backend) +
                                         " stream/queue cannot wait for it");
  doWaitEvent(event);
}

}  // namespace devicearray::detail
