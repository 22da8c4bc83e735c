// OpenCL interop of the backend: adoption of a caller's context, device and queue
// (the OpenCL Backend's adoptNative), buffers shared both ways, reference counts, and refused handles.
#include <chrono>
#include <cstdint>
#include <cstring>
#include <memory>
#include <thread>

#include "backend_fixture.hpp"
#include "cl_api.hpp"

namespace backendtest {
namespace {

DevicePtr adoptOpenCL(void* context, void* device, void* queue) {
  return devicearray::detail::backendOf(ComputeBackend::opencl).adoptNative(context, device, queue);
}

/// A context + queue the test owns, on the device of `dev`.
struct UserContext {
  const ClApi* cl;
  cl_context context = nullptr;
  cl_command_queue queue = nullptr;
  cl_device_id device = nullptr;
  UserContext(const ClApi* api, cl_device_id d) : cl(api), device(d) {
    cl_platform_id platform = nullptr;
    cl->getDeviceInfo(d, CL_DEVICE_PLATFORM, sizeof platform, &platform, nullptr);
    const cl_context_properties props[] = {CL_CONTEXT_PLATFORM, reinterpret_cast<cl_context_properties>(platform), 0};
    cl_int err = CL_SUCCESS;
    context = cl->createContext(props, 1, &d, nullptr, nullptr, &err);
    if (err == CL_SUCCESS) queue = cl->createCommandQueue(context, d, 0, &err);  // no profiling, on purpose
  }
  ~UserContext() {
    if (queue) cl->releaseCommandQueue(queue);
    if (context) cl->releaseContext(context);
  }
  cl_uint contextRefs() const {
    cl_uint n = 0;
    cl->getContextInfo(context, CL_CONTEXT_REFERENCE_COUNT, sizeof n, &n, nullptr);
    return n;
  }
  cl_uint queueRefs() const {
    cl_uint n = 0;
    cl->getCommandQueueInfo(queue, CL_QUEUE_REFERENCE_COUNT, sizeof n, &n, nullptr);
    return n;
  }
};

#define REQUIRE_OPENCL_API(api)                                                                 \
  if (!isOpenCL()) GTEST_SKIP() << "OpenCL interop: this parameter is a CUDA device";          \
  const ClApi* api = ClApi::get();                                                              \
  if (api == nullptr) GTEST_SKIP() << "libOpenCL.so.1 could not be loaded by the test"

TEST_P(Backend, WrapQueueRefusesAQueueOfAnotherContext) {
  REQUIRE_OPENCL_API(cl);
  UserContext user(cl, static_cast<cl_device_id>(dev().nativeDevice()));
  ASSERT_NE(user.queue, nullptr);
  expectErrorCode(ErrorCode::InvalidArgument, [&] { dev().wrapQueue(user.queue); }, "queue of another context");
}

TEST_P(Backend, AdoptedContextSharesBuffersWithTheCaller) {
  REQUIRE_OPENCL_API(cl);
  UserContext user(cl, static_cast<cl_device_id>(dev().nativeDevice()));
  ASSERT_NE(user.queue, nullptr);
  const Bytes data = randomBytes(256, 9);
  cl_int err = CL_SUCCESS;
  cl_mem userBuffer = cl->createBuffer(user.context, CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR, data.size(),
                                       const_cast<std::uint8_t*>(data.data()), &err);
  ASSERT_EQ(err, CL_SUCCESS);
  // Reference counts are compared in the same state: right after a blocking
  // command of the caller (drivers may hold the queue's last command).
  std::uint8_t probe = 0;
  auto touch = [&] {
    return cl->enqueueReadBuffer(user.queue, userBuffer, CL_TRUE, 0, 1, &probe, 0, nullptr, nullptr);
  };
  ASSERT_EQ(touch(), CL_SUCCESS);
  const cl_uint contextRefs = user.contextRefs(), queueRefs = user.queueRefs();
  std::weak_ptr<DeviceImpl> weak;
  {
    auto adopted = adoptOpenCL(user.context, user.device, user.queue);
    ASSERT_TRUE(adopted);
    weak = adopted;
    EXPECT_EQ(adopted->ordinal(), -1);
    EXPECT_EQ(adopted->nativeContext(), user.context);
    EXPECT_EQ(adopted->nativeDevice(), user.device);
    EXPECT_EQ(adopted->libraryQueue()->native(), user.queue);
    EXPECT_EQ(adoptOpenCL(user.context, user.device, user.queue), adopted)
        << "the same handles give the same device";

    // Library allocations live in the caller's context.
    QueueImpl& aq = *adopted->libraryQueue();
    auto mine = adopted->allocate(100, aq);
    cl_context owner = nullptr;
    cl->getMemObjectInfo(static_cast<cl_mem>(mine->handle()), CL_MEM_CONTEXT, sizeof owner, &owner, nullptr);
    EXPECT_EQ(owner, user.context);

    // The caller's buffer is usable by the library, and the library's writes are
    // visible to the caller on the caller's own queue.
    auto theirs = adopted->adopt(userBuffer, 0);
    EXPECT_EQ(theirs->bytes(), data.size());
    EXPECT_TRUE(theirs->external());
    Bytes got(data.size());
    CopyDesc c;
    c.elemSize = data.size();
    c.dst = MemRef::hostPtr(got.data());
    c.src = MemRef::dev(theirs.get(), 0);
    adopted->copy(c, aq);
    aq.synchronize();
    EXPECT_TRUE(sameBytes(data, got));
    const Bytes patch = randomBytes(40, 10);
    c.elemSize = patch.size();
    c.dst = MemRef::dev(theirs.get(), 10);
    c.src = MemRef::hostPtr(const_cast<std::uint8_t*>(patch.data()));
    adopted->copy(c, aq);
    Bytes seen(data.size());
    ASSERT_EQ(cl->enqueueReadBuffer(user.queue, userBuffer, CL_TRUE, 0, seen.size(), seen.data(), 0, nullptr, nullptr),
              CL_SUCCESS);
    Bytes expected = data;
    std::memcpy(expected.data() + 10, patch.data(), patch.size());
    EXPECT_TRUE(sameBytes(expected, seen));

    // The caller's queue has no profiling: events order work but carry no time.
    auto e1 = adopted->recordTimingEvent(aq);
    auto e2 = adopted->recordTimingEvent(aq);
    e2->synchronize();
    expectErrorCode(ErrorCode::Unsupported, [&] { e1->elapsedMs(*e2); }, "timing on a queue without profiling");

    // Memory of the enumerated device's context is not usable here, and back.
    auto foreign = dev().allocate(16, q());
    expectErrorCode(ErrorCode::InvalidArgument, [&] { adopted->adopt(foreign->handle(), 0); }, "cl_mem of another context");
    expectErrorCode(ErrorCode::InvalidArgument, [&] { dev().adopt(userBuffer, 0); }, "cl_mem of another context");
    expectErrorCode(ErrorCode::InvalidArgument, [&] { adopted->adopt(userBuffer, 257); }, "more bytes than the cl_mem");
    cl->finish(user.queue);
  }
  // Everything the library retained is released with the last handle.
  EXPECT_TRUE(weak.expired()) << "the adopted device outlived its last handle";
  ASSERT_EQ(touch(), CL_SUCCESS);
  // Event callbacks may still be running when clFinish returns (the OpenCL spec
  // does not order them with it); the events they release hold a queue reference
  // until then. Wait for them, boundedly, before comparing.
  for (int i = 0; i < 200 && (user.queueRefs() != queueRefs || user.contextRefs() != contextRefs); ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  EXPECT_EQ(user.queueRefs(), queueRefs);
  EXPECT_EQ(user.contextRefs(), contextRefs);
  cl->releaseMemObject(userBuffer);
}

TEST_P(Backend, AdoptRefusesMismatchedHandles) {
  REQUIRE_OPENCL_API(cl);
  UserContext a(cl, static_cast<cl_device_id>(dev().nativeDevice()));
  UserContext b(cl, static_cast<cl_device_id>(dev().nativeDevice()));
  ASSERT_NE(a.queue, nullptr);
  ASSERT_NE(b.queue, nullptr);
  expectErrorCode(ErrorCode::InvalidArgument, [&] { adoptOpenCL(nullptr, a.device, a.queue); }, "null context");
  expectErrorCode(ErrorCode::InvalidArgument, [&] { adoptOpenCL(a.context, nullptr, a.queue); }, "null device");
  expectErrorCode(ErrorCode::InvalidArgument, [&] { adoptOpenCL(a.context, a.device, nullptr); }, "null queue");
  expectErrorCode(ErrorCode::InvalidArgument, [&] { adoptOpenCL(a.context, a.device, b.queue); },
                  "queue of another context");
  expectErrorCode(ErrorCode::InvalidArgument, [&] { adoptOpenCL(dev().nativeContext(), a.device, a.queue); },
                  "queue not of the given context");
}

GTEST_ALLOW_UNINSTANTIATED_PARAMETERIZED_TEST(Backend);
INSTANTIATE_TEST_SUITE_P(AllDevices, Backend, testing::ValuesIn(allDevices()), DeviceParamName());

}  // namespace
}  // namespace backendtest
