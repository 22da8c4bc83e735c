// A user event that OpenCL work of the tests waits on, completed by the host (or by a
// watchdog, see GateWatchdog in ordering_support.hpp, so that a library call that
// wrongly waits on the host for gated work fails a test instead of hanging it).
#pragma once

#include <CL/cl.h>

#include <chrono>

#include "ordering_support.hpp"

namespace datest::ordering {

/// A user event the host completes (see GateWatchdog).
class Gate {
 public:
  Gate(cl_context context, std::chrono::seconds limit = std::chrono::seconds(60)) {
    cl_int err = CL_SUCCESS;
    event_ = clCreateUserEvent(context, &err);
    if (err != CL_SUCCESS) event_ = nullptr;
    watchdog_.start(limit, [this] {
      if (event_ != nullptr) clSetUserEventStatus(event_, CL_COMPLETE);
    });
  }
  Gate(const Gate&) = delete;
  Gate& operator=(const Gate&) = delete;
  ~Gate() {
    watchdog_.stop();
    if (event_ != nullptr) clReleaseEvent(event_);
  }
  cl_event event() const { return event_; }
  /// Opens the gate; true when the watchdog had not already opened it (nothing blocked).
  bool open() { return watchdog_.open(); }

 private:
  cl_event event_ = nullptr;
  datest::ordering::GateWatchdog watchdog_;
};

}  // namespace datest::ordering
