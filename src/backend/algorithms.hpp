// Parallel primitives the point-cloud code is written against, dispatched by the
// backend of the queue's device:
//   CUDA   — CUB (DeviceScan, DeviceRadixSort, DeviceReduce) with temporary storage
//            from the device's stream-ordered pool on the same stream
//            (src/cuda/algorithms.cu);
//   OpenCL — our own kernels (src/opencl/pointcloud_algorithms.cl, host side in
//            src/opencl/algorithms.cpp).
//
// Contract shared by every function: all work is enqueued on `q` and nothing blocks
// the host. The caller orders the allocations it passes (OrderedUse on `q` around the
// call); temporaries are allocated, ordered and released inside. Buffers are
// (allocation, byte offset) pairs on the queue's device; `count` fits in int32 (the
// callers' arrays are DeviceArrays, whose element counts are at most INT_MAX).
#pragma once

#include <cstddef>
#include <cstdint>

#include "backend/backend.hpp"

namespace devicearray::detail::algo {

/// A region of device memory: allocation + byte offset.
struct DeviceBuffer {
  Allocation* allocation = nullptr;
  std::size_t offset = 0;
};

/// out[i] = in[0] + ... + in[i-1] for i < count (uint32, wrapping). `in` and `out`
/// may be the same memory. Callers append a 0 to their flags and scan count + 1
/// values, so out[count] is the total.
void exclusiveScanU32(QueueImpl& q, DeviceBuffer in, DeviceBuffer out, std::size_t count);

/// Stable ascending sort of `count` (key, value) pairs by bits [0, endBit) of the
/// key (endBit in 1..64). The inputs are left unchanged; outputs must not overlap them.
void sortPairsU64U32(QueueImpl& q, DeviceBuffer keysIn, DeviceBuffer valuesIn, DeviceBuffer keysOut,
                     DeviceBuffer valuesOut, std::size_t count, int endBit);

/// out[0..3] (doubles) = sum of x, y, z over the points of `xyz` (3 floats each) whose
/// coordinates are all finite, and the number of such points.
void sumValidXYZ(QueueImpl& q, DeviceBuffer xyz, std::size_t count, DeviceBuffer out);

/// out[0..2] (floats) = component-wise minimum of x, y, z over the finite points of
/// `xyz`; +infinity when there is none.
void minValidXYZ(QueueImpl& q, DeviceBuffer xyz, std::size_t count, DeviceBuffer out);

// Backend implementations (each built only with its backend).
namespace cuda {
void exclusiveScanU32(QueueImpl& q, DeviceBuffer in, DeviceBuffer out, std::size_t count);
void sortPairsU64U32(QueueImpl& q, DeviceBuffer keysIn, DeviceBuffer valuesIn, DeviceBuffer keysOut,
                     DeviceBuffer valuesOut, std::size_t count, int endBit);
void sumValidXYZ(QueueImpl& q, DeviceBuffer xyz, std::size_t count, DeviceBuffer out);
void minValidXYZ(QueueImpl& q, DeviceBuffer xyz, std::size_t count, DeviceBuffer out);
}  // namespace cuda
namespace opencl {
void exclusiveScanU32(QueueImpl& q, DeviceBuffer in, DeviceBuffer out, std::size_t count);
void sortPairsU64U32(QueueImpl& q, DeviceBuffer keysIn, DeviceBuffer valuesIn, DeviceBuffer keysOut,
                     DeviceBuffer valuesOut, std::size_t count, int endBit);
void sumValidXYZ(QueueImpl& q, DeviceBuffer xyz, std::size_t count, DeviceBuffer out);
void minValidXYZ(QueueImpl& q, DeviceBuffer xyz, std::size_t count, DeviceBuffer out);
}  // namespace opencl

namespace dispatch_detail {
[[noreturn]] inline void notBuilt(const char* fn, ComputeBackend backend) {
  fail(ErrorCode::BackendUnavailable,
       std::string(fn) + ": this build of devicearray has no " + toString(backend) + " backend");
}
}  // namespace dispatch_detail

#if defined(DEVICEARRAY_HAS_CUDA)
#define DA_ALGO_CUDA_CALL(call) return cuda::call
#else
#define DA_ALGO_CUDA_CALL(call) dispatch_detail::notBuilt(__func__, ComputeBackend::cuda)
#endif
#if defined(DEVICEARRAY_HAS_OPENCL)
#define DA_ALGO_OPENCL_CALL(call) return opencl::call
#else
#define DA_ALGO_OPENCL_CALL(call) dispatch_detail::notBuilt(__func__, ComputeBackend::opencl)
#endif
// A primitive counts as one launch for fault injection (CUB's launches on CUDA do
// not pass DeviceImpl::launch; OpenCL's pass it as well).
#define DA_ALGO_DISPATCH(call)                                   \
  faultPoint(FaultKind::kernelLaunch, __func__);                  \
  if (q.device()->backend() == ComputeBackend::cuda) {            \
    DA_ALGO_CUDA_CALL(call);                                      \
  } else {                                                        \
    DA_ALGO_OPENCL_CALL(call);                                    \
  }

inline void exclusiveScanU32(QueueImpl& q, DeviceBuffer in, DeviceBuffer out, std::size_t count) {
  DA_ALGO_DISPATCH(exclusiveScanU32(q, in, out, count))
}
inline void sortPairsU64U32(QueueImpl& q, DeviceBuffer keysIn, DeviceBuffer valuesIn, DeviceBuffer keysOut,
                            DeviceBuffer valuesOut, std::size_t count, int endBit) {
  DA_ALGO_DISPATCH(sortPairsU64U32(q, keysIn, valuesIn, keysOut, valuesOut, count, endBit))
}
inline void sumValidXYZ(QueueImpl& q, DeviceBuffer xyz, std::size_t count, DeviceBuffer out) {
  DA_ALGO_DISPATCH(sumValidXYZ(q, xyz, count, out))
}
inline void minValidXYZ(QueueImpl& q, DeviceBuffer xyz, std::size_t count, DeviceBuffer out) {
  DA_ALGO_DISPATCH(minValidXYZ(q, xyz, count, out))
}

#undef DA_ALGO_DISPATCH
#undef DA_ALGO_CUDA_CALL
#undef DA_ALGO_OPENCL_CALL

}  // namespace devicearray::detail::algo
