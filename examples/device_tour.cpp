// device_tour: lists every device devicearray can use and round-trips a small
// 3-D array through each (upload, O(1) view, clone, download), checking the data.
#include <cstdio>
#include <cstring>
#include <vector>

#include <devicearray/devicearray.hpp>

namespace da = devicearray;

int main() {
  try {
    const auto devices = da::ComputeDevice::all();
    if (devices.empty()) {
      std::fprintf(stderr, "device_tour: no device (install an NVIDIA driver or pocl-opencl-icd)\n");
      return 1;
    }
    std::printf("default device: %s\n", da::ComputeDevice::defaultDevice().toString().c_str());
    int failures = 0;
    for (const auto& device : devices) {
      // A 4x5x6 float array with distinct values.
      da::HostMat host({4, 5, 6}, da::makeType(da::Depth::F32, 1));
      for (std::size_t i = 0; i < host.total(); ++i) host.ptr<float>()[i] = 0.5f * static_cast<float>(i) + 1.0f;

      da::GpuMatND gpu(host.size, host.type(), device);
      gpu.upload(host);
      da::GpuMatND view = gpu({da::Range(1, 3), da::Range::all(), da::Range(2, 5)});
      da::HostMat back;
      view.clone().download(back);

      bool ok = true;
      for (int a = 0; a < 2; ++a)
        for (int b = 0; b < 5; ++b)
          for (int c = 0; c < 3; ++c)
            ok &= *reinterpret_cast<float*>(back.ptr({a, b, c})) == *reinterpret_cast<float*>(host.ptr({a + 1, b, c + 2}));
      std::printf("%-60s %8.1f GiB  round trip of a 4x5x6 view: %s\n", device.toString().c_str(),
                  static_cast<double>(device.totalMemory()) / (1u << 30), ok ? "ok" : "MISMATCH");
      failures += ok ? 0 : 1;
    }
    return failures == 0 ? 0 : 1;
  } catch (const da::Error& e) {
    std::fprintf(stderr, "device_tour: error: %s\n", e.what());
    return 1;
  }
}
