// Test hook: deterministic failures of allocations, copies and kernel launches, and a
// live-Allocation counter.
//
// Why: the strong guarantee and "no leaks" are only believable if every allocation,
// every transfer and every launch an operation makes can be made to fail and the
// failure is shown to leave the arguments unchanged and nothing allocated. Real
// failures are neither deterministic nor cheap, so the library calls faultPoint()
// right before each of them; a test arms the k-th one to throw the Error a real
// failure there would (OutOfMemory for allocations, BackendError for copies and
// launches).
//
// Cost when disarmed: one relaxed atomic load per point. The counters are
// process-wide (all threads); arm from one test thread at a time.
#pragma once

#include <atomic>
#include <cstdint>

namespace devicearray::detail {

enum class FaultKind : int {
  deviceAllocation = 0,  ///< DeviceImpl::allocate (every backend's device memory)
  hostAllocation = 1,    ///< HostMat storage, DLPack manager contexts, import wrappers
  deviceCopy = 2,        ///< DeviceImpl::copy / copyAcrossDevices: every host<->device and device<->device transfer
  kernelLaunch = 3,      ///< DeviceImpl::launch / fill / convert and the parallel primitives (exclusiveScanU32, ...)
};
inline constexpr int kFaultKinds = 4;

/// Non-zero while any fault is armed (the fast-path flag).
extern std::atomic<int> gFaultArmed;
/// Live detail::Allocation objects (owning, external and alias), for leak checks.
extern std::atomic<std::int64_t> gLiveAllocations;

/// Slow path of faultPoint: counts the point and throws
/// Error(OutOfMemory or BackendError, "<where>: injected ... failure ...") when it is the armed one.
void faultPointArmed(FaultKind kind, const char* where);

/// Called immediately before an allocation, copy or launch of `kind` at `where` (a
/// function or kernel name). Throws when armed for this point; otherwise nothing.
inline void faultPoint(FaultKind kind, const char* where) {
  if (gFaultArmed.load(std::memory_order_relaxed) != 0) [[unlikely]]
    faultPointArmed(kind, where);
}

/// Makes the `k`-th (1-based) point of `kind` reached from now on throw, once; k <= 0
/// disarms that kind. Resets the per-kind point counter.
void armFault(FaultKind kind, std::int64_t k);
/// Disarms every kind.
void disarmFaults() noexcept;
/// Points of `kind` reached since the last armFault(kind, ...).
std::int64_t faultPointsReached(FaultKind kind) noexcept;
/// Faults thrown since process start (all kinds).
std::int64_t faultsInjected() noexcept;
/// "device allocation", "host allocation", "device copy" or "kernel launch".
const char* faultKindName(FaultKind kind) noexcept;

inline std::int64_t liveAllocations() noexcept { return gLiveAllocations.load(std::memory_order_acquire); }
inline void noteAllocationCreated() noexcept { gLiveAllocations.fetch_add(1, std::memory_order_relaxed); }
inline void noteAllocationDestroyed() noexcept { gLiveAllocations.fetch_sub(1, std::memory_order_acq_rel); }

}  // namespace devicearray::detail
