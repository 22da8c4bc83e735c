// The conversion step of the CUDA copy steps (convertDepths): one launch of the kernel
// of the depth pair (kernels/convert_depth.h; its parameters, pairs and work types:
// backend/depth_conversion_signatures.h).
#include <cuda_runtime.h>

#include <cstdint>
#include <iterator>
#include <limits>
#include <string>

#include "backend/depth_conversion_signatures.h"
#include "backend/region.hpp"
#include "cuda/cuda_device.hpp"
#include "cuda/kernel_registry.hpp"
#include "kernels/convert_depth.h"

namespace devicearray::detail::cuda {
namespace {

using FloatWorkKernel = kernels::da_convert_depth_f::Params::CudaFunction;
using DoubleWorkKernel = kernels::da_convert_depth_d::Params::CudaFunction;

/// The kernel of one pair: the one of its work type is set.
struct PairKernel {
  FloatWorkKernel* inFloat;
  DoubleWorkKernel* inDouble;
};
// A kernel whose parameters are neither signature's matches no overload.
constexpr PairKernel pairKernel(FloatWorkKernel* kernel) { return {kernel, nullptr}; }
constexpr PairKernel pairKernel(DoubleWorkKernel* kernel) { return {nullptr, kernel}; }

// Indexed by kernels::depthPairIndex.
#define DA_CUDA_PAIR_KERNEL(s, d, w) pairKernel(&da_convert_depth_##s##_##d),
constexpr PairKernel kPairKernels[] = {DA_CONVERT_DEPTH_PAIRS(DA_CUDA_PAIR_KERNEL)};
#undef DA_CUDA_PAIR_KERNEL
static_assert(std::size(kPairKernels) == 64, "one kernel per pair of the eight depths");

bool preloadPairKernels() noexcept {
  for (const PairKernel& k : kPairKernels)
    if (!registerPreload(k.inFloat != nullptr ? reinterpret_cast<const void*>(k.inFloat)
                                              : reinterpret_cast<const void*>(k.inDouble)))
      return false;
  return true;
}

// Every pair's kernel, loaded with the device (kernel_registry.hpp).
[[maybe_unused]] const bool kConvertKernelsRegistered = preloadPairKernels();

}  // namespace

void convertDepths(CudaDevice& device, const ConvertDesc& desc, QueueImpl& q) {
  static constexpr const char* kFn = "convert";
  cudaStream_t stream = device.streamOf(q, kFn);
  if (!validateConvert(desc, kFn)) return;
  const int s = static_cast<int>(desc.srcDepth), d = static_cast<int>(desc.dstDepth);
  const auto* src = reinterpret_cast<const da_u8*>(device.address(desc.src, kFn));
  auto* dst = reinterpret_cast<da_u8*>(device.address(desc.dst, kFn));
  const std::uint64_t total = static_cast<std::uint64_t>(desc.rows) * static_cast<std::uint64_t>(desc.values);
  const std::uint64_t blocks = (total + DA_CONVERT_DEPTH_GROUP - 1) / DA_CONVERT_DEPTH_GROUP;
  if (blocks > static_cast<std::uint64_t>(std::numeric_limits<int>::max()))
    fail(ErrorCode::Unsupported, "convert: " + std::to_string(total) + " values exceed one kernel launch");
  const int small = total < (std::uint64_t{1} << 31) ? 1 : 0;
  da_u32 multiplier = 0, shift = 0;
  da_fast_div_magic(small != 0 ? static_cast<da_u32>(desc.values) : 1u, &multiplier, &shift);
  const int scale = desc.alpha == 1.0 && desc.beta == 0.0 ? 0 : 1;
  const PairKernel& k = kPairKernels[kernels::depthPairIndex(s, d)];
  DeviceGuard guard(device.ordinal());
  if (k.inFloat != nullptr)
    k.inFloat<<<static_cast<unsigned>(blocks), DA_CONVERT_DEPTH_GROUP, 0, stream>>>(
        src, desc.srcStep, dst, desc.dstStep, desc.rows, desc.values, multiplier, shift, small, scale,
        static_cast<float>(desc.alpha), static_cast<float>(desc.beta));
  else
    k.inDouble<<<static_cast<unsigned>(blocks), DA_CONVERT_DEPTH_GROUP, 0, stream>>>(
        src, desc.srcStep, dst, desc.dstStep, desc.rows, desc.values, multiplier, shift, small, scale, desc.alpha,
        desc.beta);
  check(cudaGetLastError(), "convert: kernel launch");
}

}  // namespace devicearray::detail::cuda
