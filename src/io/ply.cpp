// PLY reading and writing, and the HostPointCloud invariants.
//
// The reader checks the magic in the first bytes, parses the header (bounded in size
// and line length, in time linear in its size), checks that a regular file's body can
// possibly hold what the header declares before allocating anything, then decodes the
// body record by record without reading past what the header declares (one more byte
// tells trailing data), so pipes and devices such as /dev/zero cannot make it read or
// allocate without bound. The writer goes through io_detail::OutputFile: a temporary
// file renamed over the target, so a failed write leaves an existing file intact.
// Every problem is reported as one InvalidArgument naming the file, the header line,
// body line (ascii) or byte offset (binary), and what is wrong.
#include <algorithm>
#include <bit>
#include <cerrno>
#include <charconv>
#include <climits>
#include <cmath>
#include <cstring>
#include <limits>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_set>
#include <vector>

#include "devicearray/ply.hpp"
#include "io/io_detail.hpp"

namespace devicearray {

using io_detail::checkedMul;
using io_detail::invalid;

// ---------------------------------------------------------- HostPointCloud ---

HostPointCloud HostPointCloud::organized(int height, int width, bool withColors, bool withSNR,
                                         bool withNormals) {
  if (height <= 0 || width <= 0)
    invalid("HostPointCloud::organized: size " + std::to_string(height) + " x " + std::to_string(width) +
            " must be positive");
  const std::size_t n = checkedMul(static_cast<std::size_t>(height), static_cast<std::size_t>(width),
                                   "HostPointCloud::organized: point count");
  const std::size_t xyzCount = checkedMul(n, 3, "HostPointCloud::organized: xyz");
  const std::size_t rgbaCount = checkedMul(n, 4, "HostPointCloud::organized: rgba");
  HostPointCloud cloud;
  cloud.height = height;
  cloud.width = width;
  try {
    cloud.xyz.assign(xyzCount, std::numeric_limits<float>::quiet_NaN());
    if (withColors) cloud.rgba.assign(rgbaCount, 0);
    if (withSNR) cloud.snr.assign(n, 0.0f);
    if (withNormals) cloud.normals.assign(xyzCount, std::numeric_limits<float>::quiet_NaN());
  } catch (const std::exception&) {  // bad_alloc or length_error
    io_detail::fail(ErrorCode::OutOfMemory, "HostPointCloud::organized: cannot allocate a " + std::to_string(height) +
                                                " x " + std::to_string(width) + " cloud");
  }
  return cloud;
}

bool HostPointCloud::isValid(std::size_t i) const noexcept {
  const float* p = xyz.data() + 3 * i;
  return std::isfinite(p[0]) && std::isfinite(p[1]) && std::isfinite(p[2]);
}

std::size_t HostPointCloud::validCount() const noexcept {
  std::size_t count = 0;
  for (std::size_t i = 0, n = size(); i < n; ++i) count += isValid(i) ? 1 : 0;
  return count;
}

void HostPointCloud::validate() const {
  const std::string fn = "HostPointCloud::validate: ";
  if (height < 0 || width < 0 || (height == 0) != (width == 0))
    invalid(fn + "height " + std::to_string(height) + " and width " + std::to_string(width) +
            " must both be positive (organized) or both be 0 (unorganized)");
  if (xyz.size() % 3 != 0)
    invalid(fn + "xyz has " + std::to_string(xyz.size()) + " floats, which is not a multiple of 3");
  const std::size_t n = size();
  if (isOrganized()) {
    std::size_t hw = 0;
    if (__builtin_mul_overflow(static_cast<std::size_t>(height), static_cast<std::size_t>(width), &hw) || hw != n)
      invalid(fn + "organized size " + std::to_string(height) + " x " + std::to_string(width) + " does not match " +
              std::to_string(n) + " points");
  }
  auto checkAttr = [&](std::size_t have, std::size_t perPoint, const char* name) {
    if (have != 0 && have / perPoint != n) invalid(fn + name + " has " + std::to_string(have) + " values; expected 0 or " +
                                                   std::to_string(n) + " x " + std::to_string(perPoint));
    if (have % perPoint != 0) invalid(fn + name + " has " + std::to_string(have) + " values, not a multiple of " +
                                      std::to_string(perPoint));
  };
  checkAttr(rgba.size(), 4, "rgba");
  checkAttr(snr.size(), 1, "snr");
  checkAttr(normals.size(), 3, "normals");
}

// ------------------------------------------------------------------ reader ---

namespace {

enum class PlyType { i8, u8, i16, u16, i32, u32, f32, f64 };

std::optional<PlyType> parseType(std::string_view s) {
  if (s == "char" || s == "int8") return PlyType::i8;
  if (s == "uchar" || s == "uint8") return PlyType::u8;
  if (s == "short" || s == "int16") return PlyType::i16;
  if (s == "ushort" || s == "uint16") return PlyType::u16;
  if (s == "int" || s == "int32") return PlyType::i32;
  if (s == "uint" || s == "uint32") return PlyType::u32;
  if (s == "float" || s == "float32") return PlyType::f32;
  if (s == "double" || s == "float64") return PlyType::f64;
  return std::nullopt;
}

const char* typeName(PlyType t) {
  switch (t) {
    case PlyType::i8: return "char";
    case PlyType::u8: return "uchar";
    case PlyType::i16: return "short";
    case PlyType::u16: return "ushort";
    case PlyType::i32: return "int";
    case PlyType::u32: return "uint";
    case PlyType::f32: return "float";
    case PlyType::f64: return "double";
  }
  return "?";
}

std::size_t typeSize(PlyType t) {
  switch (t) {
    case PlyType::i8: case PlyType::u8: return 1;
    case PlyType::i16: case PlyType::u16: return 2;
    case PlyType::i32: case PlyType::u32: case PlyType::f32: return 4;
    case PlyType::f64: return 8;
  }
  return 0;
}

bool isFloatType(PlyType t) { return t == PlyType::f32 || t == PlyType::f64; }

struct PlyProperty {
  std::string name;
  bool isList = false;
  PlyType type = PlyType::f32;       // scalar type, or the item type of a list
  PlyType countType = PlyType::u8;   // list count type
  std::size_t headerLine = 0;        // where it is declared, for messages
};

struct PlyElement {
  std::string name;
  std::uint64_t count = 0;
  int headerLine = 0;
  std::vector<PlyProperty> properties;
  bool hasList() const {
    return std::any_of(properties.begin(), properties.end(), [](const PlyProperty& p) { return p.isList; });
  }
  /// Binary bytes of one record without lists, or the least it can take with them.
  std::size_t minBinaryRecordSize() const {
    std::size_t s = 0;
    for (const auto& p : properties) s += p.isList ? typeSize(p.countType) : typeSize(p.type);
    return s;
  }
};

// Limits that keep a garbage or hostile file from being scanned or buffered without
// bound: real headers and lines stay far below them. The body is never buffered whole;
// it is decoded record by record as the header describes it.
constexpr std::size_t kMaxHeaderLine = 4096;
constexpr std::uint64_t kMaxHeaderBytes = 16u << 20;
constexpr std::size_t kMaxBodyLine = 64 * 1024;

/// Where a problem is: the file, plus a line or byte position. Messages are escaped
/// (printable()), so bytes from the file cannot break or hide in them.
class Reporter {
 public:
  explicit Reporter(const std::string& path) : prefix_("readPly: '" + path + "': ") {}
  [[noreturn]] void atLine(std::size_t line, const std::string& what) const {
    invalid(io_detail::printable(prefix_ + "line " + std::to_string(line) + ": " + what));
  }
  [[noreturn]] void atByte(std::uint64_t byte, const std::string& what) const {
    invalid(io_detail::printable(prefix_ + "byte " + std::to_string(byte) + ": " + what));
  }
  [[noreturn]] void general(const std::string& what) const { invalid(io_detail::printable(prefix_ + what)); }

 private:
  std::string prefix_;
};

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
  std::size_t read(char* dst, std::size_t n) {
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

  /// Discards `n` bytes; false when the input ends first.
  bool skip(std::uint64_t n) {
    while (n > 0) {
      if (begin_ == end_ && !fill()) return false;
      const std::size_t k = static_cast<std::size_t>(std::min<std::uint64_t>(n, end_ - begin_));
      begin_ += k;
      consumed_ += k;
      n -= k;
    }
    return true;
  }

  /// True when no byte is left.
  bool atEnd() { return begin_ == end_ && !fill(); }

  /// The next line without its "\n" / "\r\n", or nullopt at the end of the input.
  /// Throws (via the reporter) as soon as the line exceeds `maxLength` characters.
  std::optional<std::string_view> line(std::size_t maxLength) {
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

 private:
  static constexpr std::size_t kBufferBytes = 1 << 16;

  /// Refills the (empty) buffer; false at the end of the input.
  bool fill() {
    if (eof_) return false;
    begin_ = end_ = 0;
    const std::size_t got = std::fread(buffer_.data(), 1, buffer_.size(), f_);
    if (got == 0) {
      if (std::ferror(f_))
        rep_.general("read error after " + std::to_string(consumed_) + " bytes: " + io_detail::systemErrorText(errno));
      eof_ = true;
      return false;
    }
    end_ = got;
    return true;
  }

  std::FILE* f_;
  const Reporter& rep_;
  std::vector<char> buffer_;
  std::size_t begin_ = 0, end_ = 0;
  std::uint64_t consumed_ = 0;
  std::size_t lineNumber_ = 0;
  bool eof_ = false;
  std::string line_;
};

std::optional<std::uint64_t> parseCount(std::string_view s) {
  std::uint64_t v = 0;
  auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || ptr != s.data() + s.size()) return std::nullopt;
  return v;
}

struct PlyHeader {
  PlyFormat format = PlyFormat::ascii;
  std::vector<PlyElement> elements;
  std::int64_t height = -1, width = -1;  // from obj_info / comment; -1 = absent
  int heightLine = 0, widthLine = 0;
  std::uint64_t bodyOffset = 0;
};

void setDimension(const Reporter& rep, std::size_t line, std::string_view which, std::string_view value,
                  PlyHeader& h) {
  auto v = parseCount(value);
  if (!v || *v == 0 || *v > static_cast<std::uint64_t>(INT_MAX))
    rep.atLine(line, "organized " + std::string(which) + " '" + std::string(value) +
                         "' must be an integer in 1.." + std::to_string(INT_MAX));
  std::int64_t& slot = which == "height" ? h.height : h.width;
  int& slotLine = which == "height" ? h.heightLine : h.widthLine;
  if (slot >= 0 && slot != static_cast<std::int64_t>(*v))
    rep.atLine(line, "organized " + std::string(which) + " " + std::to_string(*v) + " contradicts " +
                         std::to_string(slot) + " given on line " + std::to_string(slotLine));
  slot = static_cast<std::int64_t>(*v);
  slotLine = static_cast<int>(line);
}

/// Checks the magic first, so that a file that is not PLY (or /dev/zero) is refused
/// after its first five bytes.
void readMagic(ByteSource& src, const Reporter& rep) {
  char magic[5] = {};
  std::size_t got = src.read(magic, 4);
  bool ok = got == 4 && std::memcmp(magic, "ply\n", 4) == 0;
  if (!ok && got == 4 && std::memcmp(magic, "ply\r", 4) == 0) {
    got += src.read(magic + 4, 1);
    ok = got == 5 && magic[4] == '\n';
  }
  if (!ok) {
    if (got == 0) rep.general("not a PLY file: the first line must be 'ply' (the file is empty)");
    rep.general("not a PLY file: the first line must be 'ply'; the file begins with '" + std::string(magic, got) +
                "'");
  }
  src.countLine();
}

/// Parses the header in time linear in its size: name lookups go through hash sets.
PlyHeader parseHeader(ByteSource& src, const Reporter& rep) {
  PlyHeader h;
  readMagic(src, rep);
  bool sawFormat = false;
  std::unordered_set<std::string> elementNames, propertyNames;  // propertyNames: of the last element
  for (;;) {
    auto line = src.line(kMaxHeaderLine);
    const std::size_t ln = src.lineNumber();
    if (!line) rep.general("the header has no 'end_header' line (" + std::to_string(ln) + " lines read)");
    if (src.offset() > kMaxHeaderBytes)
      rep.atLine(ln, "no 'end_header' within the first " + io_detail::byteSizeText(kMaxHeaderBytes) +
                         " (the longest header this reader accepts)");
    auto tokens = tokenize(*line);
    if (tokens.empty()) rep.atLine(ln, "empty header line");
    const std::string_view key = tokens[0];
    if (key == "end_header") {
      if (tokens.size() != 1) rep.atLine(ln, "unexpected text after 'end_header'");
      break;
    }
    if (key == "comment") {
      // Tools that cannot write obj_info sometimes keep the grid size in comments.
      if (tokens.size() == 3 && (tokens[1] == "height" || tokens[1] == "width") && parseCount(tokens[2]))
        setDimension(rep, ln, tokens[1], tokens[2], h);
      continue;
    }
    if (key == "obj_info") {
      if (tokens.size() >= 2 && (tokens[1] == "height" || tokens[1] == "width")) {
        if (tokens.size() != 3) rep.atLine(ln, "expected 'obj_info " + std::string(tokens[1]) + " <integer>'");
        setDimension(rep, ln, tokens[1], tokens[2], h);
      }
      continue;
    }
    if (key == "format") {
      if (sawFormat) rep.atLine(ln, "a second 'format' line");
      if (!h.elements.empty()) rep.atLine(ln, "'format' must come before the first 'element'");
      if (tokens.size() != 3) rep.atLine(ln, "expected 'format <ascii|binary_little_endian|binary_big_endian> 1.0'");
      if (tokens[1] == "ascii") h.format = PlyFormat::ascii;
      else if (tokens[1] == "binary_little_endian") h.format = PlyFormat::binaryLittleEndian;
      else if (tokens[1] == "binary_big_endian") h.format = PlyFormat::binaryBigEndian;
      else rep.atLine(ln, "unknown format '" + std::string(tokens[1]) +
                              "' (expected ascii, binary_little_endian or binary_big_endian)");
      if (tokens[2] != "1.0" && tokens[2] != "1") rep.atLine(ln, "unsupported PLY version '" + std::string(tokens[2]) + "' (expected 1.0)");
      sawFormat = true;
      continue;
    }
    if (!sawFormat) rep.atLine(ln, "expected the 'format' line, found '" + std::string(key) + "'");
    if (key == "element") {
      if (tokens.size() != 3) rep.atLine(ln, "expected 'element <name> <count>'");
      auto count = parseCount(tokens[2]);
      if (!count) rep.atLine(ln, "element count '" + std::string(tokens[2]) + "' is not a non-negative integer");
      PlyElement e;
      e.name = std::string(tokens[1]);
      if (!elementNames.insert(e.name).second) rep.atLine(ln, "element '" + e.name + "' is declared twice");
      e.count = *count;
      e.headerLine = static_cast<int>(ln);
      h.elements.push_back(std::move(e));
      propertyNames.clear();
      continue;
    }
    if (key == "property") {
      if (h.elements.empty()) rep.atLine(ln, "'property' before any 'element'");
      PlyElement& e = h.elements.back();
      PlyProperty p;
      p.headerLine = ln;
      if (tokens.size() >= 2 && tokens[1] == "list") {
        if (tokens.size() != 5) rep.atLine(ln, "expected 'property list <count type> <item type> <name>'");
        auto ct = parseType(tokens[2]);
        auto it = parseType(tokens[3]);
        if (!ct || isFloatType(*ct))
          rep.atLine(ln, "list count type '" + std::string(tokens[2]) + "' is not an integer type");
        if (!it) rep.atLine(ln, "unknown property type '" + std::string(tokens[3]) + "'");
        p.isList = true;
        p.countType = *ct;
        p.type = *it;
        p.name = std::string(tokens[4]);
      } else {
        if (tokens.size() != 3) rep.atLine(ln, "expected 'property <type> <name>'");
        auto t = parseType(tokens[1]);
        if (!t) rep.atLine(ln, "unknown property type '" + std::string(tokens[1]) + "'");
        p.type = *t;
        p.name = std::string(tokens[2]);
      }
      if (!propertyNames.insert(p.name).second)
        rep.atLine(ln, "property '" + p.name + "' of element '" + e.name + "' is declared twice");
      e.properties.push_back(std::move(p));
      continue;
    }
    rep.atLine(ln, "unknown header keyword '" + std::string(key) + "'");
  }
  if (!sawFormat) rep.general("the header has no 'format' line");
  h.bodyOffset = src.offset();
  return h;
}

/// Which vertex property feeds which output channel.
struct VertexMapping {
  int xyz[3] = {-1, -1, -1};
  int rgba[4] = {-1, -1, -1, -1};
  int normal[3] = {-1, -1, -1};
  int snr = -1;
};

VertexMapping mapVertex(const PlyElement& v, const Reporter& rep) {
  VertexMapping m;
  auto requireFloat = [&](const PlyProperty& p) {
    if (!isFloatType(p.type))
      rep.atLine(p.headerLine,
                 "vertex property '" + p.name + "' has type " + typeName(p.type) + "; expected float or double");
  };
  for (std::size_t i = 0; i < v.properties.size(); ++i) {
    const PlyProperty& p = v.properties[i];
    if (p.isList)
      rep.atLine(p.headerLine,
                 "vertex property '" + p.name + "' is a list; vertex properties must be scalars");
    const int idx = static_cast<int>(i);
    static constexpr const char* kXyz[3] = {"x", "y", "z"};
    static constexpr const char* kRgba[4] = {"red", "green", "blue", "alpha"};
    static constexpr const char* kNormal[3] = {"nx", "ny", "nz"};
    for (int c = 0; c < 3; ++c)
      if (p.name == kXyz[c]) { requireFloat(p); m.xyz[c] = idx; }
    for (int c = 0; c < 3; ++c)
      if (p.name == kNormal[c]) { requireFloat(p); m.normal[c] = idx; }
    if (p.name == "snr") { requireFloat(p); m.snr = idx; }
    for (int c = 0; c < 4; ++c)
      if (p.name == kRgba[c]) {
        if (p.type != PlyType::u8 && p.type != PlyType::u16 && !isFloatType(p.type))
          rep.atLine(p.headerLine, "vertex property '" + p.name + "' has type " +
                                                                  typeName(p.type) + "; expected uchar, ushort, float or double");
        m.rgba[c] = idx;
      }
  }
  const std::size_t hl = static_cast<std::size_t>(v.headerLine);
  if (m.xyz[0] < 0 || m.xyz[1] < 0 || m.xyz[2] < 0)
    rep.atLine(hl, "element 'vertex' must have float or double properties x, y and z");
  const int nNormals = (m.normal[0] >= 0) + (m.normal[1] >= 0) + (m.normal[2] >= 0);
  if (nNormals != 0 && nNormals != 3) rep.atLine(hl, "element 'vertex' has only some of nx, ny, nz");
  const int nColors = (m.rgba[0] >= 0) + (m.rgba[1] >= 0) + (m.rgba[2] >= 0);
  if (nColors != 0 && nColors != 3) rep.atLine(hl, "element 'vertex' has only some of red, green, blue");
  if (nColors == 0 && m.rgba[3] >= 0) rep.atLine(hl, "element 'vertex' has alpha but no red, green, blue");
  return m;
}

std::uint8_t colorToByte(double v, PlyType t) {
  double scaled = v;
  if (t == PlyType::u16) scaled = v * (255.0 / 65535.0);
  else if (isFloatType(t)) scaled = v * 255.0;
  if (!(scaled > 0.0)) return 0;  // also NaN
  if (scaled >= 255.0) return 255;
  return static_cast<std::uint8_t>(std::lround(scaled));
}

template <class T>
T loadAs(const char* p, bool swap) {
  using U = std::conditional_t<sizeof(T) == 1, std::uint8_t,
            std::conditional_t<sizeof(T) == 2, std::uint16_t, std::conditional_t<sizeof(T) == 4, std::uint32_t, std::uint64_t>>>;
  U u;
  std::memcpy(&u, p, sizeof(U));
  if (swap) {
    if constexpr (sizeof(U) == 2) u = static_cast<U>(__builtin_bswap16(u));
    else if constexpr (sizeof(U) == 4) u = __builtin_bswap32(u);
    else if constexpr (sizeof(U) == 8) u = __builtin_bswap64(u);
  }
  T v;
  std::memcpy(&v, &u, sizeof(T));
  return v;
}

double loadBinary(const char* p, PlyType t, bool swap) {
  switch (t) {
    case PlyType::i8: return loadAs<std::int8_t>(p, swap);
    case PlyType::u8: return loadAs<std::uint8_t>(p, swap);
    case PlyType::i16: return loadAs<std::int16_t>(p, swap);
    case PlyType::u16: return loadAs<std::uint16_t>(p, swap);
    case PlyType::i32: return loadAs<std::int32_t>(p, swap);
    case PlyType::u32: return loadAs<std::uint32_t>(p, swap);
    case PlyType::f32: return loadAs<float>(p, swap);
    case PlyType::f64: return loadAs<double>(p, swap);
  }
  return 0.0;
}

/// Parses one ascii token as a value of type `t`; nullopt when it is not a number of
/// that type (non-numeric, trailing junk, fractional integer, out of range).
std::optional<double> parseAscii(std::string_view tok, PlyType t) {
  const char* b = tok.data();
  const char* e = tok.data() + tok.size();
  if (e - b >= 2 && *b == '+' && b[1] != '-' && b[1] != '+') ++b;  // from_chars does not take a leading '+'
  if (t == PlyType::f32) {
    // Parsed as float directly: going through double could round twice and miss the
    // value a shortest-form float was printed from.
    float v = 0;
    auto [ptr, ec] = std::from_chars(b, e, v);
    if (ec != std::errc() || ptr != e) return std::nullopt;
    return static_cast<double>(v);
  }
  if (t == PlyType::f64) {
    double v = 0;
    auto [ptr, ec] = std::from_chars(b, e, v);
    if (ec != std::errc() || ptr != e) return std::nullopt;
    return v;
  }
  std::int64_t v = 0;
  auto [ptr, ec] = std::from_chars(b, e, v);
  if (ec != std::errc() || ptr != e) return std::nullopt;
  std::int64_t lo = 0, hi = 0;
  switch (t) {
    case PlyType::i8: lo = INT8_MIN; hi = INT8_MAX; break;
    case PlyType::u8: lo = 0; hi = UINT8_MAX; break;
    case PlyType::i16: lo = INT16_MIN; hi = INT16_MAX; break;
    case PlyType::u16: lo = 0; hi = UINT16_MAX; break;
    case PlyType::i32: lo = INT32_MIN; hi = INT32_MAX; break;
    case PlyType::u32: lo = 0; hi = UINT32_MAX; break;
    default: break;
  }
  if (v < lo || v > hi) return std::nullopt;
  return static_cast<double>(v);
}

/// The float a double value narrows to, or nullopt when a finite value exceeds float's
/// range (the C++ conversion would be undefined).
std::optional<float> narrow(double v) {
  if (std::isfinite(v) && std::fabs(v) > static_cast<double>(std::numeric_limits<float>::max())) return std::nullopt;
  return static_cast<float>(v);
}

/// Stores decoded vertices (values indexed like the vertex properties) into the cloud,
/// growing its arrays as records arrive when the input's size could not vouch for the
/// declared count (a pipe or device), so memory follows the data actually read.
class VertexSink {
 public:
  VertexSink(HostPointCloud& cloud, const VertexMapping& m, const PlyElement& v, std::size_t count, bool trustCount)
      : cloud_(cloud), m_(m), v_(v), count_(count) {
    if (trustCount) resize(count);
  }

  /// Returns the name of the property whose value does not fit a float, or nullptr.
  /// A vertex with a non-finite coordinate is stored as a missing point (NaN x, y, z),
  /// the one form writePly writes for it.
  const char* store(std::size_t i, const double* values) {
    if (i >= allocated_) resize(std::min(count_, std::max<std::size_t>(2 * allocated_, 1 << 16)));
    float xyz[3];
    for (int c = 0; c < 3; ++c) {
      auto f = narrow(values[m_.xyz[c]]);
      if (!f) return v_.properties[static_cast<std::size_t>(m_.xyz[c])].name.c_str();
      xyz[c] = *f;
    }
    if (!(std::isfinite(xyz[0]) && std::isfinite(xyz[1]) && std::isfinite(xyz[2])))
      xyz[0] = xyz[1] = xyz[2] = std::numeric_limits<float>::quiet_NaN();
    std::memcpy(&cloud_.xyz[3 * i], xyz, sizeof xyz);
    if (!cloud_.rgba.empty()) {
      for (int c = 0; c < 4; ++c) {
        const int p = m_.rgba[c];
        cloud_.rgba[4 * i + static_cast<std::size_t>(c)] =
            p < 0 ? std::uint8_t{255} : colorToByte(values[p], v_.properties[static_cast<std::size_t>(p)].type);
      }
    }
    if (!cloud_.normals.empty()) {
      for (int c = 0; c < 3; ++c) {
        auto f = narrow(values[m_.normal[c]]);
        if (!f) return v_.properties[static_cast<std::size_t>(m_.normal[c])].name.c_str();
        cloud_.normals[3 * i + static_cast<std::size_t>(c)] = *f;
      }
    }
    if (!cloud_.snr.empty()) {
      auto f = narrow(values[m_.snr]);
      if (!f) return "snr";
      cloud_.snr[i] = *f;
    }
    return nullptr;
  }

 private:
  void resize(std::size_t points) {
    cloud_.xyz.resize(checkedMul(points, 3, "readPly: xyz"));
    if (m_.rgba[0] >= 0) cloud_.rgba.resize(checkedMul(points, 4, "readPly: rgba"));
    if (m_.normal[0] >= 0) cloud_.normals.resize(checkedMul(points, 3, "readPly: normals"));
    if (m_.snr >= 0) cloud_.snr.resize(points);
    allocated_ = points;
  }

  HostPointCloud& cloud_;
  const VertexMapping& m_;
  const PlyElement& v_;
  std::size_t count_;
  std::size_t allocated_ = 0;
};

/// Checks, before anything is allocated, that a regular file's body can hold the least
/// the declared elements need (an ascii value takes at least one character and values
/// are separated by a space or newline).
void checkBodyCanHoldCounts(const PlyHeader& h, std::uint64_t bodyBytes, const Reporter& rep) {
  const bool ascii = h.format == PlyFormat::ascii;
  std::uint64_t needed = 0;
  for (const auto& e : h.elements) {
    const std::uint64_t perRecord =
        ascii ? 2 * std::max<std::uint64_t>(e.properties.size(), 1) - 1 : e.minBinaryRecordSize();
    std::uint64_t bytes = 0;
    if (__builtin_mul_overflow(e.count, perRecord, &bytes) || __builtin_add_overflow(needed, bytes, &needed) ||
        needed > bodyBytes)
      rep.atLine(static_cast<std::size_t>(e.headerLine),
                 "element '" + e.name + "' declares " + std::to_string(e.count) + " records, but the " +
                     std::to_string(bodyBytes) + "-byte body after the header (byte " + std::to_string(h.bodyOffset) +
                     ") cannot hold them (the file is truncated or the count is wrong)");
  }
}

void readAsciiBody(ByteSource& src, const PlyHeader& h, const PlyElement* vertex, VertexSink& sink,
                   const Reporter& rep) {
  std::vector<double> values(vertex->properties.size());
  for (const auto& e : h.elements) {
    const bool isVertex = &e == vertex;
    for (std::uint64_t r = 0; r < e.count; ++r) {
      auto line = src.line(kMaxBodyLine);
      const std::size_t ln = src.lineNumber();
      if (!line)
        rep.atLine(ln + 1, "the file ends after " + std::to_string(r) + " of the " + std::to_string(e.count) + " '" +
                               e.name + "' records the header declares");
      const auto tokens = tokenize(*line);
      std::size_t t = 0;
      for (std::size_t pi = 0; pi < e.properties.size(); ++pi) {
        const PlyProperty& p = e.properties[pi];
        auto take = [&](PlyType type) -> double {
          if (t >= tokens.size())
            rep.atLine(ln, "'" + e.name + "' record " + std::to_string(r) + " has too few values (" +
                               std::to_string(tokens.size()) + "); property '" + p.name + "' is missing");
          auto v = parseAscii(tokens[t], type);
          if (!v)
            rep.atLine(ln, "value '" + std::string(tokens[t].substr(0, 64)) + "' of property '" + p.name +
                               "' is not a valid " + typeName(type));
          ++t;
          return *v;
        };
        if (p.isList) {
          const double count = take(p.countType);
          if (count < 0) rep.atLine(ln, "list '" + p.name + "' has a negative length");
          for (double k = 0; k < count; ++k) take(p.type);
        } else {
          const double v = take(p.type);
          if (isVertex) values[pi] = v;
        }
      }
      if (t != tokens.size())
        rep.atLine(ln, "'" + e.name + "' record " + std::to_string(r) + " has " + std::to_string(tokens.size()) +
                           " values; the header declares " + std::to_string(t));
      if (isVertex)
        if (const char* bad = sink.store(static_cast<std::size_t>(r), values.data()))
          rep.atLine(ln, "value of property '" + std::string(bad) + "' does not fit in a float");
    }
  }
  // Blank lines may follow the last record, but not without end (a stream of newlines).
  const std::uint64_t trailingStart = src.offset();
  while (auto line = src.line(kMaxBodyLine)) {
    if (!tokenize(*line).empty())
      rep.atLine(src.lineNumber(), "data after the last declared record (do the element counts match the data?)");
    if (src.offset() - trailingStart > kMaxBodyLine)
      rep.atLine(src.lineNumber(), "more than " + std::to_string(kMaxBodyLine) +
                                       " bytes of blank lines follow the last declared record");
  }
}

void readBinaryBody(ByteSource& src, const PlyHeader& h, const PlyElement* vertex, VertexSink& sink,
                    std::optional<std::uint64_t> fileSize, const Reporter& rep) {
  const bool swap = (h.format == PlyFormat::binaryBigEndian) != (std::endian::native == std::endian::big);
  std::vector<double> values(vertex->properties.size());
  std::vector<char> chunk;
  for (const auto& e : h.elements) {
    const bool isVertex = &e == vertex;
    if (!e.hasList()) {
      const std::size_t recordSize = e.minBinaryRecordSize();
      const std::uint64_t start = src.offset();
      if (!isVertex) {
        std::uint64_t bytes = 0;
        if (__builtin_mul_overflow(e.count, static_cast<std::uint64_t>(recordSize), &bytes) || !src.skip(bytes))
          rep.atByte(src.offset(), "the file ends inside the " + std::to_string(e.count) + " '" + e.name +
                                       "' records the header declares (the file is truncated or the count is wrong)");
        continue;
      }
      std::vector<std::size_t> offsets;
      std::size_t off = 0;
      for (const auto& p : e.properties) {
        offsets.push_back(off);
        off += typeSize(p.type);
      }
      // Whole records at a time, about 64 KiB per read.
      const std::size_t perChunk = std::max<std::size_t>(1, (std::size_t{1} << 16) / std::max<std::size_t>(recordSize, 1));
      chunk.resize(perChunk * recordSize);
      for (std::uint64_t r = 0; r < e.count;) {
        const std::size_t records = static_cast<std::size_t>(std::min<std::uint64_t>(perChunk, e.count - r));
        const std::size_t got = src.read(chunk.data(), records * recordSize);
        if (got != records * recordSize)
          rep.atByte(src.offset(), "the file ends inside 'vertex' record " + std::to_string(r + got / recordSize) +
                                       " of " + std::to_string(e.count) +
                                       " (the file is truncated or the count is wrong)");
        for (std::size_t k = 0; k < records; ++k, ++r) {
          const char* rec = chunk.data() + k * recordSize;
          for (std::size_t pi = 0; pi < e.properties.size(); ++pi)
            values[pi] = loadBinary(rec + offsets[pi], e.properties[pi].type, swap);
          if (const char* bad = sink.store(static_cast<std::size_t>(r), values.data()))
            rep.atByte(start + r * recordSize, "value of property '" + std::string(bad) + "' does not fit in a float");
        }
      }
      continue;
    }
    // Records with lists (faces, ...): checked for length and skipped.
    char scalar[8];
    for (std::uint64_t r = 0; r < e.count; ++r) {
      for (const auto& p : e.properties) {
        const std::size_t s = p.isList ? typeSize(p.countType) : typeSize(p.type);
        const std::uint64_t at = src.offset();
        if (src.read(scalar, s) != s)
          rep.atByte(at, "the file ends inside '" + e.name + "' record " + std::to_string(r) + " of " +
                             std::to_string(e.count));
        if (!p.isList) continue;
        const double count = loadBinary(scalar, p.countType, swap);
        if (count < 0) rep.atByte(at, "list '" + p.name + "' has a negative length");
        if (!src.skip(static_cast<std::uint64_t>(count) * typeSize(p.type)))
          rep.atByte(src.offset(), "the file ends inside list '" + p.name + "' of '" + e.name + "' record " +
                                       std::to_string(r));
      }
    }
  }
  if (!src.atEnd()) {
    const std::uint64_t pos = src.offset();
    rep.atByte(pos, (fileSize && *fileSize > pos ? std::to_string(*fileSize - pos) + " bytes follow"
                                                  : std::string("data follows")) +
                        " the last declared record (do the element counts match the data?)");
  }
}

HostPointCloud readPlyImpl(const std::string& path) {
  io_detail::File file;
  file.open("readPly", path, "rb");
  const Reporter rep(path);
  ByteSource src(file.get(), rep);
  const PlyHeader h = parseHeader(src, rep);

  const PlyElement* vertex = nullptr;
  for (const auto& e : h.elements)
    if (e.name == "vertex") vertex = &e;
  if (!vertex) rep.general("the header declares no 'vertex' element");
  const VertexMapping mapping = mapVertex(*vertex, rep);

  // A regular file's size bounds the counts before anything is allocated; a stream's
  // does not exist, so the cloud then grows with the records that actually arrive.
  const std::optional<std::uint64_t> fileSize = file.regularFileSize();
  if (fileSize) checkBodyCanHoldCounts(h, *fileSize > h.bodyOffset ? *fileSize - h.bodyOffset : 0, rep);
  if (vertex->count > std::numeric_limits<std::size_t>::max() / 16)
    rep.atLine(static_cast<std::size_t>(vertex->headerLine),
               "vertex count " + std::to_string(vertex->count) + " exceeds what host memory can address");
  const std::size_t n = static_cast<std::size_t>(vertex->count);

  if ((h.height >= 0) != (h.width >= 0))
    rep.atLine(static_cast<std::size_t>(h.height >= 0 ? h.heightLine : h.widthLine),
               "an organized cloud needs both height and width (obj_info height H / obj_info width W)");
  HostPointCloud cloud;
  if (h.height >= 0) {
    const std::uint64_t hw = static_cast<std::uint64_t>(h.height) * static_cast<std::uint64_t>(h.width);
    if (hw != vertex->count)
      rep.atLine(static_cast<std::size_t>(vertex->headerLine),
                 "organized size " + std::to_string(h.height) + " x " + std::to_string(h.width) + " = " +
                     std::to_string(hw) + " points does not match the vertex count " + std::to_string(vertex->count));
    cloud.height = static_cast<int>(h.height);
    cloud.width = static_cast<int>(h.width);
  }
  VertexSink sink(cloud, mapping, *vertex, n, fileSize.has_value());
  if (h.format == PlyFormat::ascii)
    readAsciiBody(src, h, vertex, sink, rep);
  else
    readBinaryBody(src, h, vertex, sink, fileSize, rep);
  return cloud;
}
}  // namespace

HostPointCloud readPly(const std::string& path) {
  return io_detail::translateAllocationFailure("readPly", [&] { return readPlyImpl(path); });
}

// ------------------------------------------------------------------ writer ---

namespace {

class BufferedWriter {
 public:
  BufferedWriter(std::FILE* f, const std::string& path) : f_(f), path_(path) { buffer_.reserve(kCapacity); }
  void put(const char* p, std::size_t n) {
    if (buffer_.size() + n > kCapacity) flush();
    buffer_.insert(buffer_.end(), p, p + n);
  }
  void put(std::string_view s) { put(s.data(), s.size()); }
  void flush() {
    if (!buffer_.empty() && std::fwrite(buffer_.data(), 1, buffer_.size(), f_) != buffer_.size())
      invalid("writePly: '" + io_detail::printable(path_) + "': write failed: " + io_detail::systemErrorText(errno));
    buffer_.clear();
  }

 private:
  static constexpr std::size_t kCapacity = 1 << 20;
  std::FILE* f_;
  const std::string& path_;
  std::vector<char> buffer_;
};

template <class T>
void putBinary(BufferedWriter& w, T v, bool swap) {
  char b[sizeof(T)];
  std::memcpy(b, &v, sizeof(T));
  if (swap) std::reverse(b, b + sizeof(T));
  w.put(b, sizeof(T));
}

void putAsciiFloat(BufferedWriter& w, float v) {
  if (std::isnan(v)) { w.put("nan"); return; }  // the sign of a NaN carries no meaning here
  char b[32];
  auto [ptr, ec] = std::to_chars(b, b + sizeof b, v);  // shortest text that reads back bit-exactly
  w.put(b, static_cast<std::size_t>(ptr - b));
}

}  // namespace

void writePly(const std::string& path, const HostPointCloud& cloud, PlyFormat format) {
  cloud.validate();
  if (cloud.empty()) invalid("writePly: '" + path + "': the cloud has no points");
  if (format != PlyFormat::ascii && format != PlyFormat::binaryLittleEndian && format != PlyFormat::binaryBigEndian)
    invalid("writePly: unknown PlyFormat value " + std::to_string(static_cast<int>(format)));

  std::string header = "ply\nformat ";
  header += format == PlyFormat::ascii ? "ascii" : format == PlyFormat::binaryLittleEndian ? "binary_little_endian"
                                                                                           : "binary_big_endian";
  header += " 1.0\ncomment written by devicearray\n";
  if (cloud.isOrganized()) {
    header += "obj_info height " + std::to_string(cloud.height) + "\n";
    header += "obj_info width " + std::to_string(cloud.width) + "\n";
  }
  header += "element vertex " + std::to_string(cloud.size()) + "\n";
  header += "property float x\nproperty float y\nproperty float z\n";
  if (cloud.hasColors()) header += "property uchar red\nproperty uchar green\nproperty uchar blue\nproperty uchar alpha\n";
  if (cloud.hasNormals()) header += "property float nx\nproperty float ny\nproperty float nz\n";
  if (cloud.hasSNR()) header += "property float snr\n";
  header += "end_header\n";

  io_detail::OutputFile file("writePly", path);
  BufferedWriter w(file.get(), path);
  w.put(header);
  const bool swap = (format == PlyFormat::binaryBigEndian) != (std::endian::native == std::endian::big);
  const std::size_t n = cloud.size();
  constexpr float kMissing[3] = {std::numeric_limits<float>::quiet_NaN(), std::numeric_limits<float>::quiet_NaN(),
                                 std::numeric_limits<float>::quiet_NaN()};
  for (std::size_t i = 0; i < n; ++i) {
    // A point with a non-finite coordinate (an overflowing transform gives inf) is
    // missing: it is written as NaN, NaN, NaN, which readPly reads back as missing.
    const float* xyz = cloud.isValid(i) ? &cloud.xyz[3 * i] : kMissing;
    if (format == PlyFormat::ascii) {
      char b[8];
      for (int c = 0; c < 3; ++c) {
        if (c) w.put(" ", 1);
        putAsciiFloat(w, xyz[c]);
      }
      if (cloud.hasColors())
        for (int c = 0; c < 4; ++c) {
          auto [ptr, ec] = std::to_chars(b, b + sizeof b, static_cast<unsigned>(cloud.rgba[4 * i + c]));
          w.put(" ", 1);
          w.put(b, static_cast<std::size_t>(ptr - b));
        }
      if (cloud.hasNormals())
        for (int c = 0; c < 3; ++c) {
          w.put(" ", 1);
          putAsciiFloat(w, cloud.normals[3 * i + c]);
        }
      if (cloud.hasSNR()) {
        w.put(" ", 1);
        putAsciiFloat(w, cloud.snr[i]);
      }
      w.put("\n", 1);
    } else {
      for (int c = 0; c < 3; ++c) putBinary(w, xyz[c], swap);
      if (cloud.hasColors()) w.put(reinterpret_cast<const char*>(&cloud.rgba[4 * i]), 4);
      if (cloud.hasNormals())
        for (int c = 0; c < 3; ++c) putBinary(w, cloud.normals[3 * i + c], swap);
      if (cloud.hasSNR()) putBinary(w, cloud.snr[i], swap);
    }
  }
  w.flush();
  file.commit();
}

}  // namespace devicearray
