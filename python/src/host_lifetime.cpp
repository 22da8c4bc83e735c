// Host objects that enqueued work still reads or writes.
//
// A stream upload from a numpy array, or a stream download into one, returns
// before the copy has run; if the array (often a temporary the binding packed) were
// freed on return, the copy would read or write freed memory. Each such object is
// held here with an event recorded after the copy and dropped once the event has
// completed; at interpreter exit every held copy is waited for before Python frees
// the objects (the module registers waitForHeldHostObjects with atexit).
#include <nanobind/nanobind.h>

#include <utility>
#include <vector>

#include "common.hpp"

namespace devicearray::python {

namespace {

struct HeldHostObject {
  Event done;
  void* queue;  ///< the native stream / queue `done` was recorded on
  nb::object host;
};

/// Guarded by the GIL. Never destroyed: the entries hold Python references, which
/// must not be dropped after the interpreter is gone (atexit empties it first).
std::vector<HeldHostObject>& heldObjects() {
  static auto* held = new std::vector<HeldHostObject>();
  return *held;
}

}  // namespace

void releaseCompletedHostObjects(void* finishedQueue) {
  std::vector<HeldHostObject>& held = heldObjects();
  std::erase_if(held, [finishedQueue](const HeldHostObject& h) {
    // The host has just waited for everything on finishedQueue: its events are done,
    // even where a driver reports an event's completion only a moment later (NVIDIA's
    // OpenCL updates event status from a polling thread).
    if (finishedQueue != nullptr && h.queue == finishedQueue) return true;
    try {
      return h.done.queryIfComplete();
    } catch (const Error&) {
      return true;  // a failed queue runs none of its remaining work
    }
  });
}

void holdUntilComplete(const Stream& stream, nb::object host) {
  releaseCompletedHostObjects();
  Event done(stream.device());
  done.record(stream);
  heldObjects().push_back(HeldHostObject{std::move(done), stream.handle().native(), std::move(host)});
}

void waitForHeldHostObjects() {
  std::vector<HeldHostObject> held = std::move(heldObjects());
  heldObjects().clear();
  {
    nb::gil_scoped_release release;
    for (HeldHostObject& h : held) {
      try {
        h.done.waitForCompletion();
      } catch (const Error&) {
        // A failed queue has stopped running its work: nothing reads the memory.
      }
    }
  }
  held.clear();  // drops the references with the GIL held
}

}  // namespace devicearray::python
