// Backend interface: launching a shared kernel (src/kernels/selftest.h) with its typed
// signature, the checks of what a signature cannot rule out (a kernel that differs from
// it, an untyped launch), work-group sizes, and launches from many threads at once.
#include <algorithm>
#include <array>
#include <cctype>
#include <cstddef>
#include <cstring>
#include <exception>
#include <memory>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "backend/selftest_signatures.h"
#include "backend_fixture.hpp"
#if defined(DEVICEARRAY_HAS_OPENCL)
#include "opencl/work_group_fit.hpp"
#endif

#if defined(DEVICEARRAY_HAS_OPENCL)
namespace devicearray::detail {
extern const char* const kOpenCLProgramSource;
}
#endif

namespace backendtest {
namespace {

using devicearray::detail::Buffer;
using devicearray::detail::BufferRef;
using devicearray::detail::LaunchGeometry;
using devicearray::detail::launch;
using Axpy = devicearray::detail::kernels::da_selftest_axpy;

// What launch<> accepts is decided at compile time: exact arity, no narrowing, buffers
// only from places or from buffers of the same element type.
static_assert(Axpy::Params::accepts<int, float, BufferRef, BufferRef>());
static_assert(Axpy::Params::accepts<int, float, Buffer<float>, Buffer<float>>());
static_assert(!Axpy::Params::accepts<int, float, BufferRef>());
static_assert(!Axpy::Params::accepts<int, float, BufferRef, BufferRef, int>());
static_assert(!Axpy::Params::accepts<std::size_t, float, BufferRef, BufferRef>());
static_assert(!Axpy::Params::accepts<int, double, BufferRef, BufferRef>());
static_assert(!Axpy::Params::accepts<int, float, int, BufferRef>());
static_assert(!Axpy::Params::accepts<int, float, Buffer<const std::uint8_t>, BufferRef>());
static_assert(!Axpy::Params::accepts<int, float, BufferRef, Buffer<const float>>());

// The self-test kernel as a caller might wrongly declare it: `a` as an int.
#define WRONG_AXPY_PARAMS(S0, B0, S, B) S0(int, n) S(int, a) B(const float, x) B(float, y)
namespace wrong {
DA_KERNEL_SIGNATURE(da_selftest_axpy, WRONG_AXPY_PARAMS);
}  // namespace wrong

TEST_P(Backend, LaunchRunsASharedKernelWithBufferOffsets) {
  const int n = 1000;
  std::vector<float> x(n), y(n), expected(n);
  for (int i = 0; i < n; ++i) {
    x[static_cast<std::size_t>(i)] = static_cast<float>(i % 97) * 0.25f;  // exact products with a = 2.5
    y[static_cast<std::size_t>(i)] = static_cast<float>(i % 13) - 6.0f;
    expected[static_cast<std::size_t>(i)] = 2.5f * x[static_cast<std::size_t>(i)] + y[static_cast<std::size_t>(i)];
  }
  const std::size_t xOff = 16, yOff = 32;
  auto bx = dev().allocate(xOff + n * sizeof(float), q());
  auto by = dev().allocate(yOff + n * sizeof(float), q());
  Bytes xb(n * sizeof(float)), yb(n * sizeof(float));
  std::memcpy(xb.data(), x.data(), xb.size());
  std::memcpy(yb.data(), y.data(), yb.size());
  write(*bx, xOff, xb);
  write(*by, yOff, yb);
  const BufferRef xs{bx.get(), xOff}, ys{by.get(), yOff};
  launch<Axpy>(q(), LaunchGeometry::items(n), n, 2.5f, xs, ys);
  const Bytes got = read(*by, yOff, n * sizeof(float));
  std::vector<float> result(n);
  std::memcpy(result.data(), got.data(), got.size());
  for (int i = 0; i < n; ++i) ASSERT_EQ(result[static_cast<std::size_t>(i)], expected[static_cast<std::size_t>(i)]) << "index " << i;

  // A fixed work-group size must divide a 1-D global size.
  const LaunchGeometry ragged{1, {65, 1, 1}, 64}, twoD{2, {64, 2, 1}, 64};
  expectErrorCode(ErrorCode::InvalidArgument, [&] { launch<Axpy>(q(), ragged, n, 2.5f, xs, ys); },
                  "global size not a multiple");
  expectErrorCode(ErrorCode::InvalidArgument, [&] { launch<Axpy>(q(), twoD, n, 2.5f, xs, ys); },
                  "work-group size of a 2-D launch");
  // ... and one that does is honoured: the same axpy again, in groups of 64.
  launch<Axpy>(q(), LaunchGeometry::groups((static_cast<std::size_t>(n) + 63) / 64, 64), n, 2.5f, xs, ys);
  const Bytes again = read(*by, yOff, n * sizeof(float));
  std::memcpy(result.data(), again.data(), again.size());
  for (int i = 0; i < n; ++i)
    ASSERT_EQ(result[static_cast<std::size_t>(i)], expected[static_cast<std::size_t>(i)] + 2.5f * x[static_cast<std::size_t>(i)])
        << "index " << i;
}

TEST_P(Backend, LaunchOverAPrimeCountRunsEveryItemOnceAndNothingPastIt) {
  // 1009 is prime: no work-group size but 1 divides it, so backends round the launch
  // up, and the items past the count must do nothing.
  const int n = 1009, guard = 200;
  std::vector<float> x(n + guard, 1.0f), y(n + guard);
  for (int i = 0; i < n + guard; ++i) {
    x[static_cast<std::size_t>(i)] = static_cast<float>(i % 31);
    y[static_cast<std::size_t>(i)] = static_cast<float>(i % 7) - 3.0f;
  }
  auto bx = dev().allocate(x.size() * sizeof(float), q());
  auto by = dev().allocate(y.size() * sizeof(float), q());
  Bytes xb(x.size() * sizeof(float)), yb(y.size() * sizeof(float));
  std::memcpy(xb.data(), x.data(), xb.size());
  std::memcpy(yb.data(), y.data(), yb.size());
  write(*bx, 0, xb);
  write(*by, 0, yb);
  launch<Axpy>(q(), LaunchGeometry::items(n), n, 2.0f, BufferRef{bx.get()}, BufferRef{by.get()});
  const Bytes got = read(*by, 0, yb.size());
  std::vector<float> result(y.size());
  std::memcpy(result.data(), got.data(), got.size());
  for (int i = 0; i < n + guard; ++i) {
    const auto u = static_cast<std::size_t>(i);
    const float expected = i < n ? 2.0f * x[u] + y[u] : y[u];  // small integers: exact
    ASSERT_EQ(result[u], expected) << "index " << i << (i < n ? "" : " (past the count)");
  }
}

TEST_P(Backend, LaunchRefusesAKernelThatDiffersFromTheSignature) {
  auto x = dev().allocate(64 * sizeof(float), q());
  auto y = dev().allocate(64 * sizeof(float), q());
  // CUDA compares the registered kernel's parameter kinds, OpenCL the program's
  // argument information (or at least the count); both name the kernel.
  try {
    launch<wrong::da_selftest_axpy>(q(), LaunchGeometry::items(64), 64, 2, BufferRef{x.get()}, BufferRef{y.get()});
    ADD_FAILURE() << "a launch with a signature that differs from the kernel did not throw";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::InvalidArgument) << e.what();
    EXPECT_NE(std::string(e.what()).find("da_selftest_axpy"), std::string::npos) << e.what();
    if (dev().backend() == ComputeBackend::opencl)  // PoCL reports argument names and types
      EXPECT_NE(std::string(e.what()).find("parameter 1 of the signature (int a)"), std::string::npos) << e.what();
  }
  // The kernel itself still launches with its own signature.
  launch<Axpy>(q(), LaunchGeometry::items(64), 64, 1.0f, BufferRef{x.get()}, BufferRef{y.get()});
  q().synchronize();
}

TEST_P(Backend, UntypedLaunchesAreCheckedByNameAndArgumentCount) {
  auto x = dev().allocate(64 * sizeof(float), q());
  auto y = dev().allocate(64 * sizeof(float), q());
  KernelLaunch l;
  l.name = "da_selftest_axpy";
  l.globalSize = {64, 1, 1};
  l.args = {KernelArg::i32(64), KernelArg::f32(1.0f), KernelArg::buf(x.get())};  // y is missing
  expectErrorCode(ErrorCode::InvalidArgument, [&] { dev().launch(l, q()); }, "missing argument");
  l.name = "da_no_such_kernel";
  expectErrorCode(ErrorCode::Unsupported, [&] { dev().launch(l, q()); }, "unknown kernel");
}

TEST_P(Backend, ConcurrentLaunchesFromManyThreadsKeepTheirArguments) {
  // One kernel object's arguments are shared state on OpenCL: threads launching
  // the same kernel with different buffers and scalars must not mix them up.
  const int n = 4096, threads = 4, rounds = 25;
  std::vector<std::shared_ptr<Allocation>> xs, ys;
  std::vector<std::shared_ptr<QueueImpl>> queues;
  for (int t = 0; t < threads; ++t) {
    queues.push_back(dev().createQueue());
    std::vector<float> x(n, static_cast<float>(t + 1)), y(n, 0.0f);
    Bytes xb(n * sizeof(float)), yb(n * sizeof(float));
    std::memcpy(xb.data(), x.data(), xb.size());
    std::memcpy(yb.data(), y.data(), yb.size());
    xs.push_back(dev().allocate(xb.size(), *queues.back()));
    ys.push_back(dev().allocate(yb.size(), *queues.back()));
    write(*xs.back(), 0, xb, queues.back().get());
    write(*ys.back(), 0, yb, queues.back().get());
  }
  std::vector<std::thread> pool;
  std::vector<std::string> errors(threads);
  for (int t = 0; t < threads; ++t)
    pool.emplace_back([&, t] {
      try {
        for (int r = 0; r < rounds; ++r) {
          launch<Axpy>(*queues[t], LaunchGeometry::items(n), n, static_cast<float>(t + 1), BufferRef{xs[t].get()},
                       BufferRef{ys[t].get()});
        }
      } catch (const std::exception& e) {
        errors[t] = e.what();
      }
    });
  for (auto& th : pool) th.join();
  for (int t = 0; t < threads; ++t) {
    EXPECT_EQ(errors[t], "") << "thread " << t;
    const Bytes got = read(*ys[t], 0, n * sizeof(float), queues[t].get());
    std::vector<float> y(n);
    std::memcpy(y.data(), got.data(), got.size());
    const float expected = static_cast<float>(rounds * (t + 1) * (t + 1));  // small integers: exact
    for (int i = 0; i < n; ++i) ASSERT_EQ(y[static_cast<std::size_t>(i)], expected) << "thread " << t << " index " << i;
  }
}

TEST_P(Backend, EachLaunchReadsWhatTheLaunchBeforeItWrote) {
  // Launches that each read what the one before wrote and write what it read: on CUDA
  // (sm_90 and later) a launch's blocks may start before the one before it ends, and
  // must wait for it. Frames of several waves of blocks, with a = 1: every value stays a
  // small integer, so the host's sums are exact.
  const int n = 1 << 22, launches = 24;
  std::vector<float> a(n), b(n);
  for (int i = 0; i < n; ++i) {
    a[static_cast<std::size_t>(i)] = static_cast<float>(i % 7);
    b[static_cast<std::size_t>(i)] = static_cast<float>(i % 5);
  }
  auto ba = dev().allocate(n * sizeof(float), q());
  auto bb = dev().allocate(n * sizeof(float), q());
  Bytes bytes(n * sizeof(float));
  std::memcpy(bytes.data(), a.data(), bytes.size());
  write(*ba, 0, bytes);
  std::memcpy(bytes.data(), b.data(), bytes.size());
  write(*bb, 0, bytes);
  for (int k = 0; k < launches; ++k) {
    const bool intoB = k % 2 == 0;
    launch<Axpy>(q(), LaunchGeometry::items(n), n, 1.0f, BufferRef{intoB ? ba.get() : bb.get()},
                 BufferRef{intoB ? bb.get() : ba.get()});
    std::vector<float>& x = intoB ? a : b;
    std::vector<float>& y = intoB ? b : a;
    for (int i = 0; i < n; ++i) y[static_cast<std::size_t>(i)] += x[static_cast<std::size_t>(i)];
  }
  // Every value below 2^24, so every sum was exact in float.
  ASSERT_LT(std::max(*std::max_element(a.begin(), a.end()), *std::max_element(b.begin(), b.end())), 16777216.0f);
  const Bytes gotA = read(*ba, 0, n * sizeof(float)), gotB = read(*bb, 0, n * sizeof(float));
  std::vector<float> ra(n), rb(n);
  std::memcpy(ra.data(), gotA.data(), gotA.size());
  std::memcpy(rb.data(), gotB.data(), gotB.size());
  for (int i = 0; i < n; ++i) {
    ASSERT_EQ(ra[static_cast<std::size_t>(i)], a[static_cast<std::size_t>(i)]) << "index " << i;
    ASSERT_EQ(rb[static_cast<std::size_t>(i)], b[static_cast<std::size_t>(i)]) << "index " << i;
  }
}

GTEST_ALLOW_UNINSTANTIATED_PARAMETERIZED_TEST(Backend);
INSTANTIATE_TEST_SUITE_P(AllDevices, Backend, testing::ValuesIn(allDevices()), DeviceParamName());

#if defined(DEVICEARRAY_HAS_OPENCL)
TEST(OpenCLWorkGroupFit, LeavesDivisibleLaunchesToTheDevice) {
  using devicearray::detail::opencl::fitWorkGroups;
  EXPECT_FALSE(fitWorkGroups(1, {576000, 1, 1}, 1024).explicitLocal);  // 4500 x 128
  EXPECT_FALSE(fitWorkGroups(2, {960, 600, 1}, 1024).explicitLocal);    // 30 x 150 groups of 32 x 4
  EXPECT_FALSE(fitWorkGroups(3, {64, 8, 3}, 1024).explicitLocal);
}

TEST(OpenCLWorkGroupFit, RoundsARaggedLaunchUpToTheUsualGroup) {
  using devicearray::detail::opencl::fitWorkGroups;
  // 576,001 (prime): 4501 groups of 128, the last one 127 items past the count.
  const auto flags = fitWorkGroups(1, {576001, 1, 1}, 1024);
  ASSERT_TRUE(flags.explicitLocal);
  EXPECT_EQ(flags.local[0], 128u);
  EXPECT_EQ(flags.global[0], 576128u);
  // 641 x 479: groups of 32 x 4; 21 x 120 of them.
  const auto image = fitWorkGroups(2, {641, 479, 1}, 1024);
  ASSERT_TRUE(image.explicitLocal);
  EXPECT_EQ(image.local, (std::array<std::size_t, 3>{32, 4, 1}));
  EXPECT_EQ(image.global, (std::array<std::size_t, 3>{672, 480, 1}));
  // A 2-D launch ragged only in its rows is still fitted in both dimensions.
  const auto rows = fitWorkGroups(2, {64, 3, 1}, 1024);
  EXPECT_EQ(rows.global, (std::array<std::size_t, 3>{64, 4, 1}));
}

TEST(OpenCLWorkGroupFit, ShrinksTheGroupToWhatTheKernelAllows) {
  using devicearray::detail::opencl::fitWorkGroups;
  // Rows are halved first, then the row length.
  EXPECT_EQ(fitWorkGroups(2, {33, 5, 1}, 64).local, (std::array<std::size_t, 3>{32, 2, 1}));
  EXPECT_EQ(fitWorkGroups(2, {33, 5, 1}, 16).local, (std::array<std::size_t, 3>{16, 1, 1}));
  const auto one = fitWorkGroups(1, {1009, 1, 1}, 1);
  EXPECT_EQ(one.local[0], 1u);
  EXPECT_EQ(one.global[0], 1009u);
  const auto some = fitWorkGroups(1, {1009, 1, 1}, 100);  // 64: the largest halving of 128 within 100
  EXPECT_EQ(some.local[0], 64u);
  EXPECT_EQ(some.global[0], 1024u);
}

// Drivers compile the program as OpenCL C 1.2, whose preprocessor has no variadic
// macros (NVIDIA's refuses them; PoCL's newer compiler would not tell).
TEST(OpenCLProgram, UsesNoVariadicMacro) {
  std::istringstream source(devicearray::detail::kOpenCLProgramSource);
  std::string line;
  while (std::getline(source, line)) {
    const std::size_t define = line.find("#define");
    if (define == std::string::npos || line.find_first_not_of(" \t") != define) continue;
    EXPECT_EQ(line.find("..."), std::string::npos) << line;
    EXPECT_EQ(line.find("__VA_ARGS__"), std::string::npos) << line;
  }
}

// CUDA may start a kernel's blocks before the kernel before it in the stream has ended
// (programmatic dependent launch); each shared kernel waits for it in its first
// statement, DA_BUFFERS_INIT (or DA_AFTER_PREVIOUS_KERNEL where it has no parameter
// list). The OpenCL program holds every shared kernel (src/kernels/), then the
// OpenCL-only .cl files, which CUDA never runs.
TEST(OpenCLProgram, EverySharedKernelWaitsForTheKernelBeforeItFirst) {
  std::string source = devicearray::detail::kOpenCLProgramSource;
  const std::size_t openclOnly = source.find(".cl ---- */");
  ASSERT_NE(openclOnly, std::string::npos) << "cmake/EmbedOpenCL.cmake no longer marks the files";
  source.erase(source.rfind("/* ---- ", openclOnly));
  for (std::size_t open = source.find("/*"); open != std::string::npos; open = source.find("/*", open)) {
    const std::size_t close = source.find("*/", open + 2);
    ASSERT_NE(close, std::string::npos) << "an unterminated comment";
    source.erase(open, close + 2 - open);
  }
  int kernels = 0;
  for (const std::string macro : {"DA_KERNEL(", "DA_KERNEL_GROUP("}) {
    for (std::size_t at = source.find(macro); at != std::string::npos; at = source.find(macro, at + 1)) {
      const std::size_t lineStart = source.rfind('\n', at) + 1;
      if (source.compare(lineStart, 7, "#define") == 0) continue;  // the macro's own definition
      if (at > 0 && (std::isalnum(static_cast<unsigned char>(source[at - 1])) || source[at - 1] == '_')) continue;
      const std::size_t body = source.find('{', at);
      ASSERT_NE(body, std::string::npos);
      const std::size_t first = source.find_first_not_of(" \t\r\n\\", body + 1);
      const std::string statement = source.substr(first, 32);
      const std::string name = source.substr(at, source.find(',', at) - at).substr(0, 60);
      EXPECT_TRUE(statement.rfind("DA_BUFFERS_INIT(", 0) == 0 || statement.rfind("DA_AFTER_PREVIOUS_KERNEL()", 0) == 0)
          << name << " starts with " << statement;
      ++kernels;
    }
  }
  EXPECT_GT(kernels, 40);  // the scan found the kernels
}
#endif

}  // namespace
}  // namespace backendtest
