// Registry of shared kernels for the CUDA backend's DeviceImpl::launch.
//
// A kernel is written once in src/kernels/NAME.h with the macros of
// src/kernels/prelude.h, its parameters declared once as a list in a header of
// src/backend/ that also declares its signature type (kernel_params.h,
// kernel_signature.hpp). To make it launchable on CUDA, register it from a .cu file of
// src/cuda/, at namespace scope:
//
//   #include "kernels/prelude.h"
//   #include "kernels/scale.h"        // DA_KERNEL(da_scale)(DA_PARAMS(DA_SCALE_PARAMS))
//   #include "cuda/kernel_registry.hpp"
//
//   DA_CUDA_REGISTER(da_scale);
//
// and launch it through the backend-agnostic interface, from core or point-cloud code:
//
//   launch<kernels::da_scale>(queue, LaunchGeometry::items(n), n, 2.f, BufferRef{allocation, byteOffset});
//
// Registration does not compile unless the __global__ function's parameters are those
// of the signature type of the same name (a buffer of T is a T*), so the kernel and its
// host callers cannot disagree. It also records the parameter kinds: an untyped
// KernelLaunch is checked against them (count and kind; InvalidArgument on a mismatch
// instead of launching with a malformed argument block). Parameter types map as: any
// pointer (DA_BUFFER) <- KernelArg::buf; 32-bit signed / unsigned integers <- i32 / u32;
// 64-bit (long, long long, da_i64) <- i64 / u64; float <- f32; double <- f64. Other
// parameter types cannot be launched. Registering two different kernels under one
// name makes launches of that name fail with InvalidState (static-init order would
// otherwise pick one silently).
#pragma once

#include <cstdint>
#include <type_traits>

namespace devicearray::detail::cuda {

/// How a kernel parameter is passed (mirrors KernelArg::Kind, plus "cannot").
enum class ParamKind : unsigned char { pointer, i32, u32, i64, u64, f32, f64, unsupported };

template <class T>
constexpr ParamKind paramKindOf() {
  using U = std::remove_cv_t<T>;
  if constexpr (std::is_pointer_v<U>) return ParamKind::pointer;
  else if constexpr (std::is_same_v<U, float>) return ParamKind::f32;
  else if constexpr (std::is_same_v<U, double>) return ParamKind::f64;
  else if constexpr (std::is_integral_v<U> && !std::is_same_v<U, bool> && sizeof(U) == 4)
    return std::is_signed_v<U> ? ParamKind::i32 : ParamKind::u32;
  else if constexpr (std::is_integral_v<U> && sizeof(U) == 8)
    return std::is_signed_v<U> ? ParamKind::i64 : ParamKind::u64;
  else return ParamKind::unsupported;
}

/// Adds `function` (a __global__ function's host stub) under `name`. Called at
/// static-init time; never throws. Returns true when the name was new.
bool registerKernel(const char* name, const void* function, const ParamKind* params, int paramCount) noexcept;

/// Adds a kernel that is not launched by name (the copy engine's templates, the
/// depth conversions) to the set loadKernels() loads. Static-init time; never throws.
bool registerPreload(const void* function) noexcept;

/// Loads every kernel of the library (registered by name or with registerPreload)
/// on the current device. CUDA loads kernels lazily by default (CUDA_MODULE_LOADING
/// =LAZY), and loading one may synchronize the context: a first launch would then
/// block the host until the user's running kernels finish, breaking the promise
/// that stream overloads never block. CudaDevice calls this once per device when
/// it makes its first queue. Failures are left for the launch to report.
void loadKernels() noexcept;

/// Registers `function` under the name of `Signature` (DA_KERNEL_SIGNATURE), whose
/// parameters it must have.
template <class Signature, class... Args>
bool registerKernelFunction(void (*function)(Args...)) noexcept {
  static_assert(std::is_same_v<void(Args...), typename Signature::Params::CudaFunction>,
                "the kernel's parameters differ from its signature (src/backend/*_signatures.h)");
  static constexpr ParamKind kParams[sizeof...(Args) + 1] = {paramKindOf<Args>()..., ParamKind::unsupported};
  return registerKernel(Signature::name, reinterpret_cast<const void*>(function), kParams,
                        static_cast<int>(sizeof...(Args)));
}

}  // namespace devicearray::detail::cuda

/// Registers the __global__ function `name` (declared with DA_KERNEL) for
/// KernelLaunch::name == "name", checked against the signature kernels::name. Use once
/// per kernel, at namespace scope of a .cu file.
#define DA_CUDA_REGISTER(name)                                   \
  [[maybe_unused]] static const bool da_cuda_registered_##name = \
      ::devicearray::detail::cuda::registerKernelFunction<::devicearray::detail::kernels::name>(&::name)
