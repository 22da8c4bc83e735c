// Process lifecycle: fork and exit.
//
// A child forked after the library initialised a backend must get a clear
// Error(InvalidState) saying to use the 'spawn' start method from every device call,
// instead of hanging in the driver (PoCL waits forever for worker threads the child
// does not have), and must be able to destroy what it inherited. A child forked
// before any initialisation uses the library normally. At exit, the memory devices
// cache for their lifetime (colour tables) is freed before the drivers tear down.
//
// Children run with an alarm and the parent waits with a deadline, so a hang fails
// the test instead of the suite. Tests that need a process in which no device was
// used yet run this binary again with a gtest filter (runSelf).
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "backend/backend.hpp"
#include "backend/backend_registry.hpp"
#include "backend/fault_injection.hpp"
#include "devicearray/devicearray.hpp"
#include "test_support.hpp"

namespace {

using namespace devicearray;

constexpr int kChildSeconds = 60;  // a child that takes longer is taken to hang
constexpr const char* kRoleVariable = "DEVICEARRAY_FORK_TEST_ROLE";

struct ChildResult {
  bool timedOut = false;
  int status = 0;      // waitpid status
  std::string output;  // what the child wrote to the pipe
  bool exitedWith(int code) const { return !timedOut && WIFEXITED(status) && WEXITSTATUS(status) == code; }
  std::string describe() const {
    if (timedOut) return "the child hung (killed after " + std::to_string(kChildSeconds + 10) + " s); output:\n" + output;
    if (WIFSIGNALED(status))
      return "the child died of signal " + std::to_string(WTERMSIG(status)) +
             (WTERMSIG(status) == SIGALRM ? " (its alarm: it hung)" : "") + "; output:\n" + output;
    return "the child exited with " + std::to_string(WEXITSTATUS(status)) + "; output:\n" + output;
  }
};

/// Reads `fd` until EOF and reaps `pid`, killing it past the deadline.
ChildResult collect(pid_t pid, int fd) {
  ChildResult r;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(kChildSeconds + 10);
  char buffer[4096];
  while (true) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) {
      r.timedOut = true;
      break;
    }
    pollfd p{fd, POLLIN, 0};
    const int ready = poll(&p, 1, static_cast<int>(left.count()));
    if (ready < 0 && errno == EINTR) continue;
    if (ready <= 0) continue;  // the deadline check above ends the loop
    const ssize_t n = read(fd, buffer, sizeof buffer);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;  // EOF: the child (and anything it started) closed the pipe
    r.output.append(buffer, static_cast<std::size_t>(n));
  }
  close(fd);
  if (r.timedOut) kill(pid, SIGKILL);
  while (waitpid(pid, &r.status, 0) < 0 && errno == EINTR) {
  }
  return r;
}

/// Runs `body` in a forked child with an alarm; the child reports through the pipe
/// (`report`) and exits with body's return value, without running exit handlers.
ChildResult runInChild(const std::function<int(std::string& report)>& body) {
  int fds[2];
  if (pipe(fds) != 0) return ChildResult{true, 0, "pipe() failed"};
  std::fflush(nullptr);  // nothing buffered is written twice
  const pid_t pid = fork();
  if (pid < 0) return ChildResult{true, 0, "fork() failed"};
  if (pid == 0) {
    close(fds[0]);
    alarm(kChildSeconds);
    std::string report;
    int code = 1;
    try {
      code = body(report);
    } catch (const std::exception& e) {
      report += std::string("uncaught exception: ") + e.what() + "\n";
      code = 2;
    } catch (...) {
      report += "uncaught non-standard exception\n";
      code = 2;
    }
    for (std::size_t done = 0; done < report.size();) {
      const ssize_t n = write(fds[1], report.data() + done, report.size() - done);
      if (n <= 0) break;
      done += static_cast<std::size_t>(n);
    }
    _exit(code);
  }
  close(fds[1]);
  return collect(pid, fds[0]);
}

/// Runs this test binary again with `filter` and kRoleVariable=`role` (a process in
/// which no device has been used yet); stdout and stderr come back as output.
ChildResult runSelf(const std::string& filter, const std::string& role) {
  int fds[2];
  if (pipe(fds) != 0) return ChildResult{true, 0, "pipe() failed"};
  std::fflush(nullptr);
  const pid_t pid = fork();
  if (pid < 0) return ChildResult{true, 0, "fork() failed"};
  if (pid == 0) {
    dup2(fds[1], 1);
    dup2(fds[1], 2);
    close(fds[0]);
    close(fds[1]);
    setenv(kRoleVariable, role.c_str(), 1);
    const std::string filterArg = "--gtest_filter=" + filter;
    execl("/proc/self/exe", "fork_test", filterArg.c_str(), "--gtest_brief=0", static_cast<char*>(nullptr));
    _exit(127);
  }
  close(fds[1]);
  return collect(pid, fds[0]);
}

bool hasRole(const char* role) {
  const char* value = std::getenv(kRoleVariable);
  return value != nullptr && std::strcmp(value, role) == 0;
}

/// In a child: `call` must throw Error(InvalidState) whose message names `name` and
/// says that the process was forked and to use 'spawn'. Problems go to `report`.
void expectRefused(std::string& report, const std::string& name, const std::function<void()>& call) {
  try {
    call();
    report += name + ": did not throw\n";
  } catch (const Error& e) {
    const std::string m = e.what();
    if (e.code() != ErrorCode::InvalidState)
      report += name + ": threw " + toString(e.code()) + " instead of InvalidState: " + m + "\n";
    else if (m.rfind(name + ": ", 0) != 0 || m.find("forked") == std::string::npos ||
             m.find("'spawn'") == std::string::npos || m.find("initialise") == std::string::npos)
      report += name + ": unclear message: " + m + "\n";
  } catch (const std::exception& e) {
    report += name + ": threw a non-devicearray exception: " + e.what() + "\n";
  }
}

/// Arrays, streams, events and pinned memory of every kind, used before a fork.
struct Inherited {
  explicit Inherited(const ComputeDevice& d) : device(d) {
    host = datest::randomHostMat({8, 12}, makeType(Depth::U8, 4), 1);
    gpu.emplace();
    gpu->upload(host);
    stream.emplace(device);
    event.emplace(device);
    clone.emplace(gpu->clone(*stream));
    event->record(*stream);
    pinned.emplace(HostMat::pinned({4, 4}, makeType(Depth::F32, 1)));
    std::vector<ColorRGBA> rgba(96);
    for (std::size_t i = 0; i < rgba.size(); ++i) rgba[i] = {std::uint8_t(i), std::uint8_t(2 * i), 7, 255};
    colours.emplace(DeviceArray<ColorRGBA>::fromHost(rgba.data(), rgba.size(), device));
    bgr.emplace(convert<ColorBGR>(*colours, stream->handle()));  // caches the colour tables
    stream->waitForCompletion();
  }
  /// Drops every handle (in the child: without a driver call, leaking on purpose).
  void release() {
    bgr.reset();
    colours.reset();
    pinned.reset();
    clone.reset();
    event.reset();
    stream.reset();
    gpu.reset();
  }

  ComputeDevice device;
  HostMat host;
  std::optional<GpuMatND> gpu;
  std::optional<Stream> stream;
  std::optional<Event> event;
  std::optional<GpuMatND> clone;
  std::optional<HostMat> pinned;
  std::optional<DeviceArray<ColorRGBA>> colours;
  std::optional<DeviceArray<ColorBGR>> bgr;
};

// ------------------------------------------------------- forked after init --

TEST(ForkAfterInit, EveryDeviceCallInTheChildThrowsInvalidStateSayingUseSpawn) {
  if (datest::testDevices().empty()) GTEST_SKIP() << "no device on this machine";
  Inherited in(ComputeDevice::defaultDevice());
  const bool hasCuda = !detail::backendOf(ComputeBackend::cuda).devices().empty();
  const bool isOpenCL = in.device.backend() == ComputeBackend::opencl;
  void* const context = in.device.nativeContext();
  void* const clDevice = in.device.nativeDevice();
  void* const queue = in.device.nativeStreamHandle();
  const StreamOrQueue sdk = in.device.sdkStreamOrQueue();

  const ChildResult r = runInChild([&](std::string& report) {
    if (!detail::forkedAfterInit()) report += "the child was not detected as forked after initialisation\n";
    const ComputeDevice& d = in.device;
    expectRefused(report, "ComputeDevice::all", [] { (void)ComputeDevice::all(); });
    expectRefused(report, "ComputeDevice::defaultDevice", [] { (void)ComputeDevice::defaultDevice(); });
    expectRefused(report, "ComputeDevice::cuda", [] { (void)ComputeDevice::cuda(0); });
    expectRefused(report, "ComputeDevice::opencl", [] { (void)ComputeDevice::opencl(0); });
    expectRefused(report, "ComputeDevice::freeMemory", [&] { (void)d.freeMemory(); });
    expectRefused(report, "ComputeDevice::nativeStreamHandle", [&] { (void)d.nativeStreamHandle(); });
    if (isOpenCL)
      expectRefused(report, "ComputeDevice::fromOpenCL",
                    [&] { (void)ComputeDevice::fromOpenCL(context, clDevice, queue); });
    expectRefused(report, "GpuMatND::GpuMatND", [&] { GpuMatND g({4, 4}, makeType(Depth::F32, 1), d); });
    expectRefused(report, "GpuMatND::upload", [&] { in.gpu->upload(in.host); });
    expectRefused(report, "GpuMatND::upload", [&] { GpuMatND g; g.upload(in.host); });
    expectRefused(report, "GpuMatND::download", [&] {
      HostMat h;
      in.gpu->download(h);
    });
    expectRefused(report, "GpuMatND::download", [&] { in.gpu->download(in.host, *in.stream); });
    expectRefused(report, "GpuMatND::clone", [&] { (void)in.gpu->clone(); });
    expectRefused(report, "GpuMatND::clone", [&] { (void)in.gpu->clone(*in.stream); });
    expectRefused(report, "Stream::Stream", [&] { Stream s(d); });
    expectRefused(report, "Stream::waitForCompletion", [&] { in.stream->waitForCompletion(); });
    expectRefused(report, "Stream::queryIfComplete", [&] { (void)in.stream->queryIfComplete(); });
    expectRefused(report, "Stream::waitEvent", [&] { in.stream->waitEvent(*in.event); });
    expectRefused(report, "Event::record", [&] { in.event->record(*in.stream); });
    expectRefused(report, "Event::queryIfComplete", [&] { (void)in.event->queryIfComplete(); });
    expectRefused(report, "Event::waitForCompletion", [&] { in.event->waitForCompletion(); });
    expectRefused(report, "synchronizeStream", [&] { synchronizeStream(in.stream->handle()); });
    // Calls that reach the device through the shared layer name that layer's step.
    expectRefused(report, "device allocation",
                  [&] { (void)DeviceArray<PointXYZ>::allocate(std::size_t{16}, d); });
    expectRefused(report, "using a stream/queue", [&] { (void)convert<ColorRGBAf>(*in.colours, in.stream->handle()); });
    expectRefused(report, "using a stream/queue", [&] {
      std::vector<ColorRGBA> out(in.colours->size());
      in.colours->copyToHost(out.data(), out.size() * sizeof(ColorRGBA), in.stream->handle());
    });
    expectRefused(report, "ordering device work", [&] { convertInto(in.bgr->view(), *in.colours, sdk); });
    if (hasCuda)
      expectRefused(report, "GpuMatND::GpuMatND(external CUDA memory)",
                    [&] { GpuMatND g({4}, makeType(Depth::U8, 1), reinterpret_cast<void*>(0x1000)); });
    // What needs no device still works: descriptions and host-side headers.
    if (d.toString().empty() || in.gpu->size != in.host.size) report += "host-side queries failed\n";
    // Everything inherited is destroyed without a driver call, hang or crash.
    in.release();
    return report.empty() ? 0 : 1;
  });
  EXPECT_TRUE(r.exitedWith(0)) << r.describe();

  // The parent is unaffected by its child.
  HostMat back;
  in.gpu->download(back);
  EXPECT_EQ(datest::packedBytes(back), datest::packedBytes(in.host));
  EXPECT_FALSE(detail::forkedAfterInit());
}

TEST(ForkAfterInit, ChildThatExitsNormallyRunsTheExitHandlersWithoutTouchingTheDriver) {
  if (datest::testDevices().empty()) GTEST_SKIP() << "no device on this machine";
  Inherited in(ComputeDevice::defaultDevice());
  // The exit handlers inherited from this process (releasing the device caches) must
  // do nothing in the child, and the static destructors must not hang either.
  const ChildResult r = runInChild([&](std::string&) -> int {
    in.release();
    std::exit(0);
  });
  EXPECT_TRUE(r.exitedWith(0)) << r.describe();
}

TEST(ForkAfterInit, GrandchildIsRefusedToo) {
  if (datest::testDevices().empty()) GTEST_SKIP() << "no device on this machine";
  (void)ComputeDevice::defaultDevice();
  const ChildResult r = runInChild([](std::string& report) {
    const ChildResult inner = runInChild([](std::string& innerReport) {
      expectRefused(innerReport, "ComputeDevice::defaultDevice", [] { (void)ComputeDevice::defaultDevice(); });
      return innerReport.empty() ? 0 : 1;
    });
    if (!inner.exitedWith(0)) report += "grandchild: " + inner.describe() + "\n";
    return report.empty() ? 0 : 1;
  });
  EXPECT_TRUE(r.exitedWith(0)) << r.describe();
}

// ------------------------------------------------------ forked before init --

TEST(ForkBeforeInit, ChildOfAFreshProcessUsesTheDeviceNormally) {
  const ChildResult r = runSelf("ForkBeforeInitProcess.*", "fork-before-init");
  EXPECT_TRUE(r.exitedWith(0)) << r.describe();
  EXPECT_NE(r.output.find("[       OK ] ForkBeforeInitProcess."), std::string::npos) << r.output;
}

// Runs only in the process ForkBeforeInit starts, where no device was used before the fork.
TEST(ForkBeforeInitProcess, ForksBeforeAnyDeviceUseThenBothSidesUseTheDevice) {
  if (!hasRole("fork-before-init")) GTEST_SKIP() << "runs in the process started by ForkBeforeInit";
  ASSERT_FALSE(detail::forkedAfterInit());
  auto roundTrip = [](std::string& report) {
    const auto devices = ComputeDevice::all();
    if (devices.empty()) return 0;  // nothing to use on this machine
    const HostMat host = datest::randomHostMat({5, 7}, makeType(Depth::S16, 3), 4);
    GpuMatND gpu;
    gpu.upload(host);
    Stream stream(gpu.device());
    const GpuMatND copy = gpu.clone(stream);
    stream.waitForCompletion();
    if (datest::downloadPacked(copy) != datest::packedBytes(host)) report += "round trip through the device differs\n";
    return report.empty() ? 0 : 1;
  };
  const ChildResult r = runInChild(roundTrip);
  EXPECT_TRUE(r.exitedWith(0)) << r.describe();
  std::string report;
  EXPECT_EQ(roundTrip(report), 0) << report;
}

// ------------------------------------------------------------------- exit --

std::int64_t gLiveAtStart = -1;

/// Registered before the device is first used, so it runs after the library's
/// release handler (exit handlers run in reverse order of registration).
void reportLiveAllocationsAtExit() {
  std::printf("[exit check] live allocations after the exit handlers: %lld (at start %lld)\n",
              static_cast<long long>(detail::liveAllocations()), static_cast<long long>(gLiveAtStart));
  std::fflush(stdout);
}

TEST(ExitRelease, DeviceCachesAreFreedBeforeTheProcessEnds) {
  if (datest::testDevices().empty()) GTEST_SKIP() << "no device on this machine";
  const ChildResult r = runSelf("ExitReleaseProcess.*", "exit-release");
  EXPECT_TRUE(r.exitedWith(0)) << r.describe();
  EXPECT_NE(r.output.find("[exit check] live allocations after the exit handlers: 0 (at start 0)"), std::string::npos)
      << "the colour tables cached during the run were not freed at exit:\n"
      << r.output;
}

// Runs only in the process ExitRelease starts: converts colours on every device (caching
// their tables), drops every array, and lets the process exit normally.
TEST(ExitReleaseProcess, ConvertsColoursOnEveryDeviceAndExits) {
  if (!hasRole("exit-release")) GTEST_SKIP() << "runs in the process started by ExitRelease";
  gLiveAtStart = detail::liveAllocations();
  ASSERT_EQ(std::atexit(&reportLiveAllocationsAtExit), 0);
  for (const ComputeDevice& d : ComputeDevice::all()) {
    std::vector<ColorRGBA> rgba(64, ColorRGBA{10, 20, 30, 255});
    const auto colours = DeviceArray<ColorRGBA>::fromHost(rgba.data(), rgba.size(), d);
    const auto bgr = convert<ColorBGR>(colours, d.sdkStreamOrQueue()).toHost();
    ASSERT_EQ(bgr.size(), rgba.size());
    EXPECT_EQ(bgr[0].b, 30);
  }
  EXPECT_GT(detail::liveAllocations(), gLiveAtStart) << "the colour tables should be cached until exit";
}

}  // namespace
