// Fork safety. A child forked after this process initialised a backend inherits the
// parent's driver state (CUDA contexts and streams, OpenCL contexts and queues) but
// none of the driver threads that serve it, so a driver call there can hang forever
// (PoCL waits for worker threads that no longer exist) or crash. Like PyTorch with
// CUDA, the library refuses instead: every device entry point throws InvalidState in
// such a child, and destructors leak what they would otherwise hand back to the
// driver. A child forked before any backend initialisation is unaffected.
#pragma once

#include <atomic>

#include "devicearray/device.hpp"

namespace devicearray::detail {

/// Records that `backend`'s driver is initialised in this process (called by the
/// backend registries before their first driver call), and installs, once, the
/// pthread_atfork child handler that marks children forked from then on.
void noteBackendInitialised(ComputeBackend backend) noexcept;

/// In a child forked after a backend was initialised: the backends (bit 0 CUDA,
/// bit 1 OpenCL) the parent had initialised. Zero otherwise.
extern std::atomic<unsigned> gForkedAfterInit;

/// True in a child forked after a backend was initialised: no driver call may be made.
inline bool forkedAfterInit() noexcept { return gForkedAfterInit.load(std::memory_order_relaxed) != 0; }

/// Throws Error(InvalidState, "<fn>: this process was forked after devicearray
/// initialised <backends> ... use the 'spawn' start method ...").
[[noreturn]] void throwForkedAfterInit(const char* fn);

/// One relaxed load; throws as above in a child forked after initialisation.
inline void requireNotForked(const char* fn) {
  if (forkedAfterInit()) [[unlikely]]
    throwForkedAfterInit(fn);
}

}  // namespace devicearray::detail
