#include "io/record_io.hpp"

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <climits>
#include <cstdio>
#include <limits>
#include <system_error>

namespace devicearray::io_detail {

// ---------------------------------------------------------------- Reporter ---

void Reporter::atLine(std::size_t line, const std::string& what) const {
  invalid(printable(prefix_ + "line " + std::to_string(line) + ": " + what));
}

void Reporter::atByte(std::uint64_t byte, const std::string& what) const {
  invalid(printable(prefix_ + "byte " + std::to_string(byte) + ": " + what));
}

void Reporter::general(const std::string& what) const { invalid(printable(prefix_ + what)); }

std::vector<std::string_view> tokenize(std::string_view line) {
  std::vector<std::string_view> tokens;
  std::size_t i = 0;
  while (i < line.size()) {
    while (i < line.size() && (line[i] == ' ' || line[i] == '\t')) ++i;
    std::size_t j = i;
    while (j < line.size() && line[j] != ' ' && line[j] != '\t') ++j;
    if (j > i) tokens.push_back(line.substr(i, j - i));
    i = j;
  }
  return tokens;
}

std::optional<std::uint64_t> parseCount(std::string_view s) {
  std::uint64_t v = 0;
  auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || ptr != s.data() + s.size()) return std::nullopt;
  return v;
}

// -------------------------------------------------------------- ByteSource ---

std::size_t ByteSource::read(char* dst, std::size_t n) {
  std::size_t done = 0;
  while (done < n && (begin_ < end_ || fill())) {
    const std::size_t k = std::min(n - done, end_ - begin_);
    std::memcpy(dst + done, buffer_.data() + begin_, k);
    begin_ += k;
    consumed_ += k;
    done += k;
  }
  return done;
}

bool ByteSource::skip(std::uint64_t n) {
  while (n > 0) {
    if (begin_ == end_ && !fill()) return false;
    const std::size_t k = static_cast<std::size_t>(std::min<std::uint64_t>(n, end_ - begin_));
    begin_ += k;
    consumed_ += k;
    n -= k;
  }
  return true;
}

std::optional<std::string_view> ByteSource::line(std::size_t maxLength) {
  line_.clear();
  bool any = false;
  for (;;) {
    if (begin_ == end_ && !fill()) break;
    any = true;
    const char* b = buffer_.data() + begin_;
    const std::size_t avail = end_ - begin_;
    const void* nl = std::memchr(b, '\n', avail);
    const std::size_t take = nl ? static_cast<std::size_t>(static_cast<const char*>(nl) - b) : avail;
    if (line_.size() + take > maxLength + 1)  // + 1: a "\r" before the "\n"
      rep_.atLine(lineNumber_ + 1, "line is longer than " + std::to_string(maxLength) + " characters");
    line_.append(b, take);
    const std::size_t used = take + (nl ? 1 : 0);
    begin_ += used;
    consumed_ += used;
    if (nl) break;
  }
  if (!any) return std::nullopt;
  ++lineNumber_;
  if (!line_.empty() && line_.back() == '\r') line_.pop_back();
  if (line_.size() > maxLength)
    rep_.atLine(lineNumber_, "line is longer than " + std::to_string(maxLength) + " characters");
  return std::string_view(line_);
}

bool ByteSource::fill() {
  if (eof_) return false;
  begin_ = end_ = 0;
  const std::size_t got = std::fread(buffer_.data(), 1, buffer_.size(), f_);
  if (got == 0) {
    if (std::ferror(f_))
      rep_.general("read error after " + std::to_string(consumed_) + " bytes: " + systemErrorText(errno));
    eof_ = true;
    return false;
  }
  end_ = got;
  return true;
}

void expectOnlyBlankLines(ByteSource& src, const Reporter& rep, std::size_t maxLine, const char* record,
                          const char* hint) {
  const std::uint64_t start = src.offset();
  while (auto line = src.line(maxLine)) {
    if (!tokenize(*line).empty())
      rep.atLine(src.lineNumber(), std::string("data after the last declared ") + record + " (" + hint + ")");
    if (src.offset() - start > maxLine)
      rep.atLine(src.lineNumber(), "more than " + std::to_string(maxLine) + " bytes of blank lines follow the last declared " +
                                       record);
  }
}

// ----------------------------------------------------------------- scalars ---

std::size_t scalarSize(ScalarType t) {
  switch (t) {
    case ScalarType::i8: case ScalarType::u8: return 1;
    case ScalarType::i16: case ScalarType::u16: return 2;
    case ScalarType::i32: case ScalarType::u32: case ScalarType::f32: return 4;
    case ScalarType::i64: case ScalarType::u64: case ScalarType::f64: return 8;
  }
  return 0;
}

bool isFloatScalar(ScalarType t) { return t == ScalarType::f32 || t == ScalarType::f64; }

const char* scalarName(ScalarType t) {
  switch (t) {
    case ScalarType::i8: return "char";
    case ScalarType::u8: return "uchar";
    case ScalarType::i16: return "short";
    case ScalarType::u16: return "ushort";
    case ScalarType::i32: return "int";
    case ScalarType::u32: return "uint";
    case ScalarType::i64: return "int64";
    case ScalarType::u64: return "uint64";
    case ScalarType::f32: return "float";
    case ScalarType::f64: return "double";
  }
  return "?";
}

namespace {

template <class T>
T loadAs(const char* p, bool swap) {
  unsigned char b[sizeof(T)];
  std::memcpy(b, p, sizeof(T));
  if (swap) std::reverse(b, b + sizeof(T));
  T v;
  std::memcpy(&v, b, sizeof(T));
  return v;
}

/// A float or double token that from_chars found out of range: the nearest value of
/// `T` when it underflows (from_chars then reports out of range too), nullopt when it
/// overflows. long double's wider exponent tells the two apart.
template <class T>
std::optional<double> underflowValue(const char* b, const char* e) {
  long double wide = 0;
  auto [ptr, ec] = std::from_chars(b, e, wide);
  if (ptr != e || (ec != std::errc() && ec != std::errc::result_out_of_range)) return std::nullopt;
  if (ec == std::errc::result_out_of_range) {
    // Beyond even long double: an underflow only if the exponent is negative.
    const std::string_view tok(b, static_cast<std::size_t>(e - b));
    const std::size_t exp = tok.find_first_of("eE");
    if (exp == std::string_view::npos || exp + 1 >= tok.size() || tok[exp + 1] != '-') return std::nullopt;
    return (*b == '-') ? -0.0 : 0.0;
  }
  if (std::fabs(wide) > static_cast<long double>(std::numeric_limits<T>::max())) return std::nullopt;
  return static_cast<double>(static_cast<T>(wide));
}

}  // namespace

double loadScalar(const char* p, ScalarType t, bool swap) {
  switch (t) {
    case ScalarType::i8: return loadAs<std::int8_t>(p, swap);
    case ScalarType::u8: return loadAs<std::uint8_t>(p, swap);
    case ScalarType::i16: return loadAs<std::int16_t>(p, swap);
    case ScalarType::u16: return loadAs<std::uint16_t>(p, swap);
    case ScalarType::i32: return loadAs<std::int32_t>(p, swap);
    case ScalarType::u32: return loadAs<std::uint32_t>(p, swap);
    case ScalarType::i64: return static_cast<double>(loadAs<std::int64_t>(p, swap));
    case ScalarType::u64: return static_cast<double>(loadAs<std::uint64_t>(p, swap));
    case ScalarType::f32: return loadAs<float>(p, swap);
    case ScalarType::f64: return loadAs<double>(p, swap);
  }
  return 0.0;
}

std::optional<double> parseScalar(std::string_view tok, ScalarType t) {
  const char* b = tok.data();
  const char* e = tok.data() + tok.size();
  if (e - b >= 2 && *b == '+' && b[1] != '-' && b[1] != '+') ++b;  // from_chars does not take a leading '+'
  if (t == ScalarType::f32) {
    // Parsed as float directly: going through double could round twice and miss the
    // value a shortest-form float was printed from.
    float v = 0;
    auto [ptr, ec] = std::from_chars(b, e, v);
    if (ec == std::errc::result_out_of_range && ptr == e) return underflowValue<float>(b, e);
    if (ec != std::errc() || ptr != e) return std::nullopt;
    return static_cast<double>(v);
  }
  if (t == ScalarType::f64) {
    double v = 0;
    auto [ptr, ec] = std::from_chars(b, e, v);
    if (ec == std::errc::result_out_of_range && ptr == e) return underflowValue<double>(b, e);
    if (ec != std::errc() || ptr != e) return std::nullopt;
    return v;
  }
  if (t == ScalarType::u64) {
    std::uint64_t v = 0;
    auto [ptr, ec] = std::from_chars(b, e, v);
    if (ec != std::errc() || ptr != e) return std::nullopt;
    return static_cast<double>(v);
  }
  std::int64_t v = 0;
  auto [ptr, ec] = std::from_chars(b, e, v);
  if (ec != std::errc() || ptr != e) return std::nullopt;
  std::int64_t lo = 0, hi = 0;
  switch (t) {
    case ScalarType::i8: lo = INT8_MIN; hi = INT8_MAX; break;
    case ScalarType::u8: lo = 0; hi = UINT8_MAX; break;
    case ScalarType::i16: lo = INT16_MIN; hi = INT16_MAX; break;
    case ScalarType::u16: lo = 0; hi = UINT16_MAX; break;
    case ScalarType::i32: lo = INT32_MIN; hi = INT32_MAX; break;
    case ScalarType::u32: lo = 0; hi = UINT32_MAX; break;
    default: lo = INT64_MIN; hi = INT64_MAX; break;
  }
  if (v < lo || v > hi) return std::nullopt;
  return static_cast<double>(v);
}

std::optional<float> narrowToFloat(double v) {
  if (std::isfinite(v) && std::fabs(v) > static_cast<double>(std::numeric_limits<float>::max())) return std::nullopt;
  return static_cast<float>(v);
}

void NarrowingWarning::warn(double exact, float stored) {
  warned_ = true;
  char text[160];
  std::snprintf(text, sizeof text,
                "warning: coordinates lose precision as floats (%.17g is stored as %.9g); "
                "further losses in this file are not reported",
                exact, static_cast<double>(stored));
  const std::string message = printable(rep_.prefix() + text);
  if (sink_ != nullptr && *sink_)
    (*sink_)(message);
  else
    std::fprintf(stderr, "%s\n", message.c_str());
}

// ----------------------------------------------------------------- writing ---

void BufferedWriter::flush() {
  if (!buffer_.empty() && std::fwrite(buffer_.data(), 1, buffer_.size(), f_) != buffer_.size())
    invalid(std::string(function_) + ": '" + printable(path_) + "': write failed: " + systemErrorText(errno));
  buffer_.clear();
}

void putAsciiFloat(BufferedWriter& w, float v) {
  if (std::isnan(v)) {  // the sign of a NaN carries no meaning here
    w.put("nan");
    return;
  }
  char b[32];
  auto [ptr, ec] = std::to_chars(b, b + sizeof b, v);  // shortest text that reads back bit-exactly
  w.put(b, static_cast<std::size_t>(ptr - b));
}

void putAsciiFloats(BufferedWriter& w, const float* v, std::size_t n) {
  for (std::size_t i = 0; i < n; ++i) {
    w.put(" ", 1);
    putAsciiFloat(w, v[i]);
  }
}

void putAsciiCodes(BufferedWriter& w, const std::uint8_t* v, std::size_t n) {
  for (std::size_t i = 0; i < n; ++i) {
    w.put(" ", 1);
    putAsciiUnsigned(w, v[i]);
  }
}

void putBinaryFloats(BufferedWriter& w, const float* v, std::size_t n, bool swap) {
  for (std::size_t i = 0; i < n; ++i) putBinary(w, v[i], swap);
}

void putAsciiUnsigned(BufferedWriter& w, std::uint64_t v) {
  char b[24];
  auto [ptr, ec] = std::to_chars(b, b + sizeof b, v);
  w.put(b, static_cast<std::size_t>(ptr - b));
}

}  // namespace devicearray::io_detail
