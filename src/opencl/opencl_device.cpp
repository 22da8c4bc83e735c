// OpenCL 1.2 backend: devices, queues, events, memory and kernels.
//
// Design
// - Devices. openclDevices() enumerates every device of every platform (PoCL and
//   NVIDIA side by side on the GPU machine), GPUs first, then accelerators, then
//   CPUs; the ordinal is the index in that list. Each device gets its own
//   cl_context and one in-order queue with profiling (so Event timing works). The
//   list is built once, lazily and thread-safely, and intentionally never
//   destroyed: OpenCL objects must not be released during static destruction,
//   when the ICD may already be gone. A machine without a driver gets an empty
//   list and a reason, never an exception.
// - Adopted devices (ComputeDevice::fromOpenCL) retain the caller's context,
//   device and queue, allocate in that context and run on that queue, so cl_mem
//   objects are interchangeable with the caller's. They are cached weakly per
//   handle triple (same handles -> same device) and release what they retained
//   when the last handle drops. Their sdk queue points back at the device without
//   owning it (an owning pointer would be a cycle that keeps them alive forever);
//   wrapQueue(nullptr) on them therefore hands out an owning wrapper instead.
// - Memory. Buffers are cl_mem objects with byte offsets (a cl_mem cannot carry an
//   offset; sub-buffers have alignment rules). Released buffers go into a bounded
//   per-device cache together with their pending events, so repeated same-size
//   allocations skip clCreateBuffer; a cache hit makes the new queue wait for
//   those events on the device. Dropping a cl_mem is always safe in stream order:
//   OpenCL deletes it only after the commands using it have finished.
// - Kernels. The program (src/kernels/*.h + src/opencl/*.cl, embedded by CMake) is
//   built once per device on first use; cl_kernel objects are cached by name, and
//   clSetKernelArg + enqueue run under a per-kernel mutex because a cl_kernel's
//   arguments are shared state.
// - Copies, fills and conversions (opencl_copy.cpp) use the native commands where
//   the layout allows (buffer, rect, fill) and one strided kernel otherwise; host
//   staging for layouts OpenCL cannot express is done in queue order through event
//   callbacks and user events, so nothing blocks the host.
#include "opencl/opencl_device.hpp"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <map>
#include <thread>
#include <tuple>

#include "opencl/cl_error.hpp"

namespace devicearray::detail {
extern const char* const kOpenCLProgramSource;
}

namespace devicearray::detail::opencl {
namespace {

constexpr std::size_t kCacheGranularity = 256;   // cached sizes are rounded up to this
constexpr std::size_t kMaxCachedBuffers = 256;   // bounds the linear cache lookup
constexpr std::size_t kMaxBuildLogChars = 16000;

template <class T>
T deviceInfo(cl_device_id device, cl_device_info what, const char* name) {
  T value{};
  checkCl(clGetDeviceInfo(device, what, sizeof(T), &value, nullptr), std::string("clGetDeviceInfo(") + name + ")");
  return value;
}

std::string deviceString(cl_device_id device, cl_device_info what, const char* name) {
  std::size_t size = 0;
  checkCl(clGetDeviceInfo(device, what, 0, nullptr, &size), std::string("clGetDeviceInfo(") + name + ")");
  std::string s(size, '\0');
  checkCl(clGetDeviceInfo(device, what, size, s.data(), nullptr), std::string("clGetDeviceInfo(") + name + ")");
  while (!s.empty() && (s.back() == '\0' || s.back() == ' ')) s.pop_back();
  return s;
}

std::string platformString(cl_platform_id platform, cl_platform_info what) {
  std::size_t size = 0;
  if (clGetPlatformInfo(platform, what, 0, nullptr, &size) != CL_SUCCESS) return "unknown platform";
  std::string s(size, '\0');
  if (clGetPlatformInfo(platform, what, size, s.data(), nullptr) != CL_SUCCESS) return "unknown platform";
  while (!s.empty() && (s.back() == '\0' || s.back() == ' ')) s.pop_back();
  return s;
}

/// CL_DEVICE_VERSION is "OpenCL <major>.<minor> <vendor text>".
bool versionAtLeast12(const std::string& version) {
  int major = 0, minor = 0;
  if (std::sscanf(version.c_str(), "OpenCL %d.%d", &major, &minor) != 2) return false;
  return major > 1 || (major == 1 && minor >= 2);
}

bool isOutOfMemory(cl_int err) {
  return err == CL_MEM_OBJECT_ALLOCATION_FAILURE || err == CL_OUT_OF_RESOURCES || err == CL_OUT_OF_HOST_MEMORY ||
         err == CL_INVALID_BUFFER_SIZE;
}

bool queueProfiled(cl_command_queue queue) {
  cl_command_queue_properties props = 0;
  checkCl(clGetCommandQueueInfo(queue, CL_QUEUE_PROPERTIES, sizeof props, &props, nullptr),
          "clGetCommandQueueInfo(CL_QUEUE_PROPERTIES)");
  return (props & CL_QUEUE_PROFILING_ENABLE) != 0;
}

/// Why `queue` cannot be used as a queue of (context, device), or "" when it can.
std::string queueMismatch(cl_command_queue queue, cl_context context, cl_device_id device) {
  cl_context qctx = nullptr;
  cl_int err = clGetCommandQueueInfo(queue, CL_QUEUE_CONTEXT, sizeof qctx, &qctx, nullptr);
  if (err != CL_SUCCESS) return "it is not a valid cl_command_queue (" + clErrorMessage("clGetCommandQueueInfo", err) + ")";
  if (qctx != context) return "it belongs to another cl_context";
  cl_device_id qdev = nullptr;
  err = clGetCommandQueueInfo(queue, CL_QUEUE_DEVICE, sizeof qdev, &qdev, nullptr);
  if (err != CL_SUCCESS) return clErrorMessage("clGetCommandQueueInfo(CL_QUEUE_DEVICE)", err);
  if (qdev != device) return "it targets another cl_device_id of the context";
  cl_command_queue_properties props = 0;
  err = clGetCommandQueueInfo(queue, CL_QUEUE_PROPERTIES, sizeof props, &props, nullptr);
  if (err != CL_SUCCESS) return clErrorMessage("clGetCommandQueueInfo(CL_QUEUE_PROPERTIES)", err);
  if (props & CL_QUEUE_OUT_OF_ORDER_EXEC_MODE_ENABLE)
    return "it is an out-of-order queue (the library orders work by in-order queues)";
  return "";
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

// ------------------------------------------------------------ registry ----

struct Registry {
  std::vector<std::shared_ptr<DeviceImpl>> devices;
  std::string reason;
};

int typeRank(cl_device_type type) {
  if (type & CL_DEVICE_TYPE_GPU) return 0;
  if (type & CL_DEVICE_TYPE_ACCELERATOR) return 1;
  if (type & CL_DEVICE_TYPE_CPU) return 2;
  return 3;
}

Registry enumerate() noexcept {
  Registry r;
  std::vector<std::string> skipped;
  try {
    cl_uint count = 0;
    cl_int err = clGetPlatformIDs(0, nullptr, &count);
    if (err == -1001 /* CL_PLATFORM_NOT_FOUND_KHR */ || (err == CL_SUCCESS && count == 0)) {
      r.reason = "no OpenCL platform is installed (the ICD loader found no driver; see /etc/OpenCL/vendors)";
      return r;
    }
    if (err != CL_SUCCESS) {
      r.reason = "cannot list OpenCL platforms: " + clErrorMessage("clGetPlatformIDs", err);
      return r;
    }
    noteBackendInitialised(ComputeBackend::opencl);  // the ICD loaded its drivers
    std::vector<cl_platform_id> platforms(count);
    checkCl(clGetPlatformIDs(count, platforms.data(), nullptr), "clGetPlatformIDs");

    struct Candidate {
      cl_platform_id platform;
      cl_device_id device;
      int rank;
    };
    std::vector<Candidate> candidates;
    for (cl_platform_id p : platforms) {
      const std::string pname = platformString(p, CL_PLATFORM_NAME);
      cl_uint n = 0;
      err = clGetDeviceIDs(p, CL_DEVICE_TYPE_ALL, 0, nullptr, &n);
      if (err == CL_DEVICE_NOT_FOUND || (err == CL_SUCCESS && n == 0)) {
        skipped.push_back(pname + ": no devices");
        continue;
      }
      if (err != CL_SUCCESS) {
        skipped.push_back(pname + ": " + clErrorMessage("clGetDeviceIDs", err));
        continue;
      }
      std::vector<cl_device_id> ids(n);
      if ((err = clGetDeviceIDs(p, CL_DEVICE_TYPE_ALL, n, ids.data(), nullptr)) != CL_SUCCESS) {
        skipped.push_back(pname + ": " + clErrorMessage("clGetDeviceIDs", err));
        continue;
      }
      for (cl_device_id d : ids) {
        try {
          const std::string dname = deviceString(d, CL_DEVICE_NAME, "CL_DEVICE_NAME");
          if (!deviceInfo<cl_bool>(d, CL_DEVICE_AVAILABLE, "CL_DEVICE_AVAILABLE")) {
            skipped.push_back(dname + " (" + pname + "): not available");
            continue;
          }
          if (!deviceInfo<cl_bool>(d, CL_DEVICE_COMPILER_AVAILABLE, "CL_DEVICE_COMPILER_AVAILABLE")) {
            skipped.push_back(dname + " (" + pname + "): no OpenCL C compiler");
            continue;
          }
          const std::string version = deviceString(d, CL_DEVICE_VERSION, "CL_DEVICE_VERSION");
          if (!versionAtLeast12(version)) {
            skipped.push_back(dname + " (" + pname + "): " + version + " is older than OpenCL 1.2");
            continue;
          }
          candidates.push_back({p, d, typeRank(deviceInfo<cl_device_type>(d, CL_DEVICE_TYPE, "CL_DEVICE_TYPE"))});
        } catch (const std::exception& e) {
          skipped.push_back(pname + ": " + e.what());
        }
      }
    }
    std::stable_sort(candidates.begin(), candidates.end(),
                     [](const Candidate& a, const Candidate& b) { return a.rank < b.rank; });

    for (const Candidate& c : candidates) {
      const cl_context_properties props[] = {CL_CONTEXT_PLATFORM, reinterpret_cast<cl_context_properties>(c.platform),
                                             0};
      cl_context ctx = clCreateContext(props, 1, &c.device, nullptr, nullptr, &err);
      if (err != CL_SUCCESS) {
        skipped.push_back(platformString(c.platform, CL_PLATFORM_NAME) + ": " + clErrorMessage("clCreateContext", err));
        continue;
      }
      cl_command_queue queue = clCreateCommandQueue(ctx, c.device, CL_QUEUE_PROFILING_ENABLE, &err);
      if (err != CL_SUCCESS) {
        clReleaseContext(ctx);
        skipped.push_back(platformString(c.platform, CL_PLATFORM_NAME) + ": " +
                          clErrorMessage("clCreateCommandQueue", err));
        continue;
      }
      try {
        r.devices.push_back(OpenCLDevice::create(c.platform, ctx, c.device, queue,
                                                 static_cast<int>(r.devices.size()), false));
      } catch (const std::exception& e) {  // create() released ctx and queue
        skipped.push_back(e.what());
      }
    }
  } catch (const std::exception& e) {
    skipped.push_back(e.what());
  } catch (...) {
    skipped.push_back("unknown failure while listing OpenCL devices");
  }
  if (r.devices.empty()) {
    r.reason = "no usable OpenCL device";
    for (std::size_t i = 0; i < skipped.size(); ++i) r.reason += (i == 0 ? ": " : "; ") + skipped[i];
  }
  return r;
}

const Registry& registry() {
  // Leaked on purpose: see the design note at the top of this file.
  static const Registry* const r = new Registry(enumerate());
  return *r;
}

// Adopted devices, weakly, by (context, device, queue).
using AdoptKey = std::tuple<void*, void*, void*>;
struct AdoptCache {
  std::mutex mutex;
  std::map<AdoptKey, std::weak_ptr<DeviceImpl>> devices;
};
AdoptCache& adoptCache() {
  static AdoptCache* const cache = new AdoptCache;  // leaked like the registry
  return *cache;
}

}  // namespace

// ---------------------------------------------------------------- events ----

OpenCLEvent::~OpenCLEvent() {
  if (!forkedAfterInit()) clReleaseEvent(event_);  // leaked in a forked child (no driver calls there)
}

bool OpenCLEvent::finished() const noexcept {
  cl_int status = CL_COMPLETE;
  if (clGetEventInfo(event_, CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof status, &status, nullptr) != CL_SUCCESS)
    return true;
  return status <= CL_COMPLETE;
}

bool OpenCLEvent::query() {
  cl_int status = CL_COMPLETE;
  checkCl(clGetEventInfo(event_, CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof status, &status, nullptr),
          "Event::query: clGetEventInfo");
  if (status < 0)
    fail(ErrorCode::BackendError,
         "Event::query: the recorded OpenCL work failed: " + std::string(clErrorName(status)) + " (" +
             std::to_string(status) + ")");
  return status == CL_COMPLETE;
}

void OpenCLEvent::synchronize() {
  const cl_int err = clWaitForEvents(1, &event_);
  if (err == CL_EXEC_STATUS_ERROR_FOR_EVENTS_IN_WAIT_LIST) {
    cl_int status = 0;
    clGetEventInfo(event_, CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof status, &status, nullptr);
    fail(ErrorCode::BackendError, "Event::waitForCompletion: the recorded OpenCL work failed: " +
                                      std::string(clErrorName(status)) + " (" + std::to_string(status) + ")");
  }
  checkCl(err, "Event::waitForCompletion: clWaitForEvents");
}

float OpenCLEvent::elapsedMs(EventImpl& later) {
  auto* end = dynamic_cast<OpenCLEvent*>(&later);
  if (end == nullptr)
    fail(ErrorCode::InvalidArgument, "Event::elapsedTime: the end event was not recorded by the OpenCL backend");
  if (!profiled_ || !end->profiled_)
    fail(ErrorCode::Unsupported,
         "Event::elapsedTime: an event was recorded on an OpenCL queue created without "
         "CL_QUEUE_PROFILING_ENABLE, so it carries no timestamps");
  cl_context a = nullptr, b = nullptr;
  checkCl(clGetEventInfo(event_, CL_EVENT_CONTEXT, sizeof a, &a, nullptr), "Event::elapsedTime: clGetEventInfo");
  checkCl(clGetEventInfo(end->event_, CL_EVENT_CONTEXT, sizeof b, &b, nullptr), "Event::elapsedTime: clGetEventInfo");
  if (a != b)
    fail(ErrorCode::InvalidArgument,
         "Event::elapsedTime: the two events belong to different OpenCL contexts (different devices)");
  synchronize();
  end->synchronize();
  cl_ulong t0 = 0, t1 = 0;
  cl_int err = clGetEventProfilingInfo(event_, CL_PROFILING_COMMAND_END, sizeof t0, &t0, nullptr);
  if (err == CL_SUCCESS) err = clGetEventProfilingInfo(end->event_, CL_PROFILING_COMMAND_END, sizeof t1, &t1, nullptr);
  if (err == CL_PROFILING_INFO_NOT_AVAILABLE)
    fail(ErrorCode::Unsupported, "Event::elapsedTime: this OpenCL driver gives no timestamps for markers (" +
                                     clErrorMessage("clGetEventProfilingInfo", err) + ")");
  checkCl(err, "Event::elapsedTime: clGetEventProfilingInfo");
  const double ns = t1 >= t0 ? static_cast<double>(t1 - t0) : -static_cast<double>(t0 - t1);
  return static_cast<float>(ns * 1e-6);
}

// ---------------------------------------------------------------- queues ----

OpenCLQueue::~OpenCLQueue() {
  if (!forkedAfterInit()) clReleaseCommandQueue(queue_);  // leaked in a forked child
}

void OpenCLQueue::synchronize() { checkCl(clFinish(queue_), "Stream::waitForCompletion: clFinish"); }

bool OpenCLQueue::query() {
  // OpenCL has no "is this queue idle" call: a marker completes when everything
  // before it has, but drivers retire even a marker on an idle queue only after a
  // moment (NVIDIA's updates event status from a polling thread: over a
  // millisecond). So poll the marker for a bounded time, backing off, and report
  // "busy" only past that bound: a queue with work still running stays busy longer.
  const auto marker = recordEvent();
  const auto start = std::chrono::steady_clock::now();
  const auto deadline = start + std::chrono::milliseconds(20);
  for (auto pause = std::chrono::microseconds(1); !marker->query();) {
    const auto now = std::chrono::steady_clock::now();
    if (now >= deadline) return false;
    if (now - start < std::chrono::microseconds(100)) {
      std::this_thread::yield();
    } else {
      std::this_thread::sleep_for(pause);
      pause = std::min(pause * 2, std::chrono::microseconds(1000));
    }
  }
  return true;
}

std::shared_ptr<EventImpl> OpenCLQueue::wrapEvent(cl_event event) const {
  try {
    return std::make_shared<OpenCLEvent>(event, queue_, profiled_);
  } catch (...) {
    clReleaseEvent(event);
    throw;
  }
}

std::shared_ptr<EventImpl> OpenCLQueue::recordEvent(bool /*timing*/) {
  // Every event of a profiling queue carries timestamps; without profiling the
  // event still orders work and elapsedMs reports Unsupported.
  cl_event event = nullptr;
  checkCl(clEnqueueMarkerWithWaitList(queue_, 0, nullptr, &event), "recordEvent: clEnqueueMarkerWithWaitList");
  auto result = wrapEvent(event);
  // Submit now: another queue, or a host thread polling query(), may wait on it.
  checkCl(clFlush(queue_), "recordEvent: clFlush");
  return result;
}

void OpenCLQueue::waitEvent(EventImpl& e) {
  auto* event = dynamic_cast<OpenCLEvent*>(&e);
  if (event == nullptr)
    fail(ErrorCode::InvalidArgument, "Stream::waitEvent: the event was not recorded by the OpenCL backend");
  if (event->queueKey() == queue_) return;  // in-order queue: already ordered
  cl_context ctx = nullptr;
  checkCl(clGetEventInfo(event->native(), CL_EVENT_CONTEXT, sizeof ctx, &ctx, nullptr),
          "Stream::waitEvent: clGetEventInfo");
  if (ctx != device_->nativeContext())
    fail(ErrorCode::InvalidArgument,
         "Stream::waitEvent: the event belongs to another OpenCL context than the queue (a queue can only wait "
         "for events of its own context)");
  cl_event native = event->native();
  checkCl(clEnqueueBarrierWithWaitList(queue_, 1, &native, nullptr), "Stream::waitEvent: clEnqueueBarrierWithWaitList");
}

// ----------------------------------------------------------- allocations ----

OpenCLAllocation::~OpenCLAllocation() {
  if (forkedAfterInit()) return;  // the parent's buffer: leaked, no driver call (nor cache lock) in a forked child
  if (external()) {
    clReleaseMemObject(mem());
    return;
  }
  static_cast<OpenCLDevice&>(*device()).recycle(mem(), capacity_, takePending());
}

// --------------------------------------------------------------- devices ----

std::shared_ptr<OpenCLDevice> OpenCLDevice::create(cl_platform_id platform, cl_context context, cl_device_id device,
                                                   cl_command_queue queue, int ordinal, bool adopted) {
  std::shared_ptr<OpenCLDevice> dev;
  bool profiled = false;
  try {
    profiled = queueProfiled(queue);
    dev.reset(new OpenCLDevice(platform, context, device, ordinal, adopted));
  } catch (...) {
    if (!dev) {  // the device did not take ownership yet
      clReleaseCommandQueue(queue);
      clReleaseContext(context);
      if (adopted) clReleaseDevice(device);
    }
    throw;
  }
  try {
    // Enumerated devices live forever, so their sdk queue may own them; an
    // adopted device must be destructible, so its sdk queue only points back.
    std::shared_ptr<DeviceImpl> back =
        adopted ? std::shared_ptr<DeviceImpl>(std::shared_ptr<DeviceImpl>(), dev.get()) : dev;
    dev->sdkQueue_ = std::make_shared<OpenCLQueue>(std::move(back), queue, profiled);
  } catch (...) {
    clReleaseCommandQueue(queue);
    throw;
  }
  return dev;
}

OpenCLDevice::OpenCLDevice(cl_platform_id platform, cl_context context, cl_device_id device, int ordinal,
                           bool adopted)
    : platform_(platform), context_(context), device_(device), ordinal_(ordinal), adopted_(adopted) {
  model_ = deviceString(device, CL_DEVICE_NAME, "CL_DEVICE_NAME");
  // The platform name ("NVIDIA CUDA", "Portable Computing Language") tells the
  // user which driver runs the device; CL_DEVICE_VENDOR would name the CPU maker.
  vendor_ = platformString(platform, CL_PLATFORM_NAME);
  globalMemBytes_ = static_cast<std::size_t>(deviceInfo<cl_ulong>(device, CL_DEVICE_GLOBAL_MEM_SIZE, "CL_DEVICE_GLOBAL_MEM_SIZE"));
  maxAllocBytes_ =
      static_cast<std::size_t>(deviceInfo<cl_ulong>(device, CL_DEVICE_MAX_MEM_ALLOC_SIZE, "CL_DEVICE_MAX_MEM_ALLOC_SIZE"));
  hasFp64_ = deviceInfo<cl_device_fp_config>(device, CL_DEVICE_DOUBLE_FP_CONFIG, "CL_DEVICE_DOUBLE_FP_CONFIG") != 0;
  cacheLimitBytes_ = std::clamp<std::size_t>(globalMemBytes_ / 8, std::size_t{16} << 20, std::size_t{1} << 30);
}

OpenCLDevice::~OpenCLDevice() {
  // In a forked child everything here belongs to the parent's driver state: leaked.
  if (forkedAfterInit()) return;
  // Only adopted devices are ever destroyed. Release in dependency order, cached
  // allocations (which hold no reference to the device) first, then leave the exit
  // handler's list (no handler touches the device after that); the caller's objects
  // keep living with the caller's own references.
  releaseCachedMemory();
  forgetAtExit();
  std::list<CachedBuffer> cache;
  {
    std::lock_guard<std::mutex> lock(cacheMutex_);
    cache.swap(cache_);
  }
  for (auto& b : cache) clReleaseMemObject(b.mem);
  cache.clear();
  for (auto& [name, slot] : kernels_) clReleaseKernel(slot->kernel);
  kernels_.clear();
  if (program_) clReleaseProgram(program_);
  sdkQueue_.reset();
  clReleaseContext(context_);
  if (adopted_) clReleaseDevice(device_);
}

std::string OpenCLDevice::describe() const {
  const std::string what = model_ + " / " + vendor_;
  return ordinal_ >= 0 ? "opencl:" + std::to_string(ordinal_) + " (" + what + ")" : "adopted OpenCL device (" + what + ")";
}

std::size_t OpenCLDevice::freeMemory() {
  // OpenCL has no portable free-memory query; report global memory minus what
  // this library holds (live and cached), which is exact when the library is the
  // device's only user.
  std::lock_guard<std::mutex> lock(cacheMutex_);
  const std::size_t used = liveBytes_ + cachedBytes_;
  return used >= globalMemBytes_ ? 0 : globalMemBytes_ - used;
}

OpenCLQueue& OpenCLDevice::queueOf(QueueImpl& q, const char* fn) {
  if (q.device().get() != this)
    fail(ErrorCode::InvalidArgument, std::string(fn) + ": the queue belongs to " +
                                         (q.device() ? ComputeDevice(q.device()).toString() : "no device") +
                                         ", not to " + describe());
  return static_cast<OpenCLQueue&>(q);
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

std::shared_ptr<QueueImpl> OpenCLDevice::doCreateQueue() {
  cl_int err = CL_SUCCESS;
  cl_command_queue q = clCreateCommandQueue(context_, device_, CL_QUEUE_PROFILING_ENABLE, &err);
  checkCl(err, "Stream: clCreateCommandQueue");
  try {
    return std::make_shared<OpenCLQueue>(shared_from_this(), q, true);
  } catch (...) {
    clReleaseCommandQueue(q);
    throw;
  }
}

std::shared_ptr<QueueImpl> OpenCLDevice::doWrapQueue(void* native) {
  auto* sdk = static_cast<cl_command_queue>(sdkQueue_->native());
  cl_command_queue q = native == nullptr ? sdk : static_cast<cl_command_queue>(native);
  if (q == sdk && !adopted_) return sdkQueue_;
  if (q != sdk) {
    const std::string why = queueMismatch(q, context_, device_);
    if (!why.empty())
      fail(ErrorCode::InvalidArgument, "Stream::wrap: cannot use the cl_command_queue " +
                                           std::to_string(reinterpret_cast<std::uintptr_t>(q)) + " on " + describe() +
                                           ": " + why);
  }
  checkCl(clRetainCommandQueue(q), "Stream::wrap: clRetainCommandQueue");
  try {
    return std::make_shared<OpenCLQueue>(shared_from_this(), q, queueProfiled(q));
  } catch (...) {
    clReleaseCommandQueue(q);
    throw;
  }
}

std::shared_ptr<EventImpl> OpenCLDevice::doRecordTimingEvent(QueueImpl& q) {
  return queueOf(q, "Event::record").recordEvent(true);
}

// ---------------------------------------------------------------- memory ----

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
  checkCl(clGetMemObjectInfo(mem, CL_MEM_CONTEXT, sizeof ctx, &ctx, nullptr), std::string(fn) + ": clGetMemObjectInfo");
  if (ctx != context_)
    fail(ErrorCode::InvalidArgument,
         std::string(fn) + ": the cl_mem belongs to another cl_context than " + describe() +
             " (share the context with ComputeDevice::fromOpenCL to use the caller's buffers)");
  std::size_t size = 0;
  checkCl(clGetMemObjectInfo(mem, CL_MEM_SIZE, sizeof size, &size, nullptr), std::string(fn) + ": clGetMemObjectInfo");
  if (bytes == 0) bytes = size;
  if (bytes > size)
    fail(ErrorCode::InvalidArgument, std::string(fn) + ": " + std::to_string(bytes) +
                                         " bytes declared, but the cl_mem holds only " + std::to_string(size));
  checkCl(clRetainMemObject(mem), std::string(fn) + ": clRetainMemObject");
  try {
    return std::make_shared<OpenCLAllocation>(shared_from_this(), mem, bytes, size, false);
  } catch (...) {
    clReleaseMemObject(mem);
    throw;
  }
}

// --------------------------------------------------------------- kernels ----

cl_program OpenCLDevice::program() {
  std::lock_guard<std::mutex> lock(programMutex_);
  if (program_ != nullptr) return program_;
  if (!buildError_.empty()) fail(ErrorCode::BackendError, buildError_);
  const char* source = kOpenCLProgramSource;
  const std::size_t length = std::strlen(source);
  cl_int err = CL_SUCCESS;
  cl_program p = clCreateProgramWithSource(context_, 1, &source, &length, &err);
  checkCl(err, "building the OpenCL program: clCreateProgramWithSource");
  std::string options = "-cl-std=CL1.2";
  if (hasFp64_) options += " -DDA_HAS_FP64=1";
  err = clBuildProgram(p, 1, &device_, options.c_str(), nullptr, nullptr);
  if (err != CL_SUCCESS) {
    std::string log;
    std::size_t size = 0;
    if (clGetProgramBuildInfo(p, device_, CL_PROGRAM_BUILD_LOG, 0, nullptr, &size) == CL_SUCCESS && size > 0) {
      log.resize(size);
      clGetProgramBuildInfo(p, device_, CL_PROGRAM_BUILD_LOG, size, log.data(), nullptr);
      while (!log.empty() && log.back() == '\0') log.pop_back();
      if (log.size() > kMaxBuildLogChars) log = log.substr(0, kMaxBuildLogChars) + "\n[build log truncated]";
    }
    clReleaseProgram(p);
    std::string message = "building the OpenCL program for " + describe() + " with \"" + options +
                          "\" failed: " + clErrorMessage("clBuildProgram", err) + "\nbuild log:\n" + log;
    // A compile error is deterministic: report it again instead of rebuilding.
    // Other failures (e.g. out of memory) may be transient and are retried.
    if (err == CL_BUILD_PROGRAM_FAILURE) buildError_ = message;
    fail(ErrorCode::BackendError, message);
  }
  program_ = p;
  return p;
}

OpenCLDevice::KernelSlot& OpenCLDevice::kernel(const char* name) {
  std::lock_guard<std::mutex> lock(kernelsMutex_);
  auto it = kernels_.find(name);
  if (it != kernels_.end()) return *it->second;
  cl_program p = program();
  cl_int err = CL_SUCCESS;
  cl_kernel k = clCreateKernel(p, name, &err);
  if (err == CL_INVALID_KERNEL_NAME)
    fail(ErrorCode::Unsupported, std::string("launch: no OpenCL kernel named '") + name +
                                     "' in the program (kernels come from src/kernels/*.h and src/opencl/*.cl)");
  checkCl(err, std::string("clCreateKernel(") + name + ")");
  auto slot = std::make_unique<KernelSlot>();
  slot->kernel = k;
  err = clGetKernelInfo(k, CL_KERNEL_NUM_ARGS, sizeof slot->numArgs, &slot->numArgs, nullptr);
  if (err != CL_SUCCESS) {
    clReleaseKernel(k);
    checkCl(err, std::string("clGetKernelInfo(") + name + ")");
  }
  KernelSlot& ref = *slot;
  kernels_.emplace(name, std::move(slot));
  return ref;
}

void OpenCLDevice::enqueueKernel(const char* fn, const char* name, OpenCLQueue& q, cl_uint workDims,
                                 const std::size_t* global, const std::vector<RawArg>& args,
                                 const std::size_t* local) {
  KernelSlot& k = kernel(name);
  if (args.size() != k.numArgs)
    fail(ErrorCode::InvalidArgument, std::string(fn) + ": kernel '" + name + "' takes " + std::to_string(k.numArgs) +
                                         " OpenCL arguments but " + std::to_string(args.size()) +
                                         " were given (a buffer counts as two: cl_mem and byte offset)");
  std::lock_guard<std::mutex> lock(k.mutex);
  for (std::size_t i = 0; i < args.size(); ++i) {
    const cl_int err = clSetKernelArg(k.kernel, static_cast<cl_uint>(i), args[i].size, args[i].value);
    if (err == CL_INVALID_ARG_SIZE || err == CL_INVALID_ARG_VALUE || err == CL_INVALID_MEM_OBJECT)
      fail(ErrorCode::InvalidArgument, std::string(fn) + ": argument " + std::to_string(i) + " of kernel '" + name +
                                           "' does not match its parameter (" + clErrorMessage("clSetKernelArg", err) +
                                           ")");
    checkCl(err, std::string(fn) + ": clSetKernelArg(" + name + ", " + std::to_string(i) + ")");
  }
  checkCl(clEnqueueNDRangeKernel(q.queue(), k.kernel, workDims, nullptr, global, local, 0, nullptr, nullptr),
          std::string(fn) + ": clEnqueueNDRangeKernel(" + name + ")");
}

void OpenCLDevice::doLaunch(const KernelLaunch& l, QueueImpl& qi) {
  const char* fn = "launch";
  OpenCLQueue& q = queueOf(qi, fn);
  if (l.name == nullptr || *l.name == '\0') fail(ErrorCode::InvalidArgument, "launch: the kernel name is empty");
  if (l.workDims < 1 || l.workDims > 3)
    fail(ErrorCode::InvalidArgument, std::string("launch: ") + l.name + ": workDims " + std::to_string(l.workDims) +
                                         " is not 1, 2 or 3");
  l.checkWorkGroup(std::string("launch: ") + l.name);
  for (int i = 0; i < l.workDims; ++i)
    if (l.globalSize[static_cast<std::size_t>(i)] == 0) return;  // an empty index space launches nothing

  // Storage that outlives the RawArg pointers into it (8 bytes per value).
  std::vector<cl_mem> mems(l.args.size());
  std::vector<cl_ulong> values(l.args.size());
  std::vector<RawArg> raw;
  raw.reserve(l.args.size() * 2);
  for (std::size_t i = 0; i < l.args.size(); ++i) {
    const KernelArg& a = l.args[i];
    void* slot = &values[i];
    switch (a.kind) {
      case KernelArg::Kind::buffer: {
        mems[i] = memOf(a.buffer, fn);
        if (a.buffer->bytes() != 0 && a.offset > a.buffer->bytes())
          fail(ErrorCode::OutOfRange, std::string("launch: ") + l.name + ": byte offset " +
                                               std::to_string(a.offset) + " of argument " + std::to_string(i) +
                                               " is past the end of its " + std::to_string(a.buffer->bytes()) +
                                               "-byte buffer");
        values[i] = a.offset;
        raw.push_back({sizeof(cl_mem), &mems[i]});
        raw.push_back({sizeof(cl_ulong), slot});
        break;
      }
      case KernelArg::Kind::i32: std::memcpy(slot, &a.value.i32, 4); raw.push_back({4, slot}); break;
      case KernelArg::Kind::u32: std::memcpy(slot, &a.value.u32, 4); raw.push_back({4, slot}); break;
      case KernelArg::Kind::f32: std::memcpy(slot, &a.value.f32, 4); raw.push_back({4, slot}); break;
      case KernelArg::Kind::i64: std::memcpy(slot, &a.value.i64, 8); raw.push_back({8, slot}); break;
      case KernelArg::Kind::u64: std::memcpy(slot, &a.value.u64, 8); raw.push_back({8, slot}); break;
      case KernelArg::Kind::f64: std::memcpy(slot, &a.value.f64, 8); raw.push_back({8, slot}); break;
    }
  }
  const std::size_t global[3] = {l.globalSize[0], l.globalSize[1], l.globalSize[2]};
  const std::size_t local[3] = {l.localSize, 1, 1};
  enqueueKernel(fn, l.name, q, static_cast<cl_uint>(l.workDims), global, raw, l.localSize != 0 ? local : nullptr);
}

// ------------------------------------------------------- free functions ----

}  // namespace devicearray::detail::opencl

namespace devicearray::detail {

std::vector<std::shared_ptr<DeviceImpl>> openclDevices() {
  try {
    return opencl::registry().devices;
  } catch (...) {  // copying the list cannot fail in practice; never throw here
    return {};
  }
}

std::string openclUnavailableReason() {
  try {
    return opencl::registry().reason;
  } catch (...) {
    return "the OpenCL device list could not be built";
  }
}

std::shared_ptr<DeviceImpl> openclAdopt(void* context, void* device, void* queue) {
  using namespace opencl;
  const std::string fn = "ComputeDevice::fromOpenCL";
  if (context == nullptr || device == nullptr || queue == nullptr)
    fail(ErrorCode::InvalidArgument, fn + ": the cl_context, cl_device_id and cl_command_queue must all be non-null (got " +
                                         (context ? "context" : "null context") + ", " +
                                         (device ? "device" : "null device") + ", " + (queue ? "queue" : "null queue") +
                                         ")");
  auto ctx = static_cast<cl_context>(context);
  auto dev = static_cast<cl_device_id>(device);
  auto q = static_cast<cl_command_queue>(queue);
  noteBackendInitialised(ComputeBackend::opencl);  // the caller's OpenCL objects exist

  cl_uint n = 0;
  cl_int err = clGetContextInfo(ctx, CL_CONTEXT_NUM_DEVICES, sizeof n, &n, nullptr);
  if (err != CL_SUCCESS)
    fail(ErrorCode::InvalidArgument, fn + ": the context is not a valid cl_context (" +
                                         clErrorMessage("clGetContextInfo", err) + ")");
  std::vector<cl_device_id> members(n);
  checkCl(clGetContextInfo(ctx, CL_CONTEXT_DEVICES, n * sizeof(cl_device_id), members.data(), nullptr),
          fn + ": clGetContextInfo");
  if (std::find(members.begin(), members.end(), dev) == members.end())
    fail(ErrorCode::InvalidArgument, fn + ": the cl_device_id is not a device of the cl_context");
  const std::string why = queueMismatch(q, ctx, dev);
  if (!why.empty()) fail(ErrorCode::InvalidArgument, fn + ": the cl_command_queue cannot be used: " + why);
  const std::string version = [&] {
    std::size_t size = 0;
    if (clGetDeviceInfo(dev, CL_DEVICE_VERSION, 0, nullptr, &size) != CL_SUCCESS) return std::string();
    std::string s(size, '\0');
    clGetDeviceInfo(dev, CL_DEVICE_VERSION, size, s.data(), nullptr);
    return s;
  }();
  if (!versionAtLeast12(version))
    fail(ErrorCode::Unsupported, fn + ": the device reports \"" + version + "\"; OpenCL 1.2 or newer is required");
  cl_platform_id platform = nullptr;
  checkCl(clGetDeviceInfo(dev, CL_DEVICE_PLATFORM, sizeof platform, &platform, nullptr),
          fn + ": clGetDeviceInfo(CL_DEVICE_PLATFORM)");

  AdoptCache& cache = adoptCache();
  std::lock_guard<std::mutex> lock(cache.mutex);
  for (auto it = cache.devices.begin(); it != cache.devices.end();)
    it = it->second.expired() ? cache.devices.erase(it) : std::next(it);
  const AdoptKey key{context, device, queue};
  if (auto it = cache.devices.find(key); it != cache.devices.end())
    if (auto alive = it->second.lock()) return alive;

  checkCl(clRetainContext(ctx), fn + ": clRetainContext");
  if (cl_int e = clRetainDevice(dev); e != CL_SUCCESS) {
    clReleaseContext(ctx);
    checkCl(e, fn + ": clRetainDevice");
  }
  if (cl_int e = clRetainCommandQueue(q); e != CL_SUCCESS) {
    clReleaseDevice(dev);
    clReleaseContext(ctx);
    checkCl(e, fn + ": clRetainCommandQueue");
  }
  std::shared_ptr<DeviceImpl> result = OpenCLDevice::create(platform, ctx, dev, q, -1, true);
  cache.devices[key] = result;
  return result;
}

}  // namespace devicearray::detail
