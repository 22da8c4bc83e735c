// PCD reading and writing (the Point Cloud Library's format, version 0.7).
//
// Built like the PLY reader: the header is parsed line by line with bounded lines and
// size, counts are checked against a regular file's size before anything is
// allocated, and the body is decoded point by point (from a pipe the cloud grows with
// the points that arrive). binary_compressed data is read whole (its size is declared
// and checked first) and decompressed by the bounds-checked LZF decoder.
#include <algorithm>
#include <bit>
#include <climits>
#include <cmath>
#include <cstring>
#include <limits>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_set>
#include <utility>
#include <vector>

#include "devicearray/pcd.hpp"
#include "io/lzf.hpp"
#include "io/point_cloud_file_support.hpp"
#include "io/record_io.hpp"

namespace devicearray {

using io_detail::ByteSource;
using io_detail::Reporter;
using io_detail::ScalarType;

namespace {

constexpr std::size_t kMaxHeaderLine = 64 * 1024;
constexpr std::uint64_t kMaxHeaderBytes = 16u << 20;
constexpr std::size_t kMaxBodyLine = 256 * 1024;
// PCD stores in the writer's byte order, which is little-endian wherever PCL runs.
constexpr bool kSwap = std::endian::native == std::endian::big;

enum class Role { skip, x, y, z, rgb, rgba, nx, ny, nz, snr };

Role roleOf(std::string_view name) {
  static constexpr std::pair<std::string_view, Role> kRoles[] = {
      {"x", Role::x},         {"y", Role::y},         {"z", Role::z},         {"rgb", Role::rgb}, {"rgba", Role::rgba},
      {"normal_x", Role::nx}, {"normal_y", Role::ny}, {"normal_z", Role::nz}, {"snr", Role::snr}};
  for (const auto& [field, role] : kRoles)
    if (name == field) return role;
  return Role::skip;
}

struct PcdField {
  std::string name;
  std::size_t size = 0;
  char type = 'F';
  std::uint64_t count = 1;
  ScalarType scalar = ScalarType::f32;
  Role role = Role::skip;
};

struct PcdHeader {
  std::vector<PcdField> fields;
  std::uint64_t width = 0, height = 1, points = 0;
  PcdFormat format = PcdFormat::ascii;
  std::size_t widthLine = 0, pointsLine = 0, fieldsLine = 0;
  std::uint64_t pointBytes = 0;  // one point, all fields
  std::uint64_t valuesPerPoint = 0;
  bool hasColors = false, hasNormals = false, hasSNR = false;
  std::uint64_t bodyOffset = 0;
};

std::optional<ScalarType> scalarOf(char type, std::size_t size) {
  switch (type) {
    case 'I': return size == 1 ? ScalarType::i8 : size == 2 ? ScalarType::i16 : size == 4 ? ScalarType::i32
                   : size == 8 ? std::optional(ScalarType::i64) : std::nullopt;
    case 'U': return size == 1 ? ScalarType::u8 : size == 2 ? ScalarType::u16 : size == 4 ? ScalarType::u32
                   : size == 8 ? std::optional(ScalarType::u64) : std::nullopt;
    case 'F': return size == 4 ? ScalarType::f32 : size == 8 ? std::optional(ScalarType::f64) : std::nullopt;
    default: return std::nullopt;
  }
}

/// One count per field from a SIZE / COUNT line.
std::vector<std::uint64_t> countsOf(const std::vector<std::string_view>& tokens, std::size_t ln, const Reporter& rep) {
  std::vector<std::uint64_t> v;
  for (std::size_t i = 1; i < tokens.size(); ++i) {
    auto n = io_detail::parseCount(tokens[i]);
    if (!n || *n == 0 || *n > (std::uint64_t{1} << 32))
      rep.atLine(ln, "'" + std::string(tokens[0]) + "' value '" + std::string(tokens[i].substr(0, 64)) +
                         "' is not an integer in 1..2^32");
    v.push_back(*n);
  }
  return v;
}

PcdHeader parseHeader(ByteSource& src, const Reporter& rep) {
  PcdHeader h;
  std::vector<std::uint64_t> sizes, counts;
  std::vector<char> types;
  std::size_t sizeLine = 0, typeLine = 0, countLine = 0, heightLine = 0;
  bool sawData = false;
  std::optional<std::uint64_t> points;
  while (!sawData) {
    auto line = src.line(kMaxHeaderLine);
    const std::size_t ln = src.lineNumber();
    if (!line) {
      if (ln == 0) rep.general("not a PCD file: the file is empty");
      rep.general("the header has no 'DATA' line (" + std::to_string(ln) + " lines read)");
    }
    if (src.offset() > kMaxHeaderBytes)
      rep.atLine(ln, "no 'DATA' line within the first " + io_detail::byteSizeText(kMaxHeaderBytes) +
                         " (the longest header this reader accepts)");
    const auto tokens = io_detail::tokenize(*line);
    if (tokens.empty() || tokens[0].front() == '#') continue;
    const std::string_view key = tokens[0];
    const auto one = [&]() -> std::uint64_t {
      if (tokens.size() != 2) rep.atLine(ln, "expected '" + std::string(key) + " <integer>'");
      auto v = io_detail::parseCount(tokens[1]);
      if (!v) rep.atLine(ln, "'" + std::string(key) + "' value '" + std::string(tokens[1].substr(0, 64)) +
                                 "' is not a non-negative integer");
      return *v;
    };
    if (key == "VERSION") continue;
    if (key == "FIELDS" || key == "COLUMNS") {
      if (tokens.size() < 2) rep.atLine(ln, "'FIELDS' names no field");
      h.fields.clear();
      for (std::size_t i = 1; i < tokens.size(); ++i) {
        PcdField f;
        f.name = std::string(tokens[i]);
        f.role = roleOf(f.name);
        h.fields.push_back(std::move(f));
      }
      h.fieldsLine = ln;
    } else if (key == "SIZE") {
      sizes = countsOf(tokens, ln, rep);
      sizeLine = ln;
    } else if (key == "TYPE") {
      types.clear();
      for (std::size_t i = 1; i < tokens.size(); ++i) {
        if (tokens[i].size() != 1) rep.atLine(ln, "TYPE '" + std::string(tokens[i].substr(0, 64)) + "' is not I, U or F");
        types.push_back(tokens[i][0]);
      }
      typeLine = ln;
    } else if (key == "COUNT") {
      counts = countsOf(tokens, ln, rep);
      countLine = ln;
    } else if (key == "WIDTH") {
      h.width = one();
      h.widthLine = ln;
    } else if (key == "HEIGHT") {
      h.height = one();
      heightLine = ln;
    } else if (key == "POINTS") {
      points = one();
      h.pointsLine = ln;
    } else if (key == "VIEWPOINT") {
      if (tokens.size() != 8) rep.atLine(ln, "expected 'VIEWPOINT tx ty tz qw qx qy qz'");
    } else if (key == "DATA") {
      if (tokens.size() != 2) rep.atLine(ln, "expected 'DATA ascii|binary|binary_compressed'");
      if (tokens[1] == "ascii") h.format = PcdFormat::ascii;
      else if (tokens[1] == "binary") h.format = PcdFormat::binary;
      else if (tokens[1] == "binary_compressed") h.format = PcdFormat::binaryCompressed;
      else rep.atLine(ln, "unknown DATA '" + std::string(tokens[1].substr(0, 64)) +
                              "' (expected ascii, binary or binary_compressed)");
      sawData = true;
    } else {
      if (ln == 1) rep.atLine(1, "not a PCD file: it begins with '" + std::string(line->substr(0, 32)) + "'");
      rep.atLine(ln, "unknown header keyword '" + std::string(key.substr(0, 64)) + "'");
    }
  }
  const std::size_t dataLine = src.lineNumber();
  h.bodyOffset = src.offset();
  const std::size_t nf = h.fields.size();
  if (nf == 0) rep.atLine(dataLine, "the header has no 'FIELDS' line before 'DATA'");
  if (sizes.size() != nf)
    rep.atLine(sizeLine ? sizeLine : dataLine, "'SIZE' gives " + std::to_string(sizes.size()) + " sizes for " +
                                                   std::to_string(nf) + " fields");
  if (types.size() != nf)
    rep.atLine(typeLine ? typeLine : dataLine, "'TYPE' gives " + std::to_string(types.size()) + " types for " +
                                                   std::to_string(nf) + " fields");
  if (countLine == 0) counts.assign(nf, 1);
  if (counts.size() != nf)
    rep.atLine(countLine, "'COUNT' gives " + std::to_string(counts.size()) + " counts for " + std::to_string(nf) +
                              " fields");
  if (h.widthLine == 0) rep.atLine(dataLine, "the header has no 'WIDTH' line");
  std::unordered_set<int> roles;
  for (std::size_t i = 0; i < nf; ++i) {
    PcdField& f = h.fields[i];
    f.size = static_cast<std::size_t>(sizes[i]);
    f.type = types[i];
    f.count = counts[i];
    auto scalar = scalarOf(f.type, f.size);
    if (!scalar)
      rep.atLine(typeLine, "field '" + f.name + "' has TYPE " + std::string(1, f.type) + " SIZE " +
                               std::to_string(f.size) + " (expected I or U of 1, 2, 4, 8 bytes, or F of 4 or 8)");
    f.scalar = *scalar;
    if (f.role == Role::skip) {
      // nothing to check
    } else if (!roles.insert(static_cast<int>(f.role)).second) {
      rep.atLine(h.fieldsLine, "field '" + f.name + "' is declared twice");
    } else if (f.count != 1) {
      rep.atLine(countLine, "field '" + f.name + "' has COUNT " + std::to_string(f.count) + "; expected 1");
    } else if ((f.role == Role::rgb || f.role == Role::rgba) && f.size != 4) {
      rep.atLine(sizeLine, "field '" + f.name + "' has SIZE " + std::to_string(f.size) +
                               "; a packed colour takes 4 bytes");
    }
    std::uint64_t bytes = 0;
    if (__builtin_mul_overflow(f.count, static_cast<std::uint64_t>(f.size), &bytes) ||
        __builtin_add_overflow(h.pointBytes, bytes, &h.pointBytes) ||
        __builtin_add_overflow(h.valuesPerPoint, f.count, &h.valuesPerPoint))
      rep.atLine(countLine, "the fields of one point overflow");
  }
  if (!roles.count(static_cast<int>(Role::x)) || !roles.count(static_cast<int>(Role::y)) ||
      !roles.count(static_cast<int>(Role::z)))
    rep.atLine(h.fieldsLine, "the fields must include x, y and z");
  const int normals = static_cast<int>(roles.count(static_cast<int>(Role::nx)) + roles.count(static_cast<int>(Role::ny)) +
                                       roles.count(static_cast<int>(Role::nz)));
  if (normals != 0 && normals != 3) rep.atLine(h.fieldsLine, "the fields have only some of normal_x, normal_y, normal_z");
  h.hasNormals = normals == 3;
  h.hasColors = roles.count(static_cast<int>(Role::rgb)) || roles.count(static_cast<int>(Role::rgba));
  h.hasSNR = roles.count(static_cast<int>(Role::snr)) != 0;
  std::uint64_t wh = 0;
  if (__builtin_mul_overflow(h.width, h.height, &wh))
    rep.atLine(h.widthLine, "WIDTH x HEIGHT overflows");
  if (h.height == 0 && h.width != 0) rep.atLine(heightLine, "HEIGHT is 0 but WIDTH is not");
  h.points = points.value_or(wh);
  if (h.points != wh)
    rep.atLine(h.pointsLine, "POINTS " + std::to_string(h.points) + " does not match WIDTH x HEIGHT = " +
                                 std::to_string(h.width) + " x " + std::to_string(h.height));
  if (h.height > 1 && (h.height > static_cast<std::uint64_t>(INT_MAX) || h.width > static_cast<std::uint64_t>(INT_MAX)))
    rep.atLine(h.widthLine, "an organized size of " + std::to_string(h.height) + " x " + std::to_string(h.width) +
                                " exceeds " + std::to_string(INT_MAX) + " along an axis");
  if (h.points > std::numeric_limits<std::size_t>::max() / 64)
    rep.atLine(h.pointsLine, "point count " + std::to_string(h.points) + " exceeds what host memory can address");
  return h;
}

/// The decoded values of one point, by role.
struct PointValues {
  double xyz[3] = {0, 0, 0};
  std::uint32_t packed = 0;
  double normal[3] = {0, 0, 0};
  double snr = 0;
};

/// Stores points into the cloud, growing it as they arrive when the file size could
/// not vouch for the count.
class PointStore {
 public:
  PointStore(HostPointCloud& cloud, const PcdHeader& h, bool trustCount, io_detail::NarrowingWarning& narrowing)
      : cloud_(cloud), h_(h), narrowing_(narrowing) {
    alphaFromFile_ = std::any_of(h.fields.begin(), h.fields.end(), [](const PcdField& f) { return f.role == Role::rgba; });
    if (trustCount) resize(static_cast<std::size_t>(h.points));
  }

  /// Allocates the cloud for all declared points at once.
  void allocateAll() { resize(static_cast<std::size_t>(h_.points)); }

  /// The name of the field whose value does not fit a float, or nullptr.
  const char* store(std::size_t i, const PointValues& v) {
    if (i >= allocated_)
      resize(std::min(static_cast<std::size_t>(h_.points), std::max<std::size_t>(2 * allocated_, 1 << 16)));
    static constexpr const char* kXyz[3] = {"x", "y", "z"};
    static constexpr const char* kNormal[3] = {"normal_x", "normal_y", "normal_z"};
    float xyz[3];
    for (int c = 0; c < 3; ++c) {
      auto f = io_detail::narrowToFloat(v.xyz[c]);
      if (!f) return kXyz[c];
      narrowing_.check(v.xyz[c], *f);
      xyz[c] = *f;
    }
    if (!(std::isfinite(xyz[0]) && std::isfinite(xyz[1]) && std::isfinite(xyz[2])))
      xyz[0] = xyz[1] = xyz[2] = std::numeric_limits<float>::quiet_NaN();
    std::memcpy(&cloud_.xyz[3 * i], xyz, sizeof xyz);
    if (h_.hasColors) {
      std::uint8_t* c = &cloud_.rgba[4 * i];
      c[0] = static_cast<std::uint8_t>(v.packed >> 16);
      c[1] = static_cast<std::uint8_t>(v.packed >> 8);
      c[2] = static_cast<std::uint8_t>(v.packed);
      // PCL leaves rgb's top byte 0 or undefined; only rgba's is an alpha.
      c[3] = alphaFromFile_ ? static_cast<std::uint8_t>(v.packed >> 24) : std::uint8_t{255};
    }
    if (h_.hasNormals)
      for (int c = 0; c < 3; ++c) {
        auto f = io_detail::narrowToFloat(v.normal[c]);
        if (!f) return kNormal[c];
        cloud_.normals[3 * i + static_cast<std::size_t>(c)] = *f;
      }
    if (h_.hasSNR) {
      auto f = io_detail::narrowToFloat(v.snr);
      if (!f) return "snr";
      cloud_.snr[i] = *f;
    }
    return nullptr;
  }

 private:
  void resize(std::size_t points) {
    cloud_.xyz.resize(io_detail::checkedMul(points, 3, "readPcd: xyz"));
    if (h_.hasColors) cloud_.rgba.resize(io_detail::checkedMul(points, 4, "readPcd: rgba"));
    if (h_.hasNormals) cloud_.normals.resize(io_detail::checkedMul(points, 3, "readPcd: normals"));
    if (h_.hasSNR) cloud_.snr.resize(points);
    allocated_ = points;
  }

  HostPointCloud& cloud_;
  const PcdHeader& h_;
  io_detail::NarrowingWarning& narrowing_;
  bool alphaFromFile_ = false;
  std::size_t allocated_ = 0;
};

/// Puts one decoded value of a known field where it belongs.
void assign(PointValues& v, Role role, double value) {
  switch (role) {
    case Role::x: v.xyz[0] = value; break;
    case Role::y: v.xyz[1] = value; break;
    case Role::z: v.xyz[2] = value; break;
    case Role::nx: v.normal[0] = value; break;
    case Role::ny: v.normal[1] = value; break;
    case Role::nz: v.normal[2] = value; break;
    case Role::snr: v.snr = value; break;
    default: break;
  }
}

/// A packed colour's four bytes, stored in the file's order.
std::uint32_t packedFrom(const char* p) {
  std::uint32_t u;
  std::memcpy(&u, p, 4);
  return kSwap ? __builtin_bswap32(u) : u;
}

/// Decodes a known field's value of `size` bytes at `p` into `v`.
void decodeBinary(PointValues& v, const PcdField& f, const char* p) {
  if (f.role == Role::rgb || f.role == Role::rgba)
    v.packed = packedFrom(p);
  else
    assign(v, f.role, io_detail::loadScalar(p, f.scalar, kSwap));
}

/// A packed colour written as text: PCL writes it as an unsigned integer, older
/// writers as the float with the same bits.
std::optional<std::uint32_t> parsePacked(std::string_view token) {
  if (auto u = io_detail::parseCount(token)) {
    if (*u > UINT32_MAX) return std::nullopt;
    return static_cast<std::uint32_t>(*u);
  }
  if (auto i = io_detail::parseScalar(token, ScalarType::i32)) return static_cast<std::uint32_t>(static_cast<std::int32_t>(*i));
  if (auto f = io_detail::parseScalar(token, ScalarType::f32)) return std::bit_cast<std::uint32_t>(static_cast<float>(*f));
  return std::nullopt;
}

void readAscii(ByteSource& src, const PcdHeader& h, PointStore& store, const Reporter& rep) {
  for (std::uint64_t r = 0; r < h.points; ++r) {
    auto line = src.line(kMaxBodyLine);
    const std::size_t ln = src.lineNumber();
    if (!line)
      rep.atLine(ln + 1, "the file ends after " + std::to_string(r) + " of the " + std::to_string(h.points) +
                             " points the header declares");
    const auto tokens = io_detail::tokenize(*line);
    if (tokens.size() != h.valuesPerPoint)
      rep.atLine(ln, "point " + std::to_string(r) + " has " + std::to_string(tokens.size()) +
                         " values; the fields declare " + std::to_string(h.valuesPerPoint));
    PointValues v;
    std::size_t t = 0;
    for (const PcdField& f : h.fields) {
      if (f.role == Role::skip) {
        t += static_cast<std::size_t>(f.count);
        continue;
      }
      const std::string_view token = tokens[t++];
      if (f.role == Role::rgb || f.role == Role::rgba) {
        auto packed = parsePacked(token);
        if (!packed)
          rep.atLine(ln, "value '" + std::string(token.substr(0, 64)) + "' of field '" + f.name +
                             "' is not a packed colour (an unsigned 32-bit integer or a float)");
        v.packed = *packed;
        continue;
      }
      auto value = io_detail::parseScalar(token, f.scalar);
      if (!value)
        rep.atLine(ln, "value '" + std::string(token.substr(0, 64)) + "' of field '" + f.name + "' is not a valid " +
                           io_detail::scalarName(f.scalar));
      assign(v, f.role, *value);
    }
    if (const char* bad = store.store(static_cast<std::size_t>(r), v))
      rep.atLine(ln, "value of field '" + std::string(bad) + "' does not fit in a float");
  }
  io_detail::expectOnlyBlankLines(src, rep, kMaxBodyLine, "point", "does POINTS match the data?");
}

void readBinary(ByteSource& src, const PcdHeader& h, PointStore& store, const Reporter& rep) {
  char scalar[8];
  for (std::uint64_t r = 0; r < h.points; ++r) {
    const std::uint64_t start = src.offset();
    PointValues v;
    for (const PcdField& f : h.fields) {
      if (f.role == Role::skip) {
        if (!src.skip(f.count * f.size))
          rep.atByte(src.offset(), "the file ends inside point " + std::to_string(r) + " of " +
                                       std::to_string(h.points) + " (the file is truncated or POINTS is wrong)");
        continue;
      }
      if (src.read(scalar, f.size) != f.size)
        rep.atByte(src.offset(), "the file ends inside point " + std::to_string(r) + " of " + std::to_string(h.points) +
                                     " (the file is truncated or POINTS is wrong)");
      decodeBinary(v, f, scalar);
    }
    if (const char* bad = store.store(static_cast<std::size_t>(r), v))
      rep.atByte(start, "value of field '" + std::string(bad) + "' does not fit in a float");
  }
}

void readCompressed(ByteSource& src, const PcdHeader& h, PointStore& store, std::optional<std::uint64_t> bodyBytes,
                    const Reporter& rep) {
  char sizes[8];
  const std::uint64_t sizesAt = src.offset();
  if (src.read(sizes, 8) != 8)
    rep.atByte(sizesAt, "the file ends before the two sizes that begin binary_compressed data");
  const std::uint32_t compressed = packedFrom(sizes), uncompressed = packedFrom(sizes + 4);
  std::uint64_t expected = 0;
  if (__builtin_mul_overflow(h.points, h.pointBytes, &expected) || expected != uncompressed)
    rep.atByte(sizesAt + 4, "the uncompressed size " + std::to_string(uncompressed) + " is not POINTS x " +
                                std::to_string(h.pointBytes) + " bytes per point");
  if (bodyBytes && 8 + static_cast<std::uint64_t>(compressed) > *bodyBytes)
    rep.atByte(sizesAt, "the compressed size " + std::to_string(compressed) + " exceeds the " +
                            std::to_string(*bodyBytes > 8 ? *bodyBytes - 8 : 0) + " bytes that follow it");
  if (uncompressed > static_cast<std::uint64_t>(compressed) * io_detail::kLzfMaxExpansion)
    rep.atByte(sizesAt, "the uncompressed size " + std::to_string(uncompressed) + " is more than LZF can make of " +
                            std::to_string(compressed) + " compressed bytes");
  // Read in steps, so a stream that ends early never made us allocate what it declared.
  std::vector<std::uint8_t> packed;
  const std::uint64_t dataAt = src.offset();
  while (packed.size() < compressed) {
    const std::size_t before = packed.size();
    const std::size_t step = std::min<std::size_t>(compressed - before, std::max<std::size_t>(before, 1 << 20));
    packed.resize(before + step);
    if (src.read(reinterpret_cast<char*>(packed.data() + before), step) != step)
      rep.atByte(src.offset(), "the file ends inside the " + std::to_string(compressed) + " bytes of compressed data");
  }
  std::vector<std::uint8_t> data(uncompressed);
  const std::string problem = io_detail::lzfDecompress(packed.data(), packed.size(), data.data(), data.size());
  if (!problem.empty()) rep.atByte(dataAt, "binary_compressed data (LZF) is corrupt: " + problem);
  packed = {};
  store.allocateAll();  // the data is there: its points justify the cloud
  // The fields are stored one after another: all points' x, then all y, ...
  std::vector<std::uint64_t> fieldStart;
  std::uint64_t offset = 0;
  for (const PcdField& f : h.fields) {
    fieldStart.push_back(offset);
    offset += h.points * f.count * f.size;
  }
  for (std::uint64_t r = 0; r < h.points; ++r) {
    PointValues v;
    for (std::size_t k = 0; k < h.fields.size(); ++k) {
      const PcdField& f = h.fields[k];
      if (f.role != Role::skip)
        decodeBinary(v, f, reinterpret_cast<const char*>(data.data() + fieldStart[k] + r * f.size));
    }
    if (const char* bad = store.store(static_cast<std::size_t>(r), v))
      rep.atByte(dataAt, "value of field '" + std::string(bad) + "' of point " + std::to_string(r) +
                             " does not fit in a float");
  }
}

/// Checks, before anything is allocated, that a regular file's body can hold the points.
void checkBodyCanHoldPoints(const PcdHeader& h, std::uint64_t bodyBytes, const Reporter& rep) {
  std::uint64_t needed = 0;
  bool overflow = false;
  switch (h.format) {
    case PcdFormat::ascii: overflow = __builtin_mul_overflow(h.points, 2 * h.valuesPerPoint - 1, &needed); break;
    case PcdFormat::binary: overflow = __builtin_mul_overflow(h.points, h.pointBytes, &needed); break;
    case PcdFormat::binaryCompressed: {
      // The two sizes, then at least the compressed bytes LZF needs for the data.
      std::uint64_t data = 0;
      overflow = __builtin_mul_overflow(h.points, h.pointBytes, &data);
      needed = 8 + (data + io_detail::kLzfMaxExpansion - 1) / io_detail::kLzfMaxExpansion;
      break;
    }
  }
  if (overflow || needed > bodyBytes)
    rep.atLine(h.pointsLine ? h.pointsLine : h.widthLine,
               std::to_string(h.points) + " points are declared, but the " + std::to_string(bodyBytes) +
                   "-byte body after the header (byte " + std::to_string(h.bodyOffset) +
                   ") cannot hold them (the file is truncated or the count is wrong)");
}

HostPointCloud readPcdImpl(const std::string& path, const PointCloudReadOptions& options) {
  io_detail::ReaderInput input("readPcd", path);
  const Reporter& rep = input.rep();
  ByteSource& src = input.src();
  const PcdHeader h = parseHeader(src, rep);
  const std::optional<std::uint64_t> fileSize = input.regularFileSize();
  std::optional<std::uint64_t> bodyBytes;
  if (fileSize) bodyBytes = *fileSize > h.bodyOffset ? *fileSize - h.bodyOffset : 0;
  if (bodyBytes) checkBodyCanHoldPoints(h, *bodyBytes, rep);

  HostPointCloud cloud;
  io_detail::NarrowingWarning narrowing(rep, &options.warning);
  // binary_compressed allocates once its data is decompressed (readCompressed).
  PointStore store(cloud, h, fileSize.has_value() && h.format != PcdFormat::binaryCompressed, narrowing);
  switch (h.format) {
    case PcdFormat::ascii: readAscii(src, h, store, rep); break;
    case PcdFormat::binary: readBinary(src, h, store, rep); break;
    case PcdFormat::binaryCompressed: readCompressed(src, h, store, bodyBytes, rep); break;
  }
  const bool organized = h.height > 1;
  io_detail::finishReadCloud(cloud, organized ? static_cast<std::int64_t>(h.height) : 0,
                             organized ? static_cast<std::int64_t>(h.width) : 0, h.widthLine, options, rep);
  return cloud;
}

}  // namespace

HostPointCloud readPcd(const std::string& path, const PointCloudReadOptions& options) {
  return io_detail::translateAllocationFailure("readPcd", [&] { return readPcdImpl(path, options); });
}

// ------------------------------------------------------------------ writer ---

namespace {

/// The DATA keyword of `format`; InvalidArgument for a value outside the enum.
const char* dataKeyword(PcdFormat format) {
  switch (format) {
    case PcdFormat::ascii: return "ascii";
    case PcdFormat::binary: return "binary";
    case PcdFormat::binaryCompressed: return "binary_compressed";
  }
  io_detail::invalid("writePcd: unknown PcdFormat value " + std::to_string(static_cast<int>(format)));
}

}  // namespace

void writePcd(const std::string& path, const HostPointCloud& input, PcdFormat format,
              const PointCloudWriteOptions& options) {
  const char* data = dataKeyword(format);
  const HostPointCloud cloud = io_detail::cloudForWriting(input, options, "writePcd", path);
  const std::size_t n = cloud.size();

  std::string fields = "x y z", sizes = "4 4 4", types = "F F F", counts = "1 1 1";
  std::size_t pointBytes = 12;
  const auto add = [&](const char* name, char type) {
    fields += std::string(" ") + name;
    sizes += " 4";
    types += std::string(" ") + type;
    counts += " 1";
    pointBytes += 4;
  };
  if (cloud.hasColors()) add("rgba", 'U');
  if (cloud.hasNormals()) {
    add("normal_x", 'F');
    add("normal_y", 'F');
    add("normal_z", 'F');
  }
  if (cloud.hasSNR()) add("snr", 'F');
  const std::size_t width = cloud.isOrganized() ? static_cast<std::size_t>(cloud.width) : n;
  const std::size_t height = cloud.isOrganized() ? static_cast<std::size_t>(cloud.height) : 1;
  const std::uint64_t dataBytes = static_cast<std::uint64_t>(n) * pointBytes;
  if (format == PcdFormat::binaryCompressed && dataBytes > UINT32_MAX)
    io_detail::invalid("writePcd: '" + io_detail::printable(path) + "': " + std::to_string(dataBytes) +
            " bytes of point data exceed binary_compressed's 4 GiB limit (write binary instead)");

  std::string header = "# .PCD v0.7 - Point Cloud Data file format\n# written by devicearray";
  if (options.colorSpace == ColorSpace::linear && cloud.hasColors()) header += "; colors are linear RGB";
  header += "\nVERSION 0.7\nFIELDS " + fields + "\nSIZE " + sizes + "\nTYPE " + types + "\nCOUNT " + counts +
            "\nWIDTH " + std::to_string(width) + "\nHEIGHT " + std::to_string(height) +
            "\nVIEWPOINT 0 0 0 1 0 0 0\nPOINTS " + std::to_string(n) + "\nDATA " + data + "\n";

  const auto packed = [&](std::size_t i) {
    const std::uint8_t* c = &cloud.rgba[4 * i];
    return static_cast<std::uint32_t>(c[3]) << 24 | static_cast<std::uint32_t>(c[0]) << 16 |
           static_cast<std::uint32_t>(c[1]) << 8 | c[2];
  };

  io_detail::OutputFile file("writePcd", path);
  io_detail::BufferedWriter w("writePcd", file.get(), path);
  w.put(header);
  if (format == PcdFormat::ascii) {
    for (std::size_t i = 0; i < n; ++i) {
      const float* xyz = io_detail::writtenXyz(cloud, i);
      io_detail::putAsciiFloat(w, xyz[0]);
      io_detail::putAsciiFloats(w, xyz + 1, 2);
      if (cloud.hasColors()) {
        w.put(" ", 1);
        io_detail::putAsciiUnsigned(w, packed(i));
      }
      if (cloud.hasNormals()) io_detail::putAsciiFloats(w, &cloud.normals[3 * i], 3);
      if (cloud.hasSNR()) io_detail::putAsciiFloats(w, &cloud.snr[i], 1);
      w.put("\n", 1);
    }
  } else if (format == PcdFormat::binary) {
    for (std::size_t i = 0; i < n; ++i) {
      io_detail::putBinaryFloats(w, io_detail::writtenXyz(cloud, i), 3, kSwap);
      if (cloud.hasColors()) io_detail::putBinary(w, packed(i), kSwap);
      if (cloud.hasNormals()) io_detail::putBinaryFloats(w, &cloud.normals[3 * i], 3, kSwap);
      if (cloud.hasSNR()) io_detail::putBinaryFloats(w, &cloud.snr[i], 1, kSwap);
    }
  } else {
    // Field after field, as PCL stores binary_compressed data.
    std::vector<std::uint8_t> data;
    data.reserve(static_cast<std::size_t>(dataBytes));
    const auto put32 = [&](std::uint32_t u) {
      if (kSwap) u = __builtin_bswap32(u);
      const auto* b = reinterpret_cast<const std::uint8_t*>(&u);
      data.insert(data.end(), b, b + 4);
    };
    for (int c = 0; c < 3; ++c)
      for (std::size_t i = 0; i < n; ++i) put32(std::bit_cast<std::uint32_t>(io_detail::writtenXyz(cloud, i)[c]));
    if (cloud.hasColors())
      for (std::size_t i = 0; i < n; ++i) put32(packed(i));
    for (int c = 0; c < 3 && cloud.hasNormals(); ++c)
      for (std::size_t i = 0; i < n; ++i) put32(std::bit_cast<std::uint32_t>(cloud.normals[3 * i + c]));
    if (cloud.hasSNR())
      for (std::size_t i = 0; i < n; ++i) put32(std::bit_cast<std::uint32_t>(cloud.snr[i]));
    const std::vector<std::uint8_t> compressed = io_detail::lzfCompress(data.data(), data.size());
    io_detail::putBinary(w, static_cast<std::uint32_t>(compressed.size()), kSwap);
    io_detail::putBinary(w, static_cast<std::uint32_t>(data.size()), kSwap);
    w.put(reinterpret_cast<const char*>(compressed.data()), compressed.size());
  }
  w.flush();
  file.commit();
}

}  // namespace devicearray
