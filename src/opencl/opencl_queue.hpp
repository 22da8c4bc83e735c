// Events and in-order command queues of the OpenCL backend (opencl_queue.cpp).
#pragma once

#include <CL/cl.h>

#include <memory>

#include "backend/backend.hpp"

namespace devicearray::detail::opencl {

/// A cl_event of a marker (or of any command), owned: released on destruction.
class OpenCLEvent final : public EventImpl {
 public:
  /// Takes over one reference of `event`. `queue` is only an identity (the event
  /// itself keeps the queue alive); `profiled` says whether the queue records timing.
  OpenCLEvent(cl_event event, cl_command_queue queue, bool profiled) noexcept
      : event_(event), queue_(queue), profiled_(profiled) {}
  OpenCLEvent(const OpenCLEvent&) = delete;
  OpenCLEvent& operator=(const OpenCLEvent&) = delete;
  ~OpenCLEvent() override;

  ComputeBackend backend() const override { return ComputeBackend::opencl; }
  bool query() override;
  void synchronize() override;
  const void* queueKey() const override { return queue_; }

  cl_event native() const { return event_; }
  /// True when the command finished, successfully or not (never throws).
  bool finished() const noexcept;

 private:
  float doElapsedMs(EventImpl& later) override;

  cl_event event_;
  cl_command_queue queue_;
  bool profiled_;
};

/// An in-order command queue: created by the library (owned) or a retained
/// wrapper of a caller's queue; both hold one reference, released on destruction.
class OpenCLQueue final : public QueueImpl {
 public:
  OpenCLQueue(std::shared_ptr<DeviceImpl> device, cl_command_queue queue, bool profiled) noexcept
      : QueueImpl(std::move(device), queue), profiled_(profiled) {}
  ~OpenCLQueue() override;

  void synchronize() override;
  bool query() override;
  std::shared_ptr<EventImpl> recordEvent(bool timing = false) override;

  cl_command_queue queue() const { return static_cast<cl_command_queue>(native()); }
  bool profiled() const { return profiled_; }
  /// Adopts `event` (one reference, produced by a command on this queue) as an EventImpl.
  std::shared_ptr<EventImpl> wrapEvent(cl_event event) const;

 private:
  void doWaitEvent(EventImpl& event) override;

  bool profiled_;
};

}  // namespace devicearray::detail::opencl
