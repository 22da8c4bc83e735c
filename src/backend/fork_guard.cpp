#include "backend/fork_guard.hpp"

#include <pthread.h>

#include <string>

#include "devicearray/error.hpp"

namespace devicearray::detail {

std::atomic<unsigned> gForkedAfterInit{0};

namespace {

std::atomic<unsigned> gInitialised{0};

unsigned bitOf(ComputeBackend backend) { return backend == ComputeBackend::cuda ? 1u : 2u; }

/// Runs in the child right after fork(), which may hold only the forking thread:
/// atomics only, nothing that allocates or locks.
void markForkedChild() noexcept {
  const unsigned initialised = gInitialised.load(std::memory_order_relaxed);
  if (initialised != 0) gForkedAfterInit.fetch_or(initialised, std::memory_order_relaxed);
}

}  // namespace

void noteBackendInitialised(ComputeBackend backend) noexcept {
  // pthread_atfork fails only without memory; the child is then not detected.
  static const bool installed = pthread_atfork(nullptr, nullptr, &markForkedChild) == 0;
  (void)installed;
  gInitialised.fetch_or(bitOf(backend), std::memory_order_relaxed);
}

[[noreturn]] void throwForkedAfterInit(const char* fn) {
  const unsigned backends = gForkedAfterInit.load(std::memory_order_relaxed);
  const std::string names = backends == 3u ? "CUDA and OpenCL" : (backends == 1u ? "CUDA" : "OpenCL");
  throw Error(ErrorCode::InvalidState,
              std::string(fn) + ": this process was forked after devicearray initialised " + names +
                  " in the parent process; the parent's " + names +
                  " state (contexts, queues, driver threads) cannot be used in a forked child. "
                  "To use devicearray with multiprocessing, use the 'spawn' (or 'forkserver') start method, "
                  "e.g. multiprocessing.get_context(\"spawn\"), or initialise devicearray only in the child "
                  "processes (no device use in the parent before it forks).");
}

}  // namespace devicearray::detail
