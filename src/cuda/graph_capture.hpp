// Stream capture into CUDA graphs. A stream call on a stream that the caller is
// capturing (cudaStreamBeginCapture) becomes nodes of the caller's graph, which run
// only when the graph is launched, as often as it is launched. So:
//
// * What the library records during a capture is marked with it (StreamCapture). A
//   captured event is a dependency inside its graph and nothing outside it: a wait on it
//   from the same capture becomes a graph edge; anything else skips it, because the
//   caller orders the graph's launches against their own streams.
// * Work recorded outside the capture cannot be a dependency of the graph (a graph
//   cannot wait for an event recorded before it was built). A captured call that needs
//   such work waits for it on the host, once, while the graph is being built.
// * Memory a graph uses must live as long as the graph. Memory allocated during a
//   capture is ordinary pool memory, allocated outside the graph on the library's
//   stream (a graph allocation would have no physical memory before the first launch,
//   and reading a result then would fault); every allocation the capture touches is
//   held by the graph (a CUDA user object) and released once the graph is destroyed
//   and its launches are done, whenever the caller drops their own handles.
#pragma once

#include <cuda_runtime.h>

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <unordered_map>
#include <unordered_set>
#include <vector>

namespace devicearray::detail {
class Allocation;
}

namespace devicearray::detail::cuda {

/// The capture a stream was in when the library used it.
struct StreamCapture {
  unsigned long long id = 0;  ///< CUDA's capture id; 0: not captured
  cudaGraph_t graph = nullptr;  ///< the graph being built (valid while the capture goes on)

  bool captured() const noexcept { return id != 0; }
  /// The capture `stream` is in now (a default value when it is in none). Throws
  /// InvalidState, `function` naming the call, when CUDA has invalidated the capture
  /// (an earlier call in it was not capturable).
  static StreamCapture of(cudaStream_t stream, const char* function);
};

/// Lets the calling thread, while it lives, make the calls that a capture in the global
/// or thread-local mode forbids (host waits for streams outside the capture, which
/// CUDA cannot tell from waits for the captured one).
class RelaxedCaptureMode {
 public:
  RelaxedCaptureMode() noexcept {
    if (cudaThreadExchangeStreamCaptureMode(&previous_) != cudaSuccess) {
      (void)cudaGetLastError();
      restore_ = false;
    }
  }
  ~RelaxedCaptureMode() {
    if (restore_ && cudaThreadExchangeStreamCaptureMode(&previous_) != cudaSuccess) (void)cudaGetLastError();
  }
  RelaxedCaptureMode(const RelaxedCaptureMode&) = delete;
  RelaxedCaptureMode& operator=(const RelaxedCaptureMode&) = delete;

 private:
  cudaStreamCaptureMode previous_ = cudaStreamCaptureModeRelaxed;
  bool restore_ = true;
};

/// The allocations that graphs being built or alive hold, per device: each capture
/// gets one CUDA user object, retained by its graph, that owns references to every
/// allocation the capture used. CUDA destroys the user object, on a thread of its own,
/// when the graph and all its executable graphs are destroyed and their launches done;
/// no CUDA call may be made there, so the references move to a list that the device
/// releases at its next call (releaseDestroyed).
class GraphKeepAlive {
 public:
  GraphKeepAlive() = default;
  GraphKeepAlive(const GraphKeepAlive&) = delete;
  GraphKeepAlive& operator=(const GraphKeepAlive&) = delete;

  /// Makes the graph of `capture` hold `allocation` (once per capture). Throws
  /// BackendError when CUDA refuses the user object.
  void hold(const StreamCapture& capture, std::shared_ptr<Allocation> allocation);
  /// Drops the references of graphs CUDA has destroyed since the last call. Makes CUDA
  /// calls (the allocations free their memory): never from a CUDA callback.
  void releaseDestroyed() noexcept;

 private:
  /// What one capture's graph holds.
  struct Held {
    Held(GraphKeepAlive* owner, unsigned long long capture) : owner(owner), capture(capture) {}
    void add(std::shared_ptr<Allocation> allocation);
    GraphKeepAlive* owner;
    unsigned long long capture;
    std::unordered_set<const Allocation*> seen;
    std::vector<std::shared_ptr<Allocation>> allocations;
  };
  static void destroyed(void* held);  // the user object's destructor (a CUDA thread)

  std::mutex mutex_;
  std::unordered_map<unsigned long long, Held*> byCapture_;  // captures whose graph lives
  std::vector<std::unique_ptr<Held>> released_;             // destroyed, not yet dropped
  std::atomic<bool> anyReleased_{false};  // read without the lock at every call
};

}  // namespace devicearray::detail::cuda
