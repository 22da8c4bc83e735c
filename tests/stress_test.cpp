// Concurrency stress: many threads copying, viewing, converting, exporting to
// DLPack and dropping handles to SHARED arrays on several streams at once, with
// every result checked against a host reference computed here.
//
// Why: the ordering model (backend.hpp: per-allocation events, stream-ordered
// release) and the reference-counted storage are shared mutable state; races
// there show up as wrong bytes, use-after-free or leaks only under contention.
// This suite runs in the normal test build (seconds) and under ThreadSanitizer
// in scripts/sanitize.sh. DATEST_STRESS_ITERATIONS / DATEST_STRESS_THREADS
// override the bounded defaults (8 threads x 12 iterations).
#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "backend/fault_injection.hpp"
#include "devicearray/devicearray.hpp"
#include "devicearray/dlpack.hpp"
#include "test_support.hpp"

namespace {

using namespace devicearray;

int envInt(const char* name, int fallback) {
  const char* v = std::getenv(name);
  if (v == nullptr || *v == '\0') return fallback;
  const int n = std::atoi(v);
  return n > 0 ? n : fallback;
}

/// Failures from worker threads, reported once on the main thread.
class Failures {
 public:
  void add(const std::string& what) {
    std::lock_guard<std::mutex> lock(mutex_);
    if (messages_.size() < 20) messages_.push_back(what);
    ++count_;
  }
  void report() const {
    std::lock_guard<std::mutex> lock(mutex_);
    EXPECT_EQ(count_, 0u) << "worker failures; first ones:\n" << [&] {
      std::string s;
      for (const auto& m : messages_) s += "  " + m + "\n";
      return s;
    }();
  }

 private:
  mutable std::mutex mutex_;
  std::vector<std::string> messages_;
  std::size_t count_ = 0;
};

// Host references, built independently of the library.
std::vector<PointXYZ> makePoints(int h, int w) {
  std::vector<PointXYZ> p(static_cast<std::size_t>(h) * static_cast<std::size_t>(w));
  for (std::size_t i = 0; i < p.size(); ++i) {
    const float f = static_cast<float>(i);
    p[i] = (i % 17 == 5) ? PointXYZ{NAN, NAN, NAN} : PointXYZ{f * 0.5f, -f, 1000.0f + f};
  }
  return p;
}

std::vector<ColorRGBA> makeColors(std::size_t n) {
  std::vector<ColorRGBA> c(n);
  for (std::size_t i = 0; i < n; ++i)
    c[i] = ColorRGBA{static_cast<std::uint8_t>(i * 7), static_cast<std::uint8_t>(i * 13 + 1),
                     static_cast<std::uint8_t>(i * 29 + 2), static_cast<std::uint8_t>(255 - i % 256)};
  return c;
}

bool sameBits(float a, float b) { return std::memcmp(&a, &b, sizeof(float)) == 0; }

/// Builds the library's per-device caches (colour tables) so they are not
/// counted as allocations that outlive their handles.
void warmUpCaches(const ComputeDevice& device) {
  const ColorRGBA one{1, 2, 3, 4};
  auto a = DeviceArray<ColorRGBA>::fromHost(&one, std::size_t{1}, device);
  (void)convert<ColorBGRA>(a, device.sdkStreamOrQueue()).toHost();
}

class Stress : public testing::TestWithParam<ComputeDevice> {};

TEST_P(Stress, ThreadsSharingArraysAcrossStreamsSeeCorrectDataAndLeakNothing) {
  const ComputeDevice device = GetParam();
  const int threads = envInt("DATEST_STRESS_THREADS", 8);
  const int iterations = envInt("DATEST_STRESS_ITERATIONS", 12);
  constexpr int H = 24, W = 40;
  const std::vector<int> ndShape{6, 20, 36};
  const int ndType = makeType(Depth::U16, 1);

  warmUpCaches(device);
  const std::int64_t liveBefore = detail::liveAllocations();
  const auto points = makePoints(H, W);
  const auto colors = makeColors(static_cast<std::size_t>(H) * W);
  const HostMat ndHost = datest::randomHostMat(ndShape, ndType, 77);
  const auto ndBytes = datest::packedBytes(ndHost);
  Failures failures;
  std::atomic<int> opsDone{0};

  {
    // The shared arrays; the main thread drops its handles while workers run,
    // so the last reference goes away on some worker thread.
    auto sharedPoints = std::make_unique<DeviceArray<PointXYZ>>(DeviceArray<PointXYZ>::fromHost(points.data(), H, W, device));
    auto sharedColors = std::make_unique<DeviceArray<ColorRGBA>>(
        DeviceArray<ColorRGBA>::fromHost(colors.data(), colors.size(), device));
    auto sharedNd = std::make_unique<GpuMatND>(ndShape, ndType, device);
    sharedNd->upload(ndHost);
    Stream sharedStream(device);  // several threads enqueue on this one at once

    std::atomic<int> ready{0};
    std::vector<std::thread> pool;
    for (int t = 0; t < threads; ++t) {
      pool.emplace_back([&, t, pts = *sharedPoints, cols = *sharedColors, nd = *sharedNd, shared = sharedStream]() mutable {
        auto check = [&](bool ok, const std::string& what) {
          if (!ok) failures.add("thread " + std::to_string(t) + ": " + what);
        };
        try {
          Stream own(device);
          ready.fetch_add(1);
          for (int it = 0; it < iterations; ++it) {
            Stream& s = (it + t) % 3 == 0 ? shared : own;

            // 1. Copy: clone of the shared N-d array on s, downloaded on s.
            {
              GpuMatND c = nd.clone(s);
              HostMat h;
              c.download(h, s);
              s.waitForCompletion();
              check(datest::bytesEqual(ndBytes, datest::packedBytes(h), 2) == testing::AssertionSuccess(),
                    "clone+download differs");
            }
            // 2. View: a plane / ROI of the shared array, cloned (blocking) and checked.
            {
              const int plane = (it + t) % ndShape[0];
              GpuMatND v = nd({Range(plane, plane + 1), Range(2, 17), Range(t % 5, 30)});
              const auto got = datest::downloadPacked(v.clone());
              const auto want = datest::subArrayBytes(ndBytes, ndShape, 2, {plane, 2, t % 5}, {1, 15, 30 - t % 5});
              check(got == want, "view clone differs (plane " + std::to_string(plane) + ")");
            }
            // 3. Convert points on s; read back with a blocking call (ordering rule).
            {
              DeviceArray<PointXYZW> xyzw = convert<PointXYZW>(pts, s);
              const auto host = xyzw.toHost();
              bool ok = host.size() == points.size();
              for (std::size_t i = 0; ok && i < host.size(); ++i)
                ok = sameBits(host[i].x, points[i].x) && sameBits(host[i].y, points[i].y) &&
                     sameBits(host[i].z, points[i].z) && host[i].w == 1.0f;
              check(ok, "convert<PointXYZW> differs");
            }
            // 4. Convert colours into a thread-private array through a view.
            {
              auto bgra = DeviceArray<ColorBGRA>::allocate(cols.size(), device);
              convertInto(bgra.view(), cols, s);
              std::vector<ColorBGRA> host(cols.size());
              bgra.copyToHost(host.data(), host.size() * sizeof(ColorBGRA), s);
              s.waitForCompletion();
              bool ok = true;
              for (std::size_t i = 0; ok && i < host.size(); ++i)
                ok = host[i].b == colors[i].b && host[i].g == colors[i].g && host[i].r == colors[i].r &&
                     host[i].a == colors[i].a;
              check(ok, "convertInto<ColorBGRA> differs");
            }
            // 5. DLPack: export the shared points, import them back, drop in either order.
            {
              DLManagedTensorVersioned* tensor = toDLPackVersioned(pts);
              DeviceArray<PointXYZ> back = fromDLPack<PointXYZ>(tensor);
              check(back.devicePointer() == pts.devicePointer(), "DLPack round trip is not zero-copy");
              if (it % 2 == 0) {
                const auto host = back.toHost();
                bool ok = host.size() == points.size();
                for (std::size_t i = 0; ok && i < host.size(); ++i) ok = sameBits(host[i].z, points[i].z);
                check(ok, "DLPack import reads different points");
              }
              DLManagedTensor* legacy = toDLPack(nd);
              GpuMatND imported = fromDLPack(legacy);
              check(imported.size == nd.size, "legacy DLPack shape differs");
            }
            // 6. Drop this thread's handles to the shared arrays part-way through.
            if (it == iterations / 2 && t % 2 == 1) {
              pts = DeviceArray<PointXYZ>::fromHost(points.data(), H, W, device);
              nd = nd.clone(s);  // a private copy from now on: same bytes, new storage
            }
            opsDone.fetch_add(1);
          }
          own.waitForCompletion();
        } catch (const std::exception& e) {
          failures.add("thread " + std::to_string(t) + " threw: " + e.what());
        }
      });
    }
    while (ready.load() < threads) std::this_thread::yield();
    sharedPoints.reset();
    sharedColors.reset();
    sharedNd.reset();
    for (auto& th : pool) th.join();
    sharedStream.waitForCompletion();
  }
  failures.report();
  EXPECT_EQ(opsDone.load(), threads * iterations);
  EXPECT_EQ(detail::liveAllocations(), liveBefore) << "allocations outlived every handle";
}

TEST_P(Stress, ConcurrentAllocateAndDropOnSeparateStreamsReturnsEveryAllocation) {
  const ComputeDevice device = GetParam();
  const int threads = envInt("DATEST_STRESS_THREADS", 8);
  const int iterations = envInt("DATEST_STRESS_ITERATIONS", 12) * 4;
  const std::int64_t liveBefore = detail::liveAllocations();
  Failures failures;
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t) {
    pool.emplace_back([&, t] {
      try {
        Stream s(device);
        std::vector<GpuMatND> keep;
        for (int it = 0; it < iterations; ++it) {
          // Sizes vary so the backend's buffer cache is hit, missed and evicted.
          const int n = 1 + ((t * 131 + it * 17) % 4096);
          GpuMatND a({n}, makeType(Depth::U8, 1), device);
          GpuMat header = a.createGpuMatHeader();
          header.setTo(Scalar{static_cast<double>((t + it) % 256)}, s);
          GpuMatND b = a.clone(s);
          keep.push_back(b);
          if (keep.size() > 3) keep.erase(keep.begin());  // drop while work may be in flight
          if (it % 8 == 7) {
            HostMat h;
            b.download(h, s);
            s.waitForCompletion();
            const auto bytes = datest::packedBytes(h);
            const bool ok = std::all_of(bytes.begin(), bytes.end(),
                                        [&](std::uint8_t v) { return v == static_cast<std::uint8_t>((t + it) % 256); });
            if (!ok) failures.add("thread " + std::to_string(t) + ": setTo+clone bytes differ at iteration " +
                                  std::to_string(it));
          }
        }
      } catch (const std::exception& e) {
        failures.add("thread " + std::to_string(t) + " threw: " + e.what());
      }
    });
  }
  for (auto& th : pool) th.join();
  failures.report();
  EXPECT_EQ(detail::liveAllocations(), liveBefore);
}

// Regression (found by the test above): a header made by createGpuMatHeader()
// did not inherit the ordering of its parent's storage, so work through the
// header on another stream could overtake the previous owner's pending writes to
// a recycled buffer, which then overwrote the header's result.
TEST_P(Stress, HeaderOfRecycledBufferWaitsForThePreviousOwnersWork) {
  const ComputeDevice device = GetParam();
  const int n = 1 << 22;  // 4 MiB: long enough on PoCL that the first fill is still running
  Stream writer(device);
  Stream reader(device);
  for (int round = 0; round < 2; ++round) {
    {
      GpuMatND old({n}, makeType(Depth::U8, 1), device);
      old.createGpuMatHeader().setTo(Scalar{1.0}, writer);  // a slow write on `writer`
      // Ordered on the real storage (after the fill on the in-order queue), so the
      // buffer goes back to the cache with this work pending.
      (void)old.clone(writer);
    }
    GpuMatND fresh({n}, makeType(Depth::U8, 1), device);  // likely the recycled buffer
    GpuMat header = fresh.createGpuMatHeader();
    header.setTo(Scalar{static_cast<double>(7 + round)}, reader);
    HostMat out;
    fresh.download(out, reader);
    reader.waitForCompletion();
    const auto bytes = datest::packedBytes(out);
    const auto bad = std::count_if(bytes.begin(), bytes.end(),
                                   [&](std::uint8_t v) { return v != static_cast<std::uint8_t>(7 + round); });
    EXPECT_EQ(bad, 0) << "round " << round << ": bytes of the previous owner's write survived";
  }
}

DATEST_INSTANTIATE_OVER_DEVICES(Stress);

}  // namespace
