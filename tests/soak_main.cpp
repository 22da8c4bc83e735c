// Soak: allocate / upload / convert / view+clone / export to DLPack / drop in a
// loop on several threads for N minutes, on one device. Reports the device's free
// memory every 30 s and at the end, and the library's live Allocation count (must
// return to its baseline). Memory must be flat: the library's caches (the CUDA
// pool keeps freed blocks for reuse, the OpenCL buffer cache) fill up to the
// loop's working set in the first seconds, so "flat" means the free memory at the
// end is no lower than after the first quarter of the run (at most one minute),
// within 64 MiB; a leak of the loop's allocations would be gigabytes.
//
//   soak_main MINUTES [THREADS=8] [DEVICE=cuda:0|opencl:N]
//
// Not a gtest (it runs for minutes); built and run by scripts/device/soak.sh.
// Exit status 0 when every result check passed and nothing leaked.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cinttypes>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "backend/fault_injection.hpp"
#include "devicearray/devicearray.hpp"
#include "devicearray/dlpack.hpp"

using namespace devicearray;

namespace {

ComputeDevice pickDevice(const std::string& spec) {
  if (spec.empty()) return ComputeDevice::defaultDevice();
  if (spec.rfind("cuda:", 0) == 0) return ComputeDevice::cuda(std::atoi(spec.c_str() + 5));
  if (spec.rfind("opencl:", 0) == 0) return ComputeDevice::opencl(std::atoi(spec.c_str() + 7));
  std::fprintf(stderr, "soak: device must be cuda:N or opencl:N, got '%s'\n", spec.c_str());
  std::exit(2);
}

double mib(std::size_t b) { return static_cast<double>(b) / (1024.0 * 1024.0); }

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: %s MINUTES [THREADS] [cuda:N|opencl:N]\n", argv[0]);
    return 2;
  }
  const double minutes = std::atof(argv[1]);
  const int threads = argc > 2 ? std::atoi(argv[2]) : 8;
  const ComputeDevice device = pickDevice(argc > 3 ? argv[3] : "");
  std::printf("soak: %s, %d threads, %.2f minutes\n", device.toString().c_str(), threads, minutes);

  // Warm up (kernels, colour tables, the backend's buffer cache) before the baseline.
  {
    const ColorRGBA c{1, 2, 3, 4};
    auto a = DeviceArray<ColorRGBA>::fromHost(&c, std::size_t{1}, device);
    (void)convert<ColorRGBAf>(a, device.sdkStreamOrQueue()).toHost();
  }
  synchronizeStream(device.sdkStreamOrQueue());
  const std::size_t freeBefore = device.freeMemory();
  const std::int64_t liveBefore = detail::liveAllocations();
  std::printf("soak: device free memory before: %zu bytes (%.1f MiB); live allocations %" PRId64 "\n", freeBefore,
              mib(freeBefore), liveBefore);

  const auto start = std::chrono::steady_clock::now();
  const auto deadline = start + std::chrono::duration<double, std::ratio<60>>(minutes);
  const auto warm = start + std::chrono::duration<double, std::ratio<60>>(std::min(1.0, minutes / 4));
  std::atomic<long long> iterations{0}, failures{0}, bytesMoved{0};
  std::atomic<std::size_t> freeWarm{0};
  std::thread monitor([&] {
    bool haveWarm = false;
    auto next = start + std::chrono::seconds(30);
    while (std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(std::chrono::milliseconds(200));
      const auto now = std::chrono::steady_clock::now();
      if (!haveWarm && now >= warm) {
        freeWarm = device.freeMemory();
        haveWarm = true;
        std::printf("soak: t=%.0fs free %.1f MiB (reference for flatness)\n",
                    std::chrono::duration<double>(now - start).count(), mib(freeWarm));
      }
      if (now >= next) {
        std::printf("soak: t=%.0fs free %.1f MiB, %lld iterations so far\n",
                    std::chrono::duration<double>(now - start).count(), mib(device.freeMemory()), iterations.load());
        std::fflush(stdout);
        next += std::chrono::seconds(30);
      }
    }
  });
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t) {
    pool.emplace_back([&, t] {
      try {
        Stream s(device);
        long long it = 0;
        while (std::chrono::steady_clock::now() < deadline) {
          // Sizes cycle from tiny to ~48 MiB so pools/caches grow, shrink and are reused.
          const int h = 16 + static_cast<int>((it * 37 + t * 101) % 1024);
          const int w = 16 + static_cast<int>((it * 53 + t * 7) % 1024);
          std::vector<PointXYZ> pts(static_cast<std::size_t>(h) * w);
          for (std::size_t i = 0; i < pts.size(); i += 97) pts[i] = PointXYZ{float(i), float(t), float(it)};
          auto a = DeviceArray<PointXYZ>::fromHost(pts.data(), h, w, device);
          auto b = convert<PointXYZW>(a, s);
          GpuMatND nd = b.toGpuMatND();
          GpuMatND view = nd({Range(h / 4, h / 2 + 1), Range(1, w - 1)});
          GpuMatND c = view.clone(s);
          DLManagedTensorVersioned* tensor = toDLPackVersioned(c);
          GpuMatND back = fromDLPack(tensor);
          // Check one sampled point per iteration (host reference: pts).
          const int y = h / 4, x = 1 + static_cast<int>(it % (w - 2));
          HostMat one;
          back({Range(0, 1), Range(x - 1, x), Range::all()}).download(one, s);  // DLPack: [R, C, 4]
          s.waitForCompletion();
          const float* p = reinterpret_cast<const float*>(one.data());
          const PointXYZ& ref = pts[static_cast<std::size_t>(y) * w + x];
          if (std::memcmp(p, &ref, sizeof(ref)) != 0 || p[3] != 1.0f) failures.fetch_add(1);
          bytesMoved.fetch_add(static_cast<long long>(a.sizeInBytes() + b.sizeInBytes() + c.totalMemSize()));
          ++it;
          iterations.fetch_add(1);
        }
      } catch (const std::exception& e) {
        std::fprintf(stderr, "soak: thread %d: %s\n", t, e.what());
        failures.fetch_add(1);
      }
    });
  }
  for (auto& th : pool) th.join();
  monitor.join();
  synchronizeStream(device.sdkStreamOrQueue());
  const std::size_t freeAfter = device.freeMemory();
  const std::int64_t liveAfter = detail::liveAllocations();
  std::printf("soak: %lld iterations (%d threads), %.1f GiB through the device, %lld failed checks\n",
              iterations.load(), threads, static_cast<double>(bytesMoved.load()) / (1 << 30), failures.load());
  std::printf("soak: device free memory after:  %zu bytes (%.1f MiB); live allocations %" PRId64 "\n", freeAfter,
              mib(freeAfter), liveAfter);
  std::printf("soak: free memory: start %.1f MiB, after warm-up %.1f MiB, end %.1f MiB; the caches hold %.1f MiB\n",
              mib(freeBefore), mib(freeWarm), mib(freeAfter), mib(freeBefore) - mib(freeAfter));
  const double drift = mib(freeWarm) - mib(freeAfter);
  std::printf("soak: free-memory drift since warm-up %.1f MiB (positive = less free at the end)\n", drift);
  const bool flat = drift < 64.0;
  const bool ok = failures.load() == 0 && liveAfter == liveBefore && flat;
  std::printf("soak: %s\n", ok ? "PASS" : "FAIL");
  return ok ? 0 : 1;
}
