// Stream ordering on CUDA (docs/stream-queue-context.md), with user kernels on user
// streams.
//
// Every test gates a producer kernel on a host-controlled flag in mapped pinned
// memory: the kernel spins until the host opens the gate, then ~50 ms more, then
// writes. While the gate is closed the test enqueues library calls and the consumer
// on other streams, flushes and waits a moment, and checks that the consumer stream
// is still busy: a missing wait would let the consumer run to completion on stale
// data, which the check catches deterministically (and the values afterwards too).
// A library call that blocked the host on the gated work would never return; a
// watchdog opens the gate after a generous limit and the test then fails instead of
// hanging.
#include <cuda_runtime.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <thread>
#include <vector>

#include "devicearray/devicearray.hpp"
#include "cuda_gate.cuh"
#include "ordering_support.hpp"
#include "test_support.hpp"

namespace {

using namespace devicearray;
using datest::ordering::kH;
using datest::ordering::kN;
using datest::ordering::kW;
using datest::ordering::pattern;

/// Page-locked host floats: copies into them are truly asynchronous (a pageable
/// destination would make CUDA itself block the host).
struct PinnedFloats {
  explicit PinnedFloats(std::size_t n) : count(n) {
    if (cudaHostAlloc(reinterpret_cast<void**>(&data), n * sizeof(float), cudaHostAllocDefault) != cudaSuccess)
      data = nullptr;
    else
      for (std::size_t i = 0; i < n; ++i) data[i] = -1.0f;
  }
  ~PinnedFloats() {
    if (data != nullptr) (void)cudaFreeHost(data);
  }
  std::vector<float> values() const { return std::vector<float>(data, data + count); }
  float* data = nullptr;
  std::size_t count;
};

/// Lets an unordered consumer (if the library forgot a wait) run to completion.
void settle() { std::this_thread::sleep_for(std::chrono::milliseconds(30)); }

class OrderingCuda : public testing::Test {
 protected:
  void SetUp() override {
    bool found = false;
    for (const auto& d : datest::testDevices())
      if (d.backend() == ComputeBackend::cuda) {
        device_ = d;
        found = true;
        break;
      }
    if (!found) GTEST_SKIP() << "no CUDA device on this machine (CUDA ordering tests run on the GPU machine)";
    ASSERT_EQ(cudaSetDevice(device_.ordinal()), cudaSuccess);
    // Non-blocking: they never serialize with the legacy default stream, so only the
    // library's events can order them.
    ASSERT_EQ(cudaStreamCreateWithFlags(&s1_, cudaStreamNonBlocking), cudaSuccess);
    ASSERT_EQ(cudaStreamCreateWithFlags(&s2_, cudaStreamNonBlocking), cudaSuccess);
    spin_ = cyclesFor50ms(device_.ordinal());
  }
  void TearDown() override {
    (void)cudaDeviceSynchronize();
    if (s1_ != nullptr) (void)cudaStreamDestroy(s1_);
    if (s2_ != nullptr) (void)cudaStreamDestroy(s2_);
  }

  ComputeDevice device_;
  cudaStream_t s1_ = nullptr;
  cudaStream_t s2_ = nullptr;
  long long spin_ = 0;
};

TEST_F(OrderingCuda, ConsumerOnAnotherStreamSeesProducerHandedOverThroughLibraryCall) {
  // PointXYZ so convert<PointXYZW> is a real library kernel reading the producer's data.
  auto a = DeviceArray<PointXYZ>::fromHost(std::vector<PointXYZ>(kN, PointXYZ{0, 0, 0}).data(), kH, kW,
                                           device_);
  const int floats = kN * 3;
  PinnedFloats viaA(static_cast<std::size_t>(floats));
  PinnedFloats viaB(static_cast<std::size_t>(kN) * 4);
  ASSERT_NE(viaA.data, nullptr);
  ASSERT_NE(viaB.data, nullptr);
  Gate gate;
  ASSERT_TRUE(gate.valid());

  gatedProduce<<<1, 256, 0, s1_>>>(gate.device(), static_cast<float*>(a.devicePointer()), floats, spin_, 1.0f);
  CUDA_OK(cudaGetLastError());
  // Hand-over: a library call on the producer's stream. It reads `a` after the kernel
  // and its result is ready on s1.
  DeviceArray<PointXYZW> b = convert<PointXYZW>(a, CUDAStreamPtr{s1_});
  // Consumers on s2 read both the handed-over array and the library's result.
  a.copyToHost(reinterpret_cast<PointXYZ*>(viaA.data), static_cast<std::size_t>(floats) * sizeof(float),
               CUDAStreamPtr{s2_});
  b.copyToHost(reinterpret_cast<PointXYZW*>(viaB.data), static_cast<std::size_t>(kN) * sizeof(PointXYZW),
               CUDAStreamPtr{s2_});
  settle();
  EXPECT_EQ(cudaStreamQuery(s2_), cudaErrorNotReady) << "the consumer stream finished while the producer was gated";
  EXPECT_TRUE(gate.open()) << "a library call blocked the host on the gated producer";
  CUDA_OK(cudaStreamSynchronize(s2_));  // only the consumer's stream

  std::vector<float> expectA(static_cast<std::size_t>(floats));
  for (int i = 0; i < floats; ++i) expectA[static_cast<std::size_t>(i)] = 1.0f + 0.5f * static_cast<float>(i);
  EXPECT_EQ(viaA.values(), expectA);
  std::vector<float> expectB(static_cast<std::size_t>(kN) * 4);
  for (int p = 0; p < kN; ++p)
    for (int c = 0; c < 4; ++c)
      expectB[static_cast<std::size_t>(p) * 4 + static_cast<std::size_t>(c)] =
          c == 3 ? 1.0f : expectA[static_cast<std::size_t>(p) * 3 + static_cast<std::size_t>(c)];
  EXPECT_EQ(viaB.values(), expectB);
}

TEST_F(OrderingCuda, ExternalGpuMatNDClonedOnUserStreamIsReadyForADownloadOnAnotherStream) {
  float* user = nullptr;
  CUDA_OK(cudaMalloc(&user, kN * sizeof(float)));
  CUDA_OK(cudaMemset(user, 0, kN * sizeof(float)));
  CUDA_OK(cudaDeviceSynchronize());
  {
    const GpuMatND external({kH, kW}, makeType(Depth::F32, 1), user);
    HostMat host = HostMat::pinned({kH, kW}, makeType(Depth::F32, 1));
    Stream producer = Stream::wrap(device_, CUDAStreamPtr{s1_});
    Stream consumer = Stream::wrap(device_, CUDAStreamPtr{s2_});
    Gate gate;
    ASSERT_TRUE(gate.valid());

    gatedProduce<<<1, 256, 0, s1_>>>(gate.device(), user, kN, spin_, 3.0f);
    CUDA_OK(cudaGetLastError());
    GpuMatND copy = external.clone(producer);
    copy.download(host, consumer);
    settle();
    EXPECT_FALSE(producer.queryIfComplete());
    EXPECT_FALSE(consumer.queryIfComplete()) << "the download did not wait for the clone on the producer's stream";
    EXPECT_TRUE(gate.open()) << "a library call blocked the host on the gated producer";
    consumer.waitForCompletion();
    EXPECT_TRUE(consumer.queryIfComplete());
    EXPECT_EQ(std::vector<float>(host.ptr<float>(), host.ptr<float>() + kN), pattern(3.0f));
  }
  CUDA_OK(cudaFree(user));
}

TEST_F(OrderingCuda, ViewOfUserMemoryOrdersReadsAfterTheStreamItWasCreatedOn) {
  float* user = nullptr;
  CUDA_OK(cudaMalloc(&user, kN * sizeof(float)));
  CUDA_OK(cudaMemset(user, 0, kN * sizeof(float)));
  CUDA_OK(cudaDeviceSynchronize());
  {
    PinnedFloats out(kN);
    ASSERT_NE(out.data, nullptr);
    Gate gate;
    ASSERT_TRUE(gate.valid());
    gatedProduce<<<1, 256, 0, s1_>>>(gate.device(), user, kN, spin_, 5.0f);
    CUDA_OK(cudaGetLastError());
    // The view is made on the producer's stream: the library orders later work after it.
    const auto view = device_.createDeviceArrayView<PointZ>(CUDADevicePointer{user}, kW, kH, CUDAStreamPtr{s1_});
    view.copyToHost(reinterpret_cast<PointZ*>(out.data), kN * sizeof(float), CUDAStreamPtr{s2_});
    settle();
    EXPECT_EQ(cudaStreamQuery(s2_), cudaErrorNotReady);
    EXPECT_TRUE(gate.open()) << "a library call blocked the host on the gated producer";
    CUDA_OK(cudaStreamSynchronize(s2_));
    EXPECT_EQ(out.values(), pattern(5.0f));
  }
  CUDA_OK(cudaFree(user));
}

TEST_F(OrderingCuda, LibraryCallOnStreamAThenOnStreamBAreOrderedByTheAllocation) {
  GpuMat m(kH, kW, makeType(Depth::F32, 1), device_);
  GpuMat doubled(kH, kW, makeType(Depth::F32, 1), device_);
  m.setTo(Scalar(0));
  float* scratch = nullptr;
  CUDA_OK(cudaMalloc(&scratch, kN * sizeof(float)));
  {
    HostMat host = HostMat::pinned({kH, kW}, makeType(Depth::F32, 1));
    Stream a = Stream::wrap(device_, CUDAStreamPtr{s1_});
    Stream b = Stream::wrap(device_, CUDAStreamPtr{s2_});
    Gate gate;
    ASSERT_TRUE(gate.valid());
    // Stream A is held up by unrelated user work, so the library's setTo on A runs late.
    gatedProduce<<<1, 256, 0, s1_>>>(gate.device(), scratch, kN, spin_, 0.0f);
    CUDA_OK(cudaGetLastError());
    m.setTo(Scalar(7), a);
    m.convertTo(doubled, makeType(Depth::F32, 1), 2.0, 1.0, b);  // must see the 7s
    doubled.download(host, b);
    settle();
    EXPECT_FALSE(b.queryIfComplete()) << "stream B did not wait for the setTo on stream A";
    EXPECT_TRUE(gate.open()) << "a library call blocked the host on the gated stream";
    b.waitForCompletion();
    EXPECT_EQ(std::vector<float>(host.ptr<float>(), host.ptr<float>() + kN), std::vector<float>(kN, 15.0f));
  }
  CUDA_OK(cudaDeviceSynchronize());
  CUDA_OK(cudaFree(scratch));
}

TEST_F(OrderingCuda, DroppingTheLastHandleWhileAUserKernelReadsItIsSafe) {
  const std::vector<float> values = pattern(11.0f);
  const std::vector<float> garbage(kN, -42.0f);
  auto source = DeviceArray<PointZ>::fromHost(reinterpret_cast<const PointZ*>(values.data()), kH, kW, device_);
  const auto noise = DeviceArray<PointZ>::fromHost(reinterpret_cast<const PointZ*>(garbage.data()), kH, kW, device_);
  float* out = nullptr;
  CUDA_OK(cudaMalloc(&out, kN * sizeof(float)));
  CUDA_OK(cudaMemset(out, 0, kN * sizeof(float)));
  CUDA_OK(cudaDeviceSynchronize());
  std::vector<GpuMatND> fillers;
  {
    Stream sdk = Stream::wrap(device_, device_.sdkStreamOrQueue());
    Gate gate;
    ASSERT_TRUE(gate.valid());
    gatedCopy<<<1, 256, 0, s1_>>>(gate.device(), static_cast<const float*>(source.devicePointer()), out, kN, spin_);
    CUDA_OK(cudaGetLastError());
    // The user's kernel is made known to the library by a call on its stream;
    // that call's own result is dropped at once, with its work still enqueued.
    { const auto discarded = convert<PointZ>(source, CUDAStreamPtr{s1_}); }
    source = DeviceArray<PointZ>();  // last handle gone while s1 still reads the memory
    // Pressure the pool: same-size allocations on the library stream would reuse the
    // block at once if it had been freed without waiting for s1.
    for (int i = 0; i < 4; ++i) fillers.push_back(noise.toGpuMatND().clone(sdk));
    settle();
    EXPECT_TRUE(gate.open()) << "a library call blocked the host on the gated reader";
    CUDA_OK(cudaDeviceSynchronize());
  }
  std::vector<float> got(kN);
  CUDA_OK(cudaMemcpy(got.data(), out, kN * sizeof(float), cudaMemcpyDeviceToHost));
  EXPECT_EQ(got, values) << "the user kernel read memory the library had already reused";
  for (const auto& f : fillers) {
    HostMat h;
    f.download(h);
    EXPECT_EQ(std::vector<float>(h.ptr<float>(), h.ptr<float>() + kN), garbage);
  }
  CUDA_OK(cudaFree(out));
}

TEST_F(OrderingCuda, EveryStreamOverloadReturnsWithoutWaitingForGatedWork) {
  const int type = makeType(Depth::F32, 1);
  GpuMat src(kH, kW, type, device_);
  src.setTo(Scalar(2));
  GpuMat dst(kH, kW, type, device_);
  GpuMatND nd({kH, kW}, type, device_);
  HostMat pinnedIn = HostMat::pinned({kH, kW}, type);
  HostMat pinnedOut = HostMat::pinned({kH, kW}, type);
  for (int i = 0; i < kN; ++i) pinnedIn.ptr<float>()[i] = static_cast<float>(i);
  auto xyz = DeviceArray<PointXYZ>::allocate(kH, kW, device_);
  PinnedFloats xyzOut(static_cast<std::size_t>(kN) * 3);
  ASSERT_NE(xyzOut.data, nullptr);
  Stream a = Stream::wrap(device_, CUDAStreamPtr{s1_});
  Gate gate;
  ASSERT_TRUE(gate.valid());
  gatedProduce<<<1, 256, 0, s1_>>>(gate.device(), static_cast<float*>(xyz.devicePointer()), kN * 3, spin_, 0.0f);
  CUDA_OK(cudaGetLastError());

  const auto started = std::chrono::steady_clock::now();
  nd.upload(pinnedIn, a);
  GpuMatND ndClone = nd.clone(a);
  ndClone.download(pinnedOut, a);
  src.copyTo(dst, a);
  dst.setTo(Scalar(4), a);
  GpuMat converted;
  dst.convertTo(converted, makeType(Depth::F64, 1), 0.5, 0.0, a);
  GpuMat srcClone = src.clone(a);
  auto xyzw = convert<PointXYZW>(xyz, a);
  xyz.copyToHost(reinterpret_cast<PointXYZ*>(xyzOut.data), static_cast<std::size_t>(kN) * sizeof(PointXYZ), a);
  const auto elapsed = std::chrono::steady_clock::now() - started;
  EXPECT_FALSE(a.queryIfComplete()) << "the stream completed while its first kernel was still gated";
  EXPECT_TRUE(gate.open()) << "a stream overload blocked the host on the gated kernel";
  EXPECT_LT(elapsed, std::chrono::seconds(10));
  a.waitForCompletion();
  EXPECT_TRUE(a.queryIfComplete());
  EXPECT_EQ(std::vector<float>(pinnedOut.ptr<float>(), pinnedOut.ptr<float>() + kN),
            std::vector<float>(pinnedIn.ptr<float>(), pinnedIn.ptr<float>() + kN));
  HostMat convertedHost;
  converted.download(convertedHost);
  EXPECT_EQ(std::vector<double>(convertedHost.ptr<double>(), convertedHost.ptr<double>() + kN),
            std::vector<double>(kN, 2.0));
  std::vector<float> expectXyz(static_cast<std::size_t>(kN) * 3);
  for (int i = 0; i < kN * 3; ++i) expectXyz[static_cast<std::size_t>(i)] = 0.5f * static_cast<float>(i);
  EXPECT_EQ(xyzOut.values(), expectXyz);
  EXPECT_EQ(xyzw.toHost()[1].x, expectXyz[3]);
  EXPECT_EQ(xyzw.toHost()[1].w, 1.0f);
  (void)srcClone;
}

TEST_F(OrderingCuda, ACountReadWaitsOnlyForTheWorkThatWroteIt) {
  Stream a = Stream::wrap(device_, CUDAStreamPtr{s1_});
  Stream b = Stream::wrap(device_, CUDAStreamPtr{s2_});
  std::vector<PointXYZ> points(static_cast<std::size_t>(kN));
  for (int i = 0; i < kN; ++i)
    points[static_cast<std::size_t>(i)] =
        i % 3 == 0 ? PointXYZ{NAN, NAN, NAN} : PointXYZ{static_cast<float>(i), 1.0f, 500.0f};
  const PointCloud cloud(DeviceArray<PointXYZ>::fromHost(points.data(), kH, kW, device_));
  // A cloud made on stream a, whose count stays on the device. Its allocations come
  // first: an allocation made after the release below could reuse the released memory,
  // and the pool would then order stream a after stream b (a dependency of CUDA's pool,
  // not of the library's reads).
  const UnorganizedPointCloud valid = cloud.toUnorganizedPointCloud(a);
  a.waitForCompletion();
  Gate gate;
  ASSERT_TRUE(gate.valid());
  {
    auto busy = DeviceArray<PointXYZ>::allocate(kH, kW, device_);
    gatedProduce<<<1, 256, 0, s2_>>>(gate.device(), static_cast<float*>(busy.devicePointer()), kN * 3, spin_, 0.0f);
    CUDA_OK(cudaGetLastError());
    (void)convert<PointXYZW>(busy, b);  // the library's use of `busy` on b, behind the gate
  }  // both released here, once b gets past the gate

  // The count is read without waiting for b (the releases wait on a stream of their own).
  EXPECT_FALSE(valid.isSizeKnown());
  EXPECT_EQ(valid.size(), static_cast<std::size_t>(kN - (kN + 2) / 3));
  EXPECT_EQ(valid.storedXYZ().toHost()[1].x, 2.0f);  // a blocking read on the library's queue, too
  EXPECT_FALSE(b.queryIfComplete()) << "stream b finished while gated";
  EXPECT_TRUE(gate.open()) << "reading the count waited for the gated stream";
  b.waitForCompletion();
}

/// The special stream handles: nullptr (legacy default stream) and cudaStreamPerThread.
class OrderingCudaSpecialStreams : public OrderingCuda, public testing::WithParamInterface<std::uintptr_t> {};

TEST_P(OrderingCudaSpecialStreams, WrappedSpecialStreamHandsOverToALibraryStream) {
  cudaStream_t special = reinterpret_cast<cudaStream_t>(GetParam());
  auto a = DeviceArray<PointZ>::allocate(kH, kW, device_);
  CUDA_OK(cudaMemset(a.devicePointer(), 0, kN * sizeof(float)));
  CUDA_OK(cudaDeviceSynchronize());
  HostMat host = HostMat::pinned({kH, kW}, makeType(Depth::F32, 1));
  Stream own(device_);
  Stream user = Stream::wrap(device_, CUDAStreamPtr{special});
  EXPECT_EQ(user.handle().stream, static_cast<void*>(special));
  Gate gate;
  ASSERT_TRUE(gate.valid());
  gatedProduce<<<1, 256, 0, special>>>(gate.device(), static_cast<float*>(a.devicePointer()), kN, spin_, 9.0f);
  CUDA_OK(cudaGetLastError());
  GpuMatND copy = a.toGpuMatND().clone(user);  // hand-over on the special stream
  copy.download(host, own);                    // consumer on the library's own stream
  settle();
  EXPECT_FALSE(user.queryIfComplete());
  EXPECT_FALSE(own.queryIfComplete()) << "the library stream did not wait for the special stream";
  EXPECT_TRUE(gate.open()) << "a library call blocked the host on the gated special stream";
  own.waitForCompletion();
  EXPECT_EQ(std::vector<float>(host.ptr<float>(), host.ptr<float>() + kN), pattern(9.0f));
  user.waitForCompletion();
  EXPECT_TRUE(user.queryIfComplete());
}

INSTANTIATE_TEST_SUITE_P(Handles, OrderingCudaSpecialStreams,
                         testing::Values(std::uintptr_t{0}, reinterpret_cast<std::uintptr_t>(cudaStreamPerThread)),
                         [](const testing::TestParamInfo<std::uintptr_t>& info) {
                           return info.param == 0 ? std::string("LegacyDefault") : std::string("PerThread");
                         });

}  // namespace
