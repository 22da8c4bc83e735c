// Internal helpers shared by the host I/O sources (PLY, PNG, synth, render).
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <new>
#include <stdexcept>
#include <string>
#include <string_view>

#include "devicearray/error.hpp"

namespace devicearray::io_detail {

[[noreturn]] inline void fail(ErrorCode code, std::string message) { throw Error(code, std::move(message)); }

[[noreturn]] inline void invalid(std::string message) { fail(ErrorCode::InvalidArgument, std::move(message)); }

/// a * b, or OutOfRange naming `what` when it does not fit in size_t.
inline std::size_t checkedMul(std::size_t a, std::size_t b, const char* what) {
  std::size_t r = 0;
  if (__builtin_mul_overflow(a, b, &r))
    fail(ErrorCode::OutOfRange, std::string(what) + ": " + std::to_string(a) + " * " + std::to_string(b) +
                                    " overflows size_t");
  return r;
}

inline std::size_t checkedAdd(std::size_t a, std::size_t b, const char* what) {
  std::size_t r = 0;
  if (__builtin_add_overflow(a, b, &r))
    fail(ErrorCode::OutOfRange, std::string(what) + ": " + std::to_string(a) + " + " + std::to_string(b) +
                                    " overflows size_t");
  return r;
}

/// Runs `body`, turning a failed host allocation (std::bad_alloc, std::length_error)
/// into OutOfMemory naming `function`, so callers see only devicearray::Error.
template <class Body>
auto translateAllocationFailure(const char* function, Body&& body) -> decltype(body()) {
  try {
    return body();
  } catch (const std::bad_alloc&) {
    fail(ErrorCode::OutOfMemory, std::string(function) + ": out of host memory");
  } catch (const std::length_error&) {
    fail(ErrorCode::OutOfMemory, std::string(function) + ": a host buffer would exceed the maximum size");
  }
}

/// The file's errno text, for "cannot open" messages.
std::string systemErrorText(int err);

/// An owned FILE* that closes itself; `close()` reports whether buffered writes made it.
class File {
 public:
  File() = default;
  File(const File&) = delete;
  File& operator=(const File&) = delete;
  ~File() {
    if (f_) std::fclose(f_);
  }
  /// Opens `path` with `mode` ("rb" / "wb"); throws InvalidArgument naming `function`,
  /// the path and the system's reason.
  void open(const char* function, const std::string& path, const char* mode);
  std::FILE* get() const { return f_; }
  /// Closes the file; returns false when the final flush failed.
  bool close() {
    std::FILE* f = f_;
    f_ = nullptr;
    return f == nullptr || std::fclose(f) == 0;
  }

 private:
  std::FILE* f_ = nullptr;
};

/// Removes a partially written output file on destruction unless released.
class RemoveOnFailure {
 public:
  explicit RemoveOnFailure(std::string path) : path_(std::move(path)) {}
  RemoveOnFailure(const RemoveOnFailure&) = delete;
  RemoveOnFailure& operator=(const RemoveOnFailure&) = delete;
  ~RemoveOnFailure() {
    if (!path_.empty()) std::remove(path_.c_str());
  }
  void release() { path_.clear(); }

 private:
  std::string path_;
};

}  // namespace devicearray::io_detail
