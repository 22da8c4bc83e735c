// Host objects that enqueued work still reads or writes.
//
// A stream upload from a numpy array, or a stream download into one, returns
// before the copy has run; if the array (often a temporary the binding packed) were
// freed on return, the copy would read or write freed memory. Each such object is
// held here with an event recorded after the copy and dropped once the event has
// completed; at interpreter exit every held copy is waited for before Python frees
// the objects (the module registers waitForHeldHostObjects with atexit).
#include <nanobind/nanobind.h>

#include <cstdint>
#include <utility>
#include <vector>

#include "common.hpp"

namespace devicearray::python {

namespace {

struct HeldHostObject {
  Event done;
  void* queue;        ///< the native stream / queue `done` was recorded on
  std::uint64_t mark; ///< heldHostObjectMark() when it was held
  nb::object host;
};

/// Guarded by the GIL.
std::uint64_t& nextMark() {
  static std::uint64_t mark = 0;
  return mark;
}

/// Guarded by the GIL. Never destroyed: the entries hold Python references, which
/// must not be dropped after the interpreter is gone (atexit empties it first).
std::vector<HeldHostObject>& heldObjects() {
  static auto* held = new std::vector<HeldHostObject>();
  return *held;
}

}  // namespace

std::uint64_t heldHostObjectMark() { return nextMark(); }

void releaseCompletedHostObjects(void* finishedQueue, std::uint64_t heldBefore) {
  // CUDA's special handles (0: the legacy default stream, 1: cudaStreamLegacy, 2:
  // cudaStreamPerThread) name a different stream per device or thread: not an identity.
  if (reinterpret_cast<std::uintptr_t>(finishedQueue) <= 2) finishedQueue = nullptr;
  std::vector<HeldHostObject>& held = heldObjects();
  std::erase_if(held, [finishedQueue, heldBefore](const HeldHostObject& h) {
    // The host has just waited for everything enqueued on finishedQueue before its
    // wait began: those events are done, even where a driver reports an event's
    // completion only a moment later (NVIDIA's OpenCL updates event status from a
    // polling thread). Objects held since (another thread, while the GIL was released
    // for the wait) may belong to work the wait did not cover.
    if (finishedQueue != nullptr && h.queue == finishedQueue && h.mark < heldBefore) return true;
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
  heldObjects().push_back(HeldHostObject{std::move(done), stream.handle().native(), nextMark()++, std::move(host)});
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
