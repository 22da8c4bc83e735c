// devicearray — zero-copy DLPack import and export.
//
// This header declares the standard, global DLPack ≥ 1.0 types (DLTensor,
// DLManagedTensor, DLManagedTensorVersioned, ...) with exactly the ABI of
// dlpack.h v1.3, so the tensors made here pass unchanged to at::fromDLPack,
// CuPy, JAX and any other consumer, and tensors from them come back here. It also
// declares the DLPack 1.3 C exchange API (DLPackExchangeAPI: the function table a
// Python array type publishes as `__dlpack_c_exchange_api__`), which the Python
// package both publishes and consumes.
//
// Mixing with another dlpack.h: the types can be declared only once per
// translation unit. Either include this header first (it then also marks
// dlpack.h's include guard DLPACK_DLPACK_H_ as taken, so a later
// `#include <dlpack/dlpack.h>` is a no-op and our declarations serve), or include a
// v1.x dlpack.h first (DLPACK_MAJOR_VERSION defined), in which case its
// declarations are used. A pre-1.0 dlpack.h (DLPACK_VERSION, no versioned
// tensor) included first is a compile error: it lacks DLManagedTensorVersioned.
//
// The exchange API after a dlpack.h included first: v1.3 and later declare it
// themselves; v1.0 and v1.1 know nothing of it, so this header adds the v1.3
// declarations; v1.2 declares an earlier, incompatible draft under the same names,
// so with it the exchange API is left out. DEVICEARRAY_DLPACK_HAS_EXCHANGE_API
// says which (1: declared, 0: left out); the tensor API works in every case.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>

#include "devicearray/device_array.hpp"
#include "devicearray/gpu_mat_nd.hpp"
#include "devicearray/types.hpp"

#if defined(DLPACK_MAJOR_VERSION)
#if DLPACK_MAJOR_VERSION != 1
#error "devicearray/dlpack.hpp supports DLPack major version 1; a dlpack.h of another major version was included first"
#endif
#elif defined(DLPACK_DLPACK_H_) || defined(DLPACK_VERSION)
#error "a pre-1.0 dlpack.h was included before devicearray/dlpack.hpp; include a v1.x dlpack.h or devicearray/dlpack.hpp first"
#else

// Take dlpack.h's include guard: later includes of any dlpack.h v1.x become no-ops
// instead of redefinition errors.
#define DLPACK_DLPACK_H_

#define DLPACK_MAJOR_VERSION 1
#define DLPACK_MINOR_VERSION 3

#ifndef DLPACK_EXTERN_C
#define DLPACK_EXTERN_C extern "C"
#endif
#ifndef DLPACK_DLL
#define DLPACK_DLL
#endif

extern "C" {

/// Version of the ABI a DLManagedTensorVersioned follows. A consumer that sees a
/// different major version may only call the deleter.
typedef struct {
  std::uint32_t major;
  std::uint32_t minor;
} DLPackVersion;

/// Where the memory lives. The values are fixed by the standard.
typedef enum {
  kDLCPU = 1,
  kDLCUDA = 2,
  kDLCUDAHost = 3,
  kDLOpenCL = 4,
  kDLVulkan = 7,
  kDLMetal = 8,
  kDLVPI = 9,
  kDLROCM = 10,
  kDLROCMHost = 11,
  kDLExtDev = 12,
  kDLCUDAManaged = 13,
  kDLOneAPI = 14,
  kDLWebGPU = 15,
  kDLHexagon = 16,
  kDLMAIA = 17,
  kDLTrn = 18,
} DLDeviceType;

typedef struct {
  DLDeviceType device_type;
  std::int32_t device_id;  ///< ordinal of the device within its type
} DLDevice;

/// Value of DLDataType::code.
typedef enum {
  kDLInt = 0U,
  kDLUInt = 1U,
  kDLFloat = 2U,
  kDLOpaqueHandle = 3U,
  kDLBfloat = 4U,
  kDLComplex = 5U,
  kDLBool = 6U,
  kDLFloat8_e3m4 = 7U,
  kDLFloat8_e4m3 = 8U,
  kDLFloat8_e4m3b11fnuz = 9U,
  kDLFloat8_e4m3fn = 10U,
  kDLFloat8_e4m3fnuz = 11U,
  kDLFloat8_e5m2 = 12U,
  kDLFloat8_e5m2fnuz = 13U,
  kDLFloat8_e8m0fnu = 14U,
  kDLFloat6_e2m3fn = 15U,
  kDLFloat6_e3m2fn = 16U,
  kDLFloat4_e2m1fn = 17U,
} DLDataTypeCode;

/// Element type: code (a DLDataTypeCode), bits per lane, lanes per element.
typedef struct {
  std::uint8_t code;
  std::uint8_t bits;
  std::uint16_t lanes;
} DLDataType;

/// A non-owning strided view. `strides` (elements) may be NULL for compact row-major;
/// `byte_offset` is added to `data` (which on OpenCL is a cl_mem, not an address).
typedef struct {
  void* data;
  DLDevice device;
  std::int32_t ndim;
  DLDataType dtype;
  std::int64_t* shape;
  std::int64_t* strides;
  std::uint64_t byte_offset;
} DLTensor;

/// Legacy (unversioned) owning tensor; the consumer calls deleter(self) exactly once.
typedef struct DLManagedTensor {
  DLTensor dl_tensor;
  void* manager_ctx;
  void (*deleter)(struct DLManagedTensor* self);
} DLManagedTensor;

#define DLPACK_FLAG_BITMASK_READ_ONLY (1UL << 0UL)
#define DLPACK_FLAG_BITMASK_IS_COPIED (1UL << 1UL)
#define DLPACK_FLAG_BITMASK_IS_SUBBYTE_TYPE_PADDED (1UL << 2UL)

/// Versioned owning tensor (DLPack ≥ 1.0). `version` and `deleter` keep their
/// positions across major versions; everything else may move.
typedef struct DLManagedTensorVersioned {
  DLPackVersion version;
  void* manager_ctx;
  void (*deleter)(struct DLManagedTensorVersioned* self);
  std::uint64_t flags;
  DLTensor dl_tensor;
} DLManagedTensorVersioned;

}  // extern "C"

#define DEVICEARRAY_DLPACK_DECLARE_EXCHANGE_API 1

#endif  // declaring the DLPack types

#if !defined(DEVICEARRAY_DLPACK_DECLARE_EXCHANGE_API) && DLPACK_MINOR_VERSION < 2
// A v1.0 / v1.1 dlpack.h came first: it has no exchange API, so ours adds it.
#define DEVICEARRAY_DLPACK_DECLARE_EXCHANGE_API 1
#endif

#if defined(DEVICEARRAY_DLPACK_DECLARE_EXCHANGE_API)
#undef DEVICEARRAY_DLPACK_DECLARE_EXCHANGE_API
#define DEVICEARRAY_DLPACK_HAS_EXCHANGE_API 1

// ------------------------------------------------ C exchange API (v1.3) ----
//
// A Python array type publishes one process-lifetime DLPackExchangeAPI as the class
// attribute `__dlpack_c_exchange_api__`: a PyCapsule named "dlpack_exchange_api"
// pointing at the table. A consumer reads it from the type (and may cache it per
// type), checks header.version (major 1; walk prev_api for an older major it
// speaks) and then exchanges tensors without Python calls. Every function is
// called with the GIL held unless noted, reports failure by returning -1 (with a
// Python exception set) and never throws. The *_no_sync functions order no device
// work: the consumer works on the stream current_work_stream reports.
extern "C" {

/// Allocates a new tensor in the producer's library with the dtype, ndim, shape and
/// device of `prototype` (its other fields are ignored) and stores the owning
/// tensor in *out. Returns 0, or -1 after calling set_error(error_ctx, kind,
/// message), where kind names a Python exception type ("ValueError", ...). It does
/// not touch Python itself, so it may run without the GIL.
typedef int (*DLPackManagedTensorAllocator)(DLTensor* prototype, DLManagedTensorVersioned** out, void* error_ctx,
                                            void (*set_error)(void* error_ctx, const char* kind,
                                                              const char* message));

/// Exports `py_object` (an instance of the type the table came from) as an owning
/// tensor in *out. Returns 0, or -1 with a Python exception set (BufferError when
/// the object cannot be described as a DLPack tensor).
typedef int (*DLPackManagedTensorFromPyObjectNoSync)(void* py_object, DLManagedTensorVersioned** out);

/// Fills the caller's DLTensor with a view of `py_object` that is valid only until
/// the caller returns to Python (the producer keeps owning shape and strides).
/// Returns 0, or -1 with a Python exception set.
typedef int (*DLPackDLTensorFromPyObjectNoSync)(void* py_object, DLTensor* out);

/// Stores the producer's current work stream of a device (a cudaStream_t for
/// kDLCUDA; NULL is allowed for kDLCPU) in *out_current_stream. Returns 0, or -1
/// with a Python exception set.
typedef int (*DLPackCurrentWorkStream)(DLDeviceType device_type, std::int32_t device_id, void** out_current_stream);

/// Takes ownership of `tensor` (its deleter runs exactly once, also on failure) and
/// stores a new reference to an object of the producer's array type in
/// *out_py_object. Returns 0, or -1 with a Python exception set.
typedef int (*DLPackManagedTensorToPyObjectNoSync)(DLManagedTensorVersioned* tensor, void** out_py_object);

/// The part of the table that stays put across major versions.
typedef struct DLPackExchangeAPIHeader {
  DLPackVersion version;  ///< the DLPack version the table follows
  /// A table of an older major version for older consumers, or NULL.
  struct DLPackExchangeAPIHeader* prev_api;
} DLPackExchangeAPIHeader;

/// The function table. dltensor_from_py_object_no_sync may be NULL (not offered);
/// every other member is required.
typedef struct DLPackExchangeAPI {
  DLPackExchangeAPIHeader header;
  DLPackManagedTensorAllocator managed_tensor_allocator;
  DLPackManagedTensorFromPyObjectNoSync managed_tensor_from_py_object_no_sync;
  DLPackManagedTensorToPyObjectNoSync managed_tensor_to_py_object_no_sync;
  DLPackDLTensorFromPyObjectNoSync dltensor_from_py_object_no_sync;
  DLPackCurrentWorkStream current_work_stream;
} DLPackExchangeAPI;

}  // extern "C"

#elif DLPACK_MINOR_VERSION >= 3
#define DEVICEARRAY_DLPACK_HAS_EXCHANGE_API 1  // the dlpack.h included first declares it
#else
#define DEVICEARRAY_DLPACK_HAS_EXCHANGE_API 0  // a v1.2 dlpack.h came first (see above)
#endif

// A v1.0 header lacks the v1.1 flag; define it so code below can name it.
#ifndef DLPACK_FLAG_BITMASK_IS_SUBBYTE_TYPE_PADDED
#define DLPACK_FLAG_BITMASK_IS_SUBBYTE_TYPE_PADDED (1UL << 2UL)
#endif

namespace devicearray {

// ------------------------------------------------------------------- export ----
//
// Exported tensors follow the DeviceArray layout table (docs/data-layout.md):
// every GpuMatND axis becomes a DLPack axis and, when the type has more than one
// channel, the channels are one more, last axis ([H, W, C]). Strides are in elements and never NULL; dtype is
// the depth (U8 → kDLUInt/8, S16 → kDLInt/16, F16 → kDLFloat/16, ...), lanes 1.
//   CUDA:   device {kDLCUDA, ordinal}; data = device address of the first element
//           (view offset folded in); byte_offset = 0.
//   OpenCL: device {kDLOpenCL, index among the OpenCL devices of
//           ComputeDevice::all(), 0 for devices adopted with fromOpenCL};
//           data = the cl_mem; byte_offset = byte offset of the first element.
// The tensor shares the memory (flags = 0: writable, not a copy) and keeps it alive
// until its deleter runs; the caller owns the returned tensor and must call its
// deleter exactly once (or hand it to a consumer that does).
//
// Blocking: waits (host) until all library work enqueued so far on the allocation
// is complete, so any consumer on any stream may read it at once. No stream is used.
// Throws InvalidArgument for an empty array or a step that is not a multiple of
// elemSize1() (DLPack strides count elements and cannot express it), OutOfMemory,
// BackendError.
DLManagedTensorVersioned* toDLPackVersioned(const GpuMatND& array);
/// Legacy (unversioned) form of toDLPackVersioned(); same layout, blocking and errors.
DLManagedTensor* toDLPack(const GpuMatND& array);

/// A host copy ({kDLCPU, 0}, compact, flags = IS_COPIED), for consumers that want
/// host memory (the array-API `dl_device=(kDLCPU, 0)` request). Blocking: downloads
/// on the library's own queue of the device. Throws like toDLPackVersioned().
DLManagedTensorVersioned* toDLPackVersionedHostCopy(const GpuMatND& array);
/// Legacy form of toDLPackVersionedHostCopy() (the legacy struct has no flags).
DLManagedTensor* toDLPackHostCopy(const GpuMatND& array);

// ------------------------------------------------------------------- import ----
//
// Takes ownership of `tensor`: its deleter runs exactly once — at once when the
// import fails (an Error is thrown after it ran), otherwise when the last handle to
// the memory goes (the returned GpuMatND, its copies, views and headers). The
// deleter then runs on the thread dropping that handle, after the host has waited
// for all library work on the memory (the producer may free it at once).
//
// The result wraps the memory without copying: every tensor axis becomes a GpuMatND
// dimension and the type has one channel (use fromDLPack<Format> to fold a channel
// axis). external() is true. Accepted: kDLCUDA tensors whose device_id is a CUDA
// device of this process, kDLOpenCL tensors whose data is a cl_mem of the context of
// one of the OpenCL devices of ComputeDevice::all() (or of the device passed to the
// overload below), any byte_offset, NULL strides (compact row-major), and strides
// whose last axis is contiguous and that decrease so that axes do not overlap
// (OpenCV's layout; the strides of length-1 axes are ignored).
//
// Not blocking and no stream: the caller must have made the producer's work on the
// memory complete or ordered before passing the result to library calls (the Python
// layer does the DLPack stream handshake).
//
// Throws (after running the deleter):
//   InvalidArgument: null tensor or data, ndim < 0, null shape, a non-positive
//     length, a negative device_id, negative, overlapping or non-descending strides,
//     a last axis that is not contiguous, data misaligned for the element type, data
//     that is not a valid cl_mem (kDLOpenCL), a versioned tensor of major version 0,
//     memory the backend's adopt() cannot verify (e.g. a pointer of another CUDA
//     device, or ordinary host memory);
//   OutOfRange: a length above INT_MAX, byte counts that overflow, an OpenCL view
//     that extends past the end of its cl_mem;
//   Unsupported: a major version above 1; the READ_ONLY flag (GpuMatND has no
//     read-only mode); ndim 0 or above 32; lanes ≠ 1; a dtype without a Depth
//     (bool, bfloat16, complex, float8/6/4, 32/64-bit unsigned, 64-bit signed,
//     opaque); a device that is not CUDA or OpenCL — host (kDLCPU) tensors are
//     refused, not copied; a CUDA ordinal that does not exist here; a cl_mem of an
//     OpenCL context none of the library's devices uses (pass the device explicitly);
//   OutOfMemory when host bookkeeping cannot be allocated.
GpuMatND fromDLPack(DLManagedTensorVersioned* tensor);
/// Legacy (unversioned) form; same rules minus version and flags.
GpuMatND fromDLPack(DLManagedTensor* tensor);
/// Imports onto `device` (e.g. one adopted with ComputeDevice::fromOpenCL, which
/// ComputeDevice::all() does not list). The tensor's device type must be the
/// device's backend and, on CUDA, its device_id the device's ordinal.
GpuMatND fromDLPack(DLManagedTensorVersioned* tensor, const ComputeDevice& device);
GpuMatND fromDLPack(DLManagedTensor* tensor, const ComputeDevice& device);

// ------------------------------------------------------ stream handshake ----
// The stream rules of the DLPack / array-API protocol as C++ calls: a producer makes
// its data ready on the consumer's stream, and an importer orders the library after
// the producer's stream. (The Python package's __dlpack__ and from_dlpack use them.)

/// Makes the caller's `consumer` stream / queue wait, device-side, for the library's
/// work on the memory of `array` (from any stream), and returns a handle of the same
/// memory whose exports (toDLPack*, getDevicePtr users) no longer wait for the
/// library's queues: export that handle and the consumer can use the tensor on
/// `consumer` at once. Later library work on the memory is ordered as usual.
/// With no `consumer` (the array-API's stream=-1) nothing is ordered: the caller
/// orders its consumer itself, and the export does not wait either.
/// Non-blocking; the host does not wait.
/// Throws InvalidArgument for an empty array or a `consumer` of another backend or
/// device; the backend's error for a handle it rejects.
GpuMatND readyOnConsumerStream(const GpuMatND& array, std::optional<StreamOrQueue> consumer);

/// Declares that the caller's `producer` stream / queue has work that writes or reads
/// the memory of `array` (an imported tensor, say): every later library call on that
/// memory, on any stream or queue, waits device-side for what `producer` has
/// enqueued so far. Non-blocking. Throws as readyOnConsumerStream.
void orderAfterProducerStream(const GpuMatND& array, StreamOrQueue producer);

/// The one-channel array `imported` (as fromDLPack(tensor) gives it) as an array of
/// elements of `channels` values of `depth` over the same memory, the layout
/// DeviceArray<Format>::fromGpuMatND takes: [H, W, C] / [N, C] become [H, W] / [N] with
/// the C = `channels` > 1 values folded into the type; [H, W] / [N] stay as they are
/// when `channels` is 1. O(1), no device work. Throws InvalidArgument naming `function`
/// when the value type, the shape or the packing does not fit; `imported` (and with it
/// the producer's tensor) is released then.
GpuMatND foldChannelAxis(GpuMatND imported, Depth depth, int channels, const char* function = "foldChannelAxis");

// ------------------------------------------------------------ DeviceArray ----

/// Exports arr.toGpuMatND(): shape [H,W,C] / [H,W] / [N,C] / [N] exactly as the
/// DeviceArray layout table (docs/data-layout.md), zero-copy. Blocking and errors as
/// toDLPackVersioned(GpuMatND).
template <class Format>
DLManagedTensorVersioned* toDLPackVersioned(const DeviceArray<Format>& array) {
  return toDLPackVersioned(array.toGpuMatND());
}
template <class Format>
DLManagedTensor* toDLPack(const DeviceArray<Format>& array) {
  return toDLPack(array.toGpuMatND());
}

/// Imports a tensor as DeviceArray<Format>: its dtype must be the format's value
/// type and its shape one of [H,W,C] / [N,C] (C = Format::channels > 1) or [H,W] /
/// [N] (one channel), tightly packed. Ownership, blocking and errors as
/// fromDLPack(DLManagedTensorVersioned*), plus InvalidArgument for a dtype or shape
/// that does not fit the format or a non-packed layout.
template <class Format>
DeviceArray<Format> fromDLPack(DLManagedTensorVersioned* tensor) {
  return DeviceArray<Format>::fromGpuMatND(
      foldChannelAxis(fromDLPack(tensor), Format::depth, Format::channels, "fromDLPack<Format>"));
}
template <class Format>
DeviceArray<Format> fromDLPack(DLManagedTensor* tensor) {
  return DeviceArray<Format>::fromGpuMatND(
      foldChannelAxis(fromDLPack(tensor), Format::depth, Format::channels, "fromDLPack<Format>"));
}

}  // namespace devicearray
