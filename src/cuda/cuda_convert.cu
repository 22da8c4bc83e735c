// The conversion step of the CUDA copy steps (convertDepths): dst = saturate_cast<dst depth>(alpha * src + beta) for
// every pair of the eight OpenCV depths.
//
// Arithmetic follows OpenCV's convertTo (convert_scale.simd.hpp): the product is
// computed in float, except for S32 or F64 sources and F64 destinations, which
// use double (float cannot hold every int32 / double value). Conversion to an
// integer depth rounds to nearest with ties to even (cvRound) and saturates to
// the depth's range (kernels/saturate.h); NaN becomes 0, as in OpenCV's CUDA module (CPU OpenCV
// leaves NaN -> S32 to the SSE "integer indefinite" value INT_MIN). F16 values
// convert with round-to-nearest-even (cuda_fp16.h).
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <limits>
#include <string>
#include <type_traits>

#include "backend/region.hpp"
#include "cuda/cuda_device.hpp"
#include "cuda/kernel_registry.hpp"
#include "kernels/prelude.h"
#include "kernels/saturate.h"

namespace devicearray::detail::cuda {
namespace {

template <class T> struct WorkOf { using type = float; };
template <> struct WorkOf<std::int32_t> { using type = double; };
template <> struct WorkOf<double> { using type = double; };

template <class Work, class T> __device__ __forceinline__ Work load(const T& v) {
  if constexpr (std::is_same_v<T, __half>) return static_cast<Work>(__half2float(v));
  else return static_cast<Work>(v);
}

// Integer destinations: the saturate_cast of kernels/saturate.h (round half to
// even, clamp, NaN -> 0), shared with the OpenCL kernel and the host.
template <class D> struct Saturate;
#define DA_CUDA_SATURATE(D, depth)                                                  \
  template <> struct Saturate<D> {                                                  \
    __device__ static D apply(float v) { return da_sat_##depth##_f(v); }            \
    __device__ static D apply(double v) { return da_sat_##depth##_d(v); }           \
  };
DA_CUDA_SATURATE(std::uint8_t, u8)
DA_CUDA_SATURATE(std::int8_t, s8)
DA_CUDA_SATURATE(std::uint16_t, u16)
DA_CUDA_SATURATE(std::int16_t, s16)
DA_CUDA_SATURATE(std::int32_t, s32)
#undef DA_CUDA_SATURATE
template <> struct Saturate<float> {
  template <class Work> __device__ static float apply(Work v) { return static_cast<float>(v); }
};
template <> struct Saturate<double> {
  template <class Work> __device__ static double apply(Work v) { return static_cast<double>(v); }
};
template <> struct Saturate<__half> {
  __device__ static __half apply(float v) { return __float2half_rn(v); }
  // Through float, as OpenCV does (a direct double rounding differs for values
  // just above a half-way point between two halves).
  __device__ static __half apply(double v) { return __float2half_rn(static_cast<float>(v)); }
};

template <class S, class D, class Work>
__global__ void __launch_bounds__(256) convertKernel(const char* src, std::int64_t srcStep, char* dst,
                                                     std::int64_t dstStep, std::int64_t rows, std::int64_t values,
                                                     FastDivmod valuesDiv, bool small, bool scale, Work alpha,
                                                     Work beta) {
  const std::uint64_t i = static_cast<std::uint64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= static_cast<std::uint64_t>(rows) * static_cast<std::uint64_t>(values)) return;
  std::int64_t r, c;
  if (small) {
    const std::uint32_t q = valuesDiv.div(static_cast<std::uint32_t>(i));
    r = q;
    c = static_cast<std::int64_t>(static_cast<std::uint32_t>(i) - q * valuesDiv.divisor);
  } else {
    r = static_cast<std::int64_t>(i / static_cast<std::uint64_t>(values));
    c = static_cast<std::int64_t>(i - static_cast<std::uint64_t>(r) * static_cast<std::uint64_t>(values));
  }
  const S s = reinterpret_cast<const S*>(src + r * srcStep)[c];
  // Without scaling the value converts directly (keeps -0.0, as OpenCV's convertTo).
  const Work v = scale ? load<Work>(s) * alpha + beta : load<Work>(s);
  reinterpret_cast<D*>(dst + r * dstStep)[c] = Saturate<D>::apply(v);
}

using ConvertLauncher = void (*)(const char*, std::int64_t, char*, std::int64_t, std::int64_t, std::int64_t, double,
                                 double, cudaStream_t);

template <class S, class D>
void launchConvert(const char* src, std::int64_t srcStep, char* dst, std::int64_t dstStep, std::int64_t rows,
                   std::int64_t values, double alpha, double beta, cudaStream_t stream) {
  using Work = std::conditional_t<std::is_same_v<D, double>, double, typename WorkOf<S>::type>;
  constexpr unsigned kThreads = 256;
  const std::uint64_t total = static_cast<std::uint64_t>(rows) * static_cast<std::uint64_t>(values);
  const std::uint64_t blocks = (total + kThreads - 1) / kThreads;
  if (blocks > static_cast<std::uint64_t>(std::numeric_limits<int>::max()))
    fail(ErrorCode::Unsupported, "convert: " + std::to_string(total) + " values exceed one kernel launch");
  const bool small = total < (std::uint64_t{1} << 31);
  const FastDivmod div(small ? static_cast<std::uint32_t>(values) : 1u);
  convertKernel<S, D, Work><<<static_cast<unsigned>(blocks), kThreads, 0, stream>>>(
      src, srcStep, dst, dstStep, rows, values, div, small, !(alpha == 1.0 && beta == 0.0), static_cast<Work>(alpha),
      static_cast<Work>(beta));
}

// Indexed by OpenCV depth code: U8, S8, U16, S16, S32, F32, F64, F16.
template <class S>
constexpr ConvertLauncher kRow[8] = {
    &launchConvert<S, std::uint8_t>, &launchConvert<S, std::int8_t>, &launchConvert<S, std::uint16_t>,
    &launchConvert<S, std::int16_t>, &launchConvert<S, std::int32_t>, &launchConvert<S, float>,
    &launchConvert<S, double>,       &launchConvert<S, __half>};

constexpr const ConvertLauncher* kTable[8] = {kRow<std::uint8_t>, kRow<std::int8_t>, kRow<std::uint16_t>,
                                              kRow<std::int16_t>, kRow<std::int32_t>, kRow<float>,
                                              kRow<double>,       kRow<__half>};

template <class S, class D>
bool preloadConvert() noexcept {
  using Work = std::conditional_t<std::is_same_v<D, double>, double, typename WorkOf<S>::type>;
  return registerPreload(reinterpret_cast<const void*>(&convertKernel<S, D, Work>));
}

template <class S>
bool preloadConvertRow() noexcept {
  return preloadConvert<S, std::uint8_t>() && preloadConvert<S, std::int8_t>() && preloadConvert<S, std::uint16_t>() &&
         preloadConvert<S, std::int16_t>() && preloadConvert<S, std::int32_t>() && preloadConvert<S, float>() &&
         preloadConvert<S, double>() && preloadConvert<S, __half>();
}

// The 64 instantiations of kTable, loaded with the device (kernel_registry.hpp).
[[maybe_unused]] const bool kConvertKernelsRegistered =
    preloadConvertRow<std::uint8_t>() && preloadConvertRow<std::int8_t>() && preloadConvertRow<std::uint16_t>() &&
    preloadConvertRow<std::int16_t>() && preloadConvertRow<std::int32_t>() && preloadConvertRow<float>() &&
    preloadConvertRow<double>() && preloadConvertRow<__half>();

}  // namespace

void convertDepths(CudaDevice& device, const ConvertDesc& desc, QueueImpl& q) {
  static constexpr const char* kFn = "convert";
  cudaStream_t stream = device.streamOf(q, kFn);
  if (!validateConvert(desc, kFn)) return;
  const int s = static_cast<int>(desc.srcDepth), d = static_cast<int>(desc.dstDepth);
  const char* src = device.address(desc.src, kFn);
  char* dst = device.address(desc.dst, kFn);
  DeviceGuard guard(device.ordinal());
  kTable[s][d](src, desc.srcStep, dst, desc.dstStep, desc.rows, desc.values, desc.alpha, desc.beta, stream);
  check(cudaGetLastError(), "convert: kernel launch");
}

}  // namespace devicearray::detail::cuda
