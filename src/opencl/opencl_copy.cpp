// The OpenCL copy steps (backend/copy_steps.hpp; backend/copy_plan.hpp chooses
// them), pattern fills and depth conversions, each with the cheapest command that
// expresses the layout:
//   one contiguous run      -> clEnqueueCopyBuffer / Read / Write / FillBuffer
//   <= 2 strided axes        -> the *Rect commands
//   anything else            -> one launch of the strided copy or fill kernel
//                               (kernels/strided_copy.h)
// and a depth conversion is one launch of its kernel (kernels/convert_depth.h).
// The host side of a staged copy (packing a strided host source, unpacking into a
// strided host destination) runs on the OpenCL callback thread, gated by user
// events, so it happens in queue order without blocking the caller: a later
// clFinish, event or command on the queue covers it.
#include <CL/cl.h>

#include <algorithm>
#include <cstring>
#include <functional>
#include <memory>
#include <string>

#include "backend/copy_steps.hpp"
#include "backend/depth_conversion_signatures.h"
#include "backend/region.hpp"
#include "opencl/cl_error.hpp"
#include "opencl/opencl_device.hpp"

namespace devicearray::detail::opencl {
namespace {

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

/// One launch of the strided copy kernel, or of the fill kernel with `pattern`
/// (kernels/strided_copy.h), over the layout's words.
void enqueueStrided(OpenCLDevice& dev, OpenCLQueue& q, const da_strided_layout& layout, int word, cl_mem dst,
                    std::uint64_t dstOffset, cl_mem src, std::uint64_t srcOffset, const da_fill_pattern* pattern,
                    const char* fn) {
  if (layout.total == 0) return;
  constexpr std::uint64_t kPerGroup = std::uint64_t{DA_STRIDED_GROUP} * DA_STRIDED_WORDS_PER_ITEM;
  const std::size_t global[1] = {static_cast<std::size_t>((layout.total + kPerGroup - 1) / kPerGroup) *
                                 DA_STRIDED_GROUP};
  const std::size_t local[1] = {DA_STRIDED_GROUP};
  const std::string name = std::string(pattern != nullptr ? "da_strided_fill_" : "da_strided_copy_") +
                           std::to_string(word) + (layout.total < (std::uint64_t{1} << 31) ? "_i32" : "_i64");
  const cl_ulong dOff = dstOffset, sOff = srcOffset;
  if (pattern != nullptr)
    dev.enqueueKernel(fn, name.c_str(), q, 1, global,
                      {{sizeof(cl_mem), &dst}, {8, &dOff}, {sizeof layout, &layout}, {sizeof *pattern, pattern}},
                      local);
  else
    dev.enqueueKernel(fn, name.c_str(), q, 1, global,
                      {{sizeof(cl_mem), &dst}, {8, &dOff}, {sizeof(cl_mem), &src}, {8, &sOff},
                       {sizeof layout, &layout}},
                      local);
}

void enqueueStridedCopy(OpenCLDevice& dev, OpenCLQueue& q, const CopyDesc& d, const char* fn) {
  cl_mem dst = dev.memOf(d.dst.buffer.allocation, fn), src = dev.memOf(d.src.buffer.allocation, fn);
  const int word = stridedWordBytes(d.elemSize, d.dst.buffer.offset, d.src.buffer.offset, d.dims, d.dstStep.data(),
                                    d.srcStep.data());
  enqueueStrided(dev, q, stridedLayout(d.dims, d.size.data(), d.dstStep.data(), d.srcStep.data(), d.elemSize, word),
                 word, dst, d.dst.buffer.offset, src, d.src.buffer.offset, nullptr, fn);
}

/// An OpenCL scratch buffer as the allocation of a staged copy's packed image,
/// returned to the device's cache in queue order.
class OpenCLScratch final : public Allocation {
 public:
  OpenCLScratch(OpenCLDevice& device, ScratchBuffer buffer, OpenCLQueue& q)
      : Allocation(device.shared_from_this(), buffer.mem, buffer.capacity, false), buffer_(buffer), q_(q) {}
  ~OpenCLScratch() override {
    try {
      static_cast<OpenCLDevice&>(*device_).releaseScratch(buffer_, q_);
    } catch (...) {
      // releaseScratch has released the buffer (OpenCL defers that until its commands finish).
    }
  }

 private:
  ScratchBuffer buffer_;
  OpenCLQueue& q_;
};

/// The OpenCL copy steps (backend/copy_steps.hpp).
class OpenCLCopySteps final : public CopySteps {
 public:
  explicit OpenCLCopySteps(OpenCLDevice& device) : device_(device) {}

  void contiguous(const CopyDesc& d, std::size_t bytes, QueueImpl& qi) override {
    OpenCLQueue& q = device_.queueOf(qi, "copy");
    if (d.src.isHost()) {
      checkCl(clEnqueueWriteBuffer(q.queue(), device_.memOf(d.dst.buffer.allocation, "copy"), CL_FALSE,
                                   d.dst.buffer.offset,
                                   bytes, d.src.host, 0, nullptr, nullptr),
              "copy: clEnqueueWriteBuffer");
      return;
    }
    cl_mem srcMem = device_.memOf(d.src.buffer.allocation, "copy");
    if (d.dst.isHost()) {
      checkCl(clEnqueueReadBuffer(q.queue(), srcMem, CL_FALSE, d.src.buffer.offset, bytes, d.dst.host, 0, nullptr,
                                  nullptr),
              "copy: clEnqueueReadBuffer");
      return;
    }
    cl_mem dstMem = device_.memOf(d.dst.buffer.allocation, "copy");
    // clEnqueueCopyBuffer refuses overlapping ranges of one cl_mem; the kernel handles those.
    const std::size_t dstOff = d.dst.buffer.offset, srcOff = d.src.buffer.offset;
    if (dstMem == srcMem && dstOff < srcOff + bytes && srcOff < dstOff + bytes) {
      strided(d, qi);
      return;
    }
    checkCl(clEnqueueCopyBuffer(q.queue(), srcMem, dstMem, srcOff, dstOff, bytes, 0, nullptr, nullptr),
            "copy: clEnqueueCopyBuffer");
  }

  bool rect(const CopyDesc& d, QueueImpl& qi) override {
    Rect pitched;
    if (!rectOf(d, pitched)) return false;
    OpenCLQueue& q = device_.queueOf(qi, "copy");
    cl_mem dstMem = d.dst.isHost() ? nullptr : device_.memOf(d.dst.buffer.allocation, "copy");
    cl_mem srcMem = d.src.isHost() ? nullptr : device_.memOf(d.src.buffer.allocation, "copy");
    if (dstMem != nullptr && !rectFitsWhole(dstMem, d.dst.buffer.offset, pitched.dstSlice, pitched.region[2]))
      return false;
    if (srcMem != nullptr && !rectFitsWhole(srcMem, d.src.buffer.offset, pitched.srcSlice, pitched.region[2]))
      return false;
    const std::size_t hostOrigin[3] = {0, 0, 0};
    std::size_t dstOrigin[3], srcOrigin[3];
    if (dstMem != nullptr && srcMem != nullptr) {
      // Rows narrower than 16 bytes copy faster as one kernel than as a rect
      // command; within one cl_mem the rect command demands equal pitches.
      if (dstMem == srcMem || d.elemSize < 16) return false;
      originOf(d.src.buffer.offset, pitched.srcRow, pitched.srcSlice, srcOrigin);
      originOf(d.dst.buffer.offset, pitched.dstRow, pitched.dstSlice, dstOrigin);
      checkCl(clEnqueueCopyBufferRect(q.queue(), srcMem, dstMem, srcOrigin, dstOrigin, pitched.region, pitched.srcRow,
                                      pitched.srcSlice, pitched.dstRow, pitched.dstSlice, 0, nullptr, nullptr),
              "copy: clEnqueueCopyBufferRect");
    } else if (dstMem != nullptr) {
      originOf(d.dst.buffer.offset, pitched.dstRow, pitched.dstSlice, dstOrigin);
      checkCl(clEnqueueWriteBufferRect(q.queue(), dstMem, CL_FALSE, dstOrigin, hostOrigin, pitched.region,
                                       pitched.dstRow, pitched.dstSlice, pitched.srcRow, pitched.srcSlice, d.src.host,
                                       0, nullptr, nullptr),
              "copy: clEnqueueWriteBufferRect");
    } else {
      originOf(d.src.buffer.offset, pitched.srcRow, pitched.srcSlice, srcOrigin);
      checkCl(clEnqueueReadBufferRect(q.queue(), srcMem, CL_FALSE, srcOrigin, hostOrigin, pitched.region,
                                      pitched.srcRow, pitched.srcSlice, pitched.dstRow, pitched.dstSlice, d.dst.host,
                                      0, nullptr, nullptr),
              "copy: clEnqueueReadBufferRect");
    }
    return true;
  }

  void strided(const CopyDesc& d, QueueImpl& qi) override {
    enqueueStridedCopy(device_, device_.queueOf(qi, "copy"), d, "copy");
  }

  void hostImage(const CopyDesc& d, std::size_t bytes, QueueImpl& qi) override {
    const char* fn = "copy";
    OpenCLQueue& q = device_.queueOf(qi, fn);
    const CopyDesc desc = d;
    if (d.src.isHost()) {
      // The packed image of the host source, packed on the host in queue order unless
      // the source is packed already, is written to the device.
      cl_mem dstMem = device_.memOf(d.dst.buffer.allocation, fn);
      const void* image = d.src.host;
      std::shared_ptr<char[]> staging;
      if (!isPacked(d.dims, d.size.data(), d.srcStep.data(), d.elemSize)) {
        staging.reset(new char[bytes]);
        cl_event marker = nullptr;
        checkCl(clEnqueueMarkerWithWaitList(q.queue(), 0, nullptr, &marker), "copy: clEnqueueMarkerWithWaitList");
        enqueueHostStep(device_, q, marker, [desc, staging] {
          std::int64_t packed[kMaxDims] = {};
          packedSteps(desc.dims, desc.size.data(), desc.elemSize, packed);
          hostStridedCopy(staging.get(), packed, static_cast<const char*>(desc.src.host), desc.srcStep.data(),
                          desc.dims, desc.size.data(), desc.elemSize);
        }, fn);
        image = staging.get();
      }
      cl_event written = nullptr;
      checkCl(clEnqueueWriteBuffer(q.queue(), dstMem, CL_FALSE, d.dst.buffer.offset, bytes, image, 0, nullptr,
                                   &written),
              "copy: clEnqueueWriteBuffer");
      if (staging) releaseAfter(written, staging);
      else clReleaseEvent(written);
      return;
    }
    // The packed device image is read, and unpacked on the host in queue order unless
    // the destination is packed.
    cl_mem srcMem = device_.memOf(d.src.buffer.allocation, fn);
    const bool hostPacked = isPacked(d.dims, d.size.data(), d.dstStep.data(), d.elemSize);
    std::shared_ptr<char[]> staging;
    if (!hostPacked) staging.reset(new char[bytes]);
    void* image = hostPacked ? d.dst.host : staging.get();
    cl_event read = nullptr;
    checkCl(clEnqueueReadBuffer(q.queue(), srcMem, CL_FALSE, d.src.buffer.offset, bytes, image, 0, nullptr, &read),
            "copy: clEnqueueReadBuffer");
    if (hostPacked) {
      clReleaseEvent(read);
      return;
    }
    enqueueHostStep(device_, q, read, [desc, staging] {
      std::int64_t packed[kMaxDims] = {};
      packedSteps(desc.dims, desc.size.data(), desc.elemSize, packed);
      hostStridedCopy(static_cast<char*>(desc.dst.host), desc.dstStep.data(), staging.get(), packed, desc.dims,
                      desc.size.data(), desc.elemSize);
    }, fn);
  }

  std::unique_ptr<Allocation> acquireScratch(std::size_t bytes, QueueImpl& qi) override {
    OpenCLQueue& q = device_.queueOf(qi, "copy");
    const ScratchBuffer buffer = device_.acquireScratch(bytes, q, "copy");
    try {
      return std::make_unique<OpenCLScratch>(device_, buffer, q);
    } catch (...) {
      device_.releaseScratch(buffer, q);
      throw;
    }
  }

  void fill(const FillDesc& d, QueueImpl& qi) override {
    const char* fn = "fill";
    OpenCLQueue& q = device_.queueOf(qi, fn);
    const std::int64_t count = validateFill(d, fn);
    if (count == 0) return;
    cl_mem mem = device_.memOf(d.dst.buffer.allocation, fn);
    const auto e = static_cast<std::int64_t>(d.elemSize);
    const std::int64_t bytes = checkedMul(count, e, fn);
    const bool pow2 = (d.elemSize & (d.elemSize - 1)) == 0;
    if (isPacked(d.dims, d.size.data(), d.step.data(), d.elemSize) && pow2 && d.dst.buffer.offset % d.elemSize == 0) {
      checkCl(clEnqueueFillBuffer(q.queue(), mem, d.pattern.data(), d.elemSize, d.dst.buffer.offset,
                                  static_cast<std::size_t>(bytes), 0, nullptr, nullptr),
              "fill: clEnqueueFillBuffer");
      return;
    }
    const int word = stridedWordBytes(d.elemSize, d.dst.buffer.offset, 0, d.dims, d.step.data(), d.step.data());
    da_fill_pattern pattern;
    std::memcpy(pattern.bytes, d.pattern.data(), sizeof pattern.bytes);
    enqueueStrided(device_, q, stridedLayout(d.dims, d.size.data(), d.step.data(), nullptr, d.elemSize, word), word,
                   mem, d.dst.buffer.offset, nullptr, 0, &pattern, fn);
  }

  void convert(const ConvertDesc& c, QueueImpl& qi) override {
    const char* fn = "convertTo";
    OpenCLQueue& q = device_.queueOf(qi, fn);
    if (!validateConvert(c, fn)) return;
    if (!device_.hasFp64() && (c.srcDepth == Depth::F64 || c.dstDepth == Depth::F64))
      fail(ErrorCode::Unsupported, std::string(fn) + ": " + device_.describe() +
                                       " has no double precision (CL_DEVICE_DOUBLE_FP_CONFIG is 0), so it cannot "
                                       "convert F64 data");
    if (device_.hasFp64())
      enqueueConvert<kernels::da_convert_depths_d>(c, c.alpha, c.beta, q, fn);
    else
      enqueueConvert<kernels::da_convert_depths_f>(c, static_cast<float>(c.alpha), static_cast<float>(c.beta), q, fn);
  }

 private:
  /// One launch of the depth conversion kernel (kernels/convert_depth.h), alpha and
  /// beta in its arithmetic type Real.
  template <class Signature, class Real>
  void enqueueConvert(const ConvertDesc& c, Real alpha, Real beta, OpenCLQueue& q, const char* fn) {
    const int sd = static_cast<int>(c.srcDepth), dd = static_cast<int>(c.dstDepth);
    const int scale = alpha == Real{1} && beta == Real{0} ? 0 : 1;
    const int integerCopy = sd <= 4 && dd <= 4 && c.alpha == 1.0 && c.beta == 0.0 ? 1 : 0;
    const LaunchGeometry valueByRow{2, {static_cast<std::size_t>(c.values), static_cast<std::size_t>(c.rows), 1}, 0};
    device_.enqueueLaunch(fn,
                          kernelLaunch<Signature>(valueByRow, c.src.buffer, c.srcStep, sd, c.dst.buffer, c.dstStep,
                                                  dd, c.rows, c.values, scale, integerCopy, alpha, beta),
                          q);
  }

  OpenCLDevice& device_;
};

}  // namespace

std::unique_ptr<CopySteps> makeCopySteps(OpenCLDevice& device) { return std::make_unique<OpenCLCopySteps>(device); }

}  // namespace devicearray::detail::opencl
