// Internal helpers shared by the host I/O sources (PLY, PNG, synth, render).
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <new>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>

#include "backend/checked_math.hpp"
#include "devicearray/error.hpp"

namespace devicearray::io_detail {

[[noreturn]] inline void fail(ErrorCode code, std::string message) { throw Error(code, std::move(message)); }

[[noreturn]] inline void invalid(std::string message) { fail(ErrorCode::InvalidArgument, std::move(message)); }

using detail::checkedAdd;
using detail::checkedMul;

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

/// `text` made safe for a one-line message: control bytes, DEL and bytes that are not
/// part of valid UTF-8 become \xNN, so file contents cannot break or hide in a message.
/// Text longer than `maxLength` bytes is cut there, with "..." appended.
std::string printable(std::string_view text, std::size_t maxLength = std::string_view::npos);

/// A human size ("1.5 GiB", "512 KiB", "17 bytes") for messages.
std::string byteSizeText(std::uint64_t bytes);

/// An owned FILE* opened for reading that closes itself.
class File {
 public:
  File() = default;
  File(const File&) = delete;
  File& operator=(const File&) = delete;
  ~File() {
    if (f_) std::fclose(f_);
  }
  /// Opens `path` with `mode` ("rb"); throws InvalidArgument naming `function`, the
  /// path and the system's reason.
  void open(const char* function, const std::string& path, const char* mode);
  std::FILE* get() const { return f_; }
  /// The size of a regular file; nullopt for pipes, devices and other streams, whose
  /// size says nothing about what they will deliver.
  std::optional<std::uint64_t> regularFileSize() const;

 private:
  std::FILE* f_ = nullptr;
};

/// Where a writer puts its bytes without damaging what is already at `path`.
///
/// Normally a new file `.<name>.tmp-XXXXXX` in the directory of `path` (of the file a
/// symbolic link points to), created like any new file (0666 & ~umask) or with the
/// mode of the file it replaces; commit() renames it over `path`, so readers see the
/// old file or the new one, never a partial one. A failed or abandoned write removes
/// only that temporary. While it exists its name is registered for
/// removeUnfinishedOutputFiles(), so a signal handler can remove it too.
///
/// When `path` exists and is not a regular file (a device such as /dev/null, a FIFO),
/// a rename would replace the node itself: the bytes go to `path` directly and `path`
/// is never removed, not even on failure.
class OutputFile {
 public:
  /// Opens the destination; throws InvalidArgument naming `function`, `path` and the
  /// system's reason.
  OutputFile(const char* function, std::string path);
  OutputFile(const OutputFile&) = delete;
  OutputFile& operator=(const OutputFile&) = delete;
  /// Unless committed: closes the file and removes the temporary (never `path`).
  ~OutputFile();
  std::FILE* get() const { return f_; }
  /// Flushes, closes and renames the temporary over `path`. Throws InvalidArgument
  /// naming the function and path when a write, the close or the rename failed.
  void commit();

 private:
  void abandon() noexcept;
  std::string function_;
  std::string path_;    // as the caller gave it, for messages
  std::string target_;  // what the rename replaces (the file a symlink points to)
  std::string temp_;    // empty when writing to `path_` directly
  int slot_ = -1;       // registration for removeUnfinishedOutputFiles(), or -1
  std::FILE* f_ = nullptr;
};

}  // namespace devicearray::io_detail
