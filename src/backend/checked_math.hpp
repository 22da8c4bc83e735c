// Overflow-checked 64-bit products and sums of sizes and byte offsets: the one
// definition for the whole library (shapes in core, regions in the copy planner and
// the backends, buffer sizes in the file readers). Depends on the public error type
// only, so src/io/ may include it too (scripts/check-layering.py allows exactly this).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <type_traits>

#include "devicearray/error.hpp"

namespace devicearray::detail {

namespace checked_math_detail {
template <class T>
constexpr const char* typeName() {
  if constexpr (std::is_same_v<T, std::size_t>) return "size_t";
  else if constexpr (std::is_signed_v<T>) return "int64";
  else return "uint64";
}

/// Throws the overflow of `a op b`; returns T so that it can end a conditional.
template <class T>
T overflow(T a, char op, T b, const char* fn) {
  static_assert(std::is_integral_v<T> && sizeof(T) == 8, "checked arithmetic is for 64-bit sizes and offsets");
  throw Error(ErrorCode::OutOfRange, std::string(fn) + ": size overflows (" + std::to_string(a) + " " + op + " " +
                                         std::to_string(b) + " does not fit in " + typeName<T>() + ")");
}
}  // namespace checked_math_detail

/// a * b, throwing OutOfRange (naming `fn`) when the product does not fit in T (the
/// type of `a`).
template <class T>
T checkedMul(T a, std::type_identity_t<T> b, const char* fn) {
  T r = 0;
  return __builtin_mul_overflow(a, b, &r) ? checked_math_detail::overflow(a, '*', b, fn) : r;
}

/// a + b, throwing OutOfRange (naming `fn`) when the sum does not fit in T.
template <class T>
T checkedAdd(T a, std::type_identity_t<T> b, const char* fn) {
  T r = 0;
  return __builtin_add_overflow(a, b, &r) ? checked_math_detail::overflow(a, '+', b, fn) : r;
}

}  // namespace devicearray::detail
