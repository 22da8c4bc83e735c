#include "devicearray/error.hpp"

#include <utility>

#include "backend/backend.hpp"

namespace devicearray {

const char* toString(ErrorCode code) noexcept {
  switch (code) {
    case ErrorCode::InvalidArgument: return "InvalidArgument";
    case ErrorCode::OutOfRange: return "OutOfRange";
    case ErrorCode::OutOfMemory: return "OutOfMemory";
    case ErrorCode::Unsupported: return "Unsupported";
    case ErrorCode::BackendUnavailable: return "BackendUnavailable";
    case ErrorCode::BackendError: return "BackendError";
    case ErrorCode::InvalidState: return "InvalidState";
  }
  return "UnknownError";
}

const char* toString(ComputeBackend backend) noexcept {
  return backend == ComputeBackend::cuda ? "cuda" : "opencl";
}

Error::Error(ErrorCode code, std::string message) : code_(code), message_(std::move(message)) {}

namespace detail {
void fail(ErrorCode code, const std::string& message) { throw Error(code, message); }
}  // namespace detail

}  // namespace devicearray
