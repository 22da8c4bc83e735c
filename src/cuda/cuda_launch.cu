// The shared-kernel registry (kernel_registry.hpp) and CudaDevice::doLaunch.
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <functional>
#include <limits>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "cuda/cuda_device.hpp"
#include "cuda/kernel_registry.hpp"

namespace devicearray::detail::cuda {
namespace {

struct KernelEntry {
  const void* function = nullptr;
  const ParamKind* params = nullptr;
  int paramCount = 0;
  bool duplicate = false;
};

/// Hashes names as string_views, so a launch finds its kernel without making a string.
struct NameHash {
  using is_transparent = void;
  std::size_t operator()(std::string_view name) const noexcept { return std::hash<std::string_view>{}(name); }
};

struct KernelTable {
  std::mutex mutex;
  std::unordered_map<std::string, KernelEntry, NameHash, std::equal_to<>> kernels;
  std::vector<const void*> preloads;  ///< kernels launched directly, not by name
};

KernelTable& kernelTable() {
  // Leaked: registrations run during static initialization of other translation
  // units and launches may happen during static destruction.
  static KernelTable* table = new KernelTable;
  return *table;
}

const char* kindName(ParamKind k) {
  switch (k) {
    case ParamKind::pointer: return "buffer";
    case ParamKind::i32: return "i32";
    case ParamKind::u32: return "u32";
    case ParamKind::i64: return "i64";
    case ParamKind::u64: return "u64";
    case ParamKind::f32: return "f32";
    case ParamKind::f64: return "f64";
    case ParamKind::unsupported: break;
  }
  return "unsupported type";
}

ParamKind kindOf(KernelArg::Kind k) {
  switch (k) {
    case KernelArg::Kind::buffer: return ParamKind::pointer;
    case KernelArg::Kind::i32: return ParamKind::i32;
    case KernelArg::Kind::u32: return ParamKind::u32;
    case KernelArg::Kind::i64: return ParamKind::i64;
    case KernelArg::Kind::u64: return ParamKind::u64;
    case KernelArg::Kind::f32: return ParamKind::f32;
    case KernelArg::Kind::f64: return ParamKind::f64;
  }
  return ParamKind::unsupported;
}

/// Storage for one marshalled argument; cudaLaunchKernel reads as many bytes as
/// the kernel's parameter has, from the start of the slot.
union ArgSlot {
  void* pointer;
  std::int32_t i32;
  std::uint32_t u32;
  std::int64_t i64;
  std::uint64_t u64;
  float f32;
  double f64;
};

}  // namespace

bool registerKernel(const char* name, const void* function, const ParamKind* params, int paramCount) noexcept {
  try {
    KernelTable& table = kernelTable();
    std::lock_guard<std::mutex> lock(table.mutex);
    auto [it, inserted] = table.kernels.try_emplace(name, KernelEntry{function, params, paramCount, false});
    if (!inserted && it->second.function != function) it->second.duplicate = true;
    return inserted;
  } catch (...) {
    return false;  // out of memory during static init: the launch reports the name as unknown
  }
}

bool registerPreload(const void* function) noexcept {
  try {
    KernelTable& table = kernelTable();
    std::lock_guard<std::mutex> lock(table.mutex);
    table.preloads.push_back(function);
    return true;
  } catch (...) {
    return false;  // then it loads lazily at its first launch
  }
}

void loadKernels() noexcept {
  std::vector<const void*> functions;
  try {
    KernelTable& table = kernelTable();
    std::lock_guard<std::mutex> lock(table.mutex);
    functions = table.preloads;
    for (const auto& [name, entry] : table.kernels) functions.push_back(entry.function);
  } catch (...) {
    return;
  }
  // cudaFuncGetAttributes is CUDA's documented way to load a kernel without launching it.
  for (const void* f : functions) {
    cudaFuncAttributes attributes{};
    if (cudaFuncGetAttributes(&attributes, f) != cudaSuccess) (void)cudaGetLastError();
  }
}

const CudaDevice::LaunchTraits& CudaDevice::launchTraitsOf(const void* kernel, const char* name) {
  {
    std::lock_guard<std::mutex> lock(launchTraitsMutex_);
    auto it = launchTraits_.find(kernel);
    if (it != launchTraits_.end()) return it->second;
  }
  LaunchTraits traits;
  int minGrid = 0;
  cudaError_t err = cudaOccupancyMaxPotentialBlockSize(&minGrid, &traits.blockSize, kernel, 0, 0);
  if (err != cudaSuccess)
    throwCudaError((std::string("launch(") + name + "): cudaOccupancyMaxPotentialBlockSize").c_str(), err);
  traits.blockSize = std::max(traits.blockSize, 1);
  // Only code built for sm_90 or later waits for the kernel before it
  // (DA_AFTER_PREVIOUS_KERNEL); PTX of an older architecture, compiled for this GPU at
  // load time, does not, so its launches keep the stream's order.
  cudaFuncAttributes attributes{};
  err = cudaFuncGetAttributes(&attributes, kernel);
  if (err != cudaSuccess) throwCudaError((std::string("launch(") + name + "): cudaFuncGetAttributes").c_str(), err);
  const int built = attributes.ptxVersion > 0 ? std::min(attributes.ptxVersion, attributes.binaryVersion)
                                              : attributes.binaryVersion;
  traits.dependent = dependentLaunch_ && built >= 90;
  std::lock_guard<std::mutex> lock(launchTraitsMutex_);
  return launchTraits_.emplace(kernel, traits).first->second;  // unordered_map: references stay valid
}

void CudaDevice::doLaunch(const KernelLaunch& launch, QueueImpl& q) {
  cudaStream_t stream = streamOf(q, "launch");
  if (launch.name == nullptr) fail(ErrorCode::InvalidArgument, "launch: the kernel name is null");
  const std::string_view name = launch.name;
  // Every launch of every frame passes here: messages are formatted only when one throws.
  const auto where = [&] { return "launch(" + std::string(name) + ")"; };
  KernelEntry entry;
  {
    KernelTable& table = kernelTable();
    std::lock_guard<std::mutex> lock(table.mutex);
    auto it = table.kernels.find(name);
    if (it == table.kernels.end())
      fail(ErrorCode::Unsupported,
           "launch: no CUDA kernel named '" + std::string(name) + "' is registered (DA_CUDA_REGISTER)");
    entry = it->second;
  }
  if (entry.duplicate)
    fail(ErrorCode::InvalidState, where() + ": two different kernels are registered under this name");
  if (launch.workDims < 1 || launch.workDims > 3)
    fail(ErrorCode::InvalidArgument, where() + ": workDims is " + std::to_string(launch.workDims) + "; expected 1..3");
  if (static_cast<int>(launch.args.size()) != entry.paramCount)
    fail(ErrorCode::InvalidArgument, where() + ": " + std::to_string(launch.args.size()) +
                                         " arguments given; the kernel takes " + std::to_string(entry.paramCount));

  // The kernels' own parameter lists are short: their slots stay on the stack.
  constexpr std::size_t kStackArgs = 48;
  ArgSlot stackSlots[kStackArgs];
  void* stackPointers[kStackArgs];
  std::vector<ArgSlot> heapSlots;
  std::vector<void*> heapPointers;
  ArgSlot* slots = stackSlots;
  void** pointers = stackPointers;
  if (launch.args.size() > kStackArgs) {
    heapSlots.resize(launch.args.size());
    heapPointers.resize(launch.args.size());
    slots = heapSlots.data();
    pointers = heapPointers.data();
  }
  for (std::size_t i = 0; i < launch.args.size(); ++i) {
    const KernelArg& arg = launch.args[i];
    const ParamKind want = entry.params[i];
    if (want == ParamKind::unsupported)
      fail(ErrorCode::Unsupported, where() + ": parameter " + std::to_string(i) +
                                       " has a type launch() cannot pass (see kernel_registry.hpp)");
    if (kindOf(arg.kind) != want)
      fail(ErrorCode::InvalidArgument, where() + ": argument " + std::to_string(i) + " is " +
                                           kindName(kindOf(arg.kind)) + "; the kernel parameter is " + kindName(want));
    ArgSlot& slot = slots[i];
    slot.u64 = 0;
    switch (arg.kind) {
      case KernelArg::Kind::buffer: {
        if (arg.buffer == nullptr)
          fail(ErrorCode::InvalidArgument, where() + ": buffer argument " + std::to_string(i) + " is null");
        if (arg.buffer->bytes() != 0 && arg.offset > arg.buffer->bytes())
          fail(ErrorCode::OutOfRange, where() + ": buffer argument " + std::to_string(i) + " has offset " +
                                          std::to_string(arg.offset) + " beyond its " +
                                          std::to_string(arg.buffer->bytes()) + " bytes");
        if (arg.buffer->device().get() != this)
          fail(ErrorCode::InvalidArgument, where() + ": buffer argument " + std::to_string(i) + " belongs to " +
                                               ComputeDevice(arg.buffer->device()).toString() + ", not to " +
                                               label());
        slot.pointer = address(MemRef::dev(arg.buffer, arg.offset), "launch");
        break;
      }
      case KernelArg::Kind::i32: slot.i32 = arg.value.i32; break;
      case KernelArg::Kind::u32: slot.u32 = arg.value.u32; break;
      case KernelArg::Kind::i64: slot.i64 = arg.value.i64; break;
      case KernelArg::Kind::u64: slot.u64 = arg.value.u64; break;
      case KernelArg::Kind::f32: slot.f32 = arg.value.f32; break;
      case KernelArg::Kind::f64: slot.f64 = arg.value.f64; break;
    }
    pointers[i] = &slot;
  }

  launch.checkWorkGroup("launch", 1024);  // CUDA's limit on threads per block
  for (int d = 0; d < launch.workDims; ++d)
    if (launch.globalSize[d] == 0) return;  // empty index space: nothing to run

  DeviceGuard guard(ordinal_);
  // The occupancy-optimal 1-D block size doubles as the thread budget of 2-/3-D
  // blocks, which are 32 wide so rows of an image stay coalesced.
  const LaunchTraits& traits = launchTraitsOf(entry.function, launch.name);
  const int budget = launch.localSize != 0 ? static_cast<int>(launch.localSize) : traits.blockSize;
  dim3 block(1, 1, 1);
  if (launch.workDims == 1) {
    block.x = static_cast<unsigned>(budget);
  } else {
    block.x = static_cast<unsigned>(std::min(budget, 32));
    const int rows = std::max(1, budget / static_cast<int>(block.x));
    if (launch.workDims == 2) {
      block.y = static_cast<unsigned>(std::min(rows, 8));
    } else {
      block.y = static_cast<unsigned>(std::min(rows, 4));
      block.z = static_cast<unsigned>(std::max(1, std::min(2, rows / static_cast<int>(block.y))));
    }
  }
  const unsigned blockDims[3] = {block.x, block.y, block.z};
  const std::uint64_t limits[3] = {static_cast<std::uint64_t>(std::numeric_limits<int>::max()), 65535, 65535};
  unsigned gridDims[3] = {1, 1, 1};
  for (int d = 0; d < launch.workDims; ++d) {
    const std::uint64_t g = (static_cast<std::uint64_t>(launch.globalSize[d]) + blockDims[d] - 1) / blockDims[d];
    if (g > limits[d])
      fail(ErrorCode::Unsupported, where() + ": global size " + std::to_string(launch.globalSize[d]) + " along axis " +
                                       std::to_string(d) + " needs " + std::to_string(g) +
                                       " blocks; CUDA allows " + std::to_string(limits[d]));
    gridDims[d] = static_cast<unsigned>(g);
  }
  // A dependent launch lets the kernel's blocks be scheduled as soon as every block of
  // the kernel before it has started (each kernel says so after its wait), instead of
  // after that kernel's end: the kernels of a frame are short, and the gap between two
  // dependent launches was as long as many of them.
  const LaunchConfig config(dim3(gridDims[0], gridDims[1], gridDims[2]), block, stream, traits.dependent);
  const cudaError_t err = cudaLaunchKernelExC(config.get(), entry.function, pointers);
  if (err != cudaSuccess) throwCudaError((where() + ": cudaLaunchKernelExC").c_str(), err);
}

}  // namespace devicearray::detail::cuda
