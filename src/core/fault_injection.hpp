// Test hook: deterministic allocation failures and a live-Allocation counter.
//
// Why: the strong guarantee and "no leaks" (API.md §1) are only believable if
// every allocation point can be made to fail and the failure is shown to leave
// the arguments unchanged and nothing allocated. Real out-of-memory is neither
// deterministic nor cheap, so the library calls faultPoint() right before each
// device or host allocation; a test arms the k-th one to throw
// Error(OutOfMemory) exactly as a real failure there would.
//
// Cost when disarmed: one relaxed atomic load per allocation. The counters are
// process-wide (all threads); arm from one test thread at a time.
#pragma once

#include <atomic>
#include <cstdint>

namespace devicearray::detail {

enum class FaultKind : int {
  deviceAllocation = 0,  ///< DeviceImpl::allocate (every backend's device memory)
  hostAllocation = 1,    ///< HostMat storage, DLPack manager contexts, import wrappers
};
inline constexpr int kFaultKinds = 2;

/// Non-zero while any fault is armed (the fast-path flag).
extern std::atomic<int> gFaultArmed;
/// Live detail::Allocation objects (owning, external and alias), for leak checks.
extern std::atomic<std::int64_t> gLiveAllocations;

/// Slow path of faultPoint: counts the allocation point and throws
/// Error(OutOfMemory, "<where>: injected allocation failure ...") when it is the armed one.
void faultPointArmed(FaultKind kind, const char* where);

/// Called immediately before an allocation of `kind` at `where` (a function
/// name). Throws Error(OutOfMemory) when armed for this point; otherwise nothing.
inline void faultPoint(FaultKind kind, const char* where) {
  if (gFaultArmed.load(std::memory_order_relaxed) != 0) [[unlikely]]
    faultPointArmed(kind, where);
}

/// Makes the `k`-th (1-based) allocation point of `kind` reached from now on
/// throw, once; k <= 0 disarms that kind. Resets the per-kind point counter.
void armFault(FaultKind kind, std::int64_t k);
/// Disarms every kind.
void disarmFaults() noexcept;
/// Allocation points of `kind` reached since the last armFault(kind, ...).
std::int64_t faultPointsReached(FaultKind kind) noexcept;
/// Faults thrown since process start (all kinds).
std::int64_t faultsInjected() noexcept;

inline std::int64_t liveAllocations() noexcept { return gLiveAllocations.load(std::memory_order_acquire); }
inline void noteAllocationCreated() noexcept { gLiveAllocations.fetch_add(1, std::memory_order_relaxed); }
inline void noteAllocationDestroyed() noexcept { gLiveAllocations.fetch_sub(1, std::memory_order_acq_rel); }

}  // namespace devicearray::detail
