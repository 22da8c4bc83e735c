// The strided copy launch shared by the CUDA copy steps (cuda_copy.cu) and the
// cross-device copies (cuda_peer.cu). Region arithmetic: backend/region.hpp.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

#include "backend/backend.hpp"

namespace devicearray::detail::cuda {

class CudaDevice;

/// One launch, on the current device, of the strided copy kernel: dst (dstStep) <-
/// src (srcStep) over `size` elements of elemSize bytes, moving the widest word that
/// divides the element size, every step and both addresses. Either side may be
/// peer memory the current device can address. A dependent launch where `device` (the
/// current device) allows it (CudaDevice::launchTraitsOf).
void stridedDeviceCopy(CudaDevice& device, char* dst, const std::int64_t* dstStep, const char* src,
                       const std::int64_t* srcStep, int dims, const std::int64_t* size, std::size_t elemSize,
                       cudaStream_t stream);

}  // namespace devicearray::detail::cuda
