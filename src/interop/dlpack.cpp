// DLPack export and import: zero-copy tensors in both directions, host copies.
//
// Export hands out a tensor whose manager context holds a GpuMatND copy (keeping
// the storage alive) and the shape/stride arrays the DLTensor points into.
// Import validates every field before touching memory, adopts the memory through
// the backend (which verifies it) and wraps the adopted allocation in one that runs
// the producer's deleter when the last GpuMatND handle goes. Every failure path
// runs the deleter exactly once through ProducerTensor's destructor.
#include "devicearray/dlpack.hpp"

#include <algorithm>
#include <array>
#include <climits>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <limits>
#include <memory>
#include <new>
#include <string>
#include <utility>
#include <vector>

#include "backend/backend.hpp"
#include "core/array_access.hpp"
#include "backend/backend_registry.hpp"
#include "devicearray/error.hpp"
#include "devicearray/host_mat.hpp"

#if defined(DEVICEARRAY_HAS_OPENCL)
#include <CL/cl.h>
#endif

namespace devicearray {
namespace detail {
// Declared in tests/dlpack_layout.hpp for the ABI test, which cannot include this
// library's DLPack declarations next to another dlpack.h.
std::vector<std::pair<std::string, std::size_t>> dlpackLayoutTable();
}  // namespace detail

namespace {

static_assert(DLPACK_MAJOR_VERSION == 1, "this file implements DLPack major version 1");
static_assert(sizeof(void*) != 8 || (sizeof(DLTensor) == 48 && sizeof(DLManagedTensorVersioned) == 80),
              "DLPack structs must have the standard LP64 layout");

[[noreturn]] void raise(ErrorCode code, const std::string& message) { throw Error(code, message); }

std::string str(std::int64_t v) { return std::to_string(v); }
std::string ustr(std::uint64_t v) { return std::to_string(v); }

// ----------------------------------------------------------- checked math ----

bool mulOverflows(std::uint64_t a, std::uint64_t b, std::uint64_t& out) {
  if (a != 0 && b > std::numeric_limits<std::uint64_t>::max() / a) return true;
  out = a * b;
  return false;
}

bool addOverflows(std::uint64_t a, std::uint64_t b, std::uint64_t& out) {
  if (b > std::numeric_limits<std::uint64_t>::max() - a) return true;
  out = a + b;
  return false;
}

// The largest byte count or stride any layout may reach: keeps every later
// int64 / size_t / pointer computation in range.
constexpr std::uint64_t kMaxBytes =
    std::min<std::uint64_t>(static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max()),
                            static_cast<std::uint64_t>(std::numeric_limits<std::size_t>::max()));

// ------------------------------------------------------------------ dtype ----

DLDataType dataTypeOf(Depth depth) {
  auto make = [](DLDataTypeCode code, int bits) {
    return DLDataType{static_cast<std::uint8_t>(code), static_cast<std::uint8_t>(bits), 1};
  };
  switch (depth) {
    case Depth::U8: return make(kDLUInt, 8);
    case Depth::S8: return make(kDLInt, 8);
    case Depth::U16: return make(kDLUInt, 16);
    case Depth::S16: return make(kDLInt, 16);
    case Depth::S32: return make(kDLInt, 32);
    case Depth::F32: return make(kDLFloat, 32);
    case Depth::F64: return make(kDLFloat, 64);
    case Depth::F16: return make(kDLFloat, 16);
  }
  raise(ErrorCode::InvalidArgument, "toDLPack: depth " + std::to_string(static_cast<int>(depth)) + " is not a valid Depth");
}

const char* typeCodeName(std::uint8_t code) {
  switch (code) {
    case kDLInt: return "int";
    case kDLUInt: return "uint";
    case kDLFloat: return "float";
    case kDLOpaqueHandle: return "opaque handle";
    case kDLBfloat: return "bfloat";
    case kDLComplex: return "complex";
    case kDLBool: return "bool";
    default: return code <= kDLFloat4_e2m1fn ? "float8/6/4" : "unknown type code";
  }
}

Depth depthOf(const DLDataType& dtype, const char* fn) {
  // Built only for a refusal: this runs on every import.
  auto what = [&] {
    return std::string(fn) + ": dl_tensor.dtype {code " + std::to_string(dtype.code) + " (" +
                           typeCodeName(dtype.code) + "), bits " + std::to_string(dtype.bits) + ", lanes " +
                           std::to_string(dtype.lanes) + "}";
  };
  if (dtype.lanes != 1) raise(ErrorCode::Unsupported, what() + " is a vector type; only lanes = 1 is supported");
  const int bits = dtype.bits;
  if (dtype.code == kDLUInt && bits == 8) return Depth::U8;
  if (dtype.code == kDLInt && bits == 8) return Depth::S8;
  if (dtype.code == kDLUInt && bits == 16) return Depth::U16;
  if (dtype.code == kDLInt && bits == 16) return Depth::S16;
  if (dtype.code == kDLInt && bits == 32) return Depth::S32;
  if (dtype.code == kDLFloat && bits == 16) return Depth::F16;
  if (dtype.code == kDLFloat && bits == 32) return Depth::F32;
  if (dtype.code == kDLFloat && bits == 64) return Depth::F64;
  raise(ErrorCode::Unsupported, what() +
                                    " has no devicearray Depth; supported: uint8, int8, uint16, int16, int32, "
                                    "float16, float32, float64");
}

// ----------------------------------------------------------------- export ----

struct ExportContext {
  GpuMatND array;  // keeps the device storage alive (device exports)
  HostMat host;    // owns the bytes (host copies)
  std::vector<std::int64_t> shape;
  std::vector<std::int64_t> strides;
  DLManagedTensorVersioned versioned{};
  DLManagedTensor legacy{};
};

extern "C" {
static void deleteExportedVersioned(DLManagedTensorVersioned* self) {
  if (self != nullptr) delete static_cast<ExportContext*>(self->manager_ctx);
}
static void deleteExportedLegacy(DLManagedTensor* self) {
  if (self != nullptr) delete static_cast<ExportContext*>(self->manager_ctx);
}
}

// Shape and element strides of an array with OpenCV conventions (size per axis,
// byte steps, type with channels interleaved): channels become the last axis.
template <class Array>
void describeLayout(const Array& array, ExportContext& ctx, const char* fn) {
  const std::size_t elem1 = array.elemSize1();
  const int channels = array.channels();
  const int dims = array.dims;
  if (dims < 1 || static_cast<int>(array.size.size()) != dims || array.step.size() + 1 < static_cast<std::size_t>(dims))
    raise(ErrorCode::InvalidArgument, std::string(fn) + ": array has inconsistent dims (" + std::to_string(dims) +
                                          "), size and step entries");
  ctx.shape.reserve(static_cast<std::size_t>(dims) + 1);
  ctx.strides.reserve(static_cast<std::size_t>(dims) + 1);
  for (int i = 0; i < dims; ++i) {
    const std::size_t stepBytes = i < static_cast<int>(array.step.size()) ? array.step[i] : array.elemSize();
    if (stepBytes % elem1 != 0)
      raise(ErrorCode::InvalidArgument,
            std::string(fn) + ": step[" + std::to_string(i) + "] = " + ustr(stepBytes) +
                " bytes is not a multiple of the channel size " + ustr(elem1) +
                "; DLPack strides count elements and cannot express it (clone() the array first)");
    ctx.shape.push_back(array.size[i]);
    ctx.strides.push_back(static_cast<std::int64_t>(stepBytes / elem1));
  }
  if (channels > 1) {
    ctx.shape.push_back(channels);
    ctx.strides.push_back(1);
  }
}

DLTensor tensorOf(ExportContext& ctx, int depth) {
  DLTensor t{};
  t.ndim = static_cast<std::int32_t>(ctx.shape.size());
  t.dtype = dataTypeOf(static_cast<Depth>(depth));
  t.shape = ctx.shape.data();
  t.strides = ctx.strides.data();
  return t;
}

std::unique_ptr<ExportContext> exportDevice(const GpuMatND& array, const char* fn) {
  if (array.empty() || !detail::allocationOf(array))
    raise(ErrorCode::InvalidArgument, std::string(fn) + ": the array is empty; there is nothing to export");
  // The consumer reads whatever the tensor describes: a header edited past its memory
  // (its fields are public) must not be handed on.
  detail::checkHeaderInsideMemory(array, fn);
  detail::faultPoint(detail::FaultKind::hostAllocation, fn);
  auto ctx = std::make_unique<ExportContext>();
  ctx->array = array;
  describeLayout(array, *ctx, fn);
  DLTensor t = tensorOf(*ctx, array.depth());
  const ComputeDevice device = array.device();
  if (array.backend() == ComputeBackend::cuda) {
    t.device = DLDevice{kDLCUDA, device.ordinal()};
    // Some consumers ignore byte_offset, so the view offset goes into the address.
    t.data = array.getDevicePtr();
    t.byte_offset = 0;
  } else {
    const OpenCLBufferPtr buffer = array.getOpenCLBuffer();
    t.device = DLDevice{kDLOpenCL, device.ordinal() < 0 ? 0 : device.ordinal()};
    t.data = buffer.buffer;
    t.byte_offset = buffer.offset;
  }
  // Consumers know nothing of the library's queues: finish its work on the memory.
  detail::allocationOf(array)->waitIdle();
  ctx->versioned.dl_tensor = t;
  ctx->legacy.dl_tensor = t;
  return ctx;
}

std::unique_ptr<ExportContext> exportHostCopy(const GpuMatND& array, const char* fn) {
  if (array.empty() || !detail::allocationOf(array))
    raise(ErrorCode::InvalidArgument, std::string(fn) + ": the array is empty; there is nothing to export");
  detail::faultPoint(detail::FaultKind::hostAllocation, fn);
  auto ctx = std::make_unique<ExportContext>();
  array.download(ctx->host);
  describeLayout(ctx->host, *ctx, fn);
  DLTensor t = tensorOf(*ctx, ctx->host.depth());
  t.device = DLDevice{kDLCPU, 0};
  t.data = ctx->host.data();
  t.byte_offset = 0;
  ctx->versioned.dl_tensor = t;
  ctx->legacy.dl_tensor = t;
  return ctx;
}

DLManagedTensorVersioned* finishVersioned(std::unique_ptr<ExportContext> ctx, std::uint64_t flags) {
  DLManagedTensorVersioned* out = &ctx->versioned;
  out->version = DLPackVersion{DLPACK_MAJOR_VERSION, DLPACK_MINOR_VERSION};
  out->manager_ctx = ctx.get();
  out->deleter = &deleteExportedVersioned;
  out->flags = flags;
  ctx.release();
  return out;
}

DLManagedTensor* finishLegacy(std::unique_ptr<ExportContext> ctx) {
  DLManagedTensor* out = &ctx->legacy;
  out->manager_ctx = ctx.get();
  out->deleter = &deleteExportedLegacy;
  ctx.release();
  return out;
}

template <class Fn>
auto translateBadAlloc(const char* fn, Fn&& body) -> decltype(body()) {
  try {
    return body();
  } catch (const std::bad_alloc&) {
    raise(ErrorCode::OutOfMemory, std::string(fn) + ": out of host memory");
  }
}

// ----------------------------------------------------------------- import ----

/// Unique owner of a producer's tensor: runs its deleter exactly once, on
/// destruction, unless moved from.
class ProducerTensor {
 public:
  explicit ProducerTensor(DLManagedTensorVersioned* t) noexcept : versioned_(t) {}
  explicit ProducerTensor(DLManagedTensor* t) noexcept : legacy_(t) {}
  ProducerTensor(ProducerTensor&& other) noexcept
      : versioned_(std::exchange(other.versioned_, nullptr)), legacy_(std::exchange(other.legacy_, nullptr)) {}
  ProducerTensor(const ProducerTensor&) = delete;
  ProducerTensor& operator=(const ProducerTensor&) = delete;
  ProducerTensor& operator=(ProducerTensor&&) = delete;
  ~ProducerTensor() { release(); }

  void release() noexcept {
    DLManagedTensorVersioned* v = std::exchange(versioned_, nullptr);
    DLManagedTensor* l = std::exchange(legacy_, nullptr);
    if (v != nullptr && v->deleter != nullptr) v->deleter(v);
    if (l != nullptr && l->deleter != nullptr) l->deleter(l);
  }

  const DLTensor& tensor() const { return versioned_ != nullptr ? versioned_->dl_tensor : legacy_->dl_tensor; }

  /// The device of the exported array when the tensor is one of ours, so a round
  /// trip lands on the same device object (also for adopted OpenCL contexts).
  ComputeDevice exportedDevice() const {
    const ExportContext* ctx = nullptr;
    if (versioned_ != nullptr && versioned_->deleter == &deleteExportedVersioned)
      ctx = static_cast<const ExportContext*>(versioned_->manager_ctx);
    if (legacy_ != nullptr && legacy_->deleter == &deleteExportedLegacy)
      ctx = static_cast<const ExportContext*>(legacy_->manager_ctx);
    if (ctx == nullptr || ctx->array.empty()) return ComputeDevice();
    return ctx->array.device();
  }

 private:
  DLManagedTensorVersioned* versioned_ = nullptr;
  DLManagedTensor* legacy_ = nullptr;
};

/// Storage of an imported tensor: the backend's adopted allocation plus the
/// producer's tensor, whose deleter runs when the last handle goes.
class DLPackAllocation final : public detail::Allocation {
 public:
  DLPackAllocation(std::shared_ptr<detail::Allocation> adopted, ProducerTensor&& producer)
      : Allocation(adopted->device(), adopted->handle(), adopted->bytes(), /*owned=*/false),
        adopted_(std::move(adopted)),
        producer_(std::move(producer)) {}

  ~DLPackAllocation() override {
    // The producer may free the memory at once and knows nothing of our queues,
    // so library work on it must be finished first. A failing wait (lost device)
    // cannot be reported from a destructor; the memory is handed back regardless.
    try {
      waitIdle();
    } catch (...) {  // NOLINT(bugprone-empty-catch)
    }
    adopted_.reset();  // drop our reference (e.g. the cl_mem retain) before the producer frees
    producer_.release();
  }

 private:
  std::shared_ptr<detail::Allocation> adopted_;
  ProducerTensor producer_;
};

struct ImportLayout {
  Depth depth = Depth::U8;
  GpuMatND::SizeArray size;
  GpuMatND::StepArray step;   // bytes
  std::uint64_t extent = 0;   // bytes from the first element to one past the last
};

ImportLayout planLayout(const DLTensor& t, const char* fn) {
  if (t.data == nullptr) raise(ErrorCode::InvalidArgument, std::string(fn) + ": dl_tensor.data is NULL");
  if (t.ndim < 0) raise(ErrorCode::InvalidArgument, std::string(fn) + ": dl_tensor.ndim = " + str(t.ndim) + " is negative");
  if (t.ndim == 0)
    raise(ErrorCode::Unsupported, std::string(fn) + ": dl_tensor.ndim = 0 (a scalar) has no GpuMatND equivalent; at least 1 axis is needed");
  if (t.ndim > detail::kMaxDims)
    raise(ErrorCode::Unsupported, std::string(fn) + ": dl_tensor.ndim = " + str(t.ndim) + " exceeds GpuMatND's limit of " +
                                      std::to_string(detail::kMaxDims) + " axes");
  if (t.shape == nullptr) raise(ErrorCode::InvalidArgument, std::string(fn) + ": dl_tensor.shape is NULL");

  ImportLayout layout;
  layout.depth = depthOf(t.dtype, fn);
  layout.size.reserve(static_cast<std::size_t>(t.ndim));
  layout.step.reserve(static_cast<std::size_t>(t.ndim));
  const std::uint64_t elem = depthSize(layout.depth);
  const int n = t.ndim;

  std::uint64_t total = elem;
  for (int i = 0; i < n; ++i) {
    const std::int64_t len = t.shape[i];
    if (len <= 0)
      raise(ErrorCode::InvalidArgument, std::string(fn) + ": dl_tensor.shape[" + std::to_string(i) + "] = " + str(len) +
                                            " is not positive; every axis needs a length of at least 1");
    if (len > INT_MAX)
      raise(ErrorCode::OutOfRange, std::string(fn) + ": dl_tensor.shape[" + std::to_string(i) + "] = " + str(len) +
                                       " exceeds GpuMatND's axis limit of " + std::to_string(INT_MAX));
    if (mulOverflows(total, static_cast<std::uint64_t>(len), total) || total > kMaxBytes)
      raise(ErrorCode::OutOfRange, std::string(fn) + ": dl_tensor.shape makes a byte count that overflows (axis " +
                                       std::to_string(i) + " of length " + str(len) + ")");
    layout.size.push_back(static_cast<int>(len));
  }

  // Element strides, with those of length-1 axes replaced by the compact value
  // (they never move the address, and GpuMatND wants descending steps).
  std::array<std::uint64_t, detail::kMaxDims> stride{};
  for (int i = n - 1; i >= 0; --i) {
    std::uint64_t minimum = 1;  // the compact stride of axis i
    if (i + 1 < n && mulOverflows(stride[i + 1], static_cast<std::uint64_t>(t.shape[i + 1]), minimum))
      raise(ErrorCode::OutOfRange, std::string(fn) + ": dl_tensor.strides make an offset that overflows");
    if (t.strides == nullptr || t.shape[i] == 1) {
      stride[i] = minimum;
      continue;
    }
    const std::int64_t s = t.strides[i];
    auto axis = [&] { return "dl_tensor.strides[" + std::to_string(i) + "] = " + str(s); };
    if (s < 0) raise(ErrorCode::InvalidArgument, std::string(fn) + ": " + axis() + " is negative; GpuMatND cannot hold reversed axes");
    if (i == n - 1 && s != 1)
      raise(ErrorCode::InvalidArgument, std::string(fn) + ": " + axis() + " leaves gaps in the last axis; GpuMatND needs the last "
                                            "axis contiguous (stride 1)");
    if (static_cast<std::uint64_t>(s) < minimum)
      raise(ErrorCode::InvalidArgument,
            std::string(fn) + ": " + axis() + " is smaller than " + ustr(minimum) + " (strides[" + std::to_string(i + 1) +
                "] * shape[" + std::to_string(i + 1) +
                "]); axes would overlap or are not in descending stride order, which GpuMatND cannot hold");
    stride[i] = static_cast<std::uint64_t>(s);
  }

  std::uint64_t extent = elem;
  for (int i = 0; i < n; ++i) {
    std::uint64_t stepBytes = 0;
    std::uint64_t span = 0;
    if (mulOverflows(stride[i], elem, stepBytes) || stepBytes > kMaxBytes ||
        mulOverflows(stepBytes, static_cast<std::uint64_t>(t.shape[i] - 1), span) ||
        addOverflows(extent, span, extent) || extent > kMaxBytes)
      raise(ErrorCode::OutOfRange, std::string(fn) + ": dl_tensor.strides[" + std::to_string(i) +
                                       "] make a byte offset that overflows");
    layout.step.push_back(static_cast<std::size_t>(stepBytes));
  }
  layout.extent = extent;
  return layout;
}

#if defined(DEVICEARRAY_HAS_OPENCL)
template <class T>
bool memInfo(void* mem, cl_mem_info what, T& out) {
  return clGetMemObjectInfo(static_cast<cl_mem>(mem), what, sizeof(T), &out, nullptr) == CL_SUCCESS;
}
#endif

struct ResolvedMemory {
  ComputeDevice device;
  void* handle = nullptr;    // what adopt() takes: CUDA address / cl_mem
  std::size_t bytes = 0;     // bytes usable from handle
  std::size_t offset = 0;    // byte offset of the first element from handle
};

ResolvedMemory resolveCuda(const DLTensor& t, const ImportLayout& layout, const ComputeDevice& requested,
                           const ComputeDevice& exported, const char* fn) {
  const int id = t.device.device_id;
  ResolvedMemory r;
  if (requested.isValid()) {
    if (requested.backend() != ComputeBackend::cuda || requested.ordinal() != id)
      raise(ErrorCode::InvalidArgument, std::string(fn) + ": the tensor is on CUDA device " + std::to_string(id) +
                                            " but the requested device is " + requested.toString());
    r.device = requested;
  } else if (exported.isValid() && exported.backend() == ComputeBackend::cuda && exported.ordinal() == id) {
    r.device = exported;
  } else {
    int cudaCount = 0;
    for (const ComputeDevice& d : ComputeDevice::all()) {
      if (d.backend() != ComputeBackend::cuda) continue;
      ++cudaCount;
      if (d.ordinal() == id) r.device = d;
    }
    if (!r.device.isValid()) {
      std::string why = std::string(fn) + ": dl_tensor.device {kDLCUDA, " + std::to_string(id) + "} is not a CUDA device of this process (" +
                        std::to_string(cudaCount) + " CUDA devices)";
      const std::string reason = detail::backendOf(ComputeBackend::cuda).unavailableReason();
      if (cudaCount == 0 && !reason.empty()) why += ": " + reason;
      raise(ErrorCode::Unsupported, why);
    }
  }
  const auto address = reinterpret_cast<std::uintptr_t>(t.data);
  if (t.byte_offset > std::numeric_limits<std::uintptr_t>::max() - address)
    raise(ErrorCode::OutOfRange, std::string(fn) + ": dl_tensor.data + byte_offset (" + ustr(t.byte_offset) + ") overflows");
  const std::uintptr_t first = address + static_cast<std::uintptr_t>(t.byte_offset);
  if (first % depthSize(layout.depth) != 0)
    raise(ErrorCode::InvalidArgument, std::string(fn) + ": dl_tensor.data + byte_offset is not aligned to the " +
                                          ustr(depthSize(layout.depth)) + "-byte element type");
  r.handle = reinterpret_cast<void*>(first);
  r.bytes = static_cast<std::size_t>(layout.extent);
  r.offset = 0;
  return r;
}

ResolvedMemory resolveOpenCL(const DLTensor& t, const ImportLayout& layout, const ComputeDevice& requested,
                             const ComputeDevice& exported, const char* fn) {
#if defined(DEVICEARRAY_HAS_OPENCL)
  cl_context context = nullptr;
  std::size_t memSize = 0;
  if (!memInfo(t.data, CL_MEM_CONTEXT, context) || !memInfo(t.data, CL_MEM_SIZE, memSize))
    raise(ErrorCode::InvalidArgument, std::string(fn) + ": dl_tensor.data is not a valid cl_mem (kDLOpenCL tensors carry the "
                                          "cl_mem in data)");
  if (t.device.device_id < 0)
    raise(ErrorCode::InvalidArgument, std::string(fn) + ": dl_tensor.device.device_id = " + std::to_string(t.device.device_id) +
                                          " is negative");

  ResolvedMemory r;
  if (requested.isValid()) {
    if (requested.backend() != ComputeBackend::opencl || requested.nativeContext() != static_cast<void*>(context))
      raise(ErrorCode::InvalidArgument, std::string(fn) + ": the tensor's cl_mem does not belong to the context of the requested "
                                            "device " + requested.toString());
    r.device = requested;
  } else if (exported.isValid() && exported.nativeContext() == static_cast<void*>(context)) {
    r.device = exported;
  } else {
    // Prefer the device the tensor names; any device of the cl_mem's context can use it.
    std::vector<ComputeDevice> opencl;
    for (const ComputeDevice& d : ComputeDevice::all())
      if (d.backend() == ComputeBackend::opencl) opencl.push_back(d);
    const auto id = static_cast<std::size_t>(t.device.device_id);
    if (id < opencl.size() && opencl[id].nativeContext() == static_cast<void*>(context)) r.device = opencl[id];
    for (std::size_t i = 0; i < opencl.size() && !r.device.isValid(); ++i)
      if (opencl[i].nativeContext() == static_cast<void*>(context)) r.device = opencl[i];
    if (!r.device.isValid())
      raise(ErrorCode::Unsupported, std::string(fn) + ": the tensor's cl_mem belongs to an OpenCL context this library does not "
                                        "use; import it with fromDLPack(tensor, ComputeDevice::fromOpenCL(...))");
  }

  std::uint64_t end = 0;
  if (addOverflows(t.byte_offset, layout.extent, end) || end > memSize)
    raise(ErrorCode::OutOfRange, std::string(fn) + ": dl_tensor.byte_offset " + ustr(t.byte_offset) + " plus the " +
                                     ustr(layout.extent) + " bytes the shape and strides span exceed the cl_mem's " +
                                     ustr(memSize) + " bytes");
  if (t.byte_offset % depthSize(layout.depth) != 0)
    raise(ErrorCode::InvalidArgument, std::string(fn) + ": dl_tensor.byte_offset " + ustr(t.byte_offset) +
                                          " is not aligned to the " + ustr(depthSize(layout.depth)) +
                                          "-byte element type");
  r.handle = t.data;
  r.bytes = memSize;
  r.offset = static_cast<std::size_t>(t.byte_offset);
  return r;
#else
  (void)t; (void)layout; (void)requested; (void)exported;
  raise(ErrorCode::Unsupported, std::string(fn) + ": this build has no OpenCL backend (DEVICEARRAY_WITH_OPENCL=OFF)");
#endif
}

const char* deviceTypeName(int type) {
  switch (type) {
    case kDLCPU: return "kDLCPU";
    case kDLCUDA: return "kDLCUDA";
    case kDLCUDAHost: return "kDLCUDAHost";
    case kDLOpenCL: return "kDLOpenCL";
    case kDLVulkan: return "kDLVulkan";
    case kDLMetal: return "kDLMetal";
    case kDLVPI: return "kDLVPI";
    case kDLROCM: return "kDLROCM";
    case kDLROCMHost: return "kDLROCMHost";
    case kDLExtDev: return "kDLExtDev";
    case kDLCUDAManaged: return "kDLCUDAManaged";
    case kDLOneAPI: return "kDLOneAPI";
    case kDLWebGPU: return "kDLWebGPU";
    case kDLHexagon: return "kDLHexagon";
    case kDLMAIA: return "kDLMAIA";
    case kDLTrn: return "kDLTrn";
    default: return "unknown device type";
  }
}

GpuMatND importTensor(ProducerTensor producer, const ComputeDevice& requested, const char* fn) {
  const DLTensor& t = producer.tensor();
  const ImportLayout layout = planLayout(t, fn);

  ResolvedMemory memory;
  // A foreign producer may put any int32 in this C enum (e.g. a device type newer
  // than these headers); loading it as the C++ enum is undefined for values past
  // the known enumerators, so its bytes are read instead.
  std::int32_t type = 0;
  static_assert(sizeof(t.device.device_type) == sizeof(type), "DLDeviceType is 32 bits");
  std::memcpy(&type, &t.device.device_type, sizeof(type));
  if (type == kDLCUDA) {
    memory = resolveCuda(t, layout, requested, producer.exportedDevice(), fn);
  } else if (type == kDLOpenCL) {
    memory = resolveOpenCL(t, layout, requested, producer.exportedDevice(), fn);
  } else if (type == kDLCPU) {
    raise(ErrorCode::Unsupported, std::string(fn) + ": dl_tensor.device is kDLCPU; host tensors are not imported (upload a "
                                      "HostMat view of the memory instead)");
  } else {
    raise(ErrorCode::Unsupported, std::string(fn) + ": dl_tensor.device type " + std::to_string(type) + " (" +
                                      deviceTypeName(type) + ") is not a device of this library (kDLCUDA, kDLOpenCL)");
  }

  // adopt() verifies the memory against the device; its errors get this function's name.
  std::shared_ptr<detail::Allocation> adopted;
  try {
    adopted = memory.device.impl()->adopt(memory.handle, memory.bytes);
  } catch (const Error& e) {
    raise(e.code(), std::string(fn) + ": the " + memory.device.toString() + " backend refused the tensor's memory: " + e.what());
  }
  detail::faultPoint(detail::FaultKind::hostAllocation, fn);
  auto storage = std::make_shared<DLPackAllocation>(std::move(adopted), std::move(producer));
  return detail::makeGpuMatND(std::move(storage), memory.offset, layout.size, makeType(layout.depth, 1),
                                  layout.step);
}

GpuMatND importVersioned(DLManagedTensorVersioned* tensor, const ComputeDevice& requested) {
  const char* fn = "fromDLPack(DLManagedTensorVersioned*)";
  if (tensor == nullptr) raise(ErrorCode::InvalidArgument, std::string(fn) + ": tensor is NULL");
  ProducerTensor producer(tensor);
  // Only version and deleter may be read before the major version is known.
  const DLPackVersion version = tensor->version;
  if (version.major > DLPACK_MAJOR_VERSION)
    raise(ErrorCode::Unsupported, std::string(fn) + ": DLPack version " + ustr(version.major) + "." + ustr(version.minor) +
                                      " is newer than the supported major version " +
                                      std::to_string(DLPACK_MAJOR_VERSION));
  if (version.major == 0)
    raise(ErrorCode::InvalidArgument, std::string(fn) + ": DLPack version 0." + ustr(version.minor) +
                                          " is invalid for a versioned tensor (they start at 1.0)");
  if ((tensor->flags & DLPACK_FLAG_BITMASK_READ_ONLY) != 0)
    raise(ErrorCode::Unsupported, std::string(fn) + ": the tensor is flagged READ_ONLY and GpuMatND has no read-only mode; "
                                      "ask the producer for a writable copy");
  return translateBadAlloc(fn, [&] { return importTensor(std::move(producer), requested, fn); });
}

GpuMatND importLegacy(DLManagedTensor* tensor, const ComputeDevice& requested) {
  const char* fn = "fromDLPack(DLManagedTensor*)";
  if (tensor == nullptr) raise(ErrorCode::InvalidArgument, std::string(fn) + ": tensor is NULL");
  ProducerTensor producer(tensor);
  return translateBadAlloc(fn, [&] { return importTensor(std::move(producer), requested, fn); });
}

}  // namespace

// ------------------------------------------------------------- public API ----

DLManagedTensorVersioned* toDLPackVersioned(const GpuMatND& array) {
  const char* fn = "toDLPackVersioned";
  return translateBadAlloc(fn, [&] { return finishVersioned(exportDevice(array, fn), 0); });
}

DLManagedTensor* toDLPack(const GpuMatND& array) {
  const char* fn = "toDLPack";
  return translateBadAlloc(fn, [&] { return finishLegacy(exportDevice(array, fn)); });
}

DLManagedTensorVersioned* toDLPackVersionedHostCopy(const GpuMatND& array) {
  const char* fn = "toDLPackVersionedHostCopy";
  return translateBadAlloc(fn, [&] {
    return finishVersioned(exportHostCopy(array, fn), DLPACK_FLAG_BITMASK_IS_COPIED);
  });
}

DLManagedTensor* toDLPackHostCopy(const GpuMatND& array) {
  const char* fn = "toDLPackHostCopy";
  return translateBadAlloc(fn, [&] { return finishLegacy(exportHostCopy(array, fn)); });
}

GpuMatND fromDLPack(DLManagedTensorVersioned* tensor) { return importVersioned(tensor, ComputeDevice()); }

GpuMatND fromDLPack(DLManagedTensor* tensor) { return importLegacy(tensor, ComputeDevice()); }

GpuMatND fromDLPack(DLManagedTensorVersioned* tensor, const ComputeDevice& device) {
  if (!device.isValid()) {
    ProducerTensor drop(tensor);
    raise(ErrorCode::InvalidArgument, "fromDLPack(DLManagedTensorVersioned*, device): device is an invalid handle");
  }
  return importVersioned(tensor, device);
}

GpuMatND fromDLPack(DLManagedTensor* tensor, const ComputeDevice& device) {
  if (!device.isValid()) {
    ProducerTensor drop(tensor);
    raise(ErrorCode::InvalidArgument, "fromDLPack(DLManagedTensor*, device): device is an invalid handle");
  }
  return importLegacy(tensor, device);
}

GpuMatND foldChannelAxis(GpuMatND imported, Depth depth, int channels, const char* function) {
  if (imported.empty()) raise(ErrorCode::InvalidArgument, std::string(function) + ": the imported array is empty");
  if (imported.depth() != static_cast<int>(depth) || imported.channels() != 1)
    raise(ErrorCode::InvalidArgument, std::string(function) + ": the tensor's element type (depth " + std::to_string(imported.depth()) +
                                          ") is not the format's value type (depth " +
                                          std::to_string(static_cast<int>(depth)) + ")");
  const int dims = imported.dims;
  auto shapeText = [&] {
    std::string s = "[";
    for (int i = 0; i < dims; ++i) s += (i ? ", " : "") + std::to_string(imported.size[i]);
    return s + "]";
  };
  if (channels == 1) {
    if (dims > 2)
      raise(ErrorCode::InvalidArgument, std::string(function) + ": shape " + shapeText() +
                                            " does not fit a one-channel format ([H, W] or [N])");
    if (!imported.isContinuous())
      raise(ErrorCode::InvalidArgument, std::string(function) + ": the tensor's rows are padded; DeviceArray is always tightly packed");
    return imported;
  }
  if (dims < 2 || dims > 3 || imported.size[dims - 1] != channels)
    raise(ErrorCode::InvalidArgument, std::string(function) + ": shape " + shapeText() + " does not fit a " + std::to_string(channels) +
                                          "-channel format ([H, W, " + std::to_string(channels) + "] or [N, " +
                                          std::to_string(channels) + "])");
  const std::size_t pixel = imported.elemSize1() * static_cast<std::size_t>(channels);
  if (imported.step[dims - 2] != pixel || !imported.isContinuous())
    raise(ErrorCode::InvalidArgument, std::string(function) + ": the tensor is not tightly packed (step[" + std::to_string(dims - 2) +
                                          "] = " + std::to_string(imported.step[dims - 2]) + " bytes, pixel = " +
                                          std::to_string(pixel) + " bytes); DeviceArray is always tightly packed");
  GpuMatND::SizeArray size(imported.size.begin(), imported.size.begin() + (dims - 1));
  GpuMatND::StepArray step(imported.step.begin(), imported.step.begin() + (dims - 1));
  return detail::makeGpuMatND(detail::allocationOf(imported), detail::offsetOf(imported), std::move(size),
                              makeType(depth, channels), std::move(step));
}

namespace detail {

// Offsets, sizes and enumerator values of this library's DLPack declarations, keyed
// "Struct.field" / "sizeof(T)" / "alignof(T)" / enumerator name, for the ABI test.
std::vector<std::pair<std::string, std::size_t>> dlpackLayoutTable() {
  std::vector<std::pair<std::string, std::size_t>> t;
#define DA_LAYOUT_STRUCT(T) \
  t.emplace_back("sizeof(" #T ")", sizeof(T)); \
  t.emplace_back("alignof(" #T ")", alignof(T))
#define DA_LAYOUT_FIELD(T, field) t.emplace_back(#T "." #field, offsetof(T, field))
#define DA_LAYOUT_VALUE(name) t.emplace_back(#name, static_cast<std::size_t>(name))
  DA_LAYOUT_STRUCT(DLPackVersion);
  DA_LAYOUT_FIELD(DLPackVersion, major);
  DA_LAYOUT_FIELD(DLPackVersion, minor);
  DA_LAYOUT_STRUCT(DLDeviceType);
  DA_LAYOUT_STRUCT(DLDevice);
  DA_LAYOUT_FIELD(DLDevice, device_type);
  DA_LAYOUT_FIELD(DLDevice, device_id);
  DA_LAYOUT_STRUCT(DLDataType);
  DA_LAYOUT_FIELD(DLDataType, code);
  DA_LAYOUT_FIELD(DLDataType, bits);
  DA_LAYOUT_FIELD(DLDataType, lanes);
  DA_LAYOUT_STRUCT(DLTensor);
  DA_LAYOUT_FIELD(DLTensor, data);
  DA_LAYOUT_FIELD(DLTensor, device);
  DA_LAYOUT_FIELD(DLTensor, ndim);
  DA_LAYOUT_FIELD(DLTensor, dtype);
  DA_LAYOUT_FIELD(DLTensor, shape);
  DA_LAYOUT_FIELD(DLTensor, strides);
  DA_LAYOUT_FIELD(DLTensor, byte_offset);
  DA_LAYOUT_STRUCT(DLManagedTensor);
  DA_LAYOUT_FIELD(DLManagedTensor, dl_tensor);
  DA_LAYOUT_FIELD(DLManagedTensor, manager_ctx);
  DA_LAYOUT_FIELD(DLManagedTensor, deleter);
  DA_LAYOUT_STRUCT(DLManagedTensorVersioned);
  DA_LAYOUT_FIELD(DLManagedTensorVersioned, version);
  DA_LAYOUT_FIELD(DLManagedTensorVersioned, manager_ctx);
  DA_LAYOUT_FIELD(DLManagedTensorVersioned, deleter);
  DA_LAYOUT_FIELD(DLManagedTensorVersioned, flags);
  DA_LAYOUT_FIELD(DLManagedTensorVersioned, dl_tensor);
  DA_LAYOUT_VALUE(kDLCPU);
  DA_LAYOUT_VALUE(kDLCUDA);
  DA_LAYOUT_VALUE(kDLCUDAHost);
  DA_LAYOUT_VALUE(kDLOpenCL);
  DA_LAYOUT_VALUE(kDLVulkan);
  DA_LAYOUT_VALUE(kDLMetal);
  DA_LAYOUT_VALUE(kDLVPI);
  DA_LAYOUT_VALUE(kDLROCM);
  DA_LAYOUT_VALUE(kDLROCMHost);
  DA_LAYOUT_VALUE(kDLExtDev);
  DA_LAYOUT_VALUE(kDLCUDAManaged);
  DA_LAYOUT_VALUE(kDLOneAPI);
  DA_LAYOUT_VALUE(kDLWebGPU);
  DA_LAYOUT_VALUE(kDLHexagon);
  DA_LAYOUT_VALUE(kDLMAIA);
  DA_LAYOUT_VALUE(kDLTrn);
  DA_LAYOUT_VALUE(kDLInt);
  DA_LAYOUT_VALUE(kDLUInt);
  DA_LAYOUT_VALUE(kDLFloat);
  DA_LAYOUT_VALUE(kDLOpaqueHandle);
  DA_LAYOUT_VALUE(kDLBfloat);
  DA_LAYOUT_VALUE(kDLComplex);
  DA_LAYOUT_VALUE(kDLBool);
  DA_LAYOUT_VALUE(DLPACK_FLAG_BITMASK_READ_ONLY);
  DA_LAYOUT_VALUE(DLPACK_FLAG_BITMASK_IS_COPIED);
  DA_LAYOUT_VALUE(DLPACK_FLAG_BITMASK_IS_SUBBYTE_TYPE_PADDED);
  DA_LAYOUT_VALUE(DLPACK_MAJOR_VERSION);
  DA_LAYOUT_VALUE(DLPACK_MINOR_VERSION);
  DA_LAYOUT_STRUCT(DLPackExchangeAPIHeader);
  DA_LAYOUT_FIELD(DLPackExchangeAPIHeader, version);
  DA_LAYOUT_FIELD(DLPackExchangeAPIHeader, prev_api);
  DA_LAYOUT_STRUCT(DLPackExchangeAPI);
  DA_LAYOUT_FIELD(DLPackExchangeAPI, header);
  DA_LAYOUT_FIELD(DLPackExchangeAPI, managed_tensor_allocator);
  DA_LAYOUT_FIELD(DLPackExchangeAPI, managed_tensor_from_py_object_no_sync);
  DA_LAYOUT_FIELD(DLPackExchangeAPI, managed_tensor_to_py_object_no_sync);
  DA_LAYOUT_FIELD(DLPackExchangeAPI, dltensor_from_py_object_no_sync);
  DA_LAYOUT_FIELD(DLPackExchangeAPI, current_work_stream);
#undef DA_LAYOUT_STRUCT
#undef DA_LAYOUT_FIELD
#undef DA_LAYOUT_VALUE
  return t;
}

}  // namespace detail
}  // namespace devicearray
