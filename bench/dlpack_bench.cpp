// DLPack exchange costs on every device, in host time per call (DLPack export and
// import do no device work; export waits for pending library work, of which there
// is none here, so these are the fixed costs a zero-copy hand-over adds):
//   dlpack_export    toDLPackVersioned(DeviceArray) + the consumer calling its deleter
//   dlpack_import    fromDLPack<PointXYZ>(tensor) + dropping the result, which runs
//                    the producer's deleter
//   dlpack_roundtrip export, import of that tensor, release
// The array is a 1920x1200 PointXYZ frame ([1200, 1920, 3] float32).
#include <cstdint>
#include <string>

#include <devicearray/dlpack.hpp>

#include "bench_util.hpp"

namespace da = devicearray;

namespace {

constexpr int kHeight = 1200;
constexpr int kWidth = 1920;

void exportTensor(benchmark::State& state, da::ComputeDevice device) {
  const auto arr = da::DeviceArray<da::PointXYZ>::allocate(kHeight, kWidth, device);
  for (auto _ : state) {
    DLManagedTensorVersioned* t = da::toDLPackVersioned(arr);
    benchmark::DoNotOptimize(t->dl_tensor.data);
    t->deleter(t);
  }
}

// A producer's tensor as another library would hand it over: the fields are filled
// per call, like a producer building a fresh tensor, and its deleter only counts.
struct Producer {
  DLManagedTensorVersioned tensor{};
  std::int64_t shape[3] = {kHeight, kWidth, 3};
  std::int64_t strides[3] = {std::int64_t{kWidth} * 3, 3, 1};
  DLDevice dlDevice{};
  void* data = nullptr;
  std::uint64_t byteOffset = 0;
  std::int64_t released = 0;

  DLManagedTensorVersioned* make() {
    tensor.version = {1, 1};
    tensor.manager_ctx = this;
    tensor.deleter = [](DLManagedTensorVersioned* self) { ++static_cast<Producer*>(self->manager_ctx)->released; };
    tensor.flags = 0;
    tensor.dl_tensor = DLTensor{data, dlDevice, 3, DLDataType{kDLFloat, 32, 1}, shape, strides, byteOffset};
    return &tensor;
  }
};

void importTensor(benchmark::State& state, da::ComputeDevice device) {
  const auto arr = da::DeviceArray<da::PointXYZ>::allocate(kHeight, kWidth, device);
  Producer producer;
  {
    // The library's own export names the device exactly as its import expects.
    DLManagedTensorVersioned* t = da::toDLPackVersioned(arr);
    producer.dlDevice = t->dl_tensor.device;
    producer.data = t->dl_tensor.data;
    producer.byteOffset = t->dl_tensor.byte_offset;
    t->deleter(t);
  }
  for (auto _ : state) {
    const auto imported = da::fromDLPack<da::PointXYZ>(producer.make());
    benchmark::DoNotOptimize(imported.devicePointer());
  }
  if (producer.released != static_cast<std::int64_t>(state.iterations()))
    state.SkipWithError("dlpack_import: the producer's deleter did not run once per import");
}

void roundTrip(benchmark::State& state, da::ComputeDevice device) {
  const auto arr = da::DeviceArray<da::PointXYZ>::allocate(kHeight, kWidth, device);
  for (auto _ : state) {
    const auto back = da::fromDLPack<da::PointXYZ>(da::toDLPackVersioned(arr));
    benchmark::DoNotOptimize(back.devicePointer());
  }
}

}  // namespace

int main(int argc, char** argv) {
  for (const auto& device : da::ComputeDevice::all()) {
    const std::string tag = dabench::deviceTag(device);
    benchmark::RegisterBenchmark(("dlpack_export/" + tag).c_str(), exportTensor, device)->Unit(benchmark::kMicrosecond);
    benchmark::RegisterBenchmark(("dlpack_import/" + tag).c_str(), importTensor, device)->Unit(benchmark::kMicrosecond);
    benchmark::RegisterBenchmark(("dlpack_roundtrip/" + tag).c_str(), roundTrip, device)->Unit(benchmark::kMicrosecond);
  }
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
