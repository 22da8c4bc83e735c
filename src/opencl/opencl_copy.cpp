// The OpenCL copy engine: strided N-d copies (device<->device, host<->device),
// pattern fills and depth conversions.
//
// Each operation picks the cheapest command that expresses the layout:
//   one contiguous run      -> clEnqueueCopyBuffer / Read / Write / FillBuffer
//   <= 2 strided axes        -> the *Rect commands
//   anything else            -> one launch of da_copy_strided / da_fill_strided
// Host transfers of layouts the Rect commands cannot express go through a packed
// staging image. The host side of that (packing a strided host source, unpacking
// into a strided host destination) runs on the OpenCL callback thread, gated by
// user events, so it happens in queue order without blocking the caller: a later
// clFinish, event or command on the queue covers it.
#include <CL/cl.h>

#include <algorithm>
#include <cstring>
#include <functional>
#include <memory>
#include <string>

#include "opencl/cl_error.hpp"
#include "opencl/opencl_device.hpp"

namespace devicearray::detail::opencl {
namespace {

// Kernel argument layouts; must match da_copy_layout / da_fill_layout in
// copy.cl / fill.cl (64-bit integers first, so there is no padding to disagree on).
struct CopyLayoutArg {
  cl_long size[kMaxDims];
  cl_long dstStep[kMaxDims];
  cl_long srcStep[kMaxDims];
};
static_assert(sizeof(CopyLayoutArg) == 3 * 8 * kMaxDims);
struct FillLayoutArg {
  cl_long size[kMaxDims];
  cl_long step[kMaxDims];
  cl_uchar pattern[32];
};
static_assert(sizeof(FillLayoutArg) == 2 * 8 * kMaxDims + 32);

std::int64_t mulChecked(std::int64_t a, std::int64_t b, const char* fn) {
  std::int64_t r = 0;
  if (__builtin_mul_overflow(a, b, &r))
    fail(ErrorCode::OutOfRange, std::string(fn) + ": byte offsets overflow 64 bits (" + std::to_string(a) + " * " +
                                    std::to_string(b) + ")");
  return r;
}

std::int64_t addChecked(std::int64_t a, std::int64_t b, const char* fn) {
  std::int64_t r = 0;
  if (__builtin_add_overflow(a, b, &r))
    fail(ErrorCode::OutOfRange, std::string(fn) + ": byte offsets overflow 64 bits (" + std::to_string(a) + " + " +
                                    std::to_string(b) + ")");
  return r;
}

/// Element count of a validated shape (every size > 0), overflow-checked.
std::int64_t elementCount(int dims, const std::int64_t* size, const char* fn) {
  std::int64_t n = 1;
  for (int i = 0; i < dims; ++i) n = mulChecked(n, size[i], fn);
  return n;
}

/// Checks a shape: dims in 0..kMaxDims and sizes >= 0. Returns false when some
/// axis is empty (nothing to do).
bool validShape(int dims, const std::int64_t* size, const char* fn) {
  if (dims < 0 || dims > kMaxDims)
    fail(ErrorCode::InvalidArgument,
         std::string(fn) + ": " + std::to_string(dims) + " axes; 0.." + std::to_string(kMaxDims) + " are supported");
  bool any = true;
  for (int i = 0; i < dims; ++i) {
    if (size[i] < 0)
      fail(ErrorCode::InvalidArgument,
           std::string(fn) + ": axis " + std::to_string(i) + " has negative size " + std::to_string(size[i]));
    if (size[i] == 0) any = false;
  }
  return any;
}

/// Throws unless the bytes touched by a strided layout lie in [0, bytes) of its
/// allocation (bytes == 0: unknown size, only the lower bound is checked).
void checkInside(const Allocation& a, int dims, const std::int64_t* size, const std::int64_t* step,
                 std::size_t offset, std::size_t elemSize, const char* fn, const char* side) {
  if (offset > static_cast<std::size_t>(INT64_MAX) || elemSize > static_cast<std::size_t>(INT64_MAX))
    fail(ErrorCode::OutOfRange, std::string(fn) + ": " + side + " offset " + std::to_string(offset) + " is too large");
  std::int64_t lo = static_cast<std::int64_t>(offset);
  std::int64_t hi = addChecked(lo, static_cast<std::int64_t>(elemSize), fn);
  for (int i = 0; i < dims; ++i) {
    const std::int64_t reach = mulChecked(size[i] - 1, step[i], fn);
    if (reach < 0)
      lo = addChecked(lo, reach, fn);
    else
      hi = addChecked(hi, reach, fn);
  }
  if (lo < 0)
    fail(ErrorCode::OutOfRange, std::string(fn) + ": the " + side + " layout reaches " + std::to_string(-lo) +
                                    " bytes before the start of its buffer");
  if (a.bytes() != 0 && static_cast<std::uint64_t>(hi) > a.bytes())
    fail(ErrorCode::OutOfRange, std::string(fn) + ": the " + side + " layout ends at byte " + std::to_string(hi) +
                                    " of a " + std::to_string(a.bytes()) + "-byte buffer");
}

/// True when the layout is the row-major packing of its elements.
bool packed(int dims, const std::int64_t* size, const std::int64_t* step, std::int64_t elemSize) {
  std::int64_t expect = elemSize;
  for (int i = dims - 1; i >= 0; --i) {
    if (size[i] != 1 && step[i] != expect) return false;
    expect *= size[i];
  }
  return true;
}

void packedSteps(int dims, const std::int64_t* size, std::int64_t elemSize, std::int64_t* step) {
  std::int64_t s = elemSize;
  for (int i = dims - 1; i >= 0; --i) {
    step[i] = s;
    s *= size[i];
  }
}

/// Widest word (16/8/4/2/1 bytes) dividing the element size, the offsets and every step.
int wordBytes(std::size_t elemSize, std::initializer_list<std::int64_t> offsets, int dims,
              std::initializer_list<const std::int64_t*> steps) {
  for (int w : {16, 8, 4, 2}) {
    bool ok = elemSize % static_cast<std::size_t>(w) == 0;
    for (std::int64_t o : offsets) ok = ok && o % w == 0;
    for (const std::int64_t* s : steps)
      for (int i = 0; ok && i < dims; ++i) ok = s[i] % w == 0;
    if (ok) return w;
  }
  return 1;
}

/// Calls fn(offsetA, offsetB) for every element of the shape, row-major.
template <class Fn>
void forEachElement(int dims, const std::int64_t* size, const std::int64_t* stepA, const std::int64_t* stepB, Fn&& fn) {
  std::int64_t idx[kMaxDims] = {};
  std::int64_t a = 0, b = 0;
  while (true) {
    fn(a, b);
    int axis = dims - 1;
    for (; axis >= 0; --axis) {
      if (++idx[axis] < size[axis]) {
        a += stepA[axis];
        b += stepB[axis];
        break;
      }
      a -= (size[axis] - 1) * stepA[axis];
      b -= (size[axis] - 1) * stepB[axis];
      idx[axis] = 0;
    }
    if (axis < 0) return;
  }
}

// ----------------------------------------------------------------- rects ----

struct Rect {
  std::size_t region[3] = {1, 1, 1};
  std::size_t dstRow = 0, dstSlice = 0, srcRow = 0, srcSlice = 0;
};

/// The Rect form of a 1- or 2-axis copy, when OpenCL's pitch rules allow it:
/// positive pitches, rows at least one element apart, and a slice pitch that is
/// a multiple of the row pitch and covers all rows.
bool rectOf(const CopyDesc& d, Rect& r) {
  if (d.dims < 1 || d.dims > 2) return false;
  const std::int64_t e = static_cast<std::int64_t>(d.elemSize);
  const int inner = d.dims - 1;
  for (const auto* step : {d.dstStep.data(), d.srcStep.data()}) {
    for (int i = 0; i < d.dims; ++i)
      if (step[i] <= 0) return false;
    if (step[inner] < e) return false;
    if (d.dims == 2 && (step[0] % step[1] != 0 || step[0] / step[1] < d.size[1])) return false;
  }
  r.region[0] = d.elemSize;
  r.region[1] = static_cast<std::size_t>(d.size[inner]);
  r.region[2] = d.dims == 2 ? static_cast<std::size_t>(d.size[0]) : 1;
  r.dstRow = static_cast<std::size_t>(d.dstStep[inner]);
  r.srcRow = static_cast<std::size_t>(d.srcStep[inner]);
  r.dstSlice = d.dims == 2 ? static_cast<std::size_t>(d.dstStep[0]) : r.dstRow * r.region[1];
  r.srcSlice = d.dims == 2 ? static_cast<std::size_t>(d.srcStep[0]) : r.srcRow * r.region[1];
  return true;
}

/// True when a rect region at `offset` also fits whole: some drivers (NVIDIA's)
/// check region[2] full slices against the buffer size rather than the bytes the
/// copy touches, and refuse a region whose last slice's padding lies past the end.
bool rectFitsWhole(cl_mem mem, std::size_t offset, std::size_t slicePitch, std::size_t slices) {
  std::size_t size = 0;
  if (clGetMemObjectInfo(mem, CL_MEM_SIZE, sizeof size, &size, nullptr) != CL_SUCCESS) return false;
  return slices <= (size - std::min(size, offset)) / slicePitch;
}

/// A byte offset as a Rect origin {x bytes, row, slice} under the given pitches.
void originOf(std::size_t offset, std::size_t row, std::size_t slice, std::size_t out[3]) {
  out[2] = offset / slice;
  const std::size_t rest = offset % slice;
  out[1] = rest / row;
  out[0] = rest % row;
}

// ------------------------------------------------- host steps in queue order ----

/// Host work gated into a queue: runs when `trigger` completes, then opens `gate`.
struct HostStep {
  std::function<void()> work;
  cl_event trigger;  // owned reference, so the callback's event stays valid
  cl_event gate;     // user event the queue waits on; owned reference
};

void CL_CALLBACK runHostStep(cl_event, cl_int status, void* data) {
  std::unique_ptr<HostStep> step(static_cast<HostStep*>(data));
  cl_int result = CL_COMPLETE;
  if (status == CL_COMPLETE) {
    try {
      step->work();
    } catch (...) {
      result = CL_OUT_OF_HOST_MEMORY;  // the only way packing can fail
    }
  } else {
    result = status < 0 ? status : CL_INVALID_EVENT;  // propagate the failure down the queue
  }
  step->work = nullptr;  // frees staging memory before later commands run
  clSetUserEventStatus(step->gate, result);
  clReleaseEvent(step->gate);
  clReleaseEvent(step->trigger);
}

/// Makes `work` part of queue order: it runs after `trigger` (a command on q;
/// this takes over its reference) and before anything enqueued on q afterwards.
void enqueueHostStep(OpenCLDevice& dev, OpenCLQueue& q, cl_event trigger, std::function<void()> work, const char* fn) {
  cl_int err = CL_SUCCESS;
  cl_event gate = clCreateUserEvent(dev.context(), &err);
  if (err != CL_SUCCESS) {
    clReleaseEvent(trigger);
    checkCl(err, std::string(fn) + ": clCreateUserEvent");
  }
  err = clEnqueueBarrierWithWaitList(q.queue(), 1, &gate, nullptr);
  if (err != CL_SUCCESS) {
    // Nothing waits on the gate yet: run the step here, after its trigger.
    clWaitForEvents(1, &trigger);
    work();
    clSetUserEventStatus(gate, CL_COMPLETE);
    clReleaseEvent(gate);
    clReleaseEvent(trigger);
    checkCl(err, std::string(fn) + ": clEnqueueBarrierWithWaitList");
  }
  auto* step = new HostStep{std::move(work), trigger, gate};
  err = clSetEventCallback(trigger, CL_COMPLETE, runHostStep, step);
  if (err != CL_SUCCESS) {
    // The queue already waits on the gate, so it must be opened: do the step
    // here once the trigger has completed (blocking, but only on this failure).
    cl_int status = CL_COMPLETE;
    if (clWaitForEvents(1, &trigger) != CL_SUCCESS) status = CL_EXEC_STATUS_ERROR_FOR_EVENTS_IN_WAIT_LIST;
    runHostStep(trigger, status, step);
  }
  checkCl(clFlush(q.queue()), std::string(fn) + ": clFlush");
}

/// Keeps `keep` alive until `event` completes (takes over the event's reference).
void releaseAfter(cl_event event, std::shared_ptr<void> keep) {
  struct Keep {
    std::shared_ptr<void> keep;
    cl_event event;
  };
  auto* k = new Keep{std::move(keep), event};
  auto done = [](cl_event, cl_int, void* data) {
    std::unique_ptr<Keep> owned(static_cast<Keep*>(data));
    clReleaseEvent(owned->event);
  };
  if (clSetEventCallback(event, CL_COMPLETE, done, k) != CL_SUCCESS) {
    clWaitForEvents(1, &event);  // cannot defer: hold the memory until the command is done
    done(event, CL_COMPLETE, k);
  }
}

// ------------------------------------------------------------- launches ----

void enqueueStridedCopy(OpenCLDevice& dev, OpenCLQueue& q, cl_mem dst, std::int64_t dstOffset,
                        const std::int64_t* dstStep, cl_mem src, std::int64_t srcOffset, const std::int64_t* srcStep,
                        int dims, const std::int64_t* size, std::size_t elemSize, const char* fn) {
  CopyLayoutArg layout{};
  for (int i = 0; i < dims; ++i) {
    layout.size[i] = size[i];
    layout.dstStep[i] = dstStep[i];
    layout.srcStep[i] = srcStep[i];
  }
  const cl_int word = wordBytes(elemSize, {dstOffset, srcOffset}, dims, {dstStep, srcStep});
  const cl_long wordsPerElem = static_cast<cl_long>(elemSize) / word;
  const cl_long total = mulChecked(elementCount(dims, size, fn), wordsPerElem, fn);
  const cl_ulong dOff = static_cast<cl_ulong>(dstOffset), sOff = static_cast<cl_ulong>(srcOffset);
  const cl_int nd = dims;
  const std::size_t global[1] = {static_cast<std::size_t>(total)};
  dev.enqueueKernel(fn, "da_copy_strided", q, 1, global,
                    {{sizeof(cl_mem), &dst}, {8, &dOff}, {sizeof(cl_mem), &src}, {8, &sOff},
                     {sizeof layout, &layout}, {4, &nd}, {4, &word}, {8, &wordsPerElem}, {8, &total}});
}

}  // namespace

// ----------------------------------------------------------------- copy ----

void OpenCLDevice::doCopy(const CopyDesc& d, QueueImpl& qi) {
  const char* fn = "copy";
  OpenCLQueue& q = queueOf(qi, fn);
  if (!validShape(d.dims, d.size.data(), fn)) return;
  if (d.elemSize == 0) fail(ErrorCode::InvalidArgument, "copy: the element size is 0");
  if (d.src.isHost() && d.dst.isHost())
    fail(ErrorCode::InvalidArgument, "copy: both sides are host memory; a device copy needs a device side");
  const std::int64_t count = elementCount(d.dims, d.size.data(), fn);
  const std::int64_t totalBytes = mulChecked(count, static_cast<std::int64_t>(d.elemSize), fn);
  const auto e = static_cast<std::int64_t>(d.elemSize);

  cl_mem dstMem = nullptr, srcMem = nullptr;
  if (d.dst.isHost()) {
    if (d.dst.host == nullptr) fail(ErrorCode::InvalidArgument, "copy: null host destination");
  } else {
    dstMem = memOf(d.dst.device, fn);
    checkInside(*d.dst.device, d.dims, d.size.data(), d.dstStep.data(), d.dst.offset, d.elemSize, fn, "destination");
  }
  if (d.src.isHost()) {
    if (d.src.host == nullptr) fail(ErrorCode::InvalidArgument, "copy: null host source");
  } else {
    srcMem = memOf(d.src.device, fn);
    checkInside(*d.src.device, d.dims, d.size.data(), d.srcStep.data(), d.src.offset, d.elemSize, fn, "source");
  }
  const auto dstOff = static_cast<std::int64_t>(d.dst.offset);
  const auto srcOff = static_cast<std::int64_t>(d.src.offset);
  Rect rect;
  bool isRect = rectOf(d, rect);
  if (isRect && dstMem != nullptr) isRect = rectFitsWhole(dstMem, d.dst.offset, rect.dstSlice, rect.region[2]);
  if (isRect && srcMem != nullptr) isRect = rectFitsWhole(srcMem, d.src.offset, rect.srcSlice, rect.region[2]);

  // ---- device -> device
  if (dstMem != nullptr && srcMem != nullptr) {
    // The buffer commands refuse overlapping ranges of one cl_mem even when the
    // elements interleave without touching (e.g. channel to channel); the kernel
    // handles those.
    bool sameBuffer = dstMem == srcMem;
    if (sameBuffer) {
      std::int64_t dHi = dstOff + e, sHi = srcOff + e;
      for (int i = 0; i < d.dims; ++i) {
        dHi += (d.size[i] - 1) * std::max<std::int64_t>(d.dstStep[i], 0);
        sHi += (d.size[i] - 1) * std::max<std::int64_t>(d.srcStep[i], 0);
      }
      bool negative = false;
      for (int i = 0; i < d.dims; ++i) negative = negative || d.dstStep[i] < 0 || d.srcStep[i] < 0;
      sameBuffer = negative || (dstOff < sHi && srcOff < dHi);
    }
    if (d.dims == 0 && !sameBuffer) {
      checkCl(clEnqueueCopyBuffer(q.queue(), srcMem, dstMem, d.src.offset, d.dst.offset, d.elemSize, 0, nullptr, nullptr),
              "copy: clEnqueueCopyBuffer");
      return;
    }
    // Rows narrower than 16 bytes copy faster as one kernel than as a rect
    // command; within one cl_mem the rect command demands equal pitches.
    if (isRect && dstMem != srcMem && d.elemSize >= 16) {
      std::size_t so[3], dO[3];
      originOf(d.src.offset, rect.srcRow, rect.srcSlice, so);
      originOf(d.dst.offset, rect.dstRow, rect.dstSlice, dO);
      checkCl(clEnqueueCopyBufferRect(q.queue(), srcMem, dstMem, so, dO, rect.region, rect.srcRow, rect.srcSlice,
                                      rect.dstRow, rect.dstSlice, 0, nullptr, nullptr),
              "copy: clEnqueueCopyBufferRect");
      return;
    }
    enqueueStridedCopy(*this, q, dstMem, dstOff, d.dstStep.data(), srcMem, srcOff, d.srcStep.data(), d.dims,
                       d.size.data(), d.elemSize, fn);
    return;
  }

  std::int64_t packedStep[kMaxDims] = {};
  packedSteps(d.dims, d.size.data(), e, packedStep);
  const auto bytes = static_cast<std::size_t>(totalBytes);

  // ---- host -> device
  if (dstMem != nullptr) {
    if (d.dims == 0) {
      checkCl(clEnqueueWriteBuffer(q.queue(), dstMem, CL_FALSE, d.dst.offset, d.elemSize, d.src.host, 0, nullptr, nullptr),
              "copy: clEnqueueWriteBuffer");
      return;
    }
    if (isRect) {
      std::size_t bo[3];
      const std::size_t ho[3] = {0, 0, 0};
      originOf(d.dst.offset, rect.dstRow, rect.dstSlice, bo);
      checkCl(clEnqueueWriteBufferRect(q.queue(), dstMem, CL_FALSE, bo, ho, rect.region, rect.dstRow, rect.dstSlice,
                                       rect.srcRow, rect.srcSlice, d.src.host, 0, nullptr, nullptr),
              "copy: clEnqueueWriteBufferRect");
      return;
    }
    // Staging: the packed image of the source is written to the device, then
    // scattered unless the destination is packed too.
    const void* image = d.src.host;
    std::shared_ptr<std::uint8_t[]> staging;
    if (!packed(d.dims, d.size.data(), d.srcStep.data(), e)) {
      staging.reset(new std::uint8_t[bytes]);
      cl_event marker = nullptr;
      checkCl(clEnqueueMarkerWithWaitList(q.queue(), 0, nullptr, &marker), "copy: clEnqueueMarkerWithWaitList");
      const CopyDesc desc = d;
      enqueueHostStep(*this, q, marker, [desc, staging, e] {
        const auto* from = static_cast<const std::uint8_t*>(desc.src.host);
        std::int64_t packedStepLocal[kMaxDims] = {};
        packedSteps(desc.dims, desc.size.data(), e, packedStepLocal);
        forEachElement(desc.dims, desc.size.data(), packedStepLocal, desc.srcStep.data(),
                       [&](std::int64_t to, std::int64_t src) { std::memcpy(staging.get() + to, from + src, desc.elemSize); });
      }, fn);
      image = staging.get();
    }
    const bool dstPacked = packed(d.dims, d.size.data(), d.dstStep.data(), e);
    ScratchBuffer scratch;
    if (!dstPacked) scratch = acquireScratch(bytes, q, fn);
    cl_event written = nullptr;
    const cl_int err = clEnqueueWriteBuffer(q.queue(), dstPacked ? dstMem : scratch.mem, CL_FALSE,
                                            dstPacked ? d.dst.offset : 0, bytes, image, 0, nullptr, &written);
    if (err != CL_SUCCESS && !dstPacked) recycle(scratch.mem, scratch.capacity, {});
    checkCl(err, "copy: clEnqueueWriteBuffer");
    if (staging) releaseAfter(written, staging);
    else clReleaseEvent(written);
    if (!dstPacked) {
      try {
        enqueueStridedCopy(*this, q, dstMem, dstOff, d.dstStep.data(), scratch.mem, 0, packedStep, d.dims,
                           d.size.data(), d.elemSize, fn);
      } catch (...) {
        releaseScratch(scratch, q);
        throw;
      }
      releaseScratch(scratch, q);
    }
    return;
  }

  // ---- device -> host
  if (d.dims == 0) {
    checkCl(clEnqueueReadBuffer(q.queue(), srcMem, CL_FALSE, d.src.offset, d.elemSize, d.dst.host, 0, nullptr, nullptr),
            "copy: clEnqueueReadBuffer");
    return;
  }
  if (isRect) {
    std::size_t bo[3];
    const std::size_t ho[3] = {0, 0, 0};
    originOf(d.src.offset, rect.srcRow, rect.srcSlice, bo);
    checkCl(clEnqueueReadBufferRect(q.queue(), srcMem, CL_FALSE, bo, ho, rect.region, rect.srcRow, rect.srcSlice,
                                    rect.dstRow, rect.dstSlice, d.dst.host, 0, nullptr, nullptr),
            "copy: clEnqueueReadBufferRect");
    return;
  }
  // Staging: gather into a packed device image unless the source is packed,
  // read it, and unpack on the host unless the destination is packed.
  const bool srcPacked = packed(d.dims, d.size.data(), d.srcStep.data(), e);
  const bool hostPacked = packed(d.dims, d.size.data(), d.dstStep.data(), e);
  std::shared_ptr<std::uint8_t[]> staging;
  if (!hostPacked) staging.reset(new std::uint8_t[bytes]);
  void* image = hostPacked ? d.dst.host : staging.get();
  ScratchBuffer scratch;
  if (!srcPacked) {
    scratch = acquireScratch(bytes, q, fn);
    try {
      enqueueStridedCopy(*this, q, scratch.mem, 0, packedStep, srcMem, srcOff, d.srcStep.data(), d.dims, d.size.data(),
                         d.elemSize, fn);
    } catch (...) {
      releaseScratch(scratch, q);
      throw;
    }
  }
  cl_event read = nullptr;
  const cl_int err = clEnqueueReadBuffer(q.queue(), srcPacked ? srcMem : scratch.mem, CL_FALSE,
                                         srcPacked ? d.src.offset : 0, bytes, image, 0, nullptr, &read);
  if (!srcPacked) releaseScratch(scratch, q);
  checkCl(err, "copy: clEnqueueReadBuffer");
  if (hostPacked) {
    clReleaseEvent(read);
    return;
  }
  const CopyDesc desc = d;
  enqueueHostStep(*this, q, read, [desc, staging, e] {
    auto* to = static_cast<std::uint8_t*>(desc.dst.host);
    std::int64_t packedStepLocal[kMaxDims] = {};
    packedSteps(desc.dims, desc.size.data(), e, packedStepLocal);
    forEachElement(desc.dims, desc.size.data(), desc.dstStep.data(), packedStepLocal,
                   [&](std::int64_t dst, std::int64_t from) { std::memcpy(to + dst, staging.get() + from, desc.elemSize); });
  }, fn);
}

// ----------------------------------------------------------------- fill ----

void OpenCLDevice::doFill(const FillDesc& d, QueueImpl& qi) {
  const char* fn = "fill";
  OpenCLQueue& q = queueOf(qi, fn);
  if (!validShape(d.dims, d.size.data(), fn)) return;
  if (d.elemSize == 0 || d.elemSize > d.pattern.size())
    fail(ErrorCode::InvalidArgument,
         "fill: pattern size " + std::to_string(d.elemSize) + " is outside 1.." + std::to_string(d.pattern.size()));
  if (d.dst.isHost()) fail(ErrorCode::InvalidArgument, "fill: the destination must be device memory");
  cl_mem mem = memOf(d.dst.device, fn);
  checkInside(*d.dst.device, d.dims, d.size.data(), d.step.data(), d.dst.offset, d.elemSize, fn, "destination");
  const std::int64_t count = elementCount(d.dims, d.size.data(), fn);
  const auto e = static_cast<std::int64_t>(d.elemSize);
  const std::int64_t bytes = mulChecked(count, e, fn);
  const bool pow2 = (d.elemSize & (d.elemSize - 1)) == 0;
  if (packed(d.dims, d.size.data(), d.step.data(), e) && pow2 && d.dst.offset % d.elemSize == 0) {
    checkCl(clEnqueueFillBuffer(q.queue(), mem, d.pattern.data(), d.elemSize, d.dst.offset,
                                static_cast<std::size_t>(bytes), 0, nullptr, nullptr),
            "fill: clEnqueueFillBuffer");
    return;
  }
  FillLayoutArg layout{};
  for (int i = 0; i < d.dims; ++i) {
    layout.size[i] = d.size[i];
    layout.step[i] = d.step[i];
  }
  std::memcpy(layout.pattern, d.pattern.data(), d.elemSize);
  const auto offset = static_cast<std::int64_t>(d.dst.offset);
  const cl_int word = wordBytes(d.elemSize, {offset}, d.dims, {d.step.data()});
  const cl_long wordsPerElem = e / word;
  const cl_long total = mulChecked(count, wordsPerElem, fn);
  const cl_ulong off = d.dst.offset;
  const cl_int nd = d.dims;
  const std::size_t global[1] = {static_cast<std::size_t>(total)};
  enqueueKernel(fn, "da_fill_strided", q, 1, global,
                {{sizeof(cl_mem), &mem}, {8, &off}, {sizeof layout, &layout}, {4, &nd}, {4, &word},
                 {8, &wordsPerElem}, {8, &total}});
}

// -------------------------------------------------------------- convert ----

void OpenCLDevice::doConvert(const ConvertDesc& c, QueueImpl& qi) {
  const char* fn = "convertTo";
  OpenCLQueue& q = queueOf(qi, fn);
  const int sd = static_cast<int>(c.srcDepth), dd = static_cast<int>(c.dstDepth);
  if (sd < 0 || sd > 7 || dd < 0 || dd > 7)
    fail(ErrorCode::InvalidArgument, std::string(fn) + ": depth codes " + std::to_string(sd) + " -> " +
                                         std::to_string(dd) + " are outside 0..7");
  if (c.rows < 0 || c.values < 0)
    fail(ErrorCode::InvalidArgument, std::string(fn) + ": negative extent " + std::to_string(c.rows) + " x " +
                                         std::to_string(c.values));
  if (c.rows == 0 || c.values == 0) return;
  if (!hasFp64_ && (c.srcDepth == Depth::F64 || c.dstDepth == Depth::F64))
    fail(ErrorCode::Unsupported, std::string(fn) + ": " + describe() +
                                     " has no double precision (CL_DEVICE_DOUBLE_FP_CONFIG is 0), so it cannot "
                                     "convert F64 data");
  if (c.src.isHost() || c.dst.isHost())
    fail(ErrorCode::InvalidArgument, std::string(fn) + ": both sides must be device memory");
  cl_mem dst = memOf(c.dst.device, fn);
  cl_mem src = memOf(c.src.device, fn);
  const auto sSize = static_cast<std::int64_t>(depthSize(c.srcDepth));
  const auto dSize = static_cast<std::int64_t>(depthSize(c.dstDepth));
  struct Side {
    const char* name;
    const Allocation& alloc;
    std::size_t offset;
    std::int64_t step;
    std::int64_t size;
  };
  for (const Side& s : {Side{"source", *c.src.device, c.src.offset, c.srcStep, sSize},
                        Side{"destination", *c.dst.device, c.dst.offset, c.dstStep, dSize}}) {
    const std::int64_t rowBytes = mulChecked(c.values, s.size, fn);
    if (c.rows > 1 && s.step < rowBytes)
      fail(ErrorCode::InvalidArgument, std::string(fn) + ": " + s.name + " row step " + std::to_string(s.step) +
                                           " is smaller than a row of " + std::to_string(rowBytes) + " bytes");
    if (s.offset % static_cast<std::size_t>(s.size) != 0 || s.step % s.size != 0)
      fail(ErrorCode::InvalidArgument, std::string(fn) + ": " + s.name + " offset " + std::to_string(s.offset) +
                                           " and row step " + std::to_string(s.step) +
                                           " must be multiples of the value size " + std::to_string(s.size));
    const std::int64_t sizes[2] = {c.rows, c.values};
    const std::int64_t steps[2] = {s.step, s.size};
    checkInside(s.alloc, 2, sizes, steps, s.offset, static_cast<std::size_t>(s.size), fn, s.name);
  }
  const bool integral = sd <= 4 && dd <= 4;
  const cl_int integerCopy = integral && c.alpha == 1.0 && c.beta == 0.0 ? 1 : 0;
  const cl_ulong dOff = c.dst.offset, sOff = c.src.offset;
  const cl_long dStep = c.dstStep, sStep = c.srcStep, rows = c.rows, values = c.values;
  const cl_int dDepth = dd, sDepth = sd;
  const cl_double alphaD = c.alpha, betaD = c.beta;
  const cl_float alphaF = static_cast<cl_float>(c.alpha), betaF = static_cast<cl_float>(c.beta);
  const RawArg alpha = hasFp64_ ? RawArg{8, &alphaD} : RawArg{4, &alphaF};
  const RawArg beta = hasFp64_ ? RawArg{8, &betaD} : RawArg{4, &betaF};
  const std::size_t global[2] = {static_cast<std::size_t>(c.values), static_cast<std::size_t>(c.rows)};
  enqueueKernel(fn, "da_convert", q, 2, global,
                {{sizeof(cl_mem), &dst}, {8, &dOff}, {8, &dStep}, {4, &dDepth}, {sizeof(cl_mem), &src}, {8, &sOff},
                 {8, &sStep}, {4, &sDepth}, {8, &rows}, {8, &values}, alpha, beta, {4, &integerCopy}});
}

}  // namespace devicearray::detail::opencl
