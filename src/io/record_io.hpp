// The pieces every point-cloud file reader and writer (PLY, PCD, XYZ) is built from:
// a bounded buffered byte source, one-line error messages that name the file and the
// place, number parsing and loading for the scalar types these formats share, and a
// buffered writer.
#pragma once

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "io/io_detail.hpp"

namespace devicearray::io_detail {

/// Where a problem is: the file, plus a line or byte position. Messages are escaped
/// (printable()), so bytes from the file cannot break or hide in them.
class Reporter {
 public:
  Reporter(const char* function, const std::string& path) : prefix_(std::string(function) + ": '" + path + "': ") {}
  [[noreturn]] void atLine(std::size_t line, const std::string& what) const;
  [[noreturn]] void atByte(std::uint64_t byte, const std::string& what) const;
  [[noreturn]] void general(const std::string& what) const;
  /// "function: 'path': " as given, for warnings.
  const std::string& prefix() const { return prefix_; }

 private:
  std::string prefix_;
};

/// The space- or tab-separated tokens of `line`.
std::vector<std::string_view> tokenize(std::string_view line);

/// `s` as a non-negative decimal integer; nullopt for anything else.
std::optional<std::uint64_t> parseCount(std::string_view s);

/// Buffered reading of the open file that holds at most one buffer and one line of it,
/// so pipes and devices (whose size is unknown, or endless) are read only as far as
/// the header says.
class ByteSource {
 public:
  ByteSource(std::FILE* f, const Reporter& rep) : f_(f), rep_(rep), buffer_(kBufferBytes) {}

  /// Offset of the next byte in the file.
  std::uint64_t offset() const { return consumed_; }
  /// Number of the last line returned by line() (counted from 1).
  std::size_t lineNumber() const { return lineNumber_; }
  void countLine() { ++lineNumber_; }

  /// Copies up to `n` bytes to `dst`; fewer only at the end of the input.
  std::size_t read(char* dst, std::size_t n);
  /// Discards `n` bytes; false when the input ends first.
  bool skip(std::uint64_t n);
  /// True when no byte is left.
  bool atEnd() { return begin_ == end_ && !fill(); }
  /// The next line without its "\n" / "\r\n", or nullopt at the end of the input.
  /// Throws (via the reporter) as soon as the line exceeds `maxLength` characters.
  std::optional<std::string_view> line(std::size_t maxLength);

 private:
  static constexpr std::size_t kBufferBytes = 1 << 16;
  /// Refills the (empty) buffer; false at the end of the input.
  bool fill();

  std::FILE* f_;
  const Reporter& rep_;
  std::vector<char> buffer_;
  std::size_t begin_ = 0, end_ = 0;
  std::uint64_t consumed_ = 0;
  std::size_t lineNumber_ = 0;
  bool eof_ = false;
  std::string line_;
};

/// A file opened for one of the readers: the file, the reporter naming it in messages
/// (as `function`), and the byte source reading it.
class ReaderInput {
 public:
  /// Opens `path`; throws InvalidArgument naming `function`, the path and the reason.
  ReaderInput(const char* function, const std::string& path) : rep_(function, path) {
    file_.open(function, path, "rb");
    src_.emplace(file_.get(), rep_);
  }
  ReaderInput(const ReaderInput&) = delete;
  ReaderInput& operator=(const ReaderInput&) = delete;
  const Reporter& rep() const { return rep_; }
  ByteSource& src() { return *src_; }
  /// The size of a regular file; nullopt for pipes and devices.
  std::optional<std::uint64_t> regularFileSize() const { return file_.regularFileSize(); }

 private:
  File file_;
  Reporter rep_;
  std::optional<ByteSource> src_;  // made once the file is open
};

/// Reads what follows the last declared record of an ascii body: blank lines only, and
/// not without end (at most `maxLine` bytes of them, so a stream of newlines stops).
/// Throws (via `rep`) at the first line with data: "data after the last declared
/// `record` (`hint`)".
void expectOnlyBlankLines(ByteSource& src, const Reporter& rep, std::size_t maxLine, const char* record,
                          const char* hint);

/// The scalar types of PLY properties and PCD fields.
enum class ScalarType { i8, u8, i16, u16, i32, u32, i64, u64, f32, f64 };

std::size_t scalarSize(ScalarType t);
bool isFloatScalar(ScalarType t);
/// PLY's name of the type ("uchar", "float", ...), for messages.
const char* scalarName(ScalarType t);

/// The value of type `t` stored at `p` (byte-swapped when `swap`), as a double
/// (64-bit integers beyond 2^53 round).
double loadScalar(const char* p, ScalarType t, bool swap);

/// Parses one ascii token as a value of type `t`; nullopt when it is not a number of
/// that type (non-numeric, trailing junk, fractional integer, out of range). A leading
/// '+' is allowed. A float or double too small for the type (an underflow such as
/// 1e-50) reads as the nearest value the type holds (a denormal or 0), as C's strtod
/// gives it; one too large is out of range.
std::optional<double> parseScalar(std::string_view token, ScalarType t);

/// The float a double value narrows to, or nullopt when a finite value exceeds float's
/// range (the C++ conversion would be undefined).
std::optional<float> narrowToFloat(double v);

/// Coordinates that lose more than this (in the file's unit) when they are narrowed to
/// float are reported once per file: at this size they are beyond a float's precision
/// (positions about 2^18 units from the origin), not just rounded in their last digits.
inline constexpr double kNarrowingWarnThreshold = 0.01;

/// Tells, once per file, that narrowing coordinates to float lost precision.
class NarrowingWarning {
 public:
  explicit NarrowingWarning(const Reporter& rep, const std::function<void(const std::string&)>* sink)
      : rep_(rep), sink_(sink) {}
  /// Records that `exact` was stored as `stored`; warns at the first large loss.
  void check(double exact, float stored) {
    if (!warned_ && std::fabs(exact - static_cast<double>(stored)) > kNarrowingWarnThreshold) warn(exact, stored);
  }

 private:
  void warn(double exact, float stored);
  const Reporter& rep_;
  const std::function<void(const std::string&)>* sink_;
  bool warned_ = false;
};

/// Writes through a 1 MiB buffer; write errors throw InvalidArgument naming
/// `function` and the path.
class BufferedWriter {
 public:
  BufferedWriter(const char* function, std::FILE* f, const std::string& path)
      : function_(function), f_(f), path_(path) {
    buffer_.reserve(kCapacity);
  }
  void put(const char* p, std::size_t n) {
    if (buffer_.size() + n > kCapacity) flush();
    buffer_.insert(buffer_.end(), p, p + n);
  }
  void put(std::string_view s) { put(s.data(), s.size()); }
  void flush();

 private:
  static constexpr std::size_t kCapacity = 1 << 20;
  const char* function_;
  std::FILE* f_;
  const std::string& path_;
  std::vector<char> buffer_;
};

/// `v` in `sizeof(T)` bytes, byte-swapped when `swap`.
template <class T>
void putBinary(BufferedWriter& w, T v, bool swap) {
  char b[sizeof(T)];
  std::memcpy(b, &v, sizeof(T));
  if (swap)
    for (std::size_t i = 0; i < sizeof(T) / 2; ++i) std::swap(b[i], b[sizeof(T) - 1 - i]);
  w.put(b, sizeof(T));
}

/// The shortest text that reads back as `v` bit-exactly; "nan" for any NaN.
void putAsciiFloat(BufferedWriter& w, float v);
/// `v` in decimal.
void putAsciiUnsigned(BufferedWriter& w, std::uint64_t v);
/// " v0 v1 ...": `n` floats as putAsciiFloat() writes them, each after a space.
void putAsciiFloats(BufferedWriter& w, const float* v, std::size_t n);
/// " c0 c1 ...": `n` 8-bit codes in decimal, each after a space.
void putAsciiCodes(BufferedWriter& w, const std::uint8_t* v, std::size_t n);
/// `n` floats in 4 bytes each, byte-swapped when `swap`.
void putBinaryFloats(BufferedWriter& w, const float* v, std::size_t n, bool swap);

}  // namespace devicearray::io_detail
