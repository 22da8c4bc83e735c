// Stream ordering (docs/stream-queue-context.md) on every backend, and with user OpenCL kernels on
// user queues of a shared context.
//
// The OpenCL tests gate a user producer kernel on a user event the host completes
// only after every library call under test has returned: a call that waited on the
// host for the gated work would never return (a watchdog then opens the gate and the
// test fails instead of hanging), and a consumer queue that is already complete while
// the producer is gated proves a missing device-side wait. After the gate opens, the
// producer still spins a while, so an unordered consumer would also read stale data.
// The CUDA counterparts (gated kernels need nvcc) are in ordering_cuda_test.cu.
#if defined(DEVICEARRAY_HAS_OPENCL)
#include <CL/cl.h>

#include "opencl_gate.hpp"
#endif

#include <chrono>
#include <cstring>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "devicearray/devicearray.hpp"
#include "ordering_support.hpp"
#include "test_support.hpp"

namespace {

using namespace devicearray;
using datest::ordering::kH;
using datest::ordering::kN;
using datest::ordering::kW;
using datest::ordering::pattern;
#if defined(DEVICEARRAY_HAS_OPENCL)
/// LCG steps per work item after the gate opens: tens of milliseconds on PoCL.
constexpr int kSpin = 4000;

const char* const kUserProgram = R"CLC(
// Busy work whose result is always 0 but that the compiler cannot remove.
float spin(uint seed, int steps) {
  uint x = seed + 1u;
  float acc = 0.0f;
  for (int k = 0; k < steps; ++k) { x = x * 1664525u + 1013904223u; acc += (float)(x >> 31); }
  return acc < 0.0f ? 1.0f : 0.0f;
}
__kernel void gated_produce(__global float* out, ulong offsetBytes, int n, int steps, float base) {
  int i = get_global_id(0);
  if (i >= n) return;
  __global float* dst = (__global float*)((__global char*)out + offsetBytes);
  dst[i] = base + 0.5f * (float)i + spin((uint)i, steps);
}
__kernel void gated_copy(__global const float* in, ulong inOffsetBytes, __global float* out, int n, int steps) {
  int i = get_global_id(0);
  if (i >= n) return;
  __global const float* src = (__global const float*)((__global const char*)in + inOffsetBytes);
  out[i] = src[i] + spin((uint)i, steps);
}
)CLC";

/// Lets an unordered consumer (if the library forgot a wait) run to completion.
void settle(cl_command_queue q) {
  clFlush(q);
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
}

using datest::ordering::Gate;

/// A context the test creates on the device, three queues (the library's, a producer
/// and a consumer) and the user program; the library adopts it with fromOpenCL.
/// One per device for the whole run (the library and PoCL compile per context).
struct SharedContext {
  cl_context context = nullptr;
  cl_device_id device = nullptr;
  cl_command_queue library = nullptr;
  cl_command_queue producer = nullptr;
  cl_command_queue consumer = nullptr;
  cl_program program = nullptr;
  ComputeDevice adopted;
  std::string error;
};

cl_program buildUserProgram(cl_context context, cl_device_id device, std::string& error) {
  cl_int err = CL_SUCCESS;
  const char* src = kUserProgram;
  cl_program program = clCreateProgramWithSource(context, 1, &src, nullptr, &err);
  if (err != CL_SUCCESS) {
    error = "clCreateProgramWithSource failed: " + std::to_string(err);
    return nullptr;
  }
  if (clBuildProgram(program, 1, &device, "", nullptr, nullptr) != CL_SUCCESS) {
    std::size_t size = 0;
    clGetProgramBuildInfo(program, device, CL_PROGRAM_BUILD_LOG, 0, nullptr, &size);
    std::string log(size, '\0');
    clGetProgramBuildInfo(program, device, CL_PROGRAM_BUILD_LOG, size, log.data(), nullptr);
    error = "user program build failed: " + log;
    clReleaseProgram(program);
    return nullptr;
  }
  return program;
}

SharedContext& sharedContextFor(const ComputeDevice& device) {
  // Kept for the process lifetime: the adopted device and arrays of earlier tests may
  // still reference these objects when static destructors run.
  static auto* contexts = new std::map<void*, SharedContext>();
  auto it = contexts->find(device.nativeDevice());
  if (it != contexts->end()) return it->second;
  SharedContext& s = (*contexts)[device.nativeDevice()];
  s.device = static_cast<cl_device_id>(device.nativeDevice());
  cl_platform_id platform = nullptr;
  clGetDeviceInfo(s.device, CL_DEVICE_PLATFORM, sizeof platform, &platform, nullptr);
  const cl_context_properties props[] = {CL_CONTEXT_PLATFORM, reinterpret_cast<cl_context_properties>(platform), 0};
  cl_int err = CL_SUCCESS;
  s.context = clCreateContext(props, 1, &s.device, nullptr, nullptr, &err);
  if (err != CL_SUCCESS) {
    s.error = "clCreateContext failed: " + std::to_string(err);
    return s;
  }
  for (cl_command_queue* q : {&s.library, &s.producer, &s.consumer}) {
    *q = clCreateCommandQueue(s.context, s.device, 0, &err);
    if (err != CL_SUCCESS) {
      s.error = "clCreateCommandQueue failed: " + std::to_string(err);
      return s;
    }
  }
  s.program = buildUserProgram(s.context, s.device, s.error);
  if (s.program == nullptr) return s;
  s.adopted = ComputeDevice::fromOpenCL(s.context, s.device, s.library);
  return s;
}

/// Enqueues `name` over n work items on `q`, waiting for `gate`. Returns the error.
cl_int enqueueGated(cl_program program, const char* name, cl_command_queue q, cl_event gate, int n,
                    const std::vector<std::pair<std::size_t, const void*>>& args, cl_event* done = nullptr) {
  cl_int err = CL_SUCCESS;
  cl_kernel kernel = clCreateKernel(program, name, &err);
  if (err != CL_SUCCESS) return err;
  for (cl_uint i = 0; i < args.size(); ++i) {
    err = clSetKernelArg(kernel, i, args[i].first, args[i].second);
    if (err != CL_SUCCESS) break;
  }
  const std::size_t global = static_cast<std::size_t>(n);
  if (err == CL_SUCCESS) err = clEnqueueNDRangeKernel(q, kernel, 1, nullptr, &global, nullptr, 1, &gate, done);
  clReleaseKernel(kernel);  // the enqueued command keeps what it needs
  return err;
}

cl_int enqueueProduce(const SharedContext& s, cl_command_queue q, cl_event gate, void* mem, std::size_t offset,
                      int n, float base, cl_event* done = nullptr) {
  cl_mem m = static_cast<cl_mem>(mem);
  const cl_ulong off = offset;
  const cl_int count = n;
  const cl_int steps = kSpin;
  return enqueueGated(s.program, "gated_produce", q, gate, n,
                      {{sizeof m, &m}, {sizeof off, &off}, {sizeof count, &count}, {sizeof steps, &steps},
                       {sizeof base, &base}},
                      done);
}

#endif  // DEVICEARRAY_HAS_OPENCL

std::vector<float> asFloats(const HostMat& h) {
  return std::vector<float>(h.ptr<float>(), h.ptr<float>() + h.total() * static_cast<std::size_t>(h.channels()));
}

// ------------------------------------------------------------ every backend --

class OrderingAllDevices : public testing::TestWithParam<ComputeDevice> {};

TEST_P(OrderingAllDevices, ChainOfStreamOverloadsOverFourStreamsNeedsOnlyTheLastSync) {
  const ComputeDevice device = GetParam();
  const int rows = 512;
  const int cols = 768;
  const int type = makeType(Depth::F32, 1);
  HostMat in = HostMat::pinned({rows, cols}, type);
  for (int i = 0; i < rows * cols; ++i) in.ptr<float>()[i] = static_cast<float>(i % 1000) - 250.0f;
  HostMat out = HostMat::pinned({rows, cols}, type);
  Stream s1(device), s2(device), s3(device), s4(device);

  GpuMat a(rows, cols, type, device);
  GpuMat b(rows, cols, type, device);
  GpuMat c(rows, cols, type, device);
  a.upload(in, s1);
  a.convertTo(b, type, 2.0, 1.0, s2);  // must see the upload on s1
  b.copyTo(c, s3);                     // must see the conversion on s2
  c.download(out, s4);                 // must see the copy on s3
  s4.waitForCompletion();              // the only synchronization

  std::vector<float> expect(static_cast<std::size_t>(rows) * cols);
  for (std::size_t i = 0; i < expect.size(); ++i) expect[i] = 2.0f * in.ptr<float>()[i] + 1.0f;
  EXPECT_EQ(asFloats(out), expect);
}

TEST_P(OrderingAllDevices, DroppingHandlesWithWorkStillEnqueuedKeepsResultsIntact) {
  const ComputeDevice device = GetParam();
  const int type = makeType(Depth::F32, 1);
  Stream s1(device), s2(device);
  std::vector<HostMat> results;
  // Host sources of enqueued uploads must outlive them (as with any asynchronous
  // copy); only the device handles are dropped early here.
  std::vector<HostMat> sources;
  for (int round = 0; round < 6; ++round) {
    HostMat in = HostMat::pinned({kH, kW}, type);
    sources.push_back(in);
    for (int i = 0; i < kN; ++i) in.ptr<float>()[i] = static_cast<float>(round * 100000 + i);
    HostMat out = HostMat::pinned({kH, kW}, type);
    {
      GpuMatND source({kH, kW}, type, device);
      source.upload(in, s1);
      GpuMatND copy = source.clone(s2);
      copy.download(out, s1);
      // source and copy go out of scope here with their work still enqueued.
    }
    results.push_back(out);
  }
  s1.waitForCompletion();
  for (int round = 0; round < 6; ++round) {
    std::vector<float> expect(kN);
    for (int i = 0; i < kN; ++i) expect[static_cast<std::size_t>(i)] = static_cast<float>(round * 100000 + i);
    EXPECT_EQ(asFloats(results[static_cast<std::size_t>(round)]), expect) << "round " << round;
  }
}

TEST_P(OrderingAllDevices, StreamIsCompleteAfterWaitingAndWrappedSdkQueueIsTheDevicesOwn) {
  const ComputeDevice device = GetParam();
  Stream s(device);
  GpuMat m(kH, kW, makeType(Depth::U8, 4), device);
  m.setTo(Scalar(1, 2, 3, 4), s);
  s.waitForCompletion();
  EXPECT_TRUE(s.queryIfComplete());
  Stream sdk = Stream::wrap(device, device.sdkStreamOrQueue());
  EXPECT_EQ(sdk.handle().native(), device.nativeStreamHandle());
  synchronizeStream(sdk);
  EXPECT_TRUE(sdk.queryIfComplete());
}

DATEST_INSTANTIATE_OVER_DEVICES(OrderingAllDevices);

// ------------------------------------------- OpenCL: user queues and kernels --
#if defined(DEVICEARRAY_HAS_OPENCL)

class OrderingOpenCL : public testing::TestWithParam<ComputeDevice> {
 protected:
  void SetUp() override {
    if (GetParam().backend() != ComputeBackend::opencl)
      GTEST_SKIP() << "gated user-kernel tests for CUDA are in ordering_cuda_test (they need nvcc)";
    s_ = &sharedContextFor(GetParam());
    ASSERT_TRUE(s_->error.empty()) << s_->error;
    dev_ = s_->adopted;
  }
  SharedContext* s_ = nullptr;
  ComputeDevice dev_;
};

TEST_P(OrderingOpenCL, ConsumerQueueSeesProducerKernelHandedOverThroughLibraryCall) {
  const std::vector<float> zeros(kN, 0.0f);
  auto a = DeviceArray<PointZ>::fromHost(reinterpret_cast<const PointZ*>(zeros.data()), kH, kW, dev_);
  std::vector<float> viaA(kN, -1.0f), viaB(kN, -1.0f);
  Gate gate(s_->context);
  ASSERT_NE(gate.event(), nullptr);

  ASSERT_EQ(enqueueProduce(*s_, s_->producer, gate.event(), a.devicePointer(), a.byteOffset(), kN, 1.0f), CL_SUCCESS);
  // Hand-over: a library call on the producer's queue; its result is ready there.
  DeviceArray<PointZ> b = convert<PointZ>(a, OpenCLCommandQueuePtr{s_->producer});
  // Consumers on the other queue, through library calls taking it.
  a.copyToHost(reinterpret_cast<PointZ*>(viaA.data()), kN * sizeof(float), OpenCLCommandQueuePtr{s_->consumer});
  b.copyToHost(reinterpret_cast<PointZ*>(viaB.data()), kN * sizeof(float), OpenCLCommandQueuePtr{s_->consumer});
  settle(s_->consumer);
  EXPECT_FALSE(Stream::wrap(dev_, OpenCLCommandQueuePtr{s_->consumer}).queryIfComplete())
      << "the consumer queue finished while the producer was gated";
  EXPECT_TRUE(gate.open()) << "a library call blocked the host on the gated producer";
  ASSERT_EQ(clFinish(s_->consumer), CL_SUCCESS);  // only the consumer's queue
  EXPECT_EQ(viaA, pattern(1.0f));
  EXPECT_EQ(viaB, pattern(1.0f));
}

TEST_P(OrderingOpenCL, UserKernelOnConsumerQueueReadsALibraryResultMadeOnThatQueue) {
  const std::vector<float> values = pattern(2.0f);
  auto a = DeviceArray<PointZ>::fromHost(reinterpret_cast<const PointZ*>(values.data()), kH, kW, dev_);
  GpuMatND out({kN}, makeType(Depth::F32, 1), dev_);
  Gate gate(s_->context);
  // The library's result is ready on the consumer queue when convert returns, so the
  // user's kernel enqueued there after it reads complete data.
  DeviceArray<PointZ> b = convert<PointZ>(a, OpenCLCommandQueuePtr{s_->consumer});
  cl_mem in = static_cast<cl_mem>(b.devicePointer());
  const cl_ulong inOff = b.byteOffset();
  const OpenCLBufferPtr dst = out.getOpenCLBuffer();
  ASSERT_EQ(dst.offset, 0u);
  cl_mem outMem = static_cast<cl_mem>(dst.buffer);
  const cl_int n = kN, steps = 10;
  ASSERT_EQ(enqueueGated(s_->program, "gated_copy", s_->consumer, gate.event(), kN,
                         {{sizeof in, &in}, {sizeof inOff, &inOff}, {sizeof outMem, &outMem}, {sizeof n, &n},
                          {sizeof steps, &steps}}),
            CL_SUCCESS);
  EXPECT_TRUE(gate.open());
  // The user's write on the consumer queue is made known by passing that queue on.
  HostMat host = HostMat::pinned({kN}, makeType(Depth::F32, 1));
  Stream consumer = Stream::wrap(dev_, OpenCLCommandQueuePtr{s_->consumer});
  out.download(host, consumer);
  consumer.waitForCompletion();
  EXPECT_EQ(asFloats(host), values);
}

TEST_P(OrderingOpenCL, LibraryCallOnQueueAThenOnQueueBAreOrderedByTheAllocation) {
  const int type = makeType(Depth::F32, 1);
  GpuMat m(kH, kW, type, dev_);
  GpuMat doubled(kH, kW, type, dev_);
  m.setTo(Scalar(0));
  GpuMatND scratch({kN}, type, dev_);
  HostMat host = HostMat::pinned({kH, kW}, type);
  Stream a = Stream::wrap(dev_, OpenCLCommandQueuePtr{s_->producer});
  Stream b = Stream::wrap(dev_, OpenCLCommandQueuePtr{s_->consumer});
  Gate gate(s_->context);
  // Queue A is held up by unrelated user work, so the library's setTo on A runs late.
  ASSERT_EQ(enqueueProduce(*s_, s_->producer, gate.event(), scratch.getOpenCLBuffer().buffer, 0, kN, 0.0f),
            CL_SUCCESS);
  m.setTo(Scalar(7), a);
  m.convertTo(doubled, type, 2.0, 1.0, b);  // must see the 7s
  doubled.download(host, b);
  settle(s_->consumer);
  EXPECT_FALSE(b.queryIfComplete()) << "queue B did not wait for the setTo on queue A";
  EXPECT_TRUE(gate.open()) << "a library call blocked the host on the gated queue";
  b.waitForCompletion();
  EXPECT_EQ(asFloats(host), std::vector<float>(kN, 15.0f));
}

TEST_P(OrderingOpenCL, DroppingTheLastHandleWhileAUserKernelReadsItIsSafe) {
  const std::vector<float> values = pattern(11.0f);
  const std::vector<float> garbage(kN, -42.0f);
  auto source = DeviceArray<PointZ>::fromHost(reinterpret_cast<const PointZ*>(values.data()), kH, kW, dev_);
  const auto noise = DeviceArray<PointZ>::fromHost(reinterpret_cast<const PointZ*>(garbage.data()), kH, kW, dev_);
  GpuMatND out({kN}, makeType(Depth::F32, 1), dev_);
  std::vector<GpuMatND> fillers;
  {
    Stream sdk = Stream::wrap(dev_, dev_.sdkStreamOrQueue());
    Gate gate(s_->context);
    cl_mem in = static_cast<cl_mem>(source.devicePointer());
    const cl_ulong inOff = source.byteOffset();
    cl_mem outMem = static_cast<cl_mem>(out.getOpenCLBuffer().buffer);
    const cl_int n = kN, steps = kSpin;
    ASSERT_EQ(enqueueGated(s_->program, "gated_copy", s_->producer, gate.event(), kN,
                           {{sizeof in, &in}, {sizeof inOff, &inOff}, {sizeof outMem, &outMem}, {sizeof n, &n},
                            {sizeof steps, &steps}}),
              CL_SUCCESS);
    // Made known to the library by a call on the producer's queue; that
    // call's own result is dropped at once with its work still enqueued.
    { const auto discarded = convert<PointZ>(source, OpenCLCommandQueuePtr{s_->producer}); }
    source = DeviceArray<PointZ>();  // last handle gone while the user kernel still reads it
    // Same-size allocations would reuse the cached buffer at once if it had been
    // released without waiting for the producer queue.
    for (int i = 0; i < 4; ++i) fillers.push_back(noise.toGpuMatND().clone(sdk));
    settle(s_->library);
    EXPECT_TRUE(gate.open()) << "a library call blocked the host on the gated reader";
    ASSERT_EQ(clFinish(s_->producer), CL_SUCCESS);
    ASSERT_EQ(clFinish(s_->library), CL_SUCCESS);
  }
  // The user kernel wrote `out` on the producer queue: read it in that queue's order.
  HostMat host;
  Stream producer = Stream::wrap(dev_, OpenCLCommandQueuePtr{s_->producer});
  out.download(host, producer);
  producer.waitForCompletion();
  EXPECT_EQ(asFloats(host), values) << "the user kernel read memory the library had already reused";
  for (const auto& f : fillers) {
    HostMat h;
    f.download(h);
    EXPECT_EQ(asFloats(h), garbage);
  }
}

TEST_P(OrderingOpenCL, EveryQueueOverloadReturnsWithoutWaitingForGatedWork) {
  const int type = makeType(Depth::F32, 1);
  GpuMat src(kH, kW, type, dev_);
  src.setTo(Scalar(2));
  GpuMat dst(kH, kW, type, dev_);
  GpuMatND nd({kH, kW}, type, dev_);
  HostMat pinnedIn = HostMat::pinned({kH, kW}, type);
  HostMat pinnedOut = HostMat::pinned({kH, kW}, type);
  for (int i = 0; i < kN; ++i) pinnedIn.ptr<float>()[i] = static_cast<float>(i);
  auto xyz = DeviceArray<PointXYZ>::allocate(kH, kW, dev_);
  std::vector<float> xyzOut(static_cast<std::size_t>(kN) * 3, -1.0f);
  Stream a = Stream::wrap(dev_, OpenCLCommandQueuePtr{s_->producer});
  Gate gate(s_->context);
  ASSERT_EQ(enqueueProduce(*s_, s_->producer, gate.event(), xyz.devicePointer(), xyz.byteOffset(), kN * 3, 0.0f),
            CL_SUCCESS);

  // clone(stream) behind the gated kernel returns at once, and the queue is busy.
  GpuMatND ndClone = xyz.toGpuMatND().clone(a);
  EXPECT_FALSE(a.queryIfComplete()) << "queryIfComplete() right after clone(stream) behind a gated kernel";
  nd.upload(pinnedIn, a);
  GpuMatND ndCopy = nd.clone(a);
  ndCopy.download(pinnedOut, a);
  src.copyTo(dst, a);
  dst.setTo(Scalar(4), a);
  GpuMat converted;
  dst.convertTo(converted, makeType(Depth::S32, 1), 0.5, 0.0, a);
  GpuMat srcClone = src.clone(a);
  auto xyzw = convert<PointXYZW>(xyz, a);
  xyz.copyToHost(reinterpret_cast<PointXYZ*>(xyzOut.data()), xyzOut.size() * sizeof(float), a);
  const auto view = dev_.createDeviceArrayView<PointZ>(OpenCLBufferPtr{nd.getOpenCLBuffer().buffer, 0}, kW, kH, a);
  EXPECT_FALSE(a.queryIfComplete());
  EXPECT_TRUE(gate.open()) << "a queue overload blocked the host on the gated kernel";
  a.waitForCompletion();
  EXPECT_TRUE(a.queryIfComplete());

  EXPECT_EQ(asFloats(pinnedOut), asFloats(pinnedIn));
  HostMat convertedHost;
  converted.download(convertedHost);
  EXPECT_EQ(std::vector<int>(convertedHost.ptr<int>(), convertedHost.ptr<int>() + kN), std::vector<int>(kN, 2));
  const std::vector<float> expectXyz = pattern(0.0f, kN * 3);
  EXPECT_EQ(xyzOut, expectXyz);
  HostMat cloneHost;
  ndClone.download(cloneHost);
  EXPECT_EQ(asFloats(cloneHost), expectXyz);
  const auto xyzwHost = xyzw.toHost();
  EXPECT_EQ(xyzwHost[1].x, expectXyz[3]);
  EXPECT_EQ(xyzwHost[1].w, 1.0f);
  const auto viewHost = view.toHost();
  EXPECT_EQ(viewHost[5].z, 5.0f);
  HostMat srcCloneHost;
  srcClone.download(srcCloneHost);
  EXPECT_EQ(asFloats(srcCloneHost), std::vector<float>(kN, 2.0f));
}

TEST_P(OrderingOpenCL, QueueCreatedInTheLibrarysOwnContextHandsOverToTheSdkQueue) {
  // Not the adopted device: a second queue in the library's own context of the device.
  const ComputeDevice device = GetParam();
  auto context = static_cast<cl_context>(device.nativeContext());
  auto clDevice = static_cast<cl_device_id>(device.nativeDevice());
  cl_int err = CL_SUCCESS;
  cl_command_queue mine = clCreateCommandQueue(context, clDevice, 0, &err);
  ASSERT_EQ(err, CL_SUCCESS);
  std::string error;
  cl_program program = buildUserProgram(context, clDevice, error);
  ASSERT_NE(program, nullptr) << error;
  {
    const std::vector<float> zeros(kN, 0.0f);
    auto a = DeviceArray<PointZ>::fromHost(reinterpret_cast<const PointZ*>(zeros.data()), kH, kW, device);
    HostMat host = HostMat::pinned({kH, kW}, makeType(Depth::F32, 1));
    Stream user = Stream::wrap(device, OpenCLCommandQueuePtr{mine});
    Stream sdk = Stream::wrap(device, device.sdkStreamOrQueue());
    Gate gate(context);
    SharedContext local;
    local.program = program;
    ASSERT_EQ(enqueueProduce(local, mine, gate.event(), a.devicePointer(), a.byteOffset(), kN, 4.0f), CL_SUCCESS);
    GpuMatND copy = a.toGpuMatND().clone(user);
    copy.download(host, sdk);
    settle(static_cast<cl_command_queue>(device.nativeStreamHandle()));
    EXPECT_FALSE(sdk.queryIfComplete()) << "the library's queue did not wait for the user's queue";
    EXPECT_TRUE(gate.open()) << "a library call blocked the host on the gated user queue";
    sdk.waitForCompletion();
    EXPECT_EQ(asFloats(host), pattern(4.0f));
    clFinish(mine);
  }
  clReleaseProgram(program);
  clReleaseCommandQueue(mine);
}

DATEST_INSTANTIATE_OVER_DEVICES(OrderingOpenCL);
#endif  // DEVICEARRAY_HAS_OPENCL

}  // namespace
