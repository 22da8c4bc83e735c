// The CUDA device's parallel primitives (backend/parallel_primitives.hpp): CUB
// device-wide primitives. Temporary storage comes from the device's stream-ordered
// pool on the same stream and is released on that stream right after the CUB call, so
// it is reused by later work without any host synchronization.
#include <cub/device/device_radix_sort.cuh>
#include <cub/device/device_reduce.cuh>
#include <cub/device/device_scan.cuh>
#include <cub/device/device_segmented_radix_sort.cuh>
#include <thrust/iterator/counting_iterator.h>
#include <thrust/iterator/transform_iterator.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>

#include "cuda/cuda_device.hpp"
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

/// The key bits a sort with a device-side key width gives CUB's device-wide sort. The
/// bits above cost CUB a pass per 8 even when no key uses them, and CUB takes its bit
/// range from the host, so they go to a segmented sort whose one segment the device
/// sets: empty unless the keys are wider (its passes then only launch), else up to the
/// last key that is not all ones. A segmented sort is one block a segment, so a wide
/// grid is slow, but sorted; ending the segment there keeps a capacity's missing
/// entries, which the low bits already put last, out of that block's work.
constexpr int kDeviceSortedLowBits = 32;

/// offsets[1] (zeroed before) = the end of the high-bits sort's segment: 0 when the keys
/// need at most lowBits bits, else one past the last key whose bits [0, endBit) are not
/// all ones. offsets[0] stays 0.
__global__ void highBitsSegmentEnd(const std::uint32_t* keyBits, int lowBits, int endBit, int count,
                                   const std::uint64_t* keys, int* offsets) {
  if (static_cast<int>(*keyBits) <= lowBits) return;
  const std::uint64_t allOnes = endBit >= 64 ? ~std::uint64_t{0} : (std::uint64_t{1} << endBit) - 1;
  int last = 0;
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < count; i += gridDim.x * blockDim.x)
    if ((keys[i] & allOnes) != allOnes) last = i + 1;
  if (last > 0) atomicMax(&offsets[1], last);
}

/// Copies the pairs of the high-bits sort's segment [0, offsets[1]) from where that sort
/// left them back to the output (past the segment, the output holds them already).
__global__ void copySegmentToOutput(const int* offsets, const std::uint64_t* keysFrom, const std::uint32_t* valuesFrom,
                                    std::uint64_t* keysTo, std::uint32_t* valuesTo) {
  const int end = offsets[1];
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < end; i += gridDim.x * blockDim.x) {
    keysTo[i] = keysFrom[i];
    valuesTo[i] = valuesFrom[i];
  }
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
                         std::size_t count, int endBit, BufferRef keyBits) override;
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
                                       BufferRef valuesOut, std::size_t count, int endBit, BufferRef keyBits) {
  Call c(device_, q, "sortPairsU64U32 (cub::DeviceRadixSort::SortPairs)");
  const std::uint64_t* kin = c.pointer<const std::uint64_t>(keysIn);
  const std::uint32_t* vin = c.pointer<const std::uint32_t>(valuesIn);
  std::uint64_t* kout = c.pointer<std::uint64_t>(keysOut);
  std::uint32_t* vout = c.pointer<std::uint32_t>(valuesOut);
  const int n = static_cast<int>(count);
  const bool highBitsOnDevice = keyBits.allocation != nullptr && endBit > kDeviceSortedLowBits;
  const int lowEnd = highBitsOnDevice ? kDeviceSortedLowBits : endBit;
  c.run([&](void* temp, std::size_t& bytes) {
    return cub::DeviceRadixSort::SortPairs(temp, bytes, kin, kout, vin, vout, n, 0, lowEnd, c.stream);
  });
  if (!highBitsOnDevice) return;

  // The high bits, in place in the output with pool memory for the other half of the
  // double buffer: [segment offsets | alternate keys | alternate values | CUB's temp].
  const std::uint32_t* bits = c.pointer<const std::uint32_t>(keyBits);
  const auto aligned = [](std::size_t b) { return (b + 255) & ~std::size_t{255}; };
  const std::size_t keysAt = 256, valuesAt = keysAt + aligned(count * sizeof(std::uint64_t)),
                    cubAt = valuesAt + aligned(count * sizeof(std::uint32_t));
  std::size_t cubBytes = 0;
  {
    cub::DoubleBuffer<std::uint64_t> k(kout, nullptr);
    cub::DoubleBuffer<std::uint32_t> v(vout, nullptr);
    check(cub::DeviceSegmentedRadixSort::SortPairs(nullptr, cubBytes, k, v, n, 1, static_cast<int*>(nullptr),
                                                   static_cast<int*>(nullptr), kDeviceSortedLowBits, endBit,
                                                   c.stream),
          c.function);
  }
  auto* block = static_cast<unsigned char*>(device_.mallocAsync(cubAt + cubBytes, c.stream, c.function));
  int* offsets = reinterpret_cast<int*>(block);
  cub::DoubleBuffer<std::uint64_t> k(kout, reinterpret_cast<std::uint64_t*>(block + keysAt));
  cub::DoubleBuffer<std::uint32_t> v(vout, reinterpret_cast<std::uint32_t*>(block + valuesAt));
  // Grid-stride kernels of a few hundred blocks: in the usual case both return at once.
  const int blocks = std::min((n + 255) / 256, 512);
  cudaError_t err = cudaMemsetAsync(offsets, 0, 2 * sizeof(int), c.stream);
  if (err == cudaSuccess) {
    highBitsSegmentEnd<<<blocks, 256, 0, c.stream>>>(bits, kDeviceSortedLowBits, endBit, n, kout, offsets);
    err = cudaGetLastError();
  }
  if (err == cudaSuccess)
    err = cub::DeviceSegmentedRadixSort::SortPairs(block + cubAt, cubBytes, k, v, n, 1, offsets, offsets + 1,
                                                   kDeviceSortedLowBits, endBit, c.stream);
  if (err == cudaSuccess && k.selector != 0) {
    copySegmentToOutput<<<blocks, 256, 0, c.stream>>>(offsets, k.Current(), v.Current(), kout, vout);
    err = cudaGetLastError();
  }
  device_.freeAsync(block, c.stream);
  check(err, c.function);
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
