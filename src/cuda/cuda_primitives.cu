// The CUDA device's parallel primitives (backend/parallel_primitives.hpp): CUB
// device-wide primitives. Temporary storage comes from the device's stream-ordered
// pool on the same stream and is released on that stream right after the CUB call, so
// it is reused by later work without any host synchronization.
#include <cub/block/block_radix_rank.cuh>
#include <cub/block/block_reduce.cuh>
#include <cub/block/block_scan.cuh>
#include <cub/device/device_radix_sort.cuh>
#include <cub/device/device_reduce.cuh>
#include <cub/device/device_scan.cuh>
#include <thrust/iterator/counting_iterator.h>
#include <thrust/iterator/transform_iterator.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>

#include "cuda/cuda_device.hpp"
#include "cuda/small_radix_sort.cuh"
#include "kernels/point_validity.h"

namespace devicearray::detail::cuda {
namespace {

struct Sum4 {
  double x, y, z, n;
};
struct Bounds6 {
  float lo[3], hi[3];
};

struct ValidPointAsSum4 {
  const float* xyz;
  __host__ __device__ Sum4 operator()(long i) const {
    const float x = xyz[3 * i], y = xyz[3 * i + 1], z = xyz[3 * i + 2];
    if (!da_pc_valid(x, y, z)) return Sum4{0.0, 0.0, 0.0, 0.0};
    return Sum4{x, y, z, 1.0};
  }
};
struct AddSum4 {
  __host__ __device__ Sum4 operator()(const Sum4& a, const Sum4& b) const {
    return Sum4{a.x + b.x, a.y + b.y, a.z + b.z, a.n + b.n};
  }
};

struct ValidPointAsFlag {
  const float* xyz;
  long n;
  __host__ __device__ std::uint32_t operator()(long i) const {
    return i < n && da_pc_valid(xyz[3 * i], xyz[3 * i + 1], xyz[3 * i + 2]) ? 1u : 0u;
  }
};

struct ValidPointAsBounds6 {
  const float* xyz;
  __host__ __device__ Bounds6 operator()(long i) const {
    const float x = xyz[3 * i], y = xyz[3 * i + 1], z = xyz[3 * i + 2];
    if (!da_pc_valid(x, y, z)) return Bounds6{{INFINITY, INFINITY, INFINITY}, {-INFINITY, -INFINITY, -INFINITY}};
    return Bounds6{{x, y, z}, {x, y, z}};
  }
};
struct UnionOfBounds6 {
  __host__ __device__ Bounds6 operator()(const Bounds6& a, const Bounds6& b) const {
    return Bounds6{{fminf(a.lo[0], b.lo[0]), fminf(a.lo[1], b.lo[1]), fminf(a.lo[2], b.lo[2])},
                   {fmaxf(a.hi[0], b.hi[0]), fmaxf(a.hi[1], b.hi[1]), fmaxf(a.hi[2], b.hi[2])}};
  }
};

/// The key bits a sort with a device-side key width gives CUB's device-wide sort when
/// the caller has no guess of the width. CUB takes its bit range from the host and the
/// bits above cost it a pass per 8 even when no key uses them, so they go to
/// sortOnDevice, which reads the width on the device.
constexpr int kDeviceSortedLowBits = 32;

constexpr int kHighSortThreads = 1024, kHighSortKeysPerThread = 4, kHighSortDigitBits = 8;
constexpr int kHighSortTile = kHighSortThreads * kHighSortKeysPerThread;
constexpr int kHighSortDigits = 1 << kHighSortDigitBits;
constexpr int kHighSortMaxBlocks = 256;  ///< at most kHighSortThreads: the last block reads one end each

struct MaxOf {
  __device__ int operator()(int a, int b) const { return a > b ? a : b; }
};

/// The part of a sort that only the device can size, one launch after CUB's sort of the
/// first `cubCount` entries by bits [0, lowBits), which every block leaves at once
/// unless
/// - the keyed end (*keyedEnd, count without it) lies past `cubCount`: the host's guess
///   of it was low. Block 0 then sorts the inputs' [0, end) alone, by bits [0, width).
/// - or the keys are wider than lowBits bits (*keyBits): the
///   entries, already sorted by bits [0, lowBits), are sorted by the bits up to the
///   width. Each block finds one past its last key whose bits [0, endBit) are not all
///   ones (missing entries: the low bits put them after every key whose low bits are not
///   all ones, so the sort can stop there; with few low bits more keys tie with them and
///   the end moves towards `cubCount`, which costs time, not order); the last block to
///   finish (counted in *ticket, the zero word after the width, which it zeroes again)
///   takes the largest as the end and sorts [0, end) alone.
/// Without a key width word, lowBits is endBit (CUB sorted every bit): the width is
/// taken as lowBits, so only a re-sort can run, by all endBit bits.
/// Either sort runs in passes of 8 bits: each tile of 4096 keys is ranked with CUB's
/// BlockRadixRankMatch and scattered behind the tiles before it, so every pass is stable.
/// The result is in keys / values; altKeys / altValues hold count entries.
/// Hand-written because no CUB algorithm fits: its device-wide sorts take the bit range
/// and the count from the host, and its segmented sort (which can read a segment from
/// the device) launches a kernel per pass even for an empty segment, each costing the
/// host more than this whole kernel costs the device.
__global__ void __launch_bounds__(kHighSortThreads)
    sortOnDevice(const std::uint32_t* keyBits, const std::uint32_t* keyedEnd, int lowBits, int endBit, int cubCount,
                 int count, const std::uint64_t* keysIn, const std::uint32_t* valuesIn, std::uint64_t* keys,
                 std::uint32_t* values, std::uint64_t* altKeys, std::uint32_t* altValues, int* blockEnds,
                 unsigned* ticket) {
  DA_AFTER_PREVIOUS_KERNEL();  // launched as a dependent launch, like the shared kernels
  const int width = keyBits != nullptr ? static_cast<int>(*keyBits) : lowBits;
  const unsigned givenEnd = keyedEnd != nullptr ? *keyedEnd : static_cast<unsigned>(count);
  const int keyed = givenEnd < static_cast<unsigned>(count) ? static_cast<int>(givenEnd) : count;
  const bool resort = keyed > cubCount;
  if (resort ? blockIdx.x != 0 : width <= lowBits) return;
  using BlockMax = cub::BlockReduce<int, kHighSortThreads>;
  using Rank = cub::BlockRadixRankMatch<kHighSortThreads, kHighSortDigitBits, false>;
  using Scan = cub::BlockScan<int, kHighSortThreads>;
  __shared__ union {
    typename BlockMax::TempStorage max;
    typename Rank::TempStorage rank;
    typename Scan::TempStorage scan;
  } temp;
  __shared__ int digitStart[kHighSortDigits], tilePrefix[kHighSortDigits + 1];
  __shared__ int end;
  __shared__ bool lastBlock;
  const int tid = static_cast<int>(threadIdx.x);

  if (!resort) {
    const std::uint64_t allOnes = endBit >= 64 ? ~std::uint64_t{0} : (std::uint64_t{1} << endBit) - 1;
    int last = 0;
    for (int i = static_cast<int>(blockIdx.x) * kHighSortThreads + tid; i < cubCount;
         i += static_cast<int>(gridDim.x) * kHighSortThreads)
      if ((keys[i] & allOnes) != allOnes) last = i + 1;
    last = BlockMax(temp.max).Reduce(last, MaxOf{});
    if (tid == 0) {
      blockEnds[blockIdx.x] = last;
      __threadfence();  // the end is visible before the ticket says so
      lastBlock = atomicAdd(ticket, 1u) == gridDim.x - 1;
    }
    __syncthreads();
    if (!lastBlock) return;
    __threadfence();
    int e = tid < static_cast<int>(gridDim.x) ? __ldcg(&blockEnds[tid]) : 0;
    __syncthreads();  // temp.max is reused
    e = BlockMax(temp.max).Reduce(e, MaxOf{});
    if (tid == 0) {
      end = e;
      *ticket = 0u;  // every block has counted itself: the word is zero again, as the caller gave it
    }
    __syncthreads();
  }
  const int n = resort ? keyed : end;
  const int topBit = width < endBit ? width : endBit;

  // Ping-pong from the first pass's source between altKeys and keys (a re-sort starts
  // from the inputs, which it leaves unchanged).
  const std::uint64_t* keysFrom = resort ? keysIn : keys;
  const std::uint32_t* valuesFrom = resort ? valuesIn : values;
  std::uint64_t* keysTo = altKeys;
  std::uint32_t* valuesTo = altValues;
  const int warp = tid / 32, lane = tid % 32;
  for (int bit = resort ? 0 : lowBits; bit < topBit; bit += kHighSortDigitBits) {
    const int bits = topBit - bit < kHighSortDigitBits ? topBit - bit : kHighSortDigitBits;
    const cub::BFEDigitExtractor<std::uint64_t> digitOf(static_cast<std::uint32_t>(bit),
                                                        static_cast<std::uint32_t>(bits));
    // Where each digit's keys start: the exclusive scan of the pass's histogram.
    if (tid < kHighSortDigits) digitStart[tid] = 0;
    __syncthreads();
    for (int i = tid; i < n; i += kHighSortThreads) atomicAdd(&digitStart[digitOf.Digit(keysFrom[i])], 1);
    __syncthreads();
    int start = tid < kHighSortDigits ? digitStart[tid] : 0;
    Scan(temp.scan).ExclusiveSum(start, start);
    if (tid < kHighSortDigits) digitStart[tid] = start;
    __syncthreads();
    for (int base = 0; base < n; base += kHighSortTile) {
      // Warp-striped, the order in which BlockRadixRankMatch ranks equal digits; keys
      // past the end are all ones, ranked last and not written.
      std::uint64_t k[kHighSortKeysPerThread];
      std::uint32_t v[kHighSortKeysPerThread];
      int rank[kHighSortKeysPerThread];
      for (int item = 0; item < kHighSortKeysPerThread; ++item) {
        const int i = base + (warp * kHighSortKeysPerThread + item) * 32 + lane;
        k[item] = i < n ? keysFrom[i] : ~std::uint64_t{0};
        v[item] = i < n ? valuesFrom[i] : 0u;
      }
      int prefix[Rank::BINS_TRACKED_PER_THREAD];
      Rank(temp.rank).RankKeys(k, rank, digitOf, prefix);
      if (tid < kHighSortDigits) tilePrefix[tid] = prefix[0];
      if (tid == 0) tilePrefix[kHighSortDigits] = kHighSortTile;
      __syncthreads();
      for (int item = 0; item < kHighSortKeysPerThread; ++item) {
        const int i = base + (warp * kHighSortKeysPerThread + item) * 32 + lane;
        if (i >= n) continue;
        const int digit = static_cast<int>(digitOf.Digit(k[item]));
        const int to = digitStart[digit] + rank[item] - tilePrefix[digit];
        keysTo[to] = k[item];
        valuesTo[to] = v[item];
      }
      __syncthreads();
      if (tid < kHighSortDigits) digitStart[tid] += tilePrefix[tid + 1] - tilePrefix[tid];
      __syncthreads();
    }
    keysFrom = keysTo;
    valuesFrom = valuesTo;
    keysTo = keysTo == altKeys ? keys : altKeys;
    valuesTo = valuesTo == altValues ? values : altValues;
  }
  if (keysFrom != keys)
    for (int i = tid; i < n; i += kHighSortThreads) {
      keys[i] = keysFrom[i];
      values[i] = valuesFrom[i];
    }
}

/// Whether SmallRadixSort sorts `count` pairs: more than CUB's single tile (one launch)
/// holds, and up to kSmallSortKeys.
bool sortsSmall(int count) {
#if DEVICEARRAY_SMALL_RADIX_SORT
  using SingleTile =
      cub::detail::radix::policy_hub<std::uint64_t, std::uint32_t, std::uint32_t>::Policy900::SingleTilePolicy;
  return count > SingleTile::BLOCK_THREADS * SingleTile::ITEMS_PER_THREAD && count <= kSmallSortKeys;
#else
  (void)count;
  return false;
#endif
}

/// cub::DeviceRadixSort::SortPairs of `count` pairs by bits [0, endBit), or
/// SmallRadixSort's (in dependent launches when `dependent`).
cudaError_t radixSortPairs(void* temp, std::size_t& bytes, const std::uint64_t* keysIn, std::uint64_t* keysOut,
                           const std::uint32_t* valuesIn, std::uint32_t* valuesOut, int count, int endBit,
                           cudaStream_t stream, [[maybe_unused]] bool dependent) {
#if DEVICEARRAY_SMALL_RADIX_SORT
  if (sortsSmall(count))
    return smallSortPairs(temp, bytes, keysIn, keysOut, valuesIn, valuesOut, count, endBit, stream, dependent);
#endif
  return cub::DeviceRadixSort::SortPairs(temp, bytes, keysIn, keysOut, valuesIn, valuesOut, count, 0, endBit,
                                         stream);
}

/// The bits the device-wide sort of `count` pairs sorts for a guessed key width (at
/// most endBit, the sort's checks say): the guess rounded up to whole passes of the
/// sort's digits, never down, because a guess below the real width costs sortOnDevice a
/// pass on one block for every 8 bits above it. A guess above 32 bits is sorted
/// device-wide too: a device-wide pass costs far less than sortOnDevice's one-block pass
/// over the same keys.
int cubSortedLowBits(int likelyKeyBits, int endBit, int count) {
  if (likelyKeyBits <= 0) return std::min(kDeviceSortedLowBits, endBit);
  const int digitBits = sortsSmall(count) ? smallSortDigitBits(likelyKeyBits) : 8;
  return std::min(endBit, (likelyKeyBits + digitBits - 1) / digitBits * digitBits);
}

/// The CUDA device, stream and current-device guard of one primitive call.
struct Call {
  Call(CudaDevice& d, QueueImpl& q, const char* fn)
      : device(d), guard(device.ordinal()), stream(device.streamOf(q, fn)), function(fn) {}

  template <class T>
  T* pointer(BufferRef b) {
    return reinterpret_cast<T*>(device.address(MemRef::dev(b.allocation, b.offset), function));
  }

  /// Runs `cubCall(temp, bytes)` twice (size query, then work) with pool memory.
  template <class F>
  void run(F&& cubCall) {
    std::size_t bytes = 0;
    check(cubCall(nullptr, bytes), function);
    void* temp = device.mallocAsync(bytes > 0 ? bytes : 1, stream, function);
    const cudaError_t err = cubCall(temp, bytes);
    device.freeAsync(temp, stream);
    check(err, function);
  }

  CudaDevice& device;
  DeviceGuard guard;
  cudaStream_t stream;
  const char* function;
};

class CudaPrimitives final : public ParallelPrimitives {
 public:
  explicit CudaPrimitives(CudaDevice& device) : ParallelPrimitives(device), device_(device) {}

 private:
  void doExclusiveScanU32(QueueImpl& q, BufferRef in, BufferRef out, std::size_t count) override;
  void doSortPairsU64U32(QueueImpl& q, BufferRef keysIn, BufferRef valuesIn, BufferRef keysOut, BufferRef valuesOut,
                         std::size_t count, int endBit, BufferRef keyBits, int likelyKeyBits, BufferRef keyedEnd,
                         std::size_t likelyKeyedEnd) override;
  void doValidPointOffsets(QueueImpl& q, BufferRef xyz, std::size_t count, BufferRef offsets) override;
  void doSumValidXYZ(QueueImpl& q, BufferRef xyz, std::size_t count, BufferRef out) override;
  void doBoundsValidXYZ(QueueImpl& q, BufferRef xyz, std::size_t count, BufferRef out) override;

  CudaDevice& device_;
};

void CudaPrimitives::doExclusiveScanU32(QueueImpl& q, BufferRef in, BufferRef out, std::size_t count) {
  Call c(device_, q, "exclusiveScanU32 (cub::DeviceScan::ExclusiveSum)");
  const std::uint32_t* src = c.pointer<const std::uint32_t>(in);
  std::uint32_t* dst = c.pointer<std::uint32_t>(out);
  const int n = static_cast<int>(count);
  c.run([&](void* temp, std::size_t& bytes) {
    return cub::DeviceScan::ExclusiveSum(temp, bytes, src, dst, n, c.stream);
  });
}

void CudaPrimitives::doSortPairsU64U32(QueueImpl& q, BufferRef keysIn, BufferRef valuesIn, BufferRef keysOut,
                                       BufferRef valuesOut, std::size_t count, int endBit, BufferRef keyBits,
                                       int likelyKeyBits, BufferRef keyedEnd, std::size_t likelyKeyedEnd) {
  Call c(device_, q, "sortPairsU64U32 (cub::DeviceRadixSort::SortPairs)");
  const std::uint64_t* kin = c.pointer<const std::uint64_t>(keysIn);
  const std::uint32_t* vin = c.pointer<const std::uint32_t>(valuesIn);
  std::uint64_t* kout = c.pointer<std::uint64_t>(keysOut);
  std::uint32_t* vout = c.pointer<std::uint32_t>(valuesOut);
  const int n = static_cast<int>(count);
  // CUB sorts the guessed keyed end's entries by the guessed width's bits; sortOnDevice
  // does the rest, if any, from the words themselves.
  const bool endOnDevice = keyedEnd.allocation != nullptr;
  const int cubCount = endOnDevice && likelyKeyedEnd > 0 ? static_cast<int>(likelyKeyedEnd) : n;
  const int lowBits = cubSortedLowBits(likelyKeyBits, endBit, cubCount);
  const bool highBitsOnDevice = keyBits.allocation != nullptr && endBit > lowBits;
  const int lowEnd = highBitsOnDevice ? lowBits : endBit;  // endBit without a width word
  // SmallRadixSort's kernels are built with sortOnDevice, in this file: they are dependent
  // launches where it is.
  const bool dependent = device_.launchTraitsOf(reinterpret_cast<const void*>(&sortOnDevice), "sortOnDevice").dependent;
  c.run([&](void* temp, std::size_t& bytes) {
    return radixSortPairs(temp, bytes, kin, kout, vin, vout, cubCount, lowEnd, c.stream, dependent);
  });
  if (!highBitsOnDevice && !(endOnDevice && cubCount < n)) return;

  // Pool memory for the blocks' ends and the other half of the double buffer,
  // [ends | keys | values]; the blocks count themselves in the zero word after the
  // width (no memset of our own).
  auto* bits = keyBits.allocation != nullptr ? c.pointer<std::uint32_t>(keyBits) : nullptr;
  const auto* end = endOnDevice ? c.pointer<const std::uint32_t>(keyedEnd) : nullptr;
  const auto aligned = [](std::size_t b) { return (b + 255) & ~std::size_t{255}; };
  const std::size_t keysAt = aligned(kHighSortMaxBlocks * sizeof(int)),
                    valuesAt = keysAt + aligned(count * sizeof(std::uint64_t)),
                    bytes = valuesAt + aligned(count * sizeof(std::uint32_t));
  auto* block = static_cast<unsigned char*>(device_.mallocAsync(bytes, c.stream, c.function));
  const int blocks = std::min((cubCount + kHighSortTile - 1) / kHighSortTile, kHighSortMaxBlocks);
  const LaunchConfig config(dim3(static_cast<unsigned>(blocks)), dim3(kHighSortThreads), c.stream, dependent);
  const cudaError_t err = cudaLaunchKernelEx(
      config.get(), sortOnDevice, bits, end, lowEnd, endBit, cubCount, n, kin, vin, kout, vout,
      reinterpret_cast<std::uint64_t*>(block + keysAt), reinterpret_cast<std::uint32_t*>(block + valuesAt),
      reinterpret_cast<int*>(block), bits != nullptr ? bits + 1 : nullptr);
  device_.freeAsync(block, c.stream);
  check(err, c.function);
}

/// offsets[0..count] = the exclusive scan of flag(i), i in [0, count] (flag(count) is
/// 0): one CUB scan whose input iterator computes the flags, instead of a flags kernel
/// and a plain scan. On the device it takes about as long (1.5 µs longer for 12-byte
/// points, whose loads coalesce worse), but it is one launch less, and a launch costs
/// the host more than that.
template <class Flag>
void scanFlags(Call& c, Flag flag, std::size_t count, BufferRef offsets) {
  std::uint32_t* dst = c.pointer<std::uint32_t>(offsets);
  const int n = static_cast<int>(count + 1);
  auto flags = thrust::make_transform_iterator(thrust::counting_iterator<long>(0), flag);
  c.run([&](void* temp, std::size_t& bytes) { return cub::DeviceScan::ExclusiveSum(temp, bytes, flags, dst, n, c.stream); });
}

void CudaPrimitives::doValidPointOffsets(QueueImpl& q, BufferRef xyz, std::size_t count, BufferRef offsets) {
  Call c(device_, q, "validPointOffsets (cub::DeviceScan::ExclusiveSum)");
  scanFlags(c, ValidPointAsFlag{c.pointer<const float>(xyz), static_cast<long>(count)}, count, offsets);
}

void CudaPrimitives::doSumValidXYZ(QueueImpl& q, BufferRef xyz, std::size_t count, BufferRef out) {
  Call c(device_, q, "sumValidXYZ (cub::DeviceReduce::Reduce)");
  Sum4* result = c.pointer<Sum4>(out);
  const int n = static_cast<int>(count);
  auto points = thrust::make_transform_iterator(thrust::counting_iterator<long>(0),
                                                ValidPointAsSum4{c.pointer<const float>(xyz)});
  c.run([&](void* temp, std::size_t& bytes) {
    return cub::DeviceReduce::Reduce(temp, bytes, points, result, n, AddSum4{}, Sum4{0.0, 0.0, 0.0, 0.0},
                                     c.stream);
  });
}

void CudaPrimitives::doBoundsValidXYZ(QueueImpl& q, BufferRef xyz, std::size_t count, BufferRef out) {
  Call c(device_, q, "boundsValidXYZ (cub::DeviceReduce::Reduce)");
  Bounds6* result = c.pointer<Bounds6>(out);
  const int n = static_cast<int>(count);
  const float inf = std::numeric_limits<float>::infinity();
  auto points = thrust::make_transform_iterator(thrust::counting_iterator<long>(0),
                                                ValidPointAsBounds6{c.pointer<const float>(xyz)});
  c.run([&](void* temp, std::size_t& bytes) {
    return cub::DeviceReduce::Reduce(temp, bytes, points, result, n, UnionOfBounds6{},
                                     Bounds6{{inf, inf, inf}, {-inf, -inf, -inf}}, c.stream);
  });
}

}  // namespace

std::unique_ptr<ParallelPrimitives> makePrimitives(CudaDevice& device) {
  return std::make_unique<CudaPrimitives>(device);
}

}  // namespace devicearray::detail::cuda
