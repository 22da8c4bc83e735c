// devicearray — error reporting.
//
// Every public entry point validates its input and reports failure by throwing
// devicearray::Error. The message names the function, the offending value and
// the rule that was broken, e.g.
//   "GpuMatND::operator(): range [3, 9) is outside axis 1 of size 5".
#pragma once

#include <exception>
#include <string>

namespace devicearray {

/// Why a call failed. Python raises InvalidArgument as ValueError, OutOfRange as
/// IndexError, OutOfMemory as MemoryError and the others as RuntimeError.
enum class ErrorCode {
  InvalidArgument,     ///< wrong counts, non-positive sizes, null pointers, bad steps or type codes
  OutOfRange,          ///< an index or range outside an axis, or a size whose byte count overflows
  OutOfMemory,         ///< a device or host allocation failed
  Unsupported,         ///< valid request this backend / build / tensor kind cannot serve
  BackendUnavailable,  ///< no usable device of the requested backend
  BackendError,        ///< the CUDA or OpenCL runtime reported an unexpected error
  InvalidState,        ///< the object is in a state that does not allow the call (e.g. empty)
};

/// Printable name of an ErrorCode ("InvalidArgument", ...).
const char* toString(ErrorCode code) noexcept;

/// The one exception type thrown by the library.
class Error : public std::exception {
 public:
  /// An error of kind `code`; `message` names the function, the value and the rule.
  Error(ErrorCode code, std::string message);
  /// The kind of failure.
  ErrorCode code() const noexcept { return code_; }
  /// The message, e.g. "GpuMatND::clone: the array is empty".
  const char* what() const noexcept override { return message_.c_str(); }

 private:
  ErrorCode code_;
  std::string message_;
};

}  // namespace devicearray
