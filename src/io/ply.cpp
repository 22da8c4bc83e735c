// PLY reading and writing, and the HostPointCloud invariants.
//
// The reader loads the whole file once (its size bounds every later allocation), parses
// the header into element/property descriptions, checks that the body can possibly
// hold what the header declares before allocating anything, then decodes the body.
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
#include <vector>

#include "devicearray/io.hpp"
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

// The longest header or ascii body line we accept: real files stay far below, and
// the bound keeps a garbage file from being scanned as one gigantic token.
constexpr std::size_t kMaxHeaderLine = 4096;
constexpr std::size_t kMaxBodyLine = 64 * 1024;

/// Where a problem is: the file, plus a line or byte position.
class Reporter {
 public:
  explicit Reporter(const std::string& path) : prefix_("readPly: '" + path + "': ") {}
  [[noreturn]] void atLine(std::size_t line, const std::string& what) const {
    invalid(prefix_ + "line " + std::to_string(line) + ": " + what);
  }
  [[noreturn]] void atByte(std::size_t byte, const std::string& what) const {
    invalid(prefix_ + "byte " + std::to_string(byte) + ": " + what);
  }
  [[noreturn]] void general(const std::string& what) const { invalid(prefix_ + what); }

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

/// Splits the buffer into lines on demand, stripping "\r\n" / "\n".
class LineCursor {
 public:
  LineCursor(std::string_view data, std::size_t start, std::size_t firstLineNumber)
      : data_(data), pos_(start), lineNumber_(firstLineNumber - 1) {}
  /// Next line, or nullopt at the end of the data. Throws (via `rep`) when a line
  /// exceeds maxLength.
  std::optional<std::string_view> next(const Reporter& rep, std::size_t maxLength) {
    if (pos_ >= data_.size()) return std::nullopt;
    ++lineNumber_;
    const std::size_t searchEnd = std::min(data_.size(), pos_ + maxLength + 2);
    const void* nl = std::memchr(data_.data() + pos_, '\n', searchEnd - pos_);
    std::size_t end = nl ? static_cast<std::size_t>(static_cast<const char*>(nl) - data_.data()) : searchEnd;
    if (!nl && searchEnd < data_.size())
      rep.atLine(lineNumber_, "line is longer than " + std::to_string(maxLength) + " characters");
    std::string_view line = data_.substr(pos_, end - pos_);
    pos_ = nl ? end + 1 : end;
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (line.size() > maxLength)
      rep.atLine(lineNumber_, "line is longer than " + std::to_string(maxLength) + " characters");
    return line;
  }
  std::size_t position() const { return pos_; }
  std::size_t lineNumber() const { return lineNumber_; }

 private:
  std::string_view data_;
  std::size_t pos_;
  std::size_t lineNumber_;
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
  std::size_t bodyOffset = 0;
  std::size_t bodyFirstLine = 0;
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

PlyHeader parseHeader(std::string_view data, const Reporter& rep) {
  PlyHeader h;
  LineCursor cursor(data, 0, 1);
  auto first = cursor.next(rep, kMaxHeaderLine);
  if (!first || *first != "ply")
    rep.general("not a PLY file: the first line must be 'ply'" +
                std::string(data.empty() ? " (the file is empty)" : ""));
  bool sawFormat = false;
  for (;;) {
    auto line = cursor.next(rep, kMaxHeaderLine);
    const std::size_t ln = cursor.lineNumber();
    if (!line) rep.general("the header has no 'end_header' line (" + std::to_string(ln) + " lines read)");
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
      for (const auto& e : h.elements)
        if (e.name == tokens[1]) rep.atLine(ln, "element '" + e.name + "' is declared twice");
      PlyElement e;
      e.name = std::string(tokens[1]);
      e.count = *count;
      e.headerLine = static_cast<int>(ln);
      h.elements.push_back(std::move(e));
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
      for (const auto& q : e.properties)
        if (q.name == p.name) rep.atLine(ln, "property '" + p.name + "' of element '" + e.name + "' is declared twice");
      e.properties.push_back(std::move(p));
      continue;
    }
    rep.atLine(ln, "unknown header keyword '" + std::string(key) + "'");
  }
  if (!sawFormat) rep.general("the header has no 'format' line");
  h.bodyOffset = cursor.position();
  h.bodyFirstLine = cursor.lineNumber() + 1;
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

/// Stores one decoded vertex (values indexed like the vertex properties).
class VertexSink {
 public:
  VertexSink(HostPointCloud& cloud, const VertexMapping& m, const PlyElement& v) : cloud_(cloud), m_(m), v_(v) {}

  /// Returns the name of the property whose value does not fit a float, or nullptr.
  const char* store(std::size_t i, const double* values) {
    for (int c = 0; c < 3; ++c) {
      auto f = narrow(values[m_.xyz[c]]);
      if (!f) return v_.properties[static_cast<std::size_t>(m_.xyz[c])].name.c_str();
      cloud_.xyz[3 * i + static_cast<std::size_t>(c)] = *f;
    }
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
  HostPointCloud& cloud_;
  const VertexMapping& m_;
  const PlyElement& v_;
};

/// Bytes of the file, read at once; its size bounds everything we allocate later.
std::string readWholeFile(const std::string& path) {
  io_detail::File f;
  f.open("readPly", path, "rb");
  std::string data;
  char buffer[1 << 16];
  for (;;) {
    const std::size_t got = std::fread(buffer, 1, sizeof buffer, f.get());
    data.append(buffer, got);
    if (got < sizeof buffer) {
      if (std::ferror(f.get()))
        invalid("readPly: '" + path + "': read error after " + std::to_string(data.size()) + " bytes: " +
                io_detail::systemErrorText(errno));
      break;
    }
  }
  return data;
}

}  // namespace

namespace {
HostPointCloud readPlyImpl(const std::string& path) {
  const std::string data = readWholeFile(path);
  const Reporter rep(path);
  const PlyHeader h = parseHeader(data, rep);
  const std::size_t bodyBytes = data.size() - h.bodyOffset;
  const bool ascii = h.format == PlyFormat::ascii;
  const bool swap = (h.format == PlyFormat::binaryBigEndian) != (std::endian::native == std::endian::big);

  const PlyElement* vertex = nullptr;
  for (const auto& e : h.elements)
    if (e.name == "vertex") vertex = &e;
  if (!vertex) rep.general("the header declares no 'vertex' element");
  const VertexMapping mapping = mapVertex(*vertex, rep);

  // Before allocating: the least space the declared elements need must fit in the body.
  // An ascii value takes at least one character, and values are separated by a space or newline.
  std::size_t needed = 0;
  for (const auto& e : h.elements) {
    const std::size_t perRecord =
        ascii ? 2 * std::max<std::size_t>(e.properties.size(), 1) - 1 : e.minBinaryRecordSize();
    std::size_t bytes = 0;
    if (e.count > std::numeric_limits<std::size_t>::max() ||
        __builtin_mul_overflow(static_cast<std::size_t>(e.count), perRecord, &bytes) ||
        __builtin_add_overflow(needed, bytes, &needed) || needed > bodyBytes)
      rep.atLine(static_cast<std::size_t>(e.headerLine),
                 "element '" + e.name + "' declares " + std::to_string(e.count) + " records, but the " +
                     std::to_string(bodyBytes) + "-byte body after the header (byte " + std::to_string(h.bodyOffset) +
                     ") cannot hold them (the file is truncated or the count is wrong)");
  }

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
  cloud.xyz.resize(checkedMul(n, 3, "readPly: xyz"));
  if (mapping.rgba[0] >= 0) cloud.rgba.resize(checkedMul(n, 4, "readPly: rgba"));
  if (mapping.normal[0] >= 0) cloud.normals.resize(checkedMul(n, 3, "readPly: normals"));
  if (mapping.snr >= 0) cloud.snr.resize(n);
  VertexSink sink(cloud, mapping, *vertex);
  std::vector<double> values(vertex->properties.size());

  if (ascii) {
    LineCursor cursor(data, h.bodyOffset, h.bodyFirstLine);
    for (const auto& e : h.elements) {
      const bool isVertex = &e == vertex;
      for (std::uint64_t r = 0; r < e.count; ++r) {
        auto line = cursor.next(rep, kMaxBodyLine);
        const std::size_t ln = cursor.lineNumber();
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
    while (auto line = cursor.next(rep, kMaxBodyLine))
      if (!tokenize(*line).empty())
        rep.atLine(cursor.lineNumber(), "data after the last declared record (do the element counts match the data?)");
  } else {
    std::size_t pos = h.bodyOffset;
    const char* bytes = data.data();
    for (const auto& e : h.elements) {
      const bool isVertex = &e == vertex;
      if (!e.hasList()) {
        // Fixed-size records; the size check above already guarantees they are present.
        const std::size_t recordSize = e.minBinaryRecordSize();
        // Earlier list elements may have used more than their minimum, so re-check here.
        if ((data.size() - pos) / std::max<std::size_t>(recordSize, 1) < e.count && recordSize != 0)
          rep.atByte(pos, "the file ends inside the " + std::to_string(e.count) + " '" + e.name +
                              "' records the header declares (the file is truncated or the count is wrong)");
        if (isVertex) {
          std::vector<std::size_t> offsets;
          std::size_t off = 0;
          for (const auto& p : e.properties) { offsets.push_back(off); off += typeSize(p.type); }
          for (std::size_t r = 0; r < n; ++r) {
            const char* rec = bytes + pos + r * recordSize;
            for (std::size_t pi = 0; pi < e.properties.size(); ++pi)
              values[pi] = loadBinary(rec + offsets[pi], e.properties[pi].type, swap);
            if (const char* bad = sink.store(r, values.data()))
              rep.atByte(pos + r * recordSize, "value of property '" + std::string(bad) + "' does not fit in a float");
          }
        }
        pos += static_cast<std::size_t>(e.count) * recordSize;
        continue;
      }
      for (std::uint64_t r = 0; r < e.count; ++r) {
        for (const auto& p : e.properties) {
          const std::size_t s = p.isList ? typeSize(p.countType) : typeSize(p.type);
          if (data.size() - pos < s)
            rep.atByte(pos, "the file ends inside '" + e.name + "' record " + std::to_string(r) + " of " +
                                std::to_string(e.count));
          if (!p.isList) { pos += s; continue; }
          const double count = loadBinary(bytes + pos, p.countType, swap);
          if (count < 0) rep.atByte(pos, "list '" + p.name + "' has a negative length");
          pos += s;
          const std::size_t itemBytes = static_cast<std::size_t>(count) * typeSize(p.type);
          if (data.size() - pos < itemBytes)
            rep.atByte(pos, "the file ends inside list '" + p.name + "' of '" + e.name + "' record " + std::to_string(r));
          pos += itemBytes;
        }
      }
    }
    if (pos != data.size())
      rep.atByte(pos, std::to_string(data.size() - pos) +
                          " bytes follow the last declared record (do the element counts match the data?)");
  }
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
      invalid("writePly: '" + path_ + "': write failed: " + io_detail::systemErrorText(errno));
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

  io_detail::File file;
  file.open("writePly", path, "wb");
  io_detail::RemoveOnFailure cleanup(path);
  BufferedWriter w(file.get(), path);
  w.put(header);
  const bool swap = (format == PlyFormat::binaryBigEndian) != (std::endian::native == std::endian::big);
  const std::size_t n = cloud.size();
  for (std::size_t i = 0; i < n; ++i) {
    if (format == PlyFormat::ascii) {
      char b[8];
      for (int c = 0; c < 3; ++c) {
        if (c) w.put(" ", 1);
        putAsciiFloat(w, cloud.xyz[3 * i + c]);
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
      for (int c = 0; c < 3; ++c) putBinary(w, cloud.xyz[3 * i + c], swap);
      if (cloud.hasColors()) w.put(reinterpret_cast<const char*>(&cloud.rgba[4 * i]), 4);
      if (cloud.hasNormals())
        for (int c = 0; c < 3; ++c) putBinary(w, cloud.normals[3 * i + c], swap);
      if (cloud.hasSNR()) putBinary(w, cloud.snr[i], swap);
    }
  }
  w.flush();
  if (!file.close()) invalid("writePly: '" + path + "': closing the file failed: " + io_detail::systemErrorText(errno));
  cleanup.release();
}

}  // namespace devicearray
