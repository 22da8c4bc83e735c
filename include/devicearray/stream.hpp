// devicearray — streams (CUDA) / command queues (OpenCL) and events.
#pragma once

#include <memory>

#include "devicearray/device.hpp"

namespace devicearray {

// The backend's queue and event objects: types of the library's own, declared here
// only so that Stream and Event can hold them by shared_ptr (pimpl); nothing of them
// is reachable through the public headers.
namespace detail { class QueueImpl; class EventImpl; }

class Event;

/// An owning stream/queue of the library, or a non-owning wrapper of a user's one.
/// Copies share the same underlying stream.
class Stream {
 public:
  /// A new stream (CUDA, non-blocking) / in-order queue (OpenCL) on defaultDevice().
  Stream();
  /// A new stream / queue on `device`.
  explicit Stream(const ComputeDevice& device);
  /// Non-owning wrapper of the user's cudaStream_t (nullptr = legacy default stream,
  /// cudaStreamPerThread allowed) or cl_command_queue (must belong to `device`'s context).
  static Stream wrap(const ComputeDevice& device, StreamOrQueue sq);

  /// True when all work enqueued so far has completed. Non-blocking.
  bool queryIfComplete() const;
  /// Blocks the host until all work enqueued so far has completed.
  void waitForCompletion();
  /// Makes later work on this stream wait for `event` (no host sync).
  void waitEvent(const Event& event);

  /// The native handle (cudaStream_t or cl_command_queue) as a StreamOrQueue.
  StreamOrQueue handle() const;
  /// handle(), so a Stream can be passed wherever a StreamOrQueue is taken.
  operator StreamOrQueue() const { return handle(); }  // NOLINT(google-explicit-constructor)
  /// The device the stream belongs to.
  ComputeDevice device() const;

  /// Internal: the backend object.
  const std::shared_ptr<detail::QueueImpl>& impl() const { return impl_; }
  /// Internal: wraps a backend queue object.
  explicit Stream(std::shared_ptr<detail::QueueImpl> impl);

 private:
  std::shared_ptr<detail::QueueImpl> impl_;
};

/// A marker in a stream (cudaEvent_t with timing / cl_event of a marker).
class Event {
 public:
  /// An unrecorded event of `device` (recorded by record()). Throws InvalidState for an
  /// invalid device handle.
  explicit Event(const ComputeDevice& device);
  /// Captures the work enqueued on `stream` so far. Non-blocking.
  void record(const Stream& stream);
  /// True when the recorded work is complete (true if never recorded).
  bool queryIfComplete() const;
  /// Blocks the host until the recorded work is complete.
  void waitForCompletion();
  /// Milliseconds between two recorded events; both must be complete-able on one device.
  static float elapsedTime(const Event& start, const Event& end);

  /// Internal: the backend object (null until recorded).
  const std::shared_ptr<detail::EventImpl>& impl() const { return impl_; }

 private:
  ComputeDevice device_;
  std::shared_ptr<detail::EventImpl> impl_;
};

}  // namespace devicearray
