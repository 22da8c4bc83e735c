// Shared by the gated ordering tests (ordering_test.cpp on every backend with user
// OpenCL kernels, ordering_cuda_test.cu with user CUDA kernels).
#pragma once

#include <chrono>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <thread>
#include <utility>
#include <vector>

namespace datest::ordering {

/// The test image: kH x kW single-float pixels.
constexpr int kH = 48;
constexpr int kW = 160;
constexpr int kN = kH * kW;

/// base + 0.5 * i for i in [0, n): what the gated producer kernels write.
inline std::vector<float> pattern(float base, int n = kN) {
  std::vector<float> v(static_cast<std::size_t>(n));
  for (int i = 0; i < n; ++i) v[static_cast<std::size_t>(i)] = base + 0.5f * static_cast<float>(i);
  return v;
}

/// The host side of a gate that device work waits on. A watchdog thread opens it after
/// `limit` and remembers that it had to, so a library call that wrongly blocks the host
/// on gated work makes the test fail instead of hang. The backend's gate (a user event,
/// a mapped flag) is opened by the `release` function given to start(), exactly once.
class GateWatchdog {
 public:
  GateWatchdog() = default;
  GateWatchdog(const GateWatchdog&) = delete;
  GateWatchdog& operator=(const GateWatchdog&) = delete;
  ~GateWatchdog() { stop(); }

  /// Starts the watchdog; call once, after the backend's gate exists.
  void start(std::chrono::seconds limit, std::function<void()> release) {
    release_ = std::move(release);
    watchdog_ = std::thread([this, limit] {
      std::unique_lock<std::mutex> lock(mutex_);
      if (!cv_.wait_for(lock, limit, [this] { return opened_; })) {
        expired_ = true;
        releaseLocked();
      }
    });
  }
  /// Opens the gate; true when the watchdog had not already opened it (nothing blocked).
  bool open() {
    std::lock_guard<std::mutex> lock(mutex_);
    if (!opened_) releaseLocked();
    cv_.notify_all();
    return !expired_;
  }
  /// Opens the gate and joins the watchdog; the backend's gate may be freed afterwards.
  void stop() {
    open();
    if (watchdog_.joinable()) watchdog_.join();
  }

 private:
  void releaseLocked() {
    opened_ = true;
    if (release_) release_();
  }
  std::function<void()> release_;
  std::mutex mutex_;
  std::condition_variable cv_;
  bool opened_ = false;
  bool expired_ = false;
  std::thread watchdog_;
};

}  // namespace datest::ordering
