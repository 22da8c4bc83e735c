// Strided N-d copy and fill kernels of the CUDA backend (used by cuda_copy.cu).
//
// Both kernels run one thread per machine word: the caller picks the widest word
// (16/8/4/2/1 bytes) dividing the element size, every step and the base
// addresses, and appends a "word within element" axis as the innermost axis.
// Consecutive threads therefore touch consecutive words of an element and then
// of neighbouring elements, which keeps global accesses coalesced for packed and
// padded layouts alike (e.g. 12-byte XYZ inside 16-byte XYZW moves as 4-byte
// words, three of every four words of each 16-byte element).
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "cuda/cuda_device.hpp"

namespace devicearray::detail::cuda {

/// Axes of a kernel launch: the copy's axes plus the word axis.
inline constexpr int kMaxKernelAxes = kMaxDims + 1;

/// Layout of one strided launch, innermost axis last. Steps are in bytes.
struct StridedParams {
  char* dst = nullptr;
  const char* src = nullptr;
  std::uint64_t total = 0;  ///< words to move
  int dims = 0;
  std::int64_t size[kMaxKernelAxes] = {};
  std::int64_t dstStep[kMaxKernelAxes] = {};
  std::int64_t srcStep[kMaxKernelAxes] = {};  ///< fill: byte offset step inside the pattern
  FastDivmod div[kMaxKernelAxes] = {};        ///< valid when total < 2^31
  unsigned char pattern[32] = {};              ///< fill only
};

/// Byte offsets (dst, src) of word `i`: mixed-radix decomposition over the axes.
template <bool kSmall>
__device__ __forceinline__ void stridedOffsets(const StridedParams& p, std::uint64_t i, std::int64_t& dstOff,
                                               std::int64_t& srcOff) {
  dstOff = 0;
  srcOff = 0;
  if constexpr (kSmall) {
    std::uint32_t rest = static_cast<std::uint32_t>(i);
    for (int d = p.dims - 1; d > 0; --d) {
      const std::uint32_t q = p.div[d].div(rest);
      const std::int64_t r = static_cast<std::int64_t>(rest - q * p.div[d].divisor);
      dstOff += r * p.dstStep[d];
      srcOff += r * p.srcStep[d];
      rest = q;
    }
    dstOff += static_cast<std::int64_t>(rest) * p.dstStep[0];
    srcOff += static_cast<std::int64_t>(rest) * p.srcStep[0];
  } else {
    std::uint64_t rest = i;
    for (int d = p.dims - 1; d > 0; --d) {
      const std::uint64_t n = static_cast<std::uint64_t>(p.size[d]);
      const std::uint64_t q = rest / n;
      const std::int64_t r = static_cast<std::int64_t>(rest - q * n);
      dstOff += r * p.dstStep[d];
      srcOff += r * p.srcStep[d];
      rest = q;
    }
    dstOff += static_cast<std::int64_t>(rest) * p.dstStep[0];
    srcOff += static_cast<std::int64_t>(rest) * p.srcStep[0];
  }
}

/// Words per thread: a block moves kWordsPerThread * blockDim.x consecutive words,
/// thread t the words t, t + blockDim.x, ... (each access step stays coalesced);
/// all loads are issued before the stores so several are in flight per thread.
inline constexpr int kWordsPerThread = 4;

template <class Word, bool kSmall>
__global__ void __launch_bounds__(256) stridedCopyKernel(const __grid_constant__ StridedParams p) {
  const std::uint64_t first =
      static_cast<std::uint64_t>(blockIdx.x) * blockDim.x * kWordsPerThread + threadIdx.x;
  Word values[kWordsPerThread];
  std::int64_t dstOffsets[kWordsPerThread];
#pragma unroll
  for (int k = 0; k < kWordsPerThread; ++k) {
    const std::uint64_t i = first + static_cast<std::uint64_t>(k) * blockDim.x;
    if (i < p.total) {
      std::int64_t srcOff;
      stridedOffsets<kSmall>(p, i, dstOffsets[k], srcOff);
      values[k] = *reinterpret_cast<const Word*>(p.src + srcOff);
    }
  }
#pragma unroll
  for (int k = 0; k < kWordsPerThread; ++k) {
    const std::uint64_t i = first + static_cast<std::uint64_t>(k) * blockDim.x;
    if (i < p.total) *reinterpret_cast<Word*>(p.dst + dstOffsets[k]) = values[k];
  }
}

template <class Word, bool kSmall>
__global__ void __launch_bounds__(256) stridedFillKernel(const __grid_constant__ StridedParams p) {
  // The pattern word is chosen by a run-time index; staging it in shared memory
  // keeps that dynamic index away from the kernel parameter block.
  __shared__ Word pattern[32 / sizeof(Word)];
  if (threadIdx.x < 32 / sizeof(Word)) {
    Word w;
    memcpy(&w, p.pattern + threadIdx.x * sizeof(Word), sizeof(Word));
    pattern[threadIdx.x] = w;
  }
  __syncthreads();
  const std::uint64_t first =
      static_cast<std::uint64_t>(blockIdx.x) * blockDim.x * kWordsPerThread + threadIdx.x;
#pragma unroll
  for (int k = 0; k < kWordsPerThread; ++k) {
    const std::uint64_t i = first + static_cast<std::uint64_t>(k) * blockDim.x;
    if (i >= p.total) return;
    std::int64_t dstOff, patternOff;
    stridedOffsets<kSmall>(p, i, dstOff, patternOff);
    *reinterpret_cast<Word*>(p.dst + dstOff) = pattern[patternOff / static_cast<std::int64_t>(sizeof(Word))];
  }
}

}  // namespace devicearray::detail::cuda
