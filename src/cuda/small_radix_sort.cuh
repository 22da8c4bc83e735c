// Frame-sized sorts of 64-bit keys with 32-bit values (up to kSmallSortKeys pairs) on
// CUB's onesweep agents, with their own tiles, digit width and launch sequence.
//
// A frame's voxel grid sorts 50 to 130 k keys of about 17 bits. CUB's device-wide sort
// is tuned for sorts that fill the GPU: on the H200 it runs each pass of 8 bits on 9 to
// 23 tiles of 5,760 keys, and it pays fixed costs per sort that such sizes do not hide:
// a memset of its counters, one of its histograms and one of its look-back state before
// every pass, each a separate operation on the stream, and a histogram grid sized for
// the whole GPU. This sort runs CUB's own histogram and onesweep agents (so ranking,
// look-back and scatter stay CUB's), but
// - in tiles of 2,048 keys (256 threads x 8 keys: nominally 16 per thread, which CUB
//   halves for 8-byte keys), which spread a pass over more multiprocessors;
// - in digits of 9 bits where that saves enough passes (smallSortDigitBits): a frame's
//   17- or 18-bit keys take two passes, not three;
// - with one zeroing kernel for every counter, histogram and pass's look-back state;
// - with a histogram grid of one block per tile;
// - in kernels of its own that wait for the kernel before them (DA_AFTER_PREVIOUS_KERNEL),
//   so that on sm_90 each is a dependent launch like the library's kernels: it starts
//   while the one before it ends. CUB's kernels do not wait, so they, and a memset, must
//   start in plain stream order, after the launch gap.
// The agents are CUB internals (cub::detail), so this is compiled only with the CCCL
// release it was written and measured against (3.0, CUDA 13.0); any other release sorts
// with cub::DeviceRadixSort.
#pragma once

#include <cub/block/block_scan.cuh>
#include <cub/device/device_radix_sort.cuh>
#include <cub/version.cuh>

#include <algorithm>
#include <cstddef>
#include <cstdint>

#include "cuda/cuda_device.hpp"
#include "kernels/prelude.h"

#define DEVICEARRAY_SMALL_RADIX_SORT (CUB_VERSION / 100 == 3000)

namespace devicearray::detail::cuda {

/// Past this many keys CUB's own tiles already fill the GPU.
constexpr int kSmallSortKeys = 1 << 18;

/// The digit width of a small sort by `bits` key bits: 9 where it takes enough fewer
/// passes than 8 to pay for its slower ones, else 8. A 9-bit pass ranks and scatters
/// twice the digits and, launch gap included, costs about 1.3 times an 8-bit one on the
/// H200 (docs/PERFORMANCE.md). So 9, 17 and 18 bits (a frame's voxel keys) and 25 to 27
/// bits take 9-bit digits; every other width keeps 8-bit ones.
constexpr int smallSortDigitBits(int bits) {
  const int passesOf8 = (bits + 7) / 8, passesOf9 = (bits + 8) / 9;
  return 13 * passesOf9 < 10 * passesOf8 ? 9 : 8;
}

#if DEVICEARRAY_SMALL_RADIX_SORT

/// CUB's sm_90 tuning of 64-bit keys with 32-bit values and 32-bit offsets, with the
/// onesweep tile and the digit width (histogram, exclusive sum and onesweep alike) of
/// the small sorts. A chain of one policy: also used when the library is built for other
/// architectures.
template <int DigitBits>
struct SmallSortPolicyHub {
  using Tuned = cub::detail::radix::policy_hub<std::uint64_t, std::uint32_t, std::uint32_t>::Policy900;
  struct MaxPolicy : Tuned, cub::ChainedPolicy<900, MaxPolicy, MaxPolicy> {
    using ActivePolicy = MaxPolicy;
    using cub::ChainedPolicy<900, MaxPolicy, MaxPolicy>::Invoke;
    static constexpr int ONESWEEP_RADIX_BITS = DigitBits;
    using HistogramPolicy = cub::AgentRadixSortHistogramPolicy<128, 16, 1, std::uint64_t, DigitBits>;
    using ExclusiveSumPolicy = cub::AgentRadixSortExclusiveSumPolicy<256, DigitBits>;
    using OnesweepPolicy =
        cub::AgentRadixSortOnesweepPolicy<256, 16, std::uint64_t, 1, cub::RADIX_RANK_MATCH_EARLY_COUNTS_ANY,
                                          cub::BLOCK_SCAN_RAKING_MEMOIZE, cub::RADIX_SORT_STORE_DIRECT, DigitBits>;
  };
};

namespace small_sort {

using cub::detail::identity_decomposer_t;

/// Zeroes `count` 16-byte words: the sort's counters, histograms and look-back state.
__global__ void __launch_bounds__(256) zero(uint4* words, int count) {
  DA_AFTER_PREVIOUS_KERNEL();
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < count; i += gridDim.x * blockDim.x)
    words[i] = make_uint4(0u, 0u, 0u, 0u);
}

/// Every pass's digit counts of the keys' bits [0, endBit), added into `bins`.
template <class Policy>
__global__ void __launch_bounds__(Policy::HistogramPolicy::BLOCK_THREADS)
    histogram(std::uint32_t* bins, const std::uint64_t* keys, std::uint32_t count, int endBit) {
  DA_AFTER_PREVIOUS_KERNEL();
  using Agent = cub::detail::radix_sort::AgentRadixSortHistogram<typename Policy::HistogramPolicy, false,
                                                                  std::uint64_t, std::uint32_t, identity_decomposer_t>;
  __shared__ typename Agent::TempStorage storage;
  Agent(storage, bins, keys, count, 0, endBit, identity_decomposer_t{}).Process();
}

/// Block p turns pass p's digit counts into the digits' first output positions.
template <class Policy>
__global__ void __launch_bounds__(Policy::ExclusiveSumPolicy::BLOCK_THREADS) digitStarts(std::uint32_t* bins) {
  DA_AFTER_PREVIOUS_KERNEL();
  constexpr int kThreads = Policy::ExclusiveSumPolicy::BLOCK_THREADS;
  constexpr int kDigits = 1 << Policy::ExclusiveSumPolicy::RADIX_BITS;
  constexpr int kPerThread = (kDigits + kThreads - 1) / kThreads;
  using Scan = cub::BlockScan<std::uint32_t, kThreads>;
  __shared__ typename Scan::TempStorage storage;
  std::uint32_t* pass = bins + static_cast<std::size_t>(blockIdx.x) * kDigits;
  std::uint32_t counts[kPerThread];
  for (int u = 0; u < kPerThread; ++u) {
    const int digit = threadIdx.x * kPerThread + u;
    counts[u] = digit < kDigits ? pass[digit] : 0u;
  }
  Scan(storage).ExclusiveSum(counts, counts);
  for (int u = 0; u < kPerThread; ++u) {
    const int digit = threadIdx.x * kPerThread + u;
    if (digit < kDigits) pass[digit] = counts[u];
  }
}

/// One pass: ranks each tile's keys by bits [bit, bit + bits) and scatters the pairs
/// behind the tiles before it (CUB's decoupled look-back).
template <class Policy>
__global__ void __launch_bounds__(Policy::OnesweepPolicy::BLOCK_THREADS)
    onesweep(int* lookBack, int* counter, const std::uint32_t* digitStarts, std::uint64_t* keysOut,
             const std::uint64_t* keysIn, std::uint32_t* valuesOut, const std::uint32_t* valuesIn, int count, int bit,
             int bits) {
  DA_AFTER_PREVIOUS_KERNEL();
  using Agent = cub::detail::radix_sort::AgentRadixSortOnesweep<typename Policy::OnesweepPolicy, false, std::uint64_t,
                                                                 std::uint32_t, std::uint32_t, int,
                                                                 identity_decomposer_t>;
  __shared__ typename Agent::TempStorage storage;
  Agent(storage, lookBack, counter, nullptr, digitStarts, keysOut, keysIn, valuesOut, valuesIn, count, bit, bits,
        identity_decomposer_t{})
      .Process();
}

}  // namespace small_sort

/// Sorts `count` pairs (more than CUB's single tile holds, at most kSmallSortKeys) stably
/// by key bits [0, endBit) into keysOut / valuesOut, leaving the inputs unchanged; each
/// kernel as a dependent launch when `dependent`. The CUB calling convention: with
/// temp == nullptr it only sets `bytes`.
template <int DigitBits>
class SmallRadixSort {
  using Policy = typename SmallSortPolicyHub<DigitBits>::MaxPolicy;
  using Onesweep = typename Policy::OnesweepPolicy;
  using Histogram = typename Policy::HistogramPolicy;
  static constexpr int kDigits = 1 << DigitBits;
  static constexpr int kTile = Onesweep::BLOCK_THREADS * Onesweep::ITEMS_PER_THREAD;
  static constexpr int kHistogramTile = Histogram::BLOCK_THREADS * Histogram::ITEMS_PER_THREAD;
  static constexpr std::size_t kAlign = 256;
  static constexpr int kZeroThreads = 256;

  static std::size_t aligned(std::size_t bytes) { return (bytes + kAlign - 1) / kAlign * kAlign; }

 public:
  static cudaError_t sortPairs(void* temp, std::size_t& bytes, const std::uint64_t* keysIn, std::uint64_t* keysOut,
                               const std::uint32_t* valuesIn, std::uint32_t* valuesOut, int count, int endBit,
                               cudaStream_t stream, bool dependent) {
    const int passes = (endBit + DigitBits - 1) / DigitBits;
    const int tiles = (count + kTile - 1) / kTile;
    // [pass counters | pass histograms | pass look-back state]: zeroed by one kernel;
    // then the other half of the double buffer when there is more than one pass.
    const std::size_t perPass = sizeof(int) * (1 + kDigits + static_cast<std::size_t>(tiles) * kDigits);
    const std::size_t zeroed = aligned(perPass * passes);
    const std::size_t keysAt = zeroed, valuesAt = keysAt + aligned(sizeof(std::uint64_t) * count);
    const std::size_t needed = passes > 1 ? valuesAt + aligned(sizeof(std::uint32_t) * count) : zeroed;
    if (temp == nullptr) {
      bytes = needed;
      return cudaSuccess;
    }
    if (bytes < needed) return cudaErrorInvalidValue;
    auto* base = static_cast<unsigned char*>(temp);
    int* counters = reinterpret_cast<int*>(base);
    auto* histograms = reinterpret_cast<std::uint32_t*>(counters + passes);
    int* lookBack = reinterpret_cast<int*>(histograms + static_cast<std::size_t>(passes) * kDigits);
    auto* altKeys = reinterpret_cast<std::uint64_t*>(base + keysAt);
    auto* altValues = reinterpret_cast<std::uint32_t*>(base + valuesAt);

    const auto launch = [&](auto kernel, int blocks, int threads, auto... args) {
      const LaunchConfig config(dim3(static_cast<unsigned>(blocks)), dim3(static_cast<unsigned>(threads)), stream,
                                dependent);
      return cudaLaunchKernelEx(config.get(), kernel, args...);
    };
    const int zeroWords = static_cast<int>(zeroed / sizeof(uint4));
    cudaError_t err = launch(small_sort::zero, (zeroWords + kZeroThreads - 1) / kZeroThreads, kZeroThreads,
                             reinterpret_cast<uint4*>(base), zeroWords);
    if (err != cudaSuccess) return err;
    err = launch(small_sort::histogram<Policy>, (count + kHistogramTile - 1) / kHistogramTile,
                 Histogram::BLOCK_THREADS, histograms, keysIn, static_cast<std::uint32_t>(count), endBit);
    if (err != cudaSuccess) return err;
    err = launch(small_sort::digitStarts<Policy>, passes, Policy::ExclusiveSumPolicy::BLOCK_THREADS, histograms);
    // Pass p reads pass p - 1's output and writes the output buffer when an even number
    // of passes follows it, so the last pass ends there.
    const std::uint64_t* keysFrom = keysIn;
    const std::uint32_t* valuesFrom = valuesIn;
    for (int pass = 0; pass < passes && err == cudaSuccess; ++pass) {
      const bool toOutput = (passes - 1 - pass) % 2 == 0;
      std::uint64_t* keysTo = toOutput ? keysOut : altKeys;
      std::uint32_t* valuesTo = toOutput ? valuesOut : altValues;
      const int bit = pass * DigitBits;
      err = launch(small_sort::onesweep<Policy>, tiles, Onesweep::BLOCK_THREADS,
                   lookBack + static_cast<std::size_t>(pass) * tiles * kDigits, counters + pass,
                   static_cast<const std::uint32_t*>(histograms + static_cast<std::size_t>(pass) * kDigits), keysTo,
                   keysFrom, valuesTo, valuesFrom, count, bit, std::min(DigitBits, endBit - bit));
      keysFrom = keysTo;
      valuesFrom = valuesTo;
    }
    return err;
  }
};

/// SmallRadixSort<smallSortDigitBits(endBit)>::sortPairs.
inline cudaError_t smallSortPairs(void* temp, std::size_t& bytes, const std::uint64_t* keysIn, std::uint64_t* keysOut,
                                  const std::uint32_t* valuesIn, std::uint32_t* valuesOut, int count, int endBit,
                                  cudaStream_t stream, bool dependent) {
  if (smallSortDigitBits(endBit) == 9)
    return SmallRadixSort<9>::sortPairs(temp, bytes, keysIn, keysOut, valuesIn, valuesOut, count, endBit, stream,
                                        dependent);
  return SmallRadixSort<8>::sortPairs(temp, bytes, keysIn, keysOut, valuesIn, valuesOut, count, endBit, stream,
                                      dependent);
}

#endif  // DEVICEARRAY_SMALL_RADIX_SORT

}  // namespace devicearray::detail::cuda
