// PLY reading and writing.
//
// The reader checks the magic in the first bytes, parses the header (bounded in size
// and line length, in time linear in its size), checks that a regular file's body can
// possibly hold what the header declares before allocating anything, then decodes the
// body record by record without reading past what the header declares, so pipes and
// devices such as /dev/zero cannot make it read or allocate without bound. The writer
// goes through io_detail::OutputFile: a temporary file renamed over the target, so a
// failed write leaves an existing file intact. Every problem is reported as one
// InvalidArgument naming the file, the header line, body line (ascii) or byte offset
// (binary), and what is wrong.
#include <algorithm>
#include <bit>
#include <climits>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_set>
#include <vector>

#include "devicearray/ply.hpp"
#include "io/point_cloud_file_support.hpp"
#include "io/record_io.hpp"

namespace devicearray {

using io_detail::ByteSource;
using io_detail::checkedMul;
using io_detail::invalid;
using io_detail::Reporter;
using io_detail::ScalarType;
using io_detail::scalarName;
using io_detail::scalarSize;
using io_detail::tokenize;

// ------------------------------------------------------------------ reader ---

namespace {

std::optional<ScalarType> parseType(std::string_view s) {
  if (s == "char" || s == "int8") return ScalarType::i8;
  if (s == "uchar" || s == "uint8") return ScalarType::u8;
  if (s == "short" || s == "int16") return ScalarType::i16;
  if (s == "ushort" || s == "uint16") return ScalarType::u16;
  if (s == "int" || s == "int32") return ScalarType::i32;
  if (s == "uint" || s == "uint32") return ScalarType::u32;
  if (s == "float" || s == "float32") return ScalarType::f32;
  if (s == "double" || s == "float64") return ScalarType::f64;
  return std::nullopt;
}

struct PlyProperty {
  std::string name;
  bool isList = false;
  ScalarType type = ScalarType::f32;      // scalar type, or the item type of a list
  ScalarType countType = ScalarType::u8;  // list count type
  std::size_t headerLine = 0;             // where it is declared, for messages
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
    for (const auto& p : properties) s += p.isList ? scalarSize(p.countType) : scalarSize(p.type);
    return s;
  }
  /// Index of the scalar property `name`, or -1.
  int find(std::string_view name) const {
    for (std::size_t i = 0; i < properties.size(); ++i)
      if (!properties[i].isList && properties[i].name == name) return static_cast<int>(i);
    return -1;
  }
};

// Limits that keep a garbage or hostile file from being scanned or buffered without
// bound: real headers and lines stay far below them. The body is never buffered whole;
// it is decoded record by record as the header describes it.
constexpr std::size_t kMaxHeaderLine = 4096;
constexpr std::uint64_t kMaxHeaderBytes = 16u << 20;
constexpr std::size_t kMaxBodyLine = 64 * 1024;

struct PlyHeader {
  PlyFormat format = PlyFormat::ascii;
  std::vector<PlyElement> elements;
  // The grid from "obj_info height H / width W" (ours) or "obj_info num_rows H /
  // num_cols W" (PCL, VTK, camera vendors); -1 = absent.
  std::int64_t height = -1, width = -1;
  int heightLine = 0, widthLine = 0;
  bool heightIsRowCount = false;  // from num_rows: PCL writes one row for an unorganized cloud
  std::uint64_t bodyOffset = 0;
};

void setDimension(const Reporter& rep, std::size_t line, bool isHeight, std::string_view value, bool rowCount,
                  PlyHeader& h) {
  const char* which = isHeight ? "height" : "width";
  auto v = io_detail::parseCount(value);
  if (rowCount && v && *v == 0) return;  // PCL's empty cloud: no grid
  if (!v || *v == 0 || *v > static_cast<std::uint64_t>(INT_MAX))
    rep.atLine(line, std::string("organized ") + which + " '" + std::string(value) + "' must be an integer in 1.." +
                         std::to_string(INT_MAX));
  std::int64_t& slot = isHeight ? h.height : h.width;
  int& slotLine = isHeight ? h.heightLine : h.widthLine;
  if (slot >= 0 && slot != static_cast<std::int64_t>(*v))
    rep.atLine(line, std::string("organized ") + which + " " + std::to_string(*v) + " contradicts " +
                         std::to_string(slot) + " given on line " + std::to_string(slotLine));
  slot = static_cast<std::int64_t>(*v);
  slotLine = static_cast<int>(line);
  if (isHeight) h.heightIsRowCount = rowCount;
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
    // Comments are free text: whatever they say, they never declare anything.
    if (key == "comment") continue;
    if (key == "obj_info") {
      if (tokens.size() >= 2) {
        const std::string_view what = tokens[1];
        const bool ours = what == "height" || what == "width";
        const bool rowsCols = what == "num_rows" || what == "num_cols";
        if (ours || rowsCols) {
          if (tokens.size() != 3) rep.atLine(ln, "expected 'obj_info " + std::string(what) + " <integer>'");
          setDimension(rep, ln, what == "height" || what == "num_rows", tokens[2], rowsCols, h);
        }
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
      auto count = io_detail::parseCount(tokens[2]);
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
        if (!ct || io_detail::isFloatScalar(*ct))
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
  bool hasColors() const { return rgba[0] >= 0; }
  bool anyFloatColor = false;
};

/// The names other tools give each channel; the first one a file declares is read.
constexpr const char* kXyzNames[3][1] = {{"x"}, {"y"}, {"z"}};
constexpr const char* kColorNames[4][3] = {
    {"red", "r", "diffuse_red"}, {"green", "g", "diffuse_green"}, {"blue", "b", "diffuse_blue"},
    {"alpha", "a", "diffuse_alpha"}};
constexpr const char* kNormalNames[3][2] = {{"nx", "normal_x"}, {"ny", "normal_y"}, {"nz", "normal_z"}};

template <std::size_t N>
void mapChannel(const PlyProperty& p, int idx, const char* const (&names)[N], int& slot) {
  if (slot >= 0) return;
  for (const char* name : names)
    if (p.name == name) slot = idx;
}

VertexMapping mapVertex(const PlyElement& v, const Reporter& rep) {
  VertexMapping m;
  for (std::size_t i = 0; i < v.properties.size(); ++i) {
    const PlyProperty& p = v.properties[i];
    if (p.isList)
      rep.atLine(p.headerLine, "vertex property '" + p.name + "' is a list; vertex properties must be scalars");
    const int idx = static_cast<int>(i);
    for (int c = 0; c < 3; ++c) mapChannel(p, idx, kXyzNames[c], m.xyz[c]);
    for (int c = 0; c < 4; ++c) mapChannel(p, idx, kColorNames[c], m.rgba[c]);
    for (int c = 0; c < 3; ++c) mapChannel(p, idx, kNormalNames[c], m.normal[c]);
    if (p.name == "snr" && m.snr < 0) m.snr = idx;
  }
  const std::size_t hl = static_cast<std::size_t>(v.headerLine);
  if (m.xyz[0] < 0 || m.xyz[1] < 0 || m.xyz[2] < 0) rep.atLine(hl, "element 'vertex' must have properties x, y and z");
  const int nNormals = (m.normal[0] >= 0) + (m.normal[1] >= 0) + (m.normal[2] >= 0);
  if (nNormals != 0 && nNormals != 3) rep.atLine(hl, "element 'vertex' has only some of nx, ny, nz");
  const int nColors = (m.rgba[0] >= 0) + (m.rgba[1] >= 0) + (m.rgba[2] >= 0);
  if (nColors != 0 && nColors != 3) rep.atLine(hl, "element 'vertex' has only some of red, green, blue");
  if (nColors == 0) m.rgba[3] = -1;  // an alpha alone is no colour: ignored
  for (int c = 0; c < 4; ++c)
    if (m.rgba[c] >= 0 && io_detail::isFloatScalar(v.properties[static_cast<std::size_t>(m.rgba[c])].type))
      m.anyFloatColor = true;
  return m;
}

/// An integer colour value as an 8-bit code: uchar as is, ushort scaled by 255/65535,
/// other integer types clamped to [0, 255].
std::uint8_t integerColorToByte(double v, ScalarType t) {
  const double scaled = t == ScalarType::u16 ? v * (255.0 / 65535.0) : v;
  if (!(scaled > 0.0)) return 0;
  if (scaled >= 255.0) return 255;
  return static_cast<std::uint8_t>(std::lround(scaled));
}

/// Byte offsets in a binary vertex record of the channels the cloud keeps, when each is
/// stored as the cloud stores it (float coordinates, normals and SNR, uchar colours) in
/// the machine's byte order: then records are copied field by field instead of going
/// through the generic decode to double and back, which dominates reading a frame.
struct DirectVertexLayout {
  static constexpr std::size_t kAbsent = static_cast<std::size_t>(-1);
  std::size_t xyz[3] = {kAbsent, kAbsent, kAbsent};
  std::size_t rgba[4] = {kAbsent, kAbsent, kAbsent, kAbsent};
  std::size_t normal[3] = {kAbsent, kAbsent, kAbsent};
  std::size_t snr = kAbsent;
};

std::optional<DirectVertexLayout> directVertexLayout(const PlyElement& v, const VertexMapping& m,
                                                     const std::vector<std::size_t>& offsets, bool swap) {
  if (swap) return std::nullopt;
  auto offsetIf = [&](int p, ScalarType type, std::size_t& out) {
    if (p < 0) return true;
    if (v.properties[static_cast<std::size_t>(p)].type != type) return false;
    out = offsets[static_cast<std::size_t>(p)];
    return true;
  };
  DirectVertexLayout l;
  bool direct = offsetIf(m.snr, ScalarType::f32, l.snr);
  for (int c = 0; c < 3; ++c)
    direct = direct && offsetIf(m.xyz[c], ScalarType::f32, l.xyz[c]) && offsetIf(m.normal[c], ScalarType::f32, l.normal[c]);
  for (int c = 0; c < 4; ++c) direct = direct && offsetIf(m.rgba[c], ScalarType::u8, l.rgba[c]);
  return direct ? std::optional<DirectVertexLayout>(l) : std::nullopt;
}

/// Stores decoded vertices (values indexed like the vertex properties) into the cloud,
/// growing its arrays as records arrive when the input's size could not vouch for the
/// declared count (a pipe or device), so memory follows the data actually read.
/// Float colours wait in `pending_` until the whole file has told their scale.
class VertexSink {
 public:
  VertexSink(HostPointCloud& cloud, const VertexMapping& m, const PlyElement& v, std::size_t count, bool trustCount,
             io_detail::NarrowingWarning& narrowing)
      : cloud_(cloud), m_(m), v_(v), count_(count), narrowing_(narrowing) {
    if (trustCount) resize(count);
  }

  /// Returns the name of the property whose value does not fit a float, or nullptr.
  /// A vertex with a non-finite coordinate is stored as a missing point (NaN x, y, z),
  /// the one form writePly writes for it.
  const char* store(std::size_t i, const double* values) {
    makeRoomFor(i);
    float xyz[3];
    for (int c = 0; c < 3; ++c) {
      const double exact = values[m_.xyz[c]];
      auto f = io_detail::narrowToFloat(exact);
      if (!f) return propertyName(m_.xyz[c]);
      narrowing_.check(exact, *f);
      xyz[c] = *f;
    }
    storeXyz(i, xyz);
    if (m_.hasColors()) {
      for (int c = 0; c < 4; ++c) {
        const int p = m_.rgba[c];
        const std::size_t k = 4 * i + static_cast<std::size_t>(c);
        if (p < 0) {
          cloud_.rgba[k] = 255;  // a missing alpha is opaque
          continue;
        }
        const ScalarType t = v_.properties[static_cast<std::size_t>(p)].type;
        if (io_detail::isFloatScalar(t)) {
          const double v = values[p];
          if (v > largestFloatColor_) largestFloatColor_ = v;
          pending_[k] = static_cast<float>(std::clamp(v, -1.0, 65536.0));  // NaN stays NaN
        } else {
          cloud_.rgba[k] = integerColorToByte(values[p], t);
        }
      }
    }
    if (!cloud_.normals.empty()) {
      for (int c = 0; c < 3; ++c) {
        auto f = io_detail::narrowToFloat(values[m_.normal[c]]);
        if (!f) return propertyName(m_.normal[c]);
        cloud_.normals[3 * i + static_cast<std::size_t>(c)] = *f;
      }
    }
    if (!cloud_.snr.empty()) {
      auto f = io_detail::narrowToFloat(values[m_.snr]);
      if (!f) return "snr";
      cloud_.snr[i] = *f;
    }
    return nullptr;
  }

  /// store() for a record of a DirectVertexLayout: the same values without the decode.
  void storeDirect(std::size_t i, const char* record, const DirectVertexLayout& l) {
    makeRoomFor(i);
    float xyz[3];
    for (int c = 0; c < 3; ++c) std::memcpy(&xyz[c], record + l.xyz[c], sizeof(float));
    storeXyz(i, xyz);
    if (m_.hasColors())
      for (std::size_t c = 0; c < 4; ++c)
        cloud_.rgba[4 * i + c] =
            l.rgba[c] == DirectVertexLayout::kAbsent ? std::uint8_t{255} : static_cast<std::uint8_t>(record[l.rgba[c]]);
    if (!cloud_.normals.empty())
      for (std::size_t c = 0; c < 3; ++c) std::memcpy(&cloud_.normals[3 * i + c], record + l.normal[c], sizeof(float));
    if (!cloud_.snr.empty()) std::memcpy(&cloud_.snr[i], record + l.snr, sizeof(float));
  }

  /// Converts the float colours once their scale is known (floatColorsAre255()).
  void finish() {
    if (pending_.empty()) return;
    const bool range255 = io_detail::floatColorsAre255(largestFloatColor_);
    for (std::size_t k = 0; k < 4 * stored_; ++k) {
      const int p = m_.rgba[k % 4];
      if (p >= 0 && io_detail::isFloatScalar(v_.properties[static_cast<std::size_t>(p)].type))
        cloud_.rgba[k] = io_detail::floatColorToByte(pending_[k], range255);
    }
    pending_.clear();
    pending_.shrink_to_fit();
  }

  const VertexMapping& mapping() const noexcept { return m_; }

 private:
  /// Grows the arrays to hold record i (see the class comment) and counts it stored.
  void makeRoomFor(std::size_t i) {
    if (i >= allocated_) resize(std::min(count_, std::max<std::size_t>(2 * allocated_, 1 << 16)));
    stored_ = std::max(stored_, i + 1);
  }

  /// A vertex with a non-finite coordinate is stored as a missing point (NaN x, y, z).
  void storeXyz(std::size_t i, float (&xyz)[3]) {
    if (!(std::isfinite(xyz[0]) && std::isfinite(xyz[1]) && std::isfinite(xyz[2])))
      xyz[0] = xyz[1] = xyz[2] = std::numeric_limits<float>::quiet_NaN();
    std::memcpy(&cloud_.xyz[3 * i], xyz, sizeof xyz);
  }

  const char* propertyName(int p) const { return v_.properties[static_cast<std::size_t>(p)].name.c_str(); }

  void resize(std::size_t points) {
    cloud_.xyz.resize(checkedMul(points, 3, "readPly: xyz"));
    if (m_.hasColors()) cloud_.rgba.resize(checkedMul(points, 4, "readPly: rgba"));
    if (m_.anyFloatColor) pending_.resize(checkedMul(points, 4, "readPly: colours"));
    if (m_.normal[0] >= 0) cloud_.normals.resize(checkedMul(points, 3, "readPly: normals"));
    if (m_.snr >= 0) cloud_.snr.resize(points);
    allocated_ = points;
  }

  HostPointCloud& cloud_;
  const VertexMapping& m_;
  const PlyElement& v_;
  std::size_t count_;
  io_detail::NarrowingWarning& narrowing_;
  std::size_t allocated_ = 0;
  std::size_t stored_ = 0;
  std::vector<float> pending_;  // float colours, 4 per point, until finish()
  double largestFloatColor_ = -std::numeric_limits<double>::infinity();
};

/// PCL writes the grid of an organized cloud into its "camera" element (viewportx
/// columns, viewporty rows); the first record's values are kept.
struct CameraViewport {
  const PlyElement* element = nullptr;
  int columns = -1, rows = -1;  // property indices
  double values[2] = {0, 0};
  bool seen = false;
  void take(const PlyElement& e, std::uint64_t record, const double* recordValues) {
    if (&e != element || record != 0) return;
    values[0] = recordValues[columns];
    values[1] = recordValues[rows];
    seen = true;
  }
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
                   CameraViewport& camera, const Reporter& rep) {
  std::vector<double> values;
  for (const auto& e : h.elements) {
    const bool isVertex = &e == vertex;
    values.assign(e.properties.size(), 0.0);
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
        auto take = [&](ScalarType type) -> double {
          if (t >= tokens.size())
            rep.atLine(ln, "'" + e.name + "' record " + std::to_string(r) + " has too few values (" +
                               std::to_string(tokens.size()) + "); property '" + p.name + "' is missing");
          auto v = io_detail::parseScalar(tokens[t], type);
          if (!v)
            rep.atLine(ln, "value '" + std::string(tokens[t].substr(0, 64)) + "' of property '" + p.name +
                               "' is not a valid " + scalarName(type));
          ++t;
          return *v;
        };
        if (p.isList) {
          const double count = take(p.countType);
          if (count < 0) rep.atLine(ln, "list '" + p.name + "' has a negative length");
          for (double k = 0; k < count; ++k) take(p.type);
        } else {
          values[pi] = take(p.type);
        }
      }
      if (t != tokens.size())
        rep.atLine(ln, "'" + e.name + "' record " + std::to_string(r) + " has " + std::to_string(tokens.size()) +
                           " values; the header declares " + std::to_string(t));
      camera.take(e, r, values.data());
      if (isVertex)
        if (const char* bad = sink.store(static_cast<std::size_t>(r), values.data()))
          rep.atLine(ln, "value of property '" + std::string(bad) + "' does not fit in a float");
    }
  }
  // Blank lines may follow the last record, but not without end (a stream of newlines).
  io_detail::expectOnlyBlankLines(src, rep, kMaxBodyLine, "record", "do the element counts match the data?");
}

/// Reads the binary body up to the end of the last declared record. Bytes after it
/// are not read: tools (Open3D, plyfile) accept them, and a stream is not read further.
void readBinaryBody(ByteSource& src, const PlyHeader& h, const PlyElement* vertex, VertexSink& sink,
                    CameraViewport& camera, const Reporter& rep) {
  const bool swap = (h.format == PlyFormat::binaryBigEndian) != (std::endian::native == std::endian::big);
  std::vector<double> values;
  std::vector<char> chunk;
  for (const auto& e : h.elements) {
    const bool isVertex = &e == vertex;
    const bool decode = isVertex || &e == camera.element;
    values.assign(e.properties.size(), 0.0);
    if (!e.hasList()) {
      const std::size_t recordSize = e.minBinaryRecordSize();
      const std::uint64_t start = src.offset();
      if (!decode) {
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
        off += scalarSize(p.type);
      }
      const std::optional<DirectVertexLayout> direct =
          isVertex && &e != camera.element ? directVertexLayout(e, sink.mapping(), offsets, swap) : std::nullopt;
      // Whole records at a time, about 64 KiB per read.
      const std::size_t perChunk = std::max<std::size_t>(1, (std::size_t{1} << 16) / std::max<std::size_t>(recordSize, 1));
      chunk.resize(perChunk * recordSize);
      for (std::uint64_t r = 0; r < e.count;) {
        const std::size_t records = static_cast<std::size_t>(std::min<std::uint64_t>(perChunk, e.count - r));
        const std::size_t got = src.read(chunk.data(), records * recordSize);
        if (got != records * recordSize)
          rep.atByte(src.offset(), "the file ends inside '" + e.name + "' record " +
                                       std::to_string(r + got / std::max<std::size_t>(recordSize, 1)) + " of " +
                                       std::to_string(e.count) + " (the file is truncated or the count is wrong)");
        if (direct) {
          for (std::size_t k = 0; k < records; ++k, ++r)
            sink.storeDirect(static_cast<std::size_t>(r), chunk.data() + k * recordSize, *direct);
          continue;
        }
        for (std::size_t k = 0; k < records; ++k, ++r) {
          const char* rec = chunk.data() + k * recordSize;
          for (std::size_t pi = 0; pi < e.properties.size(); ++pi)
            values[pi] = io_detail::loadScalar(rec + offsets[pi], e.properties[pi].type, swap);
          camera.take(e, r, values.data());
          if (!isVertex) continue;
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
        const std::size_t s = p.isList ? scalarSize(p.countType) : scalarSize(p.type);
        const std::uint64_t at = src.offset();
        if (src.read(scalar, s) != s)
          rep.atByte(at, "the file ends inside '" + e.name + "' record " + std::to_string(r) + " of " +
                             std::to_string(e.count));
        if (!p.isList) continue;
        const double count = io_detail::loadScalar(scalar, p.countType, swap);
        if (count < 0) rep.atByte(at, "list '" + p.name + "' has a negative length");
        if (!src.skip(static_cast<std::uint64_t>(count) * scalarSize(p.type)))
          rep.atByte(src.offset(), "the file ends inside list '" + p.name + "' of '" + e.name + "' record " +
                                       std::to_string(r));
      }
    }
  }
}

/// The grid the header or the camera element declares (0 x 0: none). A single row
/// from num_rows or the camera element is PCL's way of writing an unorganized cloud.
std::pair<std::int64_t, std::int64_t> declaredGrid(const PlyHeader& h, const CameraViewport& camera,
                                                   const PlyElement& vertex, const Reporter& rep) {
  if ((h.height >= 0) != (h.width >= 0))
    rep.atLine(static_cast<std::size_t>(h.height >= 0 ? h.heightLine : h.widthLine),
               "an organized cloud needs both height and width (obj_info height H / obj_info width W)");
  if (h.height >= 0) {
    if (h.heightIsRowCount && h.height == 1) return {0, 0};
    return {h.height, h.width};
  }
  if (camera.seen) {
    const double cols = camera.values[0], rows = camera.values[1];
    const bool plausible = cols >= 1 && rows >= 1 && cols <= INT_MAX && rows <= INT_MAX &&
                           cols == std::floor(cols) && rows == std::floor(rows);
    // A camera element that does not describe this vertex list (another tool's use of
    // the name) declares nothing.
    if (plausible && rows > 1 && static_cast<std::uint64_t>(cols) * static_cast<std::uint64_t>(rows) == vertex.count)
      return {static_cast<std::int64_t>(rows), static_cast<std::int64_t>(cols)};
  }
  return {0, 0};
}

HostPointCloud readPlyImpl(const std::string& path, const PointCloudReadOptions& options) {
  io_detail::ReaderInput input("readPly", path);
  const Reporter& rep = input.rep();
  ByteSource& src = input.src();
  const PlyHeader h = parseHeader(src, rep);

  const PlyElement* vertex = nullptr;
  CameraViewport camera;
  for (const auto& e : h.elements) {
    if (e.name == "vertex") vertex = &e;
    if (e.name == "camera" && !e.hasList() && e.find("viewportx") >= 0 && e.find("viewporty") >= 0) {
      camera.element = &e;
      camera.columns = e.find("viewportx");
      camera.rows = e.find("viewporty");
    }
  }
  if (!vertex) rep.general("the header declares no 'vertex' element");
  const VertexMapping mapping = mapVertex(*vertex, rep);

  // A regular file's size bounds the counts before anything is allocated; a stream's
  // does not exist, so the cloud then grows with the records that actually arrive.
  const std::optional<std::uint64_t> fileSize = input.regularFileSize();
  if (fileSize) checkBodyCanHoldCounts(h, *fileSize > h.bodyOffset ? *fileSize - h.bodyOffset : 0, rep);
  if (vertex->count > std::numeric_limits<std::size_t>::max() / 16)
    rep.atLine(static_cast<std::size_t>(vertex->headerLine),
               "vertex count " + std::to_string(vertex->count) + " exceeds what host memory can address");
  const std::size_t n = static_cast<std::size_t>(vertex->count);

  HostPointCloud cloud;
  io_detail::NarrowingWarning narrowing(rep, &options.warning);
  VertexSink sink(cloud, mapping, *vertex, n, fileSize.has_value(), narrowing);
  if (h.format == PlyFormat::ascii)
    readAsciiBody(src, h, vertex, sink, camera, rep);
  else
    readBinaryBody(src, h, vertex, sink, camera, rep);
  sink.finish();
  const auto [height, width] = declaredGrid(h, camera, *vertex, rep);
  io_detail::finishReadCloud(cloud, height, width, static_cast<std::size_t>(vertex->headerLine), options, rep);
  return cloud;
}
}  // namespace

HostPointCloud readPly(const std::string& path, const PointCloudReadOptions& options) {
  return io_detail::translateAllocationFailure("readPly", [&] { return readPlyImpl(path, options); });
}

// ------------------------------------------------------------------ writer ---

void writePly(const std::string& path, const HostPointCloud& input, PlyFormat format,
              const PointCloudWriteOptions& options) {
  if (format != PlyFormat::ascii && format != PlyFormat::binaryLittleEndian && format != PlyFormat::binaryBigEndian)
    invalid("writePly: unknown PlyFormat value " + std::to_string(static_cast<int>(format)));
  const HostPointCloud cloud = io_detail::cloudForWriting(input, options, "writePly", path);

  std::string header = "ply\nformat ";
  header += format == PlyFormat::ascii ? "ascii" : format == PlyFormat::binaryLittleEndian ? "binary_little_endian"
                                                                                           : "binary_big_endian";
  header += " 1.0\ncomment written by devicearray\n";
  if (options.colorSpace == ColorSpace::linear && cloud.hasColors()) header += "comment colors are linear RGB\n";
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
  io_detail::BufferedWriter w("writePly", file.get(), path);
  w.put(header);
  const bool swap = (format == PlyFormat::binaryBigEndian) != (std::endian::native == std::endian::big);
  for (std::size_t i = 0, n = cloud.size(); i < n; ++i) {
    // A point with a non-finite coordinate (an overflowing transform gives inf) is
    // missing: it is written as NaN, NaN, NaN, which readPly reads back as missing.
    const float* xyz = io_detail::writtenXyz(cloud, i);
    if (format == PlyFormat::ascii) {
      io_detail::putAsciiFloat(w, xyz[0]);
      io_detail::putAsciiFloats(w, xyz + 1, 2);
      if (cloud.hasColors()) io_detail::putAsciiCodes(w, &cloud.rgba[4 * i], 4);
      if (cloud.hasNormals()) io_detail::putAsciiFloats(w, &cloud.normals[3 * i], 3);
      if (cloud.hasSNR()) io_detail::putAsciiFloats(w, &cloud.snr[i], 1);
      w.put("\n", 1);
    } else {
      io_detail::putBinaryFloats(w, xyz, 3, swap);
      if (cloud.hasColors()) w.put(reinterpret_cast<const char*>(&cloud.rgba[4 * i]), 4);
      if (cloud.hasNormals()) io_detail::putBinaryFloats(w, &cloud.normals[3 * i], 3, swap);
      if (cloud.hasSNR()) io_detail::putBinaryFloats(w, &cloud.snr[i], 1, swap);
    }
  }
  w.flush();
  file.commit();
}

}  // namespace devicearray
