// Region arithmetic and the strided copy launch shared by the CUDA copy engine
// (cuda_copy.cu) and the cross-device copies (cuda_peer.cu).
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

#include "backend/backend.hpp"

namespace devicearray::detail::cuda {

/// a * b / a + b, throwing OutOfRange (naming `function`) on int64 overflow.
std::int64_t checkedMul(std::int64_t a, std::int64_t b, const char* function);
std::int64_t checkedAdd(std::int64_t a, std::int64_t b, const char* function);

/// Number of elements of the region (product of sizes, 1 for dims == 0);
/// InvalidArgument for a non-positive size.
std::int64_t elementCount(int dims, const std::int64_t* size, const char* function);

/// Checks that the region [offset + min, offset + max + elemSize) lies inside an
/// allocation of known size (host memory and external memory of unknown size are
/// not checked). Throws OutOfRange.
void checkBounds(const MemRef& ref, int dims, const std::int64_t* size, const std::int64_t* step,
                 std::size_t elemSize, const char* function);

/// True when `step` is the packed row-major layout of `size` x elemSize.
bool isPacked(int dims, const std::int64_t* size, const std::int64_t* step, std::size_t elemSize);
/// The packed row-major steps of `size` x elemSize.
void packedSteps(int dims, const std::int64_t* size, std::size_t elemSize, std::int64_t* step);

/// One launch, on the current device, of the strided copy kernel: dst (dstStep) <-
/// src (srcStep) over `size` elements of elemSize bytes, moving the widest word that
/// divides the element size, every step and both addresses. Either side may be
/// peer memory the current device can address.
void stridedDeviceCopy(char* dst, const std::int64_t* dstStep, const char* src, const std::int64_t* srcStep,
                       int dims, const std::int64_t* size, std::size_t elemSize, cudaStream_t stream);

}  // namespace devicearray::detail::cuda
