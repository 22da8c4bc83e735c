// Backend interface: launching a shared kernel (src/kernels/selftest.h) by name,
// argument checks, work-group sizes, and launches from many threads at once.
#include <cstddef>
#include <cstring>
#include <exception>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "backend_fixture.hpp"

namespace backendtest {
namespace {

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
  KernelLaunch l;
  l.name = "da_selftest_axpy";
  l.workDims = 1;
  l.globalSize = {static_cast<std::size_t>(n), 1, 1};
  l.args = {KernelArg::i32(n), KernelArg::f32(2.5f), KernelArg::buf(bx.get(), xOff), KernelArg::buf(by.get(), yOff)};
  dev().launch(l, q());
  const Bytes got = read(*by, yOff, n * sizeof(float));
  std::vector<float> result(n);
  std::memcpy(result.data(), got.data(), got.size());
  for (int i = 0; i < n; ++i) ASSERT_EQ(result[static_cast<std::size_t>(i)], expected[static_cast<std::size_t>(i)]) << "index " << i;

  KernelLaunch unknown = l;
  unknown.name = "da_no_such_kernel";
  expectErrorCode(ErrorCode::Unsupported, [&] { dev().launch(unknown, q()); }, "unknown kernel");
  KernelLaunch missing = l;
  missing.args.pop_back();
  expectErrorCode(ErrorCode::InvalidArgument, [&] { dev().launch(missing, q()); }, "missing argument");
  // A fixed work-group size must divide a 1-D global size.
  KernelLaunch ragged = l;
  ragged.localSize = 64;
  ragged.globalSize = {65, 1, 1};
  expectErrorCode(ErrorCode::InvalidArgument, [&] { dev().launch(ragged, q()); }, "global size not a multiple");
  KernelLaunch twoD = l;
  twoD.localSize = 64;
  twoD.workDims = 2;
  twoD.globalSize = {64, 2, 1};
  expectErrorCode(ErrorCode::InvalidArgument, [&] { dev().launch(twoD, q()); }, "work-group size of a 2-D launch");
  // ... and one that does is honoured: the same axpy again, in groups of 64.
  KernelLaunch grouped = l;
  grouped.localSize = 64;
  grouped.globalSize = {(static_cast<std::size_t>(n) + 63) / 64 * 64, 1, 1};
  dev().launch(grouped, q());
  const Bytes again = read(*by, yOff, n * sizeof(float));
  std::memcpy(result.data(), again.data(), again.size());
  for (int i = 0; i < n; ++i)
    ASSERT_EQ(result[static_cast<std::size_t>(i)], expected[static_cast<std::size_t>(i)] + 2.5f * x[static_cast<std::size_t>(i)])
        << "index " << i;
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
          KernelLaunch l;
          l.name = "da_selftest_axpy";
          l.globalSize = {static_cast<std::size_t>(n), 1, 1};
          l.args = {KernelArg::i32(n), KernelArg::f32(static_cast<float>(t + 1)), KernelArg::buf(xs[t].get()),
                    KernelArg::buf(ys[t].get())};
          dev().launch(l, *queues[t]);
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

GTEST_ALLOW_UNINSTANTIATED_PARAMETERIZED_TEST(Backend);
INSTANTIATE_TEST_SUITE_P(AllDevices, Backend, testing::ValuesIn(allDevices()), DeviceParamName());

}  // namespace
}  // namespace backendtest
