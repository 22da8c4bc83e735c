#include "backend/fault_injection.hpp"

#include <array>
#include <string>

#include "devicearray/error.hpp"

namespace devicearray::detail {

std::atomic<int> gFaultArmed{0};
std::atomic<std::int64_t> gLiveAllocations{0};

namespace {

struct KindState {
  std::atomic<std::int64_t> target{0};   // 0 = disarmed
  std::atomic<std::int64_t> reached{0};  // points passed since armFault
};

std::array<KindState, kFaultKinds> gKinds;
std::atomic<std::int64_t> gInjected{0};

void refreshArmed() noexcept {
  int armed = 0;
  for (const auto& k : gKinds) armed |= k.target.load(std::memory_order_relaxed) > 0 ? 1 : 0;
  gFaultArmed.store(armed, std::memory_order_release);
}

}  // namespace

void faultPointArmed(FaultKind kind, const char* where) {
  KindState& s = gKinds[static_cast<std::size_t>(kind)];
  const std::int64_t target = s.target.load(std::memory_order_acquire);
  const std::int64_t n = s.reached.fetch_add(1, std::memory_order_acq_rel) + 1;
  if (target <= 0 || n != target) return;
  // Fire once: disarm this kind before throwing so cleanup paths allocate freely.
  s.target.store(0, std::memory_order_release);
  refreshArmed();
  gInjected.fetch_add(1, std::memory_order_relaxed);
  // The code a real failure at this point reports.
  const bool allocation = kind == FaultKind::deviceAllocation || kind == FaultKind::hostAllocation;
  throw Error(allocation ? ErrorCode::OutOfMemory : ErrorCode::BackendError,
              std::string(where) + ": injected " + faultKindName(kind) + " failure (fault injection, " +
                  faultKindName(kind) + " point " + std::to_string(n) + ")");
}

const char* faultKindName(FaultKind kind) noexcept {
  switch (kind) {
    case FaultKind::deviceAllocation: return "device allocation";
    case FaultKind::hostAllocation: return "host allocation";
    case FaultKind::deviceCopy: return "device copy";
    case FaultKind::kernelLaunch: return "kernel launch";
  }
  return "unknown";
}

void armFault(FaultKind kind, std::int64_t k) {
  KindState& s = gKinds[static_cast<std::size_t>(kind)];
  s.reached.store(0, std::memory_order_relaxed);
  s.target.store(k > 0 ? k : 0, std::memory_order_release);
  // Count points even while only counting (k <= 0 keeps the counter running only
  // if another kind is armed); tests that want counts arm a very large k.
  refreshArmed();
}

void disarmFaults() noexcept {
  for (auto& k : gKinds) k.target.store(0, std::memory_order_relaxed);
  refreshArmed();
}

std::int64_t faultPointsReached(FaultKind kind) noexcept {
  return gKinds[static_cast<std::size_t>(kind)].reached.load(std::memory_order_acquire);
}

std::int64_t faultsInjected() noexcept { return gInjected.load(std::memory_order_relaxed); }

}  // namespace devicearray::detail
