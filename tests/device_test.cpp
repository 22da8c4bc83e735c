// ComputeDevice, Stream, Event and synchronizeStream: enumeration, selection by
// environment, stream ownership and wrapping, events, and OpenCL adoption.
#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <optional>
#include <string>
#include <vector>

#include "backend/backend.hpp"
#include "backend/fault_injection.hpp"
#include "test_support.hpp"

namespace {

using devicearray::ComputeBackend;
using devicearray::ComputeDevice;
using devicearray::CUDAStreamPtr;
using devicearray::Depth;
using devicearray::ErrorCode;
using devicearray::Event;
using devicearray::GpuMatND;
using devicearray::HostMat;
using devicearray::makeType;
using devicearray::OpenCLCommandQueuePtr;
using devicearray::Stream;

std::vector<ComputeDevice> devicesOf(ComputeBackend backend) {
  std::vector<ComputeDevice> out;
  for (const auto& d : ComputeDevice::all())
    if (d.backend() == backend) out.push_back(d);
  return out;
}

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return s;
}

// Sets (or unsets, with nullopt) an environment variable for one scope and
// restores the previous value afterwards.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, std::optional<std::string> value) : name_(name) {
    if (const char* old = std::getenv(name)) old_ = old;
    if (value)
      ::setenv(name, value->c_str(), 1);
    else
      ::unsetenv(name);
  }
  ~ScopedEnv() {
    if (old_)
      ::setenv(name_, old_->c_str(), 1);
    else
      ::unsetenv(name_);
  }
  ScopedEnv(const ScopedEnv&) = delete;
  ScopedEnv& operator=(const ScopedEnv&) = delete;

 private:
  const char* name_;
  std::optional<std::string> old_;
};

// ========================================================= enumeration (host)

TEST(ComputeDeviceEnumeration, AllListsTheDevicesOfThisMachine) {
  // This machine has PoCL; the GPU machine has CUDA (and possibly OpenCL).
  const auto all = ComputeDevice::all();
  ASSERT_FALSE(all.empty()) << "expected at least one device (PoCL here, CUDA on the GPU machine)";
  for (const auto& d : all) EXPECT_TRUE(d.isValid());
}

TEST(ComputeDeviceEnumeration, CudaDevicesComeFirstThenOpenCL) {
  const auto all = ComputeDevice::all();
  bool seenOpenCL = false;
  for (const auto& d : all) {
    if (d.backend() == ComputeBackend::opencl) seenOpenCL = true;
    if (d.backend() == ComputeBackend::cuda) EXPECT_FALSE(seenOpenCL) << d.toString() << " listed after OpenCL";
  }
}

TEST(ComputeDeviceEnumeration, OpenCLIndexAndCudaOrdinalNameTheListedDevices) {
  const auto cl = devicesOf(ComputeBackend::opencl);
  for (std::size_t i = 0; i < cl.size(); ++i) {
    const ComputeDevice d = ComputeDevice::opencl(static_cast<int>(i));
    EXPECT_EQ(d, cl[i]);
    EXPECT_EQ(d.ordinal(), static_cast<int>(i));
    EXPECT_EQ(d.backend(), ComputeBackend::opencl);
  }
  const auto cu = devicesOf(ComputeBackend::cuda);
  for (std::size_t i = 0; i < cu.size(); ++i) {
    const ComputeDevice d = ComputeDevice::cuda(static_cast<int>(i));
    EXPECT_EQ(d, cu[i]);
    EXPECT_EQ(d.ordinal(), static_cast<int>(i));
  }
}

TEST(ComputeDeviceEnumeration, IndexOutsideTheBackendIsOutOfRange) {
  const int clCount = static_cast<int>(devicesOf(ComputeBackend::opencl).size());
  if (clCount > 0) {
    datest::expectError(ErrorCode::OutOfRange, [&] { (void)ComputeDevice::opencl(clCount); }, "opencl(count)");
    datest::expectError(ErrorCode::OutOfRange, [&] { (void)ComputeDevice::opencl(-1); }, "opencl(-1)");
  } else {
    datest::expectError(ErrorCode::BackendUnavailable, [&] { (void)ComputeDevice::opencl(0); });
  }
  const int cuCount = static_cast<int>(devicesOf(ComputeBackend::cuda).size());
  if (cuCount > 0) {
    datest::expectError(ErrorCode::OutOfRange, [&] { (void)ComputeDevice::cuda(cuCount); }, "cuda(count)");
    datest::expectError(ErrorCode::OutOfRange, [&] { (void)ComputeDevice::cuda(-1); }, "cuda(-1)");
  } else {
    datest::expectError(ErrorCode::BackendUnavailable, [&] { (void)ComputeDevice::cuda(0); }, "no CUDA here");
  }
}

TEST(ComputeDeviceEnumeration, DefaultConstructedHandleIsInvalid) {
  const ComputeDevice d;
  EXPECT_FALSE(d.isValid());
  datest::expectError(ErrorCode::InvalidState, [&] { (void)d.backend(); });
  EXPECT_FALSE(d.toString().empty());
}

// ================================================= defaultDevice() and the env

class DefaultDevice : public testing::Test {
 protected:
  // Every test starts from a clean environment and restores the caller's.
  ScopedEnv backend_{"DEVICEARRAY_BACKEND", std::nullopt};
  ScopedEnv device_{"DEVICEARRAY_DEVICE", std::nullopt};
};

TEST_F(DefaultDevice, WithoutOverridesIsFirstCudaElseFirstOpenCLGpuElseOpenCLCpu) {
  const auto all = ComputeDevice::all();
  ASSERT_FALSE(all.empty());
  // all() lists CUDA devices, then OpenCL GPUs, then other OpenCL devices.
  EXPECT_EQ(ComputeDevice::defaultDevice(), all.front());
}

TEST_F(DefaultDevice, BackendVariableSelectsOpenCL) {
  if (devicesOf(ComputeBackend::opencl).empty()) GTEST_SKIP() << "no OpenCL device";
  ScopedEnv env("DEVICEARRAY_BACKEND", "opencl");
  const ComputeDevice d = ComputeDevice::defaultDevice();
  EXPECT_EQ(d.backend(), ComputeBackend::opencl);
  EXPECT_EQ(d, ComputeDevice::opencl(0));
  ScopedEnv index("DEVICEARRAY_DEVICE", "0");
  EXPECT_EQ(ComputeDevice::defaultDevice(), ComputeDevice::opencl(0));
  // Objects created without a device follow the variable.
  GpuMatND g({2, 3}, makeType(Depth::U8, 1));
  EXPECT_EQ(g.device(), ComputeDevice::opencl(0));
}

TEST_F(DefaultDevice, DeviceVariableBeyondTheBackendIsOutOfRange) {
  const int clCount = static_cast<int>(devicesOf(ComputeBackend::opencl).size());
  if (clCount == 0) GTEST_SKIP() << "no OpenCL device";
  ScopedEnv env("DEVICEARRAY_BACKEND", "opencl");
  ScopedEnv index("DEVICEARRAY_DEVICE", std::to_string(clCount));
  datest::expectError(ErrorCode::OutOfRange, [] { (void)ComputeDevice::defaultDevice(); });
}

TEST_F(DefaultDevice, AbsentCudaBackendIsBackendUnavailableWithAClearMessage) {
  if (!devicesOf(ComputeBackend::cuda).empty()) GTEST_SKIP() << "this machine has a CUDA device";
  ScopedEnv env("DEVICEARRAY_BACKEND", "cuda");
  try {
    (void)ComputeDevice::defaultDevice();
    ADD_FAILURE() << "expected BackendUnavailable";
  } catch (const devicearray::Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::BackendUnavailable) << e.what();
    EXPECT_NE(lower(e.what()).find("cuda"), std::string::npos) << "the message should name CUDA: " << e.what();
  }
}

TEST_F(DefaultDevice, CudaBackendVariableSelectsCudaWhenPresent) {
  if (devicesOf(ComputeBackend::cuda).empty()) GTEST_SKIP() << "no CUDA device on this machine";
  ScopedEnv env("DEVICEARRAY_BACKEND", "cuda");
  EXPECT_EQ(ComputeDevice::defaultDevice(), ComputeDevice::cuda(0));
}

TEST_F(DefaultDevice, MalformedVariablesAreInvalidArgument) {
  {
    ScopedEnv env("DEVICEARRAY_BACKEND", "vulkan");
    datest::expectError(ErrorCode::InvalidArgument, [] { (void)ComputeDevice::defaultDevice(); }, "unknown backend");
  }
  {
    ScopedEnv env("DEVICEARRAY_DEVICE", "first");
    datest::expectError(ErrorCode::InvalidArgument, [] { (void)ComputeDevice::defaultDevice(); }, "not a number");
  }
  {
    ScopedEnv env("DEVICEARRAY_DEVICE", "-1");
    datest::expectError(ErrorCode::InvalidArgument, [] { (void)ComputeDevice::defaultDevice(); }, "negative");
  }
}

TEST_F(DefaultDevice, EnvironmentIsRestoredByTheseTests) {
  // Guards the guard: the fixture cleared both variables.
  EXPECT_EQ(std::getenv("DEVICEARRAY_BACKEND"), nullptr);
  EXPECT_EQ(std::getenv("DEVICEARRAY_DEVICE"), nullptr);
}

// ==================================================== per-device: description

using datest::DeviceTest;

class ComputeDeviceInfo : public DeviceTest {};

TEST_P(ComputeDeviceInfo, DescribesItself) {
  const ComputeDevice& d = device();
  EXPECT_FALSE(d.model().empty());
  EXPECT_FALSE(d.vendor().empty());
  const std::string s = d.toString();
  const std::string prefix = std::string(isCuda() ? "cuda:" : "opencl:") + std::to_string(d.ordinal());
  EXPECT_EQ(s.rfind(prefix, 0), 0u) << s;
  EXPECT_NE(s.find(d.model()), std::string::npos) << s;
  EXPECT_NE(d.nativeContext(), nullptr);
  EXPECT_GT(d.totalMemory(), 0u);
  EXPECT_LE(d.freeMemory(), d.totalMemory());
  if (!isCuda()) {
    EXPECT_NE(d.nativeDevice(), nullptr);
    EXPECT_NE(d.nativeStreamHandle(), nullptr);
  }
  const devicearray::StreamOrQueue sq = d.sdkStreamOrQueue();
  EXPECT_EQ(sq.backend(), d.backend());
  EXPECT_EQ(sq.native(), d.nativeStreamHandle());
}

TEST_P(ComputeDeviceInfo, HandlesOfTheSameDeviceCompareEqual) {
  const ComputeDevice copy = device();  // NOLINT(performance-unnecessary-copy-initialization)
  EXPECT_EQ(copy, device());
  const ComputeDevice again = isCuda() ? ComputeDevice::cuda(device().ordinal()) : ComputeDevice::opencl(device().ordinal());
  EXPECT_EQ(again, device());
}

// ========================================================== per-device: streams

class StreamTest : public DeviceTest {};

TEST_P(StreamTest, OwningStreamRunsWorkAndReportsCompletion) {
  Stream s(device());
  EXPECT_EQ(s.device(), device());
  EXPECT_EQ(s.handle().backend(), device().backend());
  if (!isCuda()) EXPECT_NE(s.handle().commandQueue, nullptr);
  EXPECT_NE(s.handle().native(), device().nativeStreamHandle()) << "a new stream, not the library's own";

  const HostMat h = datest::randomHostMat({64, 64, 4}, makeType(Depth::F32, 1), 1);
  GpuMatND g({64, 64, 4}, makeType(Depth::F32, 1), device());
  g.upload(h, s);
  HostMat out({64, 64, 4}, makeType(Depth::F32, 1));
  g.download(out, s);
  s.waitForCompletion();
  EXPECT_TRUE(s.queryIfComplete());
  EXPECT_TRUE(datest::bytesEqual(datest::packedBytes(h), datest::packedBytes(out), 4));

  const devicearray::StreamOrQueue sq = s;  // implicit conversion
  EXPECT_EQ(sq.native(), s.handle().native());
}

TEST_P(StreamTest, CopiesShareTheUnderlyingStream) {
  Stream a(device());
  const Stream b = a;  // NOLINT(performance-unnecessary-copy-initialization)
  EXPECT_EQ(a.handle().native(), b.handle().native());
  Stream c(device());
  EXPECT_NE(a.handle().native(), c.handle().native());
}

TEST_P(StreamTest, WrappedLibraryQueueIsUsableAndOutlivesTheWrapper) {
  {
    Stream w = Stream::wrap(device(), device().sdkStreamOrQueue());
    EXPECT_EQ(w.handle().native(), device().nativeStreamHandle());
    EXPECT_EQ(w.device(), device());
    const HostMat h = datest::randomHostMat({7, 9}, makeType(Depth::U8, 3), 2);
    GpuMatND g({7, 9}, makeType(Depth::U8, 3), device());
    g.upload(h, w);
    HostMat out({7, 9}, makeType(Depth::U8, 3));
    g.download(out, w);
    w.waitForCompletion();
    EXPECT_TRUE(datest::bytesEqual(datest::packedBytes(h), datest::packedBytes(out), 3));
  }
  // The wrapper did not own the queue: the device still works on it.
  devicearray::synchronizeStream(device().sdkStreamOrQueue());
  const HostMat h = datest::randomHostMat({3, 3}, makeType(Depth::U8, 1), 3);
  GpuMatND g({3, 3}, makeType(Depth::U8, 1), device());
  g.upload(h);
  EXPECT_TRUE(datest::bytesEqual(datest::packedBytes(h), datest::downloadPacked(g)));
}

TEST_P(StreamTest, WrappingAnotherStreamDoesNotOwnIt) {
  Stream owner(device());
  {
    Stream w = Stream::wrap(device(), owner.handle());
    EXPECT_EQ(w.handle().native(), owner.handle().native());
    GpuMatND g({5, 5}, makeType(Depth::S16, 1), device());
    // The source of an enqueued upload must outlive the copy (found by ASan).
    const HostMat src = datest::randomHostMat({5, 5}, makeType(Depth::S16, 1), 4);
    g.upload(src, w);
    w.waitForCompletion();
  }
  owner.waitForCompletion();  // still valid after the wrapper is gone
  EXPECT_TRUE(owner.queryIfComplete());
}

TEST_P(StreamTest, WrappingAHandleOfTheOtherBackendIsInvalidArgument) {
  const devicearray::StreamOrQueue foreign =
      isCuda() ? devicearray::StreamOrQueue(OpenCLCommandQueuePtr{}) : devicearray::StreamOrQueue(CUDAStreamPtr{});
  datest::expectError(ErrorCode::InvalidArgument, [&] { (void)Stream::wrap(device(), foreign); });
}

TEST_P(StreamTest, SynchronizeStreamWaitsForEnqueuedWork) {
  Stream s(device());
  const HostMat h = datest::randomHostMat({32, 32, 8}, makeType(Depth::F64, 1), 5);
  GpuMatND g({32, 32, 8}, makeType(Depth::F64, 1), device());
  g.upload(h, s);
  HostMat out({32, 32, 8}, makeType(Depth::F64, 1));
  g.download(out, s);
  devicearray::synchronizeStream(s.handle());
  EXPECT_TRUE(s.queryIfComplete());
  EXPECT_TRUE(datest::bytesEqual(datest::packedBytes(h), datest::packedBytes(out), 8));
}

TEST_P(StreamTest, DefaultStreamIsOnTheDefaultDevice) {
  const Stream s;
  EXPECT_EQ(s.device(), ComputeDevice::defaultDevice());
}

// =========================================================== per-device: events

class EventTest : public DeviceTest {};

TEST_P(EventTest, UnrecordedEventIsComplete) {
  Event e(device());
  EXPECT_TRUE(e.queryIfComplete());
  e.waitForCompletion();
}

TEST_P(EventTest, RecordQueryWaitAndElapsedTime) {
  Stream s(device());
  Event start(device());
  Event end(device());
  start.record(s);
  const HostMat h = datest::randomHostMat({128, 128}, makeType(Depth::F32, 4), 6);
  GpuMatND g({128, 128}, makeType(Depth::F32, 4), device());
  g.upload(h, s);
  const GpuMatND c = g.clone(s);
  end.record(s);
  end.waitForCompletion();
  EXPECT_TRUE(end.queryIfComplete());
  EXPECT_TRUE(start.queryIfComplete());
  const float ms = Event::elapsedTime(start, end);
  EXPECT_GE(ms, 0.0f);
  EXPECT_LT(ms, 60'000.0f);

  // Another stream waits on the event without a host sync, then sees the clone.
  Stream other(device());
  other.waitEvent(end);
  HostMat out({128, 128}, makeType(Depth::F32, 4));
  c.download(out, other);
  other.waitForCompletion();
  EXPECT_TRUE(datest::bytesEqual(datest::packedBytes(h), datest::packedBytes(out), 16));
}

TEST_P(EventTest, ElapsedTimeOfUnrecordedEventsIsInvalidState) {
  Event a(device());
  Event b(device());
  datest::expectError(ErrorCode::InvalidState, [&] { (void)Event::elapsedTime(a, b); });
}

// ================================================== per-device: OpenCL adoption

class OpenCLAdoption : public DeviceTest {};

TEST_P(OpenCLAdoption, AdoptedHandlesShareTheContextAndBuffers) {
  if (isCuda()) GTEST_SKIP() << "OpenCL adoption only";
  const ComputeDevice adopted =
      ComputeDevice::fromOpenCL(device().nativeContext(), device().nativeDevice(), device().nativeStreamHandle());
  EXPECT_TRUE(adopted.isValid());
  EXPECT_EQ(adopted.backend(), ComputeBackend::opencl);
  EXPECT_EQ(adopted.ordinal(), -1);
  EXPECT_EQ(adopted.nativeContext(), device().nativeContext());
  EXPECT_EQ(adopted.nativeDevice(), device().nativeDevice());
  EXPECT_EQ(adopted.nativeStreamHandle(), device().nativeStreamHandle());
  EXPECT_FALSE(adopted.toString().empty());
  EXPECT_FALSE(adopted.model().empty());

  const int type = makeType(Depth::S32, 2);
  const HostMat h = datest::randomHostMat({6, 7}, type, 7);
  GpuMatND onAdopted({6, 7}, type, adopted);
  onAdopted.upload(h);
  EXPECT_EQ(onAdopted.device(), adopted);
  EXPECT_TRUE(datest::bytesEqual(datest::packedBytes(h), datest::downloadPacked(onAdopted), 8));

  // One context: a cl_mem of the adopted device is valid memory of the original one.
  const GpuMatND shared({6, 7}, type, onAdopted.getOpenCLBuffer(), device());
  EXPECT_TRUE(shared.external());
  EXPECT_TRUE(datest::bytesEqual(datest::packedBytes(h), datest::downloadPacked(shared), 8));

  Stream s(adopted);
  HostMat out({6, 7}, type);
  onAdopted.download(out, s);
  s.waitForCompletion();
  EXPECT_TRUE(datest::bytesEqual(datest::packedBytes(h), datest::packedBytes(out), 8));
}

TEST_P(OpenCLAdoption, NullHandlesAreInvalidArgument) {
  if (isCuda()) GTEST_SKIP() << "OpenCL adoption only";
  void* ctx = device().nativeContext();
  void* dev = device().nativeDevice();
  void* queue = device().nativeStreamHandle();
  datest::expectError(ErrorCode::InvalidArgument, [&] { (void)ComputeDevice::fromOpenCL(nullptr, dev, queue); });
  datest::expectError(ErrorCode::InvalidArgument, [&] { (void)ComputeDevice::fromOpenCL(ctx, nullptr, queue); });
  datest::expectError(ErrorCode::InvalidArgument, [&] { (void)ComputeDevice::fromOpenCL(ctx, dev, nullptr); });
}

// ================================================== per-device: device-lifetime caches

// The colour tables of the conversions are cached per device (DeviceImpl::cachedAllocation);
// they must be freed when the caches are released (as the exit handler does) and with a
// destructible device, so compute-sanitizer's leak check finds nothing left at exit.
class DeviceCaches : public DeviceTest {
 protected:
  /// RGBA -> BGR on this device, checked against the host.
  void convertColoursOn(const ComputeDevice& d) {
    std::vector<devicearray::ColorRGBA> rgba(97);
    for (std::size_t i = 0; i < rgba.size(); ++i)
      rgba[i] = {std::uint8_t(i), std::uint8_t(3 * i), std::uint8_t(7 * i), std::uint8_t(255 - i)};
    const auto colours = devicearray::DeviceArray<devicearray::ColorRGBA>::fromHost(rgba.data(), rgba.size(), d);
    const auto bgr = devicearray::convert<devicearray::ColorBGR>(colours, d.sdkStreamOrQueue());
    const auto back = bgr.toHost();
    ASSERT_EQ(back.size(), rgba.size());
    for (std::size_t i = 0; i < rgba.size(); ++i) {
      EXPECT_EQ(back[i].b, rgba[i].b) << i;
      EXPECT_EQ(back[i].g, rgba[i].g) << i;
      EXPECT_EQ(back[i].r, rgba[i].r) << i;
    }
  }
};

TEST_P(DeviceCaches, ColourTablesAreFreedWhenTheCachesAreReleasedAndRebuiltOnDemand) {
  devicearray::detail::releaseAllCachedMemory();
  const std::int64_t baseline = devicearray::detail::liveAllocations();
  convertColoursOn(device());
  EXPECT_EQ(devicearray::detail::liveAllocations(), baseline + 1) << "the colour tables stay cached for the device";
  devicearray::detail::releaseAllCachedMemory();
  EXPECT_EQ(devicearray::detail::liveAllocations(), baseline) << "releasing the caches must free the colour tables";
  convertColoursOn(device());  // rebuilt on the next conversion
  EXPECT_EQ(devicearray::detail::liveAllocations(), baseline + 1);
  devicearray::detail::releaseAllCachedMemory();
  EXPECT_EQ(devicearray::detail::liveAllocations(), baseline);
}

TEST_P(DeviceCaches, AdoptedDeviceIsDestroyedWithItsLastHandleAndFreesItsColourTables) {
  if (isCuda()) GTEST_SKIP() << "only adopted OpenCL devices are destructible";
  const std::int64_t baseline = devicearray::detail::liveAllocations();
  std::weak_ptr<devicearray::detail::DeviceImpl> weak;
  {
    const ComputeDevice adopted =
        ComputeDevice::fromOpenCL(device().nativeContext(), device().nativeDevice(), device().nativeStreamHandle());
    weak = adopted.impl();
    convertColoursOn(adopted);
    EXPECT_EQ(devicearray::detail::liveAllocations(), baseline + 1) << "the adopted device caches its tables";
  }
  EXPECT_TRUE(weak.expired()) << "the cached colour tables kept the adopted device alive";
  EXPECT_EQ(devicearray::detail::liveAllocations(), baseline);
}

DATEST_INSTANTIATE_OVER_DEVICES(DeviceCaches);
DATEST_INSTANTIATE_OVER_DEVICES(ComputeDeviceInfo);
DATEST_INSTANTIATE_OVER_DEVICES(StreamTest);
DATEST_INSTANTIATE_OVER_DEVICES(EventTest);
DATEST_INSTANTIATE_OVER_DEVICES(OpenCLAdoption);

}  // namespace
