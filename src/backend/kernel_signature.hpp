// Typed launches of the shared kernels. A kernel's parameter list (an X-macro of
// kernel_params.h) becomes a C++ type with DA_KERNEL_SIGNATURE, and
//
//   launch<kernels::da_scale>(q, LaunchGeometry::items(n), n, 2.0f, BufferRef{a, offset});
//
// compiles only when every argument converts to its parameter without narrowing (a
// buffer from a BufferRef, or from a Buffer of the same element type). The CUDA
// registration checks the __global__ function against the same type
// (src/cuda/kernel_registry.hpp); the OpenCL backend checks the program's kernel
// against its run-time description (KernelSignature) at the first launch.
#pragma once

#include <array>
#include <concepts>
#include <cstddef>
#include <cstdint>
#include <type_traits>
#include <utility>
#include <vector>

#include "backend/backend.hpp"
#include "backend/kernel_params.h"

namespace devicearray::detail {

/// A buffer parameter whose elements the kernel sees as T (const T: read only).
template <class T>
struct Buffer {
  BufferRef ref;

  /// Device memory has no element type: any place binds.
  Buffer(BufferRef place) : ref(place) {}  // NOLINT(google-explicit-constructor)
  /// A writable buffer binds to a read-only parameter of the same element type.
  template <class U>
    requires std::same_as<T, const U>
  Buffer(Buffer<U> writable) : ref(writable.ref) {}  // NOLINT(google-explicit-constructor)
};

/// One parameter of a kernel, as a backend checks a compiled kernel against it.
struct KernelParam {
  const char* name;  ///< as declared in the parameter list
  const char* type;  ///< the OpenCL C name of the scalar type, or of a buffer's element type
  bool buffer;
  bool readOnly;  ///< a buffer of const elements
};

/// The run-time description of a kernel signature (KernelLaunch::signature).
struct KernelSignature {
  const char* name;
  const KernelParam* params;
  int count;
};

/// The OpenCL C name of a scalar or element type.
template <class T>
constexpr const char* openclTypeName() {
  using U = std::remove_const_t<T>;
  if constexpr (std::is_same_v<U, float>) {
    return "float";
  } else if constexpr (std::is_same_v<U, double>) {
    return "double";
  } else {
    static_assert(std::is_integral_v<U> && !std::is_same_v<U, bool> && !std::is_same_v<U, char>,
                  "kernel parameter types are float, double and the fixed-width integers");
    constexpr int size = sizeof(U) == 1 ? 0 : sizeof(U) == 2 ? 1 : sizeof(U) == 4 ? 2 : 3;
    constexpr const char* names[2][4] = {{"uchar", "ushort", "uint", "ulong"}, {"char", "short", "int", "long"}};
    return names[std::is_signed_v<U> ? 1 : 0][size];
  }
}

/// How a parameter of type P is passed: a scalar as itself (32 or 64 bits) ...
template <class P>
struct KernelParamTraits {
  static_assert(std::is_arithmetic_v<P> && (sizeof(P) == 4 || sizeof(P) == 8),
                "scalar kernel parameters are 32- or 64-bit integers, float or double");
  using CudaType = P;
  static constexpr bool buffer = false;
  static constexpr bool readOnly = false;
  static constexpr const char* type = openclTypeName<P>();

  static KernelArg arg(P v) {
    if constexpr (std::is_same_v<P, float>) return KernelArg::f32(v);
    else if constexpr (std::is_same_v<P, double>) return KernelArg::f64(v);
    else if constexpr (sizeof(P) == 4) return std::is_signed_v<P> ? KernelArg::i32(v) : KernelArg::u32(v);
    else return std::is_signed_v<P> ? KernelArg::i64(v) : KernelArg::u64(v);
  }
};

/// ... and a buffer as a typed pointer on CUDA (see DA_BUFFER in src/kernels/prelude.h).
template <class T>
struct KernelParamTraits<Buffer<T>> {
  using CudaType = T*;
  static constexpr bool buffer = true;
  static constexpr bool readOnly = std::is_const_v<T>;
  static constexpr const char* type = openclTypeName<T>();

  static KernelArg arg(Buffer<T> b) { return KernelArg::buf(b.ref.allocation, b.ref.offset); }
};

/// An argument of type A binds to a parameter of type P without narrowing.
template <class A, class P>
concept BindsTo = requires(A&& a) { P{std::forward<A>(a)}; };

template <std::size_t Index, class A, class P>
constexpr bool checkArgument() {
  static_assert(BindsTo<A, P>, "launch<>: the argument at Index (see the instantiation) does not convert to "
                               "its parameter's type P without narrowing");
  return true;
}

/// The parameter types of a kernel, in order.
template <class... P>
struct KernelParams {
  static constexpr std::size_t count = sizeof...(P);
  /// The type of the matching __global__ function.
  using CudaFunction = void(typename KernelParamTraits<P>::CudaType...);

  static constexpr std::array<KernelParam, count> describe(const std::array<const char*, count>& names) {
    std::size_t i = 0;
    return {{KernelParam{names[i++], KernelParamTraits<P>::type, KernelParamTraits<P>::buffer,
                         KernelParamTraits<P>::readOnly}...}};
  }

  /// Whether arguments of types A... bind to these parameters (launch<> compiles).
  template <class... A>
  static constexpr bool accepts() {
    if constexpr (sizeof...(A) != count) return false;
    else return (BindsTo<A, P> && ...);
  }

  template <class... A>
  static std::vector<KernelArg> arguments(A&&... args) {
    static_assert(sizeof...(A) == count, "launch<>: the number of arguments differs from the kernel's parameters");
    if constexpr (sizeof...(A) == count) {
      [[maybe_unused]] constexpr bool checked = checkArguments<A...>(std::make_index_sequence<count>{});
      return {KernelParamTraits<P>::arg(P{std::forward<A>(args)})...};
    } else {
      return {};
    }
  }

 private:
  template <class... A, std::size_t... I>
  static constexpr bool checkArguments(std::index_sequence<I...>) {
    return (checkArgument<I, A, P>() && ...);
  }
};

/// The run-time description of `Signature` (a type declared with DA_KERNEL_SIGNATURE).
template <class Signature>
inline constexpr auto kParamsOf = Signature::Params::describe(Signature::paramNames);
template <class Signature>
inline constexpr KernelSignature kSignatureOf{Signature::name, kParamsOf<Signature>.data(),
                                              static_cast<int>(Signature::Params::count)};

/// The index space of a launch (KernelLaunch's fields of the same names).
struct LaunchGeometry {
  int workDims = 1;
  std::array<std::size_t, 3> globalSize{1, 1, 1};
  std::size_t localSize = 0;

  /// n work items along one axis.
  static LaunchGeometry items(std::size_t n) { return {1, {n, 1, 1}, 0}; }
  /// width x height work items (one axis when height is 1).
  static LaunchGeometry grid(std::size_t width, std::size_t height) {
    return {height > 1 ? 2 : 1, {width, height, 1}, 0};
  }
  /// `groups` work-groups of exactly `groupSize` work items (a DA_KERNEL_GROUP kernel).
  static LaunchGeometry groups(std::size_t groups, std::size_t groupSize) {
    return {1, {groups * groupSize, 1, 1}, groupSize};
  }
};

/// The launch of kernel `Signature` with `args`, one per parameter of the signature.
template <class Signature, class... A>
KernelLaunch kernelLaunch(const LaunchGeometry& geometry, A&&... args) {
  KernelLaunch l;
  l.name = Signature::name;
  l.signature = &kSignatureOf<Signature>;
  l.workDims = geometry.workDims;
  l.globalSize = geometry.globalSize;
  l.localSize = geometry.localSize;
  l.args = Signature::Params::arguments(std::forward<A>(args)...);
  return l;
}

/// Enqueues kernel `Signature` on `q` (on the queue's device) with `args`, one per
/// parameter of the signature. Callers order the buffers' use (OrderedUse).
template <class Signature, class... A>
void launch(QueueImpl& q, const LaunchGeometry& geometry, A&&... args) {
  q.device()->launch(kernelLaunch<Signature>(geometry, std::forward<A>(args)...), q);
}

}  // namespace devicearray::detail

/// Declares `kernel` (the kernel's name) as a signature type with the parameters of
/// `list`; use in namespace devicearray::detail::kernels, next to the list.
#define DA_KERNEL_SIGNATURE(kernel, list)                                                                   \
  struct kernel {                                                                                           \
    static constexpr const char* name = #kernel;                                                            \
    using Params = ::devicearray::detail::KernelParams<list(DA_SIGNATURE_SCALAR_FIRST_, DA_SIGNATURE_BUFFER_FIRST_, \
                                                            DA_SIGNATURE_SCALAR_, DA_SIGNATURE_BUFFER_)>;          \
    static constexpr std::array<const char*, Params::count> paramNames{                                     \
        {list(DA_SIGNATURE_NAME_FIRST_, DA_SIGNATURE_NAME_FIRST_, DA_SIGNATURE_NAME_, DA_SIGNATURE_NAME_)}};   \
  }
#define DA_SIGNATURE_SCALAR_FIRST_(T, name) T
#define DA_SIGNATURE_BUFFER_FIRST_(T, name) ::devicearray::detail::Buffer<T>
#define DA_SIGNATURE_NAME_FIRST_(T, name) #name
#define DA_SIGNATURE_SCALAR_(T, name) , T
#define DA_SIGNATURE_BUFFER_(T, name) , ::devicearray::detail::Buffer<T>
#define DA_SIGNATURE_NAME_(T, name) , #name

namespace devicearray::detail::kernels {
// The prelude's type names (src/kernels/prelude.h) as the parameter lists spell them.
using da_i8 = std::int8_t;
using da_u8 = std::uint8_t;
using da_i16 = std::int16_t;
using da_u16 = std::uint16_t;
using da_i32 = std::int32_t;
using da_u32 = std::uint32_t;
using da_i64 = std::int64_t;
using da_u64 = std::uint64_t;
}  // namespace devicearray::detail::kernels
