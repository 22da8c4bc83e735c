// Frame-sized sorts of 64-bit keys with 32-bit values (up to kSmallSortKeys pairs) on
// CUB's onesweep kernels, with their own tiles, digit width and launch sequence.
//
// A frame's voxel grid sorts 50 to 130 k keys of about 17 bits. CUB's device-wide sort
// is tuned for sorts that fill the GPU: on the H200 it runs each pass of 8 bits on 9 to
// 23 tiles of 5,760 keys, and it pays fixed costs per sort that such sizes do not hide:
// a memset of its counters, one of its histograms and one of its look-back state before
// every pass, each a separate operation on the stream, and a histogram grid sized for
// the whole GPU. This sort enqueues CUB's own histogram, exclusive-sum and onesweep
// kernels (so ranking, look-back and scatter stay CUB's), but
// - in tiles of 2,048 keys (256 threads x 8 keys: nominally 16 per thread, which CUB
//   halves for 8-byte keys), which spread a pass over more multiprocessors;
// - in digits of 9 bits where that saves enough passes (smallSortDigitBits): a frame's
//   17- or 18-bit keys take two passes, not three;
// - with one memset for every counter, histogram and pass's look-back state;
// - with a histogram grid of one block per tile.
// The kernels are CUB internals (cub::detail), so this is compiled only with the CCCL
// release it was written and measured against (3.0, CUDA 13.0); any other release sorts
// with cub::DeviceRadixSort.
#pragma once

#include <cub/device/device_radix_sort.cuh>
#include <cub/version.cuh>

#include <algorithm>
#include <cstddef>
#include <cstdint>

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

/// Sorts `count` pairs (more than CUB's single tile holds, at most kSmallSortKeys) stably
/// by key bits [0, endBit) into keysOut / valuesOut, leaving the inputs unchanged. The
/// CUB calling convention: with temp == nullptr it only sets `bytes`.
template <int DigitBits>
class SmallRadixSort {
  using Policy = typename SmallSortPolicyHub<DigitBits>::MaxPolicy;
  using Onesweep = typename Policy::OnesweepPolicy;
  using Histogram = typename Policy::HistogramPolicy;
  static constexpr int kDigits = 1 << DigitBits;
  static constexpr int kTile = Onesweep::BLOCK_THREADS * Onesweep::ITEMS_PER_THREAD;
  static constexpr int kHistogramTile = Histogram::BLOCK_THREADS * Histogram::ITEMS_PER_THREAD;
  static constexpr std::size_t kAlign = 256;

  static std::size_t aligned(std::size_t bytes) { return (bytes + kAlign - 1) / kAlign * kAlign; }

 public:
  static cudaError_t sortPairs(void* temp, std::size_t& bytes, const std::uint64_t* keysIn, std::uint64_t* keysOut,
                               const std::uint32_t* valuesIn, std::uint32_t* valuesOut, int count, int endBit,
                               cudaStream_t stream) {
    const int passes = (endBit + DigitBits - 1) / DigitBits;
    const int tiles = (count + kTile - 1) / kTile;
    // [pass counters | pass histograms | pass look-back state]: zeroed by one memset;
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

    cudaError_t err = cudaMemsetAsync(temp, 0, zeroed, stream);
    if (err != cudaSuccess) return err;
    using cub::detail::identity_decomposer_t;
    namespace rs = cub::detail::radix_sort;
    rs::DeviceRadixSortHistogramKernel<Policy, cub::SortOrder::Ascending, std::uint64_t, std::uint32_t,
                                       identity_decomposer_t>
        <<<(count + kHistogramTile - 1) / kHistogramTile, Histogram::BLOCK_THREADS, 0, stream>>>(
            histograms, keysIn, static_cast<std::uint32_t>(count), 0, endBit, identity_decomposer_t{});
    rs::DeviceRadixSortExclusiveSumKernel<Policy, std::uint32_t>
        <<<passes, Policy::ExclusiveSumPolicy::BLOCK_THREADS, 0, stream>>>(histograms);
    // Pass p reads pass p - 1's output and writes the output buffer when an even number
    // of passes follows it, so the last pass ends there.
    const std::uint64_t* keysFrom = keysIn;
    const std::uint32_t* valuesFrom = valuesIn;
    for (int pass = 0; pass < passes; ++pass) {
      const bool toOutput = (passes - 1 - pass) % 2 == 0;
      std::uint64_t* keysTo = toOutput ? keysOut : altKeys;
      std::uint32_t* valuesTo = toOutput ? valuesOut : altValues;
      const int bit = pass * DigitBits;
      rs::DeviceRadixSortOnesweepKernel<Policy, cub::SortOrder::Ascending, std::uint64_t, std::uint32_t,
                                        std::uint32_t, int, int, identity_decomposer_t>
          <<<tiles, Onesweep::BLOCK_THREADS, 0, stream>>>(
              lookBack + static_cast<std::size_t>(pass) * tiles * kDigits, counters + pass, nullptr,
              histograms + static_cast<std::size_t>(pass) * kDigits, keysTo, keysFrom, valuesTo, valuesFrom, count,
              bit, std::min(DigitBits, endBit - bit), identity_decomposer_t{});
      keysFrom = keysTo;
      valuesFrom = valuesTo;
    }
    return cudaGetLastError();  // a failed launch's error stays until read: one check covers them all
  }
};

/// SmallRadixSort<smallSortDigitBits(endBit)>::sortPairs.
inline cudaError_t smallSortPairs(void* temp, std::size_t& bytes, const std::uint64_t* keysIn, std::uint64_t* keysOut,
                                  const std::uint32_t* valuesIn, std::uint32_t* valuesOut, int count, int endBit,
                                  cudaStream_t stream) {
  if (smallSortDigitBits(endBit) == 9)
    return SmallRadixSort<9>::sortPairs(temp, bytes, keysIn, keysOut, valuesIn, valuesOut, count, endBit, stream);
  return SmallRadixSort<8>::sortPairs(temp, bytes, keysIn, keysOut, valuesIn, valuesOut, count, endBit, stream);
}

#endif  // DEVICEARRAY_SMALL_RADIX_SORT

}  // namespace devicearray::detail::cuda
