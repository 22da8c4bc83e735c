// GpuMatND / GpuMat over memory the user allocated with the CUDA runtime
// (cudaMalloc, cudaMallocPitch), and user kernels writing library arrays.
// Built only with CUDA; every test skips when the machine has no CUDA device.
#include <cuda_runtime.h>

#include <cstdint>
#include <vector>

#include "test_support.hpp"

namespace {

using devicearray::ComputeBackend;
using devicearray::CUDAStreamPtr;
using devicearray::Depth;
using devicearray::ErrorCode;
using devicearray::GpuMat;
using devicearray::GpuMatND;
using devicearray::HostMat;
using devicearray::makeType;
using devicearray::Range;
using devicearray::Scalar;
using devicearray::Stream;

#define CUDA_OK(call) ASSERT_EQ((call), cudaSuccess) << #call

// Owns one cudaMalloc'd block for the duration of a test.
struct CudaBuffer {
  void* ptr = nullptr;
  explicit CudaBuffer(std::size_t bytes) {
    if (cudaMalloc(&ptr, bytes) != cudaSuccess) ptr = nullptr;
  }
  ~CudaBuffer() {
    if (ptr != nullptr) cudaFree(ptr);
  }
  CudaBuffer(const CudaBuffer&) = delete;
  CudaBuffer& operator=(const CudaBuffer&) = delete;
};

__global__ void fillIota(std::int32_t* data, int count, std::int32_t base) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < count) data[i] = base + i;
}

TEST(GpuMatNDExternalCuda, WrapsCudaMallocMemoryWithoutCopyingOrFreeing) {
  DATEST_REQUIRE_CUDA(device);
  CUDA_OK(cudaSetDevice(device.ordinal()));
  const int type = makeType(Depth::F32, 3);
  const std::vector<int> shape = {4, 5, 6};
  const std::size_t bytes = 4 * 5 * 6 * 12;
  CudaBuffer buf(bytes);
  ASSERT_NE(buf.ptr, nullptr);
  const std::vector<std::uint8_t> data = datest::nonZeroBytes(bytes, 1);
  CUDA_OK(cudaMemcpy(buf.ptr, data.data(), bytes, cudaMemcpyHostToDevice));
  CUDA_OK(cudaDeviceSynchronize());  // a pageable upload may return before its DMA lands

  GpuMatND ext(shape, type, buf.ptr);
  EXPECT_TRUE(ext.external());
  EXPECT_EQ(ext.backend(), ComputeBackend::cuda);
  EXPECT_EQ(ext.device(), device);
  EXPECT_EQ(static_cast<void*>(ext.getDevicePtr()), buf.ptr);
  EXPECT_TRUE(ext.isContinuous());
  EXPECT_EQ(ext.flags, GpuMatND::MAGIC_VAL + type + GpuMatND::CONTINUOUS_FLAG);
  EXPECT_EQ(ext.step, datest::packedSteps(shape, 12));
  EXPECT_TRUE(datest::bytesEqual(data, datest::downloadPacked(ext), 12));

  // A view's device pointer includes its offset.
  const GpuMatND v = ext({Range(1, 3), Range(2, 4), Range::all()});
  EXPECT_EQ(v.getDevicePtr(), static_cast<devicearray::uchar*>(buf.ptr) + 1 * ext.step[0] + 2 * ext.step[1]);
  EXPECT_TRUE(datest::bytesEqual(datest::subArrayBytes(data, shape, 12, {1, 2, 0}, {2, 2, 6}),
                                 datest::downloadPacked(v), 12));

  ext.release();
  EXPECT_TRUE(ext.empty());
  std::vector<std::uint8_t> back(bytes);
  CUDA_OK(cudaMemcpy(back.data(), buf.ptr, bytes, cudaMemcpyDeviceToHost));
  EXPECT_TRUE(datest::bytesEqual(data, back)) << "release of external memory must not free or change it";
}

TEST(GpuMatNDExternalCuda, LibraryWritesLandInUserMemory) {
  DATEST_REQUIRE_CUDA(device);
  CUDA_OK(cudaSetDevice(device.ordinal()));
  const int type = makeType(Depth::U16, 1);
  CudaBuffer buf(6 * 7 * 2);
  ASSERT_NE(buf.ptr, nullptr);
  GpuMatND ext({6, 7}, type, buf.ptr);
  const HostMat h = datest::randomHostMat({6, 7}, type, 2);
  GpuMat header = ext.createGpuMatHeader();
  EXPECT_TRUE(header.external());
  header.upload(h);  // same size and type: written in place
  std::vector<std::uint8_t> back(6 * 7 * 2);
  CUDA_OK(cudaMemcpy(back.data(), buf.ptr, back.size(), cudaMemcpyDeviceToHost));
  EXPECT_TRUE(datest::bytesEqual(datest::packedBytes(h), back, 2));
}

TEST(GpuMatNDExternalCuda, WrapsPitchedMemoryWithStep) {
  DATEST_REQUIRE_CUDA(device);
  CUDA_OK(cudaSetDevice(device.ordinal()));
  const int type = makeType(Depth::U8, 3);
  void* ptr = nullptr;
  std::size_t pitch = 0;
  CUDA_OK(cudaMallocPitch(&ptr, &pitch, 13 * 3, 5));
  const std::vector<std::uint8_t> rows = datest::nonZeroBytes(5 * 13 * 3, 3);
  CUDA_OK(cudaMemcpy2D(ptr, pitch, rows.data(), 13 * 3, 13 * 3, 5, cudaMemcpyHostToDevice));
  CUDA_OK(cudaDeviceSynchronize());  // a pageable upload may return before its DMA lands
  {
    const GpuMatND ext({5, 13}, type, ptr, {pitch});
    EXPECT_EQ(ext.step, (std::vector<std::size_t>{pitch, 3}));
    EXPECT_EQ(ext.isContinuous(), pitch == 13 * 3);
    EXPECT_TRUE(datest::bytesEqual(rows, datest::downloadPacked(ext), 3));
    const GpuMatND c = ext.clone();
    EXPECT_TRUE(c.isContinuous());
    EXPECT_FALSE(c.external());
    EXPECT_TRUE(datest::bytesEqual(rows, datest::downloadPacked(c), 3));

    GpuMat m(5, 13, type, ptr, pitch);
    EXPECT_TRUE(m.external());
    EXPECT_EQ(static_cast<void*>(m.data), ptr);
    m(Range(1, 2), Range(0, 13)).setTo(Scalar(1, 2, 3));
  }
  std::vector<std::uint8_t> back(5 * 13 * 3);
  CUDA_OK(cudaMemcpy2D(back.data(), 13 * 3, ptr, pitch, 13 * 3, 5, cudaMemcpyDeviceToHost));
  std::vector<std::uint8_t> expected = rows;
  for (int c = 0; c < 13 * 3; ++c) expected[static_cast<std::size_t>(13 * 3 + c)] = static_cast<std::uint8_t>(1 + c % 3);
  EXPECT_TRUE(datest::bytesEqual(expected, back, 3));
  CUDA_OK(cudaFree(ptr));
}

TEST(GpuMatNDExternalCuda, UserKernelOnLibraryMemoryIsOrderedByPassingTheUserStream) {
  DATEST_REQUIRE_CUDA(device);
  CUDA_OK(cudaSetDevice(device.ordinal()));
  constexpr int kCount = 4096;
  GpuMatND g({kCount}, makeType(Depth::S32, 1), device);
  cudaStream_t user = nullptr;
  CUDA_OK(cudaStreamCreateWithFlags(&user, cudaStreamNonBlocking));
  fillIota<<<(kCount + 255) / 256, 256, 0, user>>>(reinterpret_cast<std::int32_t*>(g.getDevicePtr()), kCount, 7);
  CUDA_OK(cudaGetLastError());
  Stream wrapped = Stream::wrap(device, CUDAStreamPtr{user});
  HostMat out({kCount}, makeType(Depth::S32, 1));
  g.download(out, wrapped);  // ordered after the kernel on the same stream
  CUDA_OK(cudaStreamSynchronize(user));
  const auto* values = out.ptr<std::int32_t>();
  for (int i = 0; i < kCount; ++i) ASSERT_EQ(values[i], 7 + i) << "element " << i;
  CUDA_OK(cudaStreamDestroy(user));
}

TEST(GpuMatNDExternalCuda, HostPointerIsNotDeviceMemory) {
  DATEST_REQUIRE_CUDA(device);
  std::vector<std::uint8_t> host(64);
  datest::expectError(ErrorCode::InvalidArgument,
                      [&] { GpuMatND({8, 8}, makeType(Depth::U8, 1), static_cast<void*>(host.data())); });
}

TEST(GpuMatNDExternalCuda, BadStepsForCudaMemoryAreInvalidArgument) {
  DATEST_REQUIRE_CUDA(device);
  CUDA_OK(cudaSetDevice(device.ordinal()));
  CudaBuffer buf(4096);
  ASSERT_NE(buf.ptr, nullptr);
  const int t = makeType(Depth::F32, 1);
  datest::expectError(ErrorCode::InvalidArgument, [&] { GpuMatND({4, 4}, t, buf.ptr, {8}); }, "row step too small");
  datest::expectError(ErrorCode::InvalidArgument, [&] { GpuMatND({4, 4}, t, buf.ptr, {18}); }, "not a multiple");
  datest::expectError(ErrorCode::InvalidArgument, [&] { GpuMatND({2, 4, 4}, t, buf.ptr, {64}); }, "too few steps");
  datest::expectError(ErrorCode::InvalidArgument, [&] { GpuMatND({4, 4}, t, buf.ptr, {32, 8}); },
                      "last step != elemSize");
}

}  // namespace
