// Allocation ordering: the per-allocation list of recorded work (one event per
// queue) that lets any later call, on any queue, see earlier library work
// without a host synchronization.
#include <algorithm>
#include <cstdint>

#include "backend/backend.hpp"

namespace devicearray::detail {

void Allocation::shareOrderingWith(const std::shared_ptr<Allocation>& parent) { orderingParent_ = parent; }

const void* QueueImpl::key() const {
  void* const handle = native();
  if (device()->backend() != ComputeBackend::cuda) return handle;
  // nullptr and cudaStreamLegacy (0x1): the legacy default stream of this device.
  if (handle == nullptr || reinterpret_cast<std::uintptr_t>(handle) == 0x1) return device().get();
  if (reinterpret_cast<std::uintptr_t>(handle) == 0x2) {  // cudaStreamPerThread: one per thread
    thread_local const char perThreadStream = 0;
    return &perThreadStream;
  }
  return handle;
}

// The ordering steps below run before the device call they order, so they refuse a
// forked child themselves (their waits and events are driver calls).

void Allocation::beforeUse(QueueImpl& q) {
  requireNotForked("ordering device work");
  if (auto parent = orderingParent_.lock()) parent->beforeUse(q);
  std::vector<std::shared_ptr<EventImpl>> waits;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    for (const auto& e : pending_)
      if (e->queueKey() != q.key()) waits.push_back(e);
  }
  // Same-queue work is already ordered (in-order queues). The backend's waitEvent
  // skips events it knows (or finds, without blocking) to be complete.
  for (const auto& e : waits) q.waitEvent(*e);
}

void Allocation::afterUse(QueueImpl& q, const std::shared_ptr<EventImpl>& event) {
  requireNotForked("ordering device work");
  if (auto parent = orderingParent_.lock()) parent->afterUse(q, event);
  if (q.capturesIntoGraph()) q.keepAliveForGraph(weak_from_this().lock());
  std::lock_guard<std::mutex> lock(mutex_);
  for (auto& e : pending_) {
    if (e->queueKey() == q.key()) {
      e = event;
      return;
    }
  }
  // A new queue: drop entries that have completed to keep the list short.
  if (pending_.size() >= 4)
    pending_.erase(std::remove_if(pending_.begin(), pending_.end(),
                                  [](const auto& e) {
                                    // A failing query keeps the entry (a later wait reports the error).
                                    try {
                                      return e->query();
                                    } catch (...) {
                                      return false;
                                    }
                                  }),
                   pending_.end());
  pending_.push_back(event);
}

void Allocation::waitIdle() {
  requireNotForked("waiting for device work");
  if (auto parent = orderingParent_.lock()) parent->waitIdle();
  std::vector<std::shared_ptr<EventImpl>> events;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    events = pending_;
  }
  for (const auto& e : events) e->synchronize();
}

std::vector<std::shared_ptr<EventImpl>> Allocation::takePending() {
  std::lock_guard<std::mutex> lock(mutex_);
  std::vector<std::shared_ptr<EventImpl>> out;
  out.swap(pending_);
  return out;
}

OrderedUse::OrderedUse(QueueImpl& q, std::initializer_list<Allocation*> uses) : q_(q) {
  for (Allocation* a : uses) add(a);
}

void OrderedUse::add(Allocation* a) {
  if (a == nullptr || std::find(uses_.begin(), uses_.end(), a) != uses_.end()) return;
  a->beforeUse(q_);
  uses_.push_back(a);
}

std::shared_ptr<EventImpl> OrderedUse::commit() {
  if (uses_.empty()) return nullptr;
  auto event = q_.recordEvent();
  for (Allocation* a : uses_) a->afterUse(q_, event);
  uses_.clear();
  return event;
}

}  // namespace devicearray::detail
