// Device memory of the OpenCL backend. Buffers are cl_mem objects with byte offsets
// (a cl_mem cannot carry an offset; sub-buffers have alignment rules). Released
// buffers go into a bounded per-device cache together with their pending events, so
// repeated same-size allocations skip clCreateBuffer; a cache hit makes the new queue
// wait for those events on the device. Dropping a cl_mem is always safe in stream
// order: OpenCL deletes it only after the commands using it have finished.
#include <algorithm>
#include <iterator>
#include <list>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "opencl/cl_error.hpp"
#include "opencl/opencl_device.hpp"

namespace devicearray::detail::opencl {
namespace {

constexpr std::size_t kCacheGranularity = 256;   // cached sizes are rounded up to this
constexpr std::size_t kMaxCachedBuffers = 256;   // bounds the linear cache lookup

bool isOutOfMemory(cl_int err) {
  return err == CL_MEM_OBJECT_ALLOCATION_FAILURE || err == CL_OUT_OF_RESOURCES || err == CL_OUT_OF_HOST_MEMORY ||
         err == CL_INVALID_BUFFER_SIZE;
}

/// Completion of an event of any backend, for cache bookkeeping (never throws).
bool eventFinished(const std::shared_ptr<EventImpl>& e) noexcept {
  if (auto* ev = dynamic_cast<OpenCLEvent*>(e.get())) return ev->finished();
  try {
    return e->query();
  } catch (...) {
    return true;  // failed work is over too
  }
}

std::string mib(std::size_t bytes) { return std::to_string(bytes) + " bytes (" + std::to_string(bytes >> 20) + " MiB)"; }

}  // namespace

// ----------------------------------------------------------- allocations ----

OpenCLAllocation::~OpenCLAllocation() {
  if (forkedAfterInit()) return;  // the parent's buffer: leaked, no driver call (nor cache lock) in a forked child
  if (external()) {
    clReleaseMemObject(mem());
    return;
  }
  static_cast<OpenCLDevice&>(*device()).recycle(mem(), capacity_, takePending());
}

std::size_t OpenCLDevice::freeMemory() {
  // OpenCL has no portable free-memory query; report global memory minus what
  // this library holds (live and cached), which is exact when the library is the
  // device's only user.
  std::lock_guard<std::mutex> lock(cacheMutex_);
  const std::size_t used = liveBytes_ + cachedBytes_;
  return used >= globalMemBytes_ ? 0 : globalMemBytes_ - used;
}

cl_mem OpenCLDevice::memOf(const Allocation* a, const char* fn) const {
  if (a == nullptr) fail(ErrorCode::InvalidArgument, std::string(fn) + ": null device allocation");
  const auto& owner = a->device();
  if (!owner || owner->backend() != ComputeBackend::opencl || owner->nativeContext() != context_)
    fail(ErrorCode::InvalidArgument, std::string(fn) + ": the memory belongs to " +
                                         (owner ? ComputeDevice(owner).toString() : std::string("no device")) +
                                         ", whose cl_context differs from that of " + describe());
  return static_cast<cl_mem>(a->handle());
}

// ----------------------------------------------------------- buffer cache ----

OpenCLDevice::Acquired OpenCLDevice::acquire(std::size_t bytes, OpenCLQueue& q, const char* fn) {
  if (bytes > maxAllocBytes_)
    fail(ErrorCode::OutOfMemory, std::string(fn) + ": cannot allocate " + mib(bytes) + " on " + describe() +
                                     ": larger than the device's largest single allocation "
                                     "(CL_DEVICE_MAX_MEM_ALLOC_SIZE = " + mib(maxAllocBytes_) +
                                     "; global memory " + mib(globalMemBytes_) + ")");
  std::size_t capacity = std::max<std::size_t>(bytes, 1);
  if (capacity <= maxAllocBytes_ - (kCacheGranularity - 1))
    capacity = (capacity + kCacheGranularity - 1) / kCacheGranularity * kCacheGranularity;

  std::list<CachedBuffer> hit;
  {
    std::lock_guard<std::mutex> lock(cacheMutex_);
    auto it = std::find_if(cache_.begin(), cache_.end(), [&](const CachedBuffer& b) { return b.capacity == capacity; });
    if (it != cache_.end()) {
      hit.splice(hit.begin(), cache_, it);
      cachedBytes_ -= capacity;
      liveBytes_ += capacity;
    }
  }
  if (!hit.empty()) {
    CachedBuffer& b = hit.front();
    std::vector<cl_event> waits;
    bool pending = false;
    for (const auto& e : b.pending) {
      if (eventFinished(e)) continue;
      pending = true;
      auto* ev = dynamic_cast<OpenCLEvent*>(e.get());
      if (ev != nullptr && ev->queueKey() != q.key()) waits.push_back(ev->native());
    }
    if (!waits.empty()) {
      const cl_int err =
          clEnqueueBarrierWithWaitList(q.queue(), static_cast<cl_uint>(waits.size()), waits.data(), nullptr);
      if (err != CL_SUCCESS) {
        recycle(b.mem, b.capacity, std::move(b.pending));
        checkCl(err, std::string(fn) + ": clEnqueueBarrierWithWaitList");
      }
    }
    return {b.mem, b.capacity, pending};
  }

  cl_int err = CL_SUCCESS;
  cl_mem mem = clCreateBuffer(context_, CL_MEM_READ_WRITE, capacity, nullptr, &err);
  if (err != CL_SUCCESS && isOutOfMemory(err)) {
    flushCache();
    mem = clCreateBuffer(context_, CL_MEM_READ_WRITE, capacity, nullptr, &err);
  }
  if (err != CL_SUCCESS) {
    if (isOutOfMemory(err)) {
      std::size_t live;
      {
        std::lock_guard<std::mutex> lock(cacheMutex_);
        live = liveBytes_;
      }
      fail(ErrorCode::OutOfMemory, std::string(fn) + ": cannot allocate " + mib(bytes) + " on " + describe() + " (" +
                                       clErrorMessage("clCreateBuffer", err) + "); the device has " +
                                       mib(globalMemBytes_) + " of global memory, allows " + mib(maxAllocBytes_) +
                                       " per allocation, and this library holds " + mib(live));
    }
    checkCl(err, std::string(fn) + ": clCreateBuffer");
  }
  std::lock_guard<std::mutex> lock(cacheMutex_);
  liveBytes_ += capacity;
  return {mem, capacity, false};
}

void OpenCLDevice::recycle(cl_mem mem, std::size_t capacity, std::vector<std::shared_ptr<EventImpl>> pending) noexcept {
  std::list<CachedBuffer> evicted;
  try {
    pending.erase(std::remove_if(pending.begin(), pending.end(),
                                 [](const auto& e) { return eventFinished(e); }),
                  pending.end());
    std::list<CachedBuffer> node;
    node.push_back({mem, capacity, std::move(pending)});
    releaseAtExit();  // cached buffers are released at exit
    std::lock_guard<std::mutex> lock(cacheMutex_);
    liveBytes_ -= capacity;
    if (capacity > cacheLimitBytes_) {
      evicted.splice(evicted.end(), node);
    } else {
      cache_.splice(cache_.begin(), node);
      cachedBytes_ += capacity;
      while (cachedBytes_ > cacheLimitBytes_ || cache_.size() > kMaxCachedBuffers) {
        cachedBytes_ -= cache_.back().capacity;
        evicted.splice(evicted.end(), cache_, std::prev(cache_.end()));
      }
    }
  } catch (...) {
    // Out of host memory for the cache node: give the buffer back instead.
    // OpenCL defers the deletion until the commands using it have finished.
    std::lock_guard<std::mutex> lock(cacheMutex_);
    liveBytes_ -= capacity;
    clReleaseMemObject(mem);
    return;
  }
  for (auto& b : evicted) clReleaseMemObject(b.mem);
}

void OpenCLDevice::doReleaseRetainedMemory() noexcept {
  std::list<CachedBuffer> all;
  {
    std::lock_guard<std::mutex> lock(cacheMutex_);
    all.swap(cache_);
    cachedBytes_ = 0;
  }
  for (auto& b : all) clReleaseMemObject(b.mem);
}

void OpenCLDevice::flushCache() noexcept {
  std::list<CachedBuffer> all;
  {
    std::lock_guard<std::mutex> lock(cacheMutex_);
    all.swap(cache_);
    cachedBytes_ = 0;
  }
  // Wait so the driver really frees the memory before the caller retries.
  for (auto& b : all) {
    for (const auto& e : b.pending) {
      try {
        e->synchronize();
      } catch (...) {  // failed work has ended as well
      }
    }
    clReleaseMemObject(b.mem);
  }
}

std::shared_ptr<Allocation> OpenCLDevice::doAllocate(std::size_t bytes, QueueImpl& qi) {
  OpenCLQueue& q = queueOf(qi, "allocate");
  const Acquired a = acquire(bytes, q, "allocate");
  std::shared_ptr<OpenCLAllocation> alloc;
  try {
    alloc = std::make_shared<OpenCLAllocation>(shared_from_this(), a.mem, bytes, a.capacity, true);
  } catch (...) {
    recycle(a.mem, a.capacity, {});
    throw;
  }
  // q now waits for the buffer's previous users; record that hand-over so
  // other queues using the new allocation wait for it too.
  if (a.hadPendingWork) alloc->afterUse(q, q.recordEvent());
  return alloc;
}

ScratchBuffer OpenCLDevice::acquireScratch(std::size_t bytes, OpenCLQueue& q, const char* fn) {
  const Acquired a = acquire(bytes, q, fn);
  return {a.mem, a.capacity};
}

void OpenCLDevice::releaseScratch(const ScratchBuffer& buffer, OpenCLQueue& q) {
  std::shared_ptr<EventImpl> last;
  try {
    last = q.recordEvent();
  } catch (...) {
    {
      std::lock_guard<std::mutex> lock(cacheMutex_);
      liveBytes_ -= buffer.capacity;
    }
    clReleaseMemObject(buffer.mem);  // deferred by OpenCL until its commands finish
    throw;
  }
  recycle(buffer.mem, buffer.capacity, {std::move(last)});
}

std::shared_ptr<Allocation> OpenCLDevice::doAdopt(void* handle, std::size_t bytes) {
  const char* fn = "adopt OpenCL buffer";
  if (handle == nullptr) fail(ErrorCode::InvalidArgument, std::string(fn) + ": the cl_mem is null");
  auto mem = static_cast<cl_mem>(handle);
  cl_mem_object_type type = 0;
  cl_int err = clGetMemObjectInfo(mem, CL_MEM_TYPE, sizeof type, &type, nullptr);
  if (err != CL_SUCCESS)
    fail(ErrorCode::InvalidArgument,
         std::string(fn) + ": the handle is not a valid cl_mem (" + clErrorMessage("clGetMemObjectInfo", err) + ")");
  if (type != CL_MEM_OBJECT_BUFFER)
    fail(ErrorCode::InvalidArgument, std::string(fn) + ": the cl_mem is an image, not a buffer");
  cl_context ctx = nullptr;
  checkCl(clGetMemObjectInfo(mem, CL_MEM_CONTEXT, sizeof ctx, &ctx, nullptr), "adopt OpenCL buffer: clGetMemObjectInfo");
  if (ctx != context_)
    fail(ErrorCode::InvalidArgument,
         std::string(fn) + ": the cl_mem belongs to another cl_context than " + describe() +
             " (share the context with ComputeDevice::fromOpenCL to use the caller's buffers)");
  std::size_t size = 0;
  checkCl(clGetMemObjectInfo(mem, CL_MEM_SIZE, sizeof size, &size, nullptr), "adopt OpenCL buffer: clGetMemObjectInfo");
  if (bytes == 0) bytes = size;
  if (bytes > size)
    fail(ErrorCode::InvalidArgument, std::string(fn) + ": " + std::to_string(bytes) +
                                         " bytes declared, but the cl_mem holds only " + std::to_string(size));
  checkCl(clRetainMemObject(mem), "adopt OpenCL buffer: clRetainMemObject");
  try {
    return std::make_shared<OpenCLAllocation>(shared_from_this(), mem, bytes, size, false);
  } catch (...) {
    clReleaseMemObject(mem);
    throw;
  }
}

}  // namespace devicearray::detail::opencl
