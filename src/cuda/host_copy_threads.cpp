// Worker threads for parallelMemcpy (host_copy_threads.hpp). Written by hand: the
// work is a few memcpy calls per staged chunk, which needs a fixed pool and a
// latch, not a task library.
#include "cuda/host_copy_threads.hpp"

#include <algorithm>
#include <condition_variable>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <latch>
#include <mutex>
#include <thread>
#include <vector>

namespace devicearray::detail::cuda {
namespace {

/// Below this a part is not worth handing to another thread: one thread copies it in
/// about the wake-up latency of another (~10 µs).
constexpr std::size_t kMinPartBytes = std::size_t{128} << 10;

class CopyThreads {
 public:
  static CopyThreads& instance() {
    // Leaked on purpose: host callbacks of the CUDA runtime may still copy while
    // static objects are destroyed at exit.
    static CopyThreads* threads = new CopyThreads;
    return *threads;
  }

  std::size_t size() const { return workers_.size(); }

  void copy(char* dst, const char* src, std::size_t bytes) noexcept {
    std::size_t parts = std::min<std::size_t>(bytes / kMinPartBytes, workers_.size() + 1);
    if (parts <= 1) {
      std::memcpy(dst, src, bytes);
      return;
    }
    // Cache-line aligned parts; the last one takes the remainder.
    const std::size_t per = ((bytes + parts - 1) / parts + 63) & ~std::size_t{63};
    parts = (bytes + per - 1) / per;
    std::latch done(static_cast<std::ptrdiff_t>(parts - 1));
    bool queued = false;
    try {
      std::vector<Task> mine;
      mine.reserve(parts - 1);
      for (std::size_t p = 1; p < parts; ++p) {
        const std::size_t offset = p * per;
        mine.push_back(Task{dst + offset, src + offset, std::min(per, bytes - offset), &done});
      }
      std::lock_guard<std::mutex> lock(mutex_);
      tasks_.insert(tasks_.end(), mine.begin(), mine.end());  // all or nothing (insert at an end)
      queued = true;
    } catch (...) {
      // No memory for the task list: nothing was queued, so copy every part here.
    }
    if (!queued) {
      std::memcpy(dst, src, bytes);
      done.count_down(static_cast<std::ptrdiff_t>(parts - 1));
      done.wait();
      return;
    }
    wake_.notify_all();
    std::memcpy(dst, src, std::min(per, bytes));
    done.wait();
  }

 private:
  struct Task {
    char* dst;
    const char* src;
    std::size_t bytes;
    std::latch* done;
  };

  CopyThreads() {
    const unsigned cores = std::max(1u, std::thread::hardware_concurrency());
    // Half the cores (at most 8): a PCIe 5 x16 link is saturated well before that,
    // and the rest stay free for the application. DEVICEARRAY_COPY_THREADS (1..64)
    // overrides it; the calling thread is one of them.
    unsigned total = std::min(8u, std::max(1u, cores / 2));
    if (const char* env = std::getenv("DEVICEARRAY_COPY_THREADS")) {
      const long value = std::strtol(env, nullptr, 10);
      if (value >= 1 && value <= 64) total = static_cast<unsigned>(value);
    }
    const unsigned count = total - 1;
    try {
      for (unsigned i = 0; i < count; ++i) workers_.emplace_back([this] { work(); });
    } catch (...) {
      // Fewer threads than wanted (resource limits): copy with those that started.
    }
    for (auto& w : workers_) w.detach();
  }

  void work() {
    for (;;) {
      Task task{};
      {
        std::unique_lock<std::mutex> lock(mutex_);
        wake_.wait(lock, [this] { return !tasks_.empty(); });
        task = tasks_.front();
        tasks_.pop_front();
      }
      std::memcpy(task.dst, task.src, task.bytes);
      task.done->count_down();
    }
  }

  std::mutex mutex_;
  std::condition_variable wake_;
  std::deque<Task> tasks_;
  std::vector<std::thread> workers_;
};

}  // namespace

void parallelMemcpy(void* dst, const void* src, std::size_t bytes) noexcept {
  CopyThreads::instance().copy(static_cast<char*>(dst), static_cast<const char*>(src), bytes);
}

std::size_t copyThreadCount() noexcept { return CopyThreads::instance().size(); }

}  // namespace devicearray::detail::cuda
