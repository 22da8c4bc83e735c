// Events and in-order command queues of the OpenCL backend, and the device's
// queue factory: queues it creates (with profiling, so Event timing works) and
// retained wrappers of a caller's queues.
#include "opencl/opencl_queue.hpp"

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <string>
#include <thread>

#include "opencl/cl_error.hpp"
#include "opencl/opencl_device.hpp"
#include "opencl/opencl_info.hpp"

namespace devicearray::detail::opencl {

// ---------------------------------------------------------------- events ----

OpenCLEvent::~OpenCLEvent() {
  if (!forkedAfterInit()) clReleaseEvent(event_);  // leaked in a forked child (no driver calls there)
}

bool OpenCLEvent::finished() const noexcept {
  cl_int status = CL_COMPLETE;
  if (clGetEventInfo(event_, CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof status, &status, nullptr) != CL_SUCCESS)
    return true;
  return status <= CL_COMPLETE;
}

bool OpenCLEvent::query() {
  cl_int status = CL_COMPLETE;
  checkCl(clGetEventInfo(event_, CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof status, &status, nullptr),
          "Event::query: clGetEventInfo");
  if (status < 0)
    fail(ErrorCode::BackendError,
         "Event::query: the recorded OpenCL work failed: " + std::string(clErrorName(status)) + " (" +
             std::to_string(status) + ")");
  return status == CL_COMPLETE;
}

void OpenCLEvent::synchronize() {
  const cl_int err = clWaitForEvents(1, &event_);
  if (err == CL_EXEC_STATUS_ERROR_FOR_EVENTS_IN_WAIT_LIST) {
    cl_int status = 0;
    clGetEventInfo(event_, CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof status, &status, nullptr);
    fail(ErrorCode::BackendError, "Event::waitForCompletion: the recorded OpenCL work failed: " +
                                      std::string(clErrorName(status)) + " (" + std::to_string(status) + ")");
  }
  checkCl(err, "Event::waitForCompletion: clWaitForEvents");
}

float OpenCLEvent::doElapsedMs(EventImpl& later) {
  auto* end = static_cast<OpenCLEvent*>(&later);
  if (!profiled_ || !end->profiled_)
    fail(ErrorCode::Unsupported,
         "Event::elapsedTime: an event was recorded on an OpenCL queue created without "
         "CL_QUEUE_PROFILING_ENABLE, so it carries no timestamps");
  cl_context a = nullptr, b = nullptr;
  checkCl(clGetEventInfo(event_, CL_EVENT_CONTEXT, sizeof a, &a, nullptr), "Event::elapsedTime: clGetEventInfo");
  checkCl(clGetEventInfo(end->event_, CL_EVENT_CONTEXT, sizeof b, &b, nullptr), "Event::elapsedTime: clGetEventInfo");
  if (a != b)
    fail(ErrorCode::InvalidArgument,
         "Event::elapsedTime: the two events belong to different OpenCL contexts (different devices)");
  synchronize();
  end->synchronize();
  cl_ulong t0 = 0, t1 = 0;
  cl_int err = clGetEventProfilingInfo(event_, CL_PROFILING_COMMAND_END, sizeof t0, &t0, nullptr);
  if (err == CL_SUCCESS) err = clGetEventProfilingInfo(end->event_, CL_PROFILING_COMMAND_END, sizeof t1, &t1, nullptr);
  if (err == CL_PROFILING_INFO_NOT_AVAILABLE)
    fail(ErrorCode::Unsupported, "Event::elapsedTime: this OpenCL driver gives no timestamps for markers (" +
                                     clErrorMessage("clGetEventProfilingInfo", err) + ")");
  checkCl(err, "Event::elapsedTime: clGetEventProfilingInfo");
  const double ns = t1 >= t0 ? static_cast<double>(t1 - t0) : -static_cast<double>(t0 - t1);
  return static_cast<float>(ns * 1e-6);
}

// ---------------------------------------------------------------- queues ----

OpenCLQueue::~OpenCLQueue() {
  if (!forkedAfterInit()) clReleaseCommandQueue(queue());  // leaked in a forked child
}

void OpenCLQueue::synchronize() { checkCl(clFinish(queue()), "Stream::waitForCompletion: clFinish"); }

bool OpenCLQueue::query() {
  // OpenCL has no "is this queue idle" call: a marker completes when everything
  // before it has, but drivers retire even a marker on an idle queue only after a
  // moment (NVIDIA's updates event status from a polling thread: over a
  // millisecond). So poll the marker for a bounded time, backing off, and report
  // "busy" only past that bound: a queue with work still running stays busy longer.
  const auto marker = recordEvent();
  const auto start = std::chrono::steady_clock::now();
  const auto deadline = start + std::chrono::milliseconds(20);
  for (auto pause = std::chrono::microseconds(1); !marker->query();) {
    const auto now = std::chrono::steady_clock::now();
    if (now >= deadline) return false;
    if (now - start < std::chrono::microseconds(100)) {
      std::this_thread::yield();
    } else {
      std::this_thread::sleep_for(pause);
      pause = std::min(pause * 2, std::chrono::microseconds(1000));
    }
  }
  return true;
}

std::shared_ptr<EventImpl> OpenCLQueue::wrapEvent(cl_event event) const {
  try {
    return std::make_shared<OpenCLEvent>(event, queue(), profiled_);
  } catch (...) {
    clReleaseEvent(event);
    throw;
  }
}

std::shared_ptr<EventImpl> OpenCLQueue::recordEvent(bool /*timing*/) {
  // Every event of a profiling queue carries timestamps; without profiling the
  // event still orders work and elapsedMs reports Unsupported.
  cl_event event = nullptr;
  checkCl(clEnqueueMarkerWithWaitList(queue(), 0, nullptr, &event), "recordEvent: clEnqueueMarkerWithWaitList");
  auto result = wrapEvent(event);
  // Submit now: another queue, or a host thread polling query(), may wait on it.
  checkCl(clFlush(queue()), "recordEvent: clFlush");
  return result;
}

void OpenCLQueue::doWaitEvent(EventImpl& e) {
  auto* event = static_cast<OpenCLEvent*>(&e);
  if (event->queueKey() == queue()) return;  // in-order queue: already ordered
  cl_context ctx = nullptr;
  checkCl(clGetEventInfo(event->native(), CL_EVENT_CONTEXT, sizeof ctx, &ctx, nullptr),
          "Stream::waitEvent: clGetEventInfo");
  if (ctx != device()->nativeContext())
    fail(ErrorCode::InvalidArgument,
         "Stream::waitEvent: the event belongs to another OpenCL context than the queue (a queue can only wait "
         "for events of its own context)");
  cl_event native = event->native();
  // Finished work needs no wait: a barrier is a command the queue would still have to
  // process. A failed command is waited for, so the queue reports its error.
  cl_int status = CL_QUEUED;
  if (clGetEventInfo(native, CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof status, &status, nullptr) == CL_SUCCESS &&
      status == CL_COMPLETE)
    return;
  checkCl(clEnqueueBarrierWithWaitList(queue(), 1, &native, nullptr), "Stream::waitEvent: clEnqueueBarrierWithWaitList");
}

// ------------------------------------------------------- device's queues ----

OpenCLQueue& OpenCLDevice::queueOf(QueueImpl& q, const char* fn) {
  if (q.device().get() != this)
    fail(ErrorCode::InvalidArgument, std::string(fn) + ": the queue belongs to " +
                                         (q.device() ? ComputeDevice(q.device()).toString() : "no device") +
                                         ", not to " + describe());
  return static_cast<OpenCLQueue&>(q);
}

std::shared_ptr<QueueImpl> OpenCLDevice::doCreateQueue() {
  cl_int err = CL_SUCCESS;
  cl_command_queue q = clCreateCommandQueue(context_, device_, CL_QUEUE_PROFILING_ENABLE, &err);
  checkCl(err, "Stream: clCreateCommandQueue");
  try {
    return std::make_shared<OpenCLQueue>(shared_from_this(), q, true);
  } catch (...) {
    clReleaseCommandQueue(q);
    throw;
  }
}

std::shared_ptr<QueueImpl> OpenCLDevice::doWrapQueue(void* native) {
  auto* sdk = static_cast<cl_command_queue>(libraryQueue_->native());
  cl_command_queue q = native == nullptr ? sdk : static_cast<cl_command_queue>(native);
  if (q == sdk && !adopted_) return libraryQueue_;
  if (q != sdk) {
    const std::string why = queueMismatch(q, context_, device_);
    if (!why.empty())
      fail(ErrorCode::InvalidArgument, "Stream::wrap: cannot use the cl_command_queue " +
                                           std::to_string(reinterpret_cast<std::uintptr_t>(q)) + " on " + describe() +
                                           ": " + why);
  }
  checkCl(clRetainCommandQueue(q), "Stream::wrap: clRetainCommandQueue");
  try {
    return std::make_shared<OpenCLQueue>(shared_from_this(), q, queueProfiled(q));
  } catch (...) {
    clReleaseCommandQueue(q);
    throw;
  }
}

std::shared_ptr<EventImpl> OpenCLDevice::doRecordTimingEvent(QueueImpl& q) {
  return queueOf(q, "Event::record").recordEvent(true);
}

}  // namespace devicearray::detail::opencl
