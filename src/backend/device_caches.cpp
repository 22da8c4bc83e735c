// Device memory kept for a device's lifetime (the core's lookup tables, the backends'
// reuse caches) and its release: when a destructible device is destroyed, and for
// every device at process exit.
//
// Why at exit, from an atexit handler: devices of the registries are never destroyed
// (allocations may outlive static destructors), so without it their cached memory is
// reported as leaked by compute-sanitizer --leak-check full. A device registers the
// handler when it starts caching memory, which is after its driver initialised and
// registered its own exit handler (the CUDA runtime tears itself down from one), so
// ours runs first and the driver is still there. The handler is registered once per
// backend: a second run finds nothing left to free.
#include <algorithm>
#include <cstdlib>

#include "backend/backend.hpp"
#include "backend/copy_steps.hpp"
#include "backend/parallel_primitives.hpp"

namespace devicearray::detail {

namespace {

/// Devices with memory to free at exit. Leaked: the exit handler reads it after
/// static destructors registered later than the handler have run.
struct ExitList {
  std::mutex mutex;
  std::vector<DeviceImpl*> devices;
  unsigned handlers = 0;  // backends (1 << ComputeBackend) whose handler is registered
};

ExitList& exitList() {
  static ExitList* const list = new ExitList;
  return *list;
}

void releaseAtExitHandler() { releaseAllCachedMemory(); }

}  // namespace

DeviceImpl::DeviceImpl() = default;

DeviceImpl::~DeviceImpl() { forgetAtExit(); }

void DeviceImpl::setWorkObjects(std::unique_ptr<ParallelPrimitives> primitives, std::unique_ptr<CopySteps> copySteps) {
  primitives_ = std::move(primitives);
  copySteps_ = std::move(copySteps);
}

void DeviceImpl::forgetAtExit() noexcept {
  // In a forked child the list's mutex may be held by a thread that does not exist
  // there; the exit handler does nothing in such a child, so the stale entry is harmless.
  if (!releaseAtExit_.load(std::memory_order_acquire) || forkedAfterInit()) return;
  try {
    ExitList& list = exitList();
    std::lock_guard<std::mutex> lock(list.mutex);  // waits for a running exit handler
    list.devices.erase(std::remove(list.devices.begin(), list.devices.end(), this), list.devices.end());
    releaseAtExit_.store(false, std::memory_order_release);
  } catch (...) {
    // std::mutex::lock failed: nothing sensible is left to do.
  }
}

void DeviceImpl::releaseAtExit() noexcept {
  if (releaseAtExit_.load(std::memory_order_acquire)) return;
  try {
    ExitList& list = exitList();
    std::lock_guard<std::mutex> lock(list.mutex);
    if (releaseAtExit_.load(std::memory_order_relaxed)) return;
    const unsigned bit = 1u << static_cast<unsigned>(backend());
    if ((list.handlers & bit) == 0) {
      if (std::atexit(&releaseAtExitHandler) != 0) return;  // the memory then goes with the process
      list.handlers |= bit;
    }
    list.devices.push_back(this);
    releaseAtExit_.store(true, std::memory_order_release);
  } catch (...) {
    // Out of memory for the list entry: the memory goes with the process.
  }
}

std::shared_ptr<Allocation> DeviceImpl::cachedAllocation(const void* key,
                                                         const std::function<std::shared_ptr<Allocation>()>& build) {
  {
    std::lock_guard<std::mutex> lock(cachedMutex_);
    for (const auto& [k, a] : cached_)
      if (k == key) return a;
  }
  // Built without the lock (it enqueues device work); a thread that loses the race
  // to insert drops its copy.
  std::shared_ptr<Allocation> built = build();
  built->dropDeviceOwnership();
  releaseAtExit();
  std::lock_guard<std::mutex> lock(cachedMutex_);
  for (const auto& [k, a] : cached_)
    if (k == key) return a;
  cached_.emplace_back(key, built);
  return built;
}

void DeviceImpl::releaseCachedMemory() noexcept {
  // In a forked child the memory belongs to the parent's driver state: leave it.
  if (forkedAfterInit()) return;
  std::vector<std::pair<const void*, std::shared_ptr<Allocation>>> entries;
  {
    std::lock_guard<std::mutex> lock(cachedMutex_);
    entries.swap(cached_);
  }
  entries.clear();  // the allocations free their memory in stream order
  doReleaseRetainedMemory();
}

void releaseAllCachedMemory() noexcept {
  if (forkedAfterInit()) return;
  try {
    ExitList& list = exitList();
    std::lock_guard<std::mutex> lock(list.mutex);
    for (DeviceImpl* device : list.devices) device->releaseCachedMemory();
  } catch (...) {
    // std::mutex::lock failed: nothing is freed early.
  }
}

}  // namespace devicearray::detail
