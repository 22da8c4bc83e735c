#include "poses.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <numbers>
#include <sstream>

#include "commands.hpp"
#include "text.hpp"

namespace devicearray::cli {

std::array<double, 3> parseTriple(const std::string& text, const char* option) {
  std::string spaced = text;
  for (char& c : spaced)
    if (c == ',') c = ' ';
  std::istringstream in(spaced);
  std::array<double, 3> v{};
  std::string extra;
  if (!(in >> v[0] >> v[1] >> v[2]) || (in >> extra) || !std::isfinite(v[0]) || !std::isfinite(v[1]) ||
      !std::isfinite(v[2]))
    throw CommandError(std::string(option) + ": '" + printable(text) + "' must be three finite numbers X,Y,Z");
  return v;
}

Pose poseFromRotationTranslation(const std::array<double, 3>& degrees, const std::array<double, 3>& t) {
  const double rad = std::numbers::pi / 180.0;
  const double cx = std::cos(degrees[0] * rad), sx = std::sin(degrees[0] * rad);
  const double cy = std::cos(degrees[1] * rad), sy = std::sin(degrees[1] * rad);
  const double cz = std::cos(degrees[2] * rad), sz = std::sin(degrees[2] * rad);
  // R = Rz * Ry * Rx
  const double r[9] = {cz * cy, cz * sy * sx - sz * cx, cz * sy * cx + sz * sx,
                       sz * cy, sz * sy * sx + cz * cx, sz * sy * cx - cz * sx,
                       -sy,     cy * sx,                cy * cx};
  return {static_cast<float>(r[0]), static_cast<float>(r[1]), static_cast<float>(r[2]), static_cast<float>(t[0]),
          static_cast<float>(r[3]), static_cast<float>(r[4]), static_cast<float>(r[5]), static_cast<float>(t[1]),
          static_cast<float>(r[6]), static_cast<float>(r[7]), static_cast<float>(r[8]), static_cast<float>(t[2]),
          0.0f, 0.0f, 0.0f, 1.0f};
}

namespace {

/// How far R^T R of a pose's rotation part R may be from the identity, per element: a
/// pose written with four decimals passes, a scale or shear of more than about 0.05 %
/// does not (the registration keeps what the starting pose does to the view).
constexpr double kRotationTolerance = 1e-3;

/// Throws CommandError, naming the pose by its index, unless `p` is a rigid transform:
/// a rotation and a translation that fit a float, last row 0 0 0 1.
void checkRigid(const Pose& p, std::size_t index, const std::string& path) {
  const std::string which = "--poses: matrix " + std::to_string(index) + " of '" + printable(path) + "'";
  if (p[12] != 0 || p[13] != 0 || p[14] != 0 || p[15] != 1)
    throw CommandError(which + " is not affine (its last row must be 0 0 0 1)");
  for (std::size_t k = 0; k < 16; ++k)
    if (!std::isfinite(p[k]))
      throw CommandError(which + ": element " + std::to_string(k) + " does not fit a float");
  const auto r = [&](int row, int col) { return double(p[static_cast<std::size_t>(4 * row + col)]); };
  double offIdentity = 0;
  for (int i = 0; i < 3; ++i)
    for (int j = 0; j < 3; ++j) {
      const double dot = r(0, i) * r(0, j) + r(1, i) * r(1, j) + r(2, i) * r(2, j);
      offIdentity = std::max(offIdentity, std::fabs(dot - (i == j ? 1.0 : 0.0)));
    }
  if (!(offIdentity <= kRotationTolerance))
    throw CommandError(which + " is not a rigid transform: its 3x3 part is no rotation (R^T R is " +
                       numberText(offIdentity) + " off the identity, more than " + numberText(kRotationTolerance) +
                       ")");
  // Orthonormal columns leave a determinant of about +1 or -1: -1 is a mirror image.
  const double det = r(0, 0) * (r(1, 1) * r(2, 2) - r(1, 2) * r(2, 1)) -
                     r(0, 1) * (r(1, 0) * r(2, 2) - r(1, 2) * r(2, 0)) +
                     r(0, 2) * (r(1, 0) * r(2, 1) - r(1, 1) * r(2, 0));
  if (!(det > 0))
    throw CommandError(which + " is not a rigid transform: its 3x3 part is a reflection (determinant " +
                       numberText(det) + ")");
}

}  // namespace

std::vector<Pose> readPosesFile(const std::string& path) {
  constexpr std::size_t kMaxBytes = std::size_t{1} << 20;
  std::ifstream in(path, std::ios::binary);
  if (!in) throw CommandError("--poses: cannot open '" + printable(path) + "'");
  // At most kMaxBytes + 1 bytes are read whatever the path is: a device (/dev/zero) or a
  // FIFO never streams in without end.
  std::string s(kMaxBytes + 1, '\0');
  in.read(s.data(), static_cast<std::streamsize>(s.size()));
  s.resize(static_cast<std::size_t>(in.gcount()));
  if (s.size() > kMaxBytes)
    throw CommandError("--poses: '" + printable(path) + "' is larger than 1 MiB; a poses file is at most 1 MiB");
  // The file is JSON arrays of numbers only: brackets, commas, whitespace and numbers.
  std::vector<double> numbers;
  int depth = 0, maxDepth = 0;
  for (std::size_t i = 0; i < s.size();) {
    const char c = s[i];
    if (c == '[') {
      maxDepth = std::max(maxDepth, ++depth);
      ++i;
    } else if (c == ']') {
      if (--depth < 0) break;
      ++i;
    } else if (c == ',' || std::isspace(static_cast<unsigned char>(c))) {
      ++i;
    } else if (c == '-' || c == '+' || c == '.' || std::isdigit(static_cast<unsigned char>(c))) {
      char* end = nullptr;
      const double v = std::strtod(s.c_str() + i, &end);
      if (end == s.c_str() + i || !std::isfinite(v)) break;
      numbers.push_back(v);
      i = static_cast<std::size_t>(end - s.c_str());
    } else {
      depth = -1;
      break;
    }
  }
  if (depth != 0 || maxDepth < 2 || numbers.empty() || numbers.size() % 16 != 0)
    throw CommandError("--poses: '" + printable(path) +
                       "' must be a JSON array of 4x4 matrices (each 4 rows of 4 numbers, or 16 numbers)");
  std::vector<Pose> poses(numbers.size() / 16);
  for (std::size_t p = 0; p < poses.size(); ++p) {
    for (std::size_t k = 0; k < 16; ++k) poses[p][k] = static_cast<float>(numbers[16 * p + k]);
    checkRigid(poses[p], p, path);
  }
  return poses;
}

Pose relativePose(const Pose& a, const Pose& b) {
  // a^-1 = [R^T, -R^T t] for rigid a.
  double inv[16] = {};
  for (int i = 0; i < 3; ++i) {
    for (int j = 0; j < 3; ++j) inv[4 * i + j] = a[static_cast<std::size_t>(4 * j + i)];
    inv[4 * i + 3] = -(a[static_cast<std::size_t>(i)] * double(a[3]) + a[static_cast<std::size_t>(4 + i)] * double(a[7]) +
                       a[static_cast<std::size_t>(8 + i)] * double(a[11]));
  }
  inv[15] = 1;
  Pose r{};
  for (int i = 0; i < 4; ++i)
    for (int j = 0; j < 4; ++j) {
      double s = 0;
      for (int k = 0; k < 4; ++k) s += inv[4 * i + k] * b[static_cast<std::size_t>(4 * k + j)];
      r[static_cast<std::size_t>(4 * i + j)] = static_cast<float>(s);
    }
  return r;
}

std::string poseJson(const Pose& p) {
  std::string s = "[";
  for (int r = 0; r < 4; ++r) {
    s += r ? ", [" : "[";
    for (int c = 0; c < 4; ++c) s += (c ? ", " : "") + numberText(p[static_cast<std::size_t>(4 * r + c)]);
    s += "]";
  }
  return s + "]";
}

}  // namespace devicearray::cli
