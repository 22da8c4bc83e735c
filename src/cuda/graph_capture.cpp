// StreamCapture and GraphKeepAlive (graph_capture.hpp).
#include "cuda/graph_capture.hpp"

#include <string>
#include <utility>

#include "backend/backend.hpp"
#include "cuda/cuda_device.hpp"

namespace devicearray::detail::cuda {

StreamCapture StreamCapture::of(cudaStream_t stream, const char* function) {
  cudaStreamCaptureStatus status = cudaStreamCaptureStatusNone;
  StreamCapture capture;
  const cudaError_t err = cudaStreamGetCaptureInfo(stream, &status, &capture.id, &capture.graph);
  if (err != cudaSuccess) {
    (void)cudaGetLastError();
    // The special handles answer with an error while another stream captures in the
    // global mode; they cannot be captured themselves, so they are not.
    if (err == cudaErrorStreamCaptureImplicit) return {};
    fail(ErrorCode::InvalidArgument, std::string(function) + ": the handle is not a valid CUDA stream (" +
                                         cudaGetErrorName(err) + ")");
  }
  if (status == cudaStreamCaptureStatusInvalidated)
    fail(ErrorCode::InvalidState, std::string(function) +
                                      ": the stream's graph capture has been invalidated by an earlier call that "
                                      "cannot be captured; end the capture (cudaStreamEndCapture) and start again");
  if (status != cudaStreamCaptureStatusActive) return {};
  return capture;
}

void GraphKeepAlive::Held::add(std::shared_ptr<Allocation> allocation) {
  if (seen.insert(allocation.get()).second) allocations.push_back(std::move(allocation));
}

void GraphKeepAlive::hold(const StreamCapture& capture, std::shared_ptr<Allocation> allocation) {
  if (!capture.captured() || !allocation) return;
  {
    const std::lock_guard<std::mutex> lock(mutex_);
    if (const auto it = byCapture_.find(capture.id); it != byCapture_.end()) {
      it->second->add(std::move(allocation));
      return;
    }
  }
  // The first allocation of this capture: a user object for its graph. Made without
  // the lock, since releasing a refused object runs destroyed(), which takes it.
  auto held = std::make_unique<Held>(this, capture.id);
  held->add(std::move(allocation));
  {
    const std::lock_guard<std::mutex> lock(mutex_);
    byCapture_.emplace(capture.id, held.get());
  }
  cudaUserObject_t object = nullptr;
  cudaError_t err = cudaUserObjectCreate(&object, held.get(), &GraphKeepAlive::destroyed, 1,
                                         cudaUserObjectNoDestructorSync);
  if (err != cudaSuccess) {
    const std::lock_guard<std::mutex> lock(mutex_);
    byCapture_.erase(capture.id);
    throwCudaError("cudaUserObjectCreate", err);
  }
  (void)held.release();  // the user object owns it now: destroyed() deletes it
  err = cudaGraphRetainUserObject(capture.graph, object, 1, cudaGraphUserObjectMove);
  if (err != cudaSuccess) {
    (void)cudaGetLastError();
    if (cudaUserObjectRelease(object, 1) != cudaSuccess) (void)cudaGetLastError();
    throwCudaError("cudaGraphRetainUserObject", err);
  }
}

void GraphKeepAlive::destroyed(void* p) {
  // A CUDA-internal thread: no CUDA call, nothing that blocks for long.
  std::unique_ptr<Held> held(static_cast<Held*>(p));
  GraphKeepAlive* owner = held->owner;
  const std::lock_guard<std::mutex> lock(owner->mutex_);
  if (const auto it = owner->byCapture_.find(held->capture); it != owner->byCapture_.end() && it->second == held.get())
    owner->byCapture_.erase(it);
  try {
    owner->released_.push_back(std::move(held));
    owner->anyReleased_.store(true, std::memory_order_release);
  } catch (...) {
    // No memory for the list: the allocations leak rather than being freed here.
    (void)held.release();
  }
}

void GraphKeepAlive::releaseDestroyed() noexcept {
  if (!anyReleased_.load(std::memory_order_acquire)) return;
  std::vector<std::unique_ptr<Held>> drop;
  {
    const std::lock_guard<std::mutex> lock(mutex_);
    drop.swap(released_);
    anyReleased_.store(false, std::memory_order_relaxed);
  }
  // The allocations free their memory here, in stream order on the release stream.
}

}  // namespace devicearray::detail::cuda
