// Format conversions on every device: each conversion family at a 1920x1200 frame
// and at 64M elements (GPUs only; a CPU OpenCL device would take minutes), plus the
// identity conversion (a plain copy) that bench/compare.py divides by, and the end to
// end cost of a 1920x1200 XYZ -> XYZW conversion that allocates its result.
//
// Names: convert_<From>_to_<To>/<device>/<elements>. Bandwidth counts the bytes
// read plus the bytes written (elements * (sizeof(From) + sizeof(To))), the same
// convention as core_bench's copies, so the figures compare directly.
#include <chrono>
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "bench_util.hpp"

namespace da = devicearray;

namespace {

constexpr int kFrameHeight = 1200;
constexpr int kFrameWidth = 1920;
constexpr std::int64_t kFrameElements = std::int64_t{kFrameHeight} * kFrameWidth;
constexpr std::int64_t kLargeElements = std::int64_t{1} << 26;  // 64M

// Source contents matter for the colour conversions (sRGB transfer function,
// clamping, NaN handling take data-dependent paths), so the sources hold varied,
// in-range values with a few missing points, as a camera frame does.
template <class F>
F sample(std::size_t i) {
  const auto u8 = [&](unsigned salt) { return static_cast<std::uint8_t>((i * 2654435761u + salt * 97u) >> 7); };
  const auto unit = [&](unsigned salt) { return static_cast<float>(u8(salt)) / 255.0f; };
  if constexpr (std::is_same_v<F, da::PointXYZ> || std::is_same_v<F, da::PointXYZW>) {
    // One point in 64 is missing (NaN), as holes in a structured-light frame.
    const float nan = std::numeric_limits<float>::quiet_NaN();
    const bool missing = i % 64 == 63;
    const float x = missing ? nan : static_cast<float>(i % 1920) - 960.0f;
    const float y = missing ? nan : static_cast<float>((i / 1920) % 1200) - 600.0f;
    const float z = missing ? nan : 800.0f + 400.0f * unit(3);
    if constexpr (std::is_same_v<F, da::PointXYZ>) return F{x, y, z};
    else return F{x, y, z, 1.0f};
  } else if constexpr (std::is_same_v<F, da::ColorRGBAf>) {
    return F{unit(1), unit(2), unit(3), 1.0f};
  } else if constexpr (F::channels == 4) {
    F c{};
    auto* v = reinterpret_cast<std::uint8_t*>(&c);
    v[0] = u8(1), v[1] = u8(2), v[2] = u8(3), v[3] = 255;
    return c;
  } else {
    F c{};
    auto* v = reinterpret_cast<std::uint8_t*>(&c);
    v[0] = u8(1), v[1] = u8(2), v[2] = u8(3);
    return c;
  }
}

// The frame size is organized (1200 x 1920), the large size an unorganized list:
// both layouts are contiguous, so the kernels see the same work per element.
template <class F>
da::DeviceArray<F> makeSource(std::int64_t elements, const da::ComputeDevice& device) {
  std::vector<F> host(static_cast<std::size_t>(elements));
  for (std::size_t i = 0; i < host.size(); ++i) host[i] = sample<F>(i);
  if (elements == kFrameElements) return da::DeviceArray<F>::fromHost(host.data(), kFrameHeight, kFrameWidth, device);
  return da::DeviceArray<F>::fromHost(host.data(), host.size(), device);
}

template <class F>
da::DeviceArray<F> makeDestination(std::int64_t elements, const da::ComputeDevice& device) {
  if (elements == kFrameElements) return da::DeviceArray<F>::allocate(kFrameHeight, kFrameWidth, device);
  return da::DeviceArray<F>::allocate(static_cast<std::size_t>(elements), device);
}

// convertInto a preallocated destination: the kernel alone, timed with device events
// (and, at frame size on GPUs, enqueued ahead of the device: queued_us).
template <class To, class From>
void convertInto(benchmark::State& state, da::ComputeDevice device) {
  const std::int64_t elements = state.range(0);
  const da::DeviceArray<From> src = makeSource<From>(elements, device);
  const da::DeviceArray<To> dst = makeDestination<To>(elements, device);
  const da::DeviceArrayView<To> view = dst.view();
  da::Stream stream(device);
  auto body = [&] { da::convertInto(view, src, stream); };
  dabench::timeOnDevice(state, stream, body);
  // At frame size the span above includes the host's time to enqueue the call, which
  // a 10 us kernel does not hide; queued_us is the device's own time.
  if (elements == kFrameElements && dabench::isGpu(device)) dabench::timeQueued(state, stream, body);
  state.SetBytesProcessed(state.iterations() * elements * static_cast<std::int64_t>(sizeof(From) + sizeof(To)));
  state.counters["elements"] = static_cast<double>(elements);
}

// What a frame loop pays for convert<PointXYZW>(xyz, stream): the stream-ordered
// allocation, the kernel, and waiting for the result, measured on the host clock
// from the call to the result being ready. The previous frame's result is released
// (stream-ordered) outside the timed region, as it would be while the next frame is
// being captured. The device-event time of the same span is reported as device_us.
void convertXyzToXyzwWithAllocation(benchmark::State& state, da::ComputeDevice device) {
  const da::DeviceArray<da::PointXYZ> src = makeSource<da::PointXYZ>(kFrameElements, device);
  da::Stream stream(device);
  { const auto warm = da::convert<da::PointXYZW>(src, stream); stream.waitForCompletion(); }
  double deviceSeconds = 0;
  for (auto _ : state) {
    da::Event start(device), stop(device);
    const auto t0 = std::chrono::steady_clock::now();
    start.record(stream);
    da::DeviceArray<da::PointXYZW> out = da::convert<da::PointXYZW>(src, stream);
    stop.record(stream);
    stop.waitForCompletion();
    const auto t1 = std::chrono::steady_clock::now();
    state.SetIterationTime(std::chrono::duration<double>(t1 - t0).count());
    deviceSeconds += static_cast<double>(da::Event::elapsedTime(start, stop)) * 1e-3;
    benchmark::DoNotOptimize(out.devicePointer());
    out = {};  // outside [t0, t1]: manual time counts only the span above
  }
  state.SetBytesProcessed(state.iterations() * kFrameElements *
                          static_cast<std::int64_t>(sizeof(da::PointXYZ) + sizeof(da::PointXYZW)));
  state.counters["device_us"] =
      state.iterations() > 0 ? deviceSeconds * 1e6 / static_cast<double>(state.iterations()) : 0.0;
  state.counters["elements"] = static_cast<double>(kFrameElements);
}

template <class To, class From>
void registerConversion(const std::string& name, const da::ComputeDevice& device, bool large) {
  auto* b = benchmark::RegisterBenchmark(("convert_" + name + "/" + dabench::deviceTag(device)).c_str(),
                                         convertInto<To, From>, device);
  b->UseManualTime()->Arg(kFrameElements);
  if (large) b->Arg(kLargeElements);
}

}  // namespace

int main(int argc, char** argv) {
  for (const auto& device : da::ComputeDevice::all()) {
    const bool gpu = dabench::isGpu(device);
    // The identity conversion of 16-byte elements: the copy bandwidth every family is compared with.
    registerConversion<da::PointXYZW, da::PointXYZW>("XYZW_to_XYZW", device, gpu);
    registerConversion<da::PointXYZW, da::PointXYZ>("XYZ_to_XYZW", device, gpu);
    registerConversion<da::PointXYZ, da::PointXYZW>("XYZW_to_XYZ", device, gpu);
    registerConversion<da::PointZ, da::PointXYZ>("XYZ_to_Z", device, gpu);
    registerConversion<da::ColorBGR, da::ColorRGBA>("RGBA_to_BGR", device, gpu);
    registerConversion<da::ColorRGBAf, da::ColorRGBA_SRGB>("RGBA_SRGB_to_RGBAf", device, gpu);
    registerConversion<da::ColorRGBA_SRGB, da::ColorRGBAf>("RGBAf_to_RGBA_SRGB", device, gpu);
    registerConversion<da::ColorBGRA, da::ColorRGB>("RGB_to_BGRA", device, gpu);
    benchmark::RegisterBenchmark(("convert_alloc_XYZ_to_XYZW/" + dabench::deviceTag(device)).c_str(),
                                 convertXyzToXyzwWithAllocation, device)
        ->UseManualTime()
        ->Arg(kFrameElements);
  }
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
