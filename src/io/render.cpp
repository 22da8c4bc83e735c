// Host-side preview renderer for point clouds: colour, colour-mapped depth and normals.
//
// Rendering first decides, for every output pixel, which point it shows (a nearest-
// neighbour lookup on an organized grid, or a z-buffered pinhole projection with square
// splats); each view then colours those pixels from that point. Keeping "which point"
// separate from "which colour" makes the three views pixel-aligned.
#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <functional>
#include <limits>
#include <string>
#include <vector>

#include "devicearray/host_normals.hpp"
#include "devicearray/render.hpp"
#include "io/io_detail.hpp"

namespace devicearray {

using io_detail::checkedMul;
using io_detail::invalid;

void RenderOptions::validate() const {
  const std::string fn = "RenderOptions::validate: ";
  if (width < 0 || height < 0)
    invalid(fn + "size " + std::to_string(width) + " x " + std::to_string(height) + " must not be negative");
  if (pointRadius < -1 || pointRadius > 64)
    invalid(fn + "pointRadius " + std::to_string(pointRadius) + " must be -1 (automatic) or in [0, 64]");
  if (view != RenderView::color && view != RenderView::depth && view != RenderView::normals && view != RenderView::all)
    invalid(fn + "unknown RenderView value " + std::to_string(static_cast<int>(view)));
  if (projection != RenderProjection::automatic && projection != RenderProjection::grid &&
      projection != RenderProjection::pinhole)
    invalid(fn + "unknown RenderProjection value " + std::to_string(static_cast<int>(projection)));
  if (camera.fx > 0) camera.validate();
}

namespace {

struct V3 {
  float x, y, z;
};
V3 sub(V3 a, V3 b) { return {a.x - b.x, a.y - b.y, a.z - b.z}; }
V3 crossV(V3 a, V3 b) { return {a.y * b.z - a.z * b.y, a.z * b.x - a.x * b.z, a.x * b.y - a.y * b.x}; }
float dotV(V3 a, V3 b) { return a.x * b.x + a.y * b.y + a.z * b.z; }
bool finite3(V3 a) { return std::isfinite(a.x) && std::isfinite(a.y) && std::isfinite(a.z); }
constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();

/// Unit normal from two tangents, oriented towards the viewer at the origin of the
/// frame `p` is expressed in; NaN when the tangents are degenerate.
V3 orientedNormal(V3 dx, V3 dy, V3 p) {
  V3 n = crossV(dx, dy);
  const float len = std::sqrt(dotV(n, n));
  if (!(len > 0) || !std::isfinite(len)) return {kNaN, kNaN, kNaN};
  n = {n.x / len, n.y / len, n.z / len};
  if (dotV(n, p) > 0) n = {-n.x, -n.y, -n.z};
  return n;
}

/// Central difference along one grid axis between valid neighbours, one-sided where only
/// one neighbour is valid. `at(k)` returns the point k steps away (NaN outside the grid).
template <class At>
bool gridDerivative(At at, V3 center, V3& out) {
  const V3 prev = at(-1), next = at(1);
  const bool hp = finite3(prev), hn = finite3(next);
  if (hp && hn) out = sub(next, prev);
  else if (hn) out = sub(next, center);
  else if (hp) out = sub(center, prev);
  else return false;
  return true;
}

/// Near (t = 0) to far (t = 1): deep red, orange, yellow, pale green, cyan, blue, indigo.
std::array<std::uint8_t, 3> depthColor(float t) {
  static constexpr float stops[][3] = {{178, 24, 43},   {240, 110, 60},  {250, 210, 110}, {205, 235, 160},
                                       {110, 195, 205}, {60, 115, 180},  {45, 35, 115}};
  constexpr int last = static_cast<int>(std::size(stops)) - 1;
  if (!std::isfinite(t)) t = 0;
  t = std::clamp(t, 0.0f, 1.0f) * last;
  const int k = std::min(static_cast<int>(t), last - 1);
  const float f = t - k;
  std::array<std::uint8_t, 3> c{};
  for (int i = 0; i < 3; ++i)
    c[static_cast<std::size_t>(i)] = static_cast<std::uint8_t>(std::lround(stops[k][i] + f * (stops[k + 1][i] - stops[k][i])));
  return c;
}

constexpr std::size_t kNone = std::numeric_limits<std::size_t>::max();

/// Forwards the fraction done of one phase, mapped into [begin, end] of the whole
/// render, to RenderOptions::progress: at most 200 calls per render.
class Progress {
 public:
  explicit Progress(const std::function<void(double)>& report) : report_(report) {}
  /// Starts a phase that covers [begin, end] of the whole render.
  void phase(double begin, double end) {
    begin_ = begin;
    end_ = end;
  }
  /// `fraction` of the current phase is done.
  void at(double fraction) {
    if (!report_) return;
    const double total = begin_ + (end_ - begin_) * std::clamp(fraction, 0.0, 1.0);
    const int step = static_cast<int>(total * 200.0);
    if (step <= lastStep_ || step >= 200) return;  // 1 comes from finish()
    lastStep_ = step;
    report_(total);
  }
  /// The whole render is done: reports 1 exactly once.
  void finish() {
    if (report_ && lastStep_ < 200) report_(1.0);
    lastStep_ = 200;
  }
  /// Row `y` of `rows` is done (reports only every 64 rows).
  void row(int y, int rows) {
    if ((y & 63) == 0 || y + 1 == rows) at(static_cast<double>(y + 1) / rows);
  }

 private:
  const std::function<void(double)>& report_;
  double begin_ = 0, end_ = 1;
  int lastStep_ = -1;
};

/// Which point each output pixel shows, and the 3-D position seen there (for
/// screen-space normals when the cloud has none and is not organized).
struct PixelMap {
  int width = 0, height = 0;
  std::vector<std::size_t> point;  // kNone where no point is seen
  PinholeCamera camera;            // pinhole projection: the camera used
  V3 cameraOrigin{0, 0, 0};        // pinhole projection: the camera centre in the cloud frame
  bool pinhole = false;
};

V3 pointAt(const HostPointCloud& c, std::size_t i) { return {c.xyz[3 * i], c.xyz[3 * i + 1], c.xyz[3 * i + 2]}; }

PixelMap mapGrid(const HostPointCloud& cloud, int outW, int outH, Progress& progress) {
  PixelMap m;
  m.width = outW;
  m.height = outH;
  m.point.assign(checkedMul(static_cast<std::size_t>(outW), static_cast<std::size_t>(outH), "renderCloud: pixels"), kNone);
  for (int y = 0; y < outH; ++y) {
    const std::size_t sy = std::min<std::size_t>(static_cast<std::size_t>((y + 0.5) * cloud.height / outH),
                                                 static_cast<std::size_t>(cloud.height - 1));
    for (int x = 0; x < outW; ++x) {
      const std::size_t sx = std::min<std::size_t>(static_cast<std::size_t>((x + 0.5) * cloud.width / outW),
                                                   static_cast<std::size_t>(cloud.width - 1));
      const std::size_t i = sy * static_cast<std::size_t>(cloud.width) + sx;
      if (cloud.isValid(i)) m.point[static_cast<std::size_t>(y) * static_cast<std::size_t>(outW) + static_cast<std::size_t>(x)] = i;
    }
    progress.row(y, outH);
  }
  return m;
}

/// The camera mapPinhole() renders through: `opt.camera` when given, else one fitted
/// to the valid points, with its origin in the cloud frame.
PinholeCamera pinholeCamera(const HostPointCloud& cloud, const RenderOptions& opt, int outW, int outH,
                            V3& cameraOrigin) {
  cameraOrigin = {0, 0, 0};
  if (opt.camera.fx > 0) return opt.camera;
  const std::size_t n = cloud.size();
  // Fit a camera looking along +z at the valid points.
  float lo[3] = {INFINITY, INFINITY, INFINITY}, hi[3] = {-INFINITY, -INFINITY, -INFINITY};
  for (std::size_t i = 0; i < n; ++i) {
    if (!cloud.isValid(i)) continue;
    for (int c = 0; c < 3; ++c) {
      lo[c] = std::min(lo[c], cloud.xyz[3 * i + static_cast<std::size_t>(c)]);
      hi[c] = std::max(hi[c], cloud.xyz[3 * i + static_cast<std::size_t>(c)]);
    }
  }
  const float extent = std::max({hi[0] - lo[0], hi[1] - lo[1], hi[2] - lo[2], 1e-6f});
  if (!(lo[2] > 1e-3f * extent))  // not in a camera frame: step back behind the cloud
    cameraOrigin = {0.5f * (lo[0] + hi[0]), 0.5f * (lo[1] + hi[1]), lo[2] - 2.0f * extent};
  double minU = INFINITY, maxU = -INFINITY, minV = INFINITY, maxV = -INFINITY;
  for (std::size_t i = 0; i < n; ++i) {
    if (!cloud.isValid(i)) continue;
    const V3 p = sub(pointAt(cloud, i), cameraOrigin);
    if (!(p.z > 0)) continue;
    minU = std::min(minU, double(p.x) / p.z);
    maxU = std::max(maxU, double(p.x) / p.z);
    minV = std::min(minV, double(p.y) / p.z);
    maxV = std::max(maxV, double(p.y) / p.z);
  }
  const double margin = 0.03;
  const double spanU = std::max(maxU - minU, 1e-9), spanV = std::max(maxV - minV, 1e-9);
  const double f = std::min((1 - 2 * margin) * (outW - 1) / spanU, (1 - 2 * margin) * (outH - 1) / spanV);
  return PinholeCamera{outW, outH, f, f, 0.5 * (outW - 1) - f * 0.5 * (minU + maxU),
                       0.5 * (outH - 1) - f * 0.5 * (minV + maxV)};
}

PixelMap mapPinhole(const HostPointCloud& cloud, const RenderOptions& opt, int outW, int outH, Progress& progress) {
  PixelMap m;
  m.pinhole = true;
  const std::size_t n = cloud.size();
  m.camera = pinholeCamera(cloud, opt, outW, outH, m.cameraOrigin);
  m.width = m.camera.width;
  m.height = m.camera.height;
  const std::size_t pixels =
      checkedMul(static_cast<std::size_t>(m.width), static_cast<std::size_t>(m.height), "renderCloud: pixels");
  m.point.assign(pixels, kNone);

  // Project once to learn the covered area, which sets the automatic splat size.
  std::vector<std::array<float, 3>> proj(n, {kNaN, kNaN, kNaN});
  double minX = INFINITY, maxX = -INFINITY, minY = INFINITY, maxY = -INFINITY;
  std::size_t visible = 0;
  for (std::size_t i = 0; i < n; ++i) {
    if (!cloud.isValid(i)) continue;
    const V3 p = sub(pointAt(cloud, i), m.cameraOrigin);
    if (!(p.z > 0)) continue;
    const double u = m.camera.fx * p.x / p.z + m.camera.cx, v = m.camera.fy * p.y / p.z + m.camera.cy;
    if (!(u > -0.5 && v > -0.5 && u < m.width - 0.5 && v < m.height - 0.5)) continue;
    proj[i] = {static_cast<float>(u), static_cast<float>(v), p.z};
    minX = std::min(minX, u); maxX = std::max(maxX, u);
    minY = std::min(minY, v); maxY = std::max(maxY, v);
    ++visible;
  }
  progress.at(0.3);
  if (visible == 0) return m;
  int radius = opt.pointRadius;
  if (radius < 0) {
    const double area = std::max(1.0, (maxX - minX + 1) * (maxY - minY + 1));
    const double spacing = std::sqrt(area / static_cast<double>(visible));
    radius = std::clamp(static_cast<int>(std::ceil((spacing - 1) / 2)), 0, 8);
  }
  std::vector<float> zbuf(pixels, INFINITY);
  for (std::size_t i = 0; i < n; ++i) {
    if (!std::isfinite(proj[i][0])) continue;
    const int cu = static_cast<int>(std::lround(proj[i][0])), cv = static_cast<int>(std::lround(proj[i][1]));
    const float z = proj[i][2];
    for (int y = std::max(0, cv - radius); y <= std::min(m.height - 1, cv + radius); ++y)
      for (int x = std::max(0, cu - radius); x <= std::min(m.width - 1, cu + radius); ++x) {
        const std::size_t k = static_cast<std::size_t>(y) * static_cast<std::size_t>(m.width) + static_cast<std::size_t>(x);
        if (z < zbuf[k]) { zbuf[k] = z; m.point[k] = i; }
      }
    if ((i & 0xffff) == 0) progress.at(0.3 + 0.7 * static_cast<double>(i) / static_cast<double>(n));
  }
  return m;
}

/// Per-pixel normals for the normals view and for shading clouds without colour.
std::vector<V3> pixelNormals(const HostPointCloud& cloud, const PixelMap& m, Progress& progress) {
  const std::size_t pixels = m.point.size();
  std::vector<V3> out(pixels, V3{kNaN, kNaN, kNaN});
  if (cloud.hasNormals() || cloud.isOrganized()) {
    const std::vector<float> estimated = cloud.hasNormals() ? std::vector<float>{} : estimateOrganizedNormals(cloud);
    const std::vector<float>& nrm = cloud.hasNormals() ? cloud.normals : estimated;
    for (std::size_t k = 0; k < pixels; ++k)
      if (m.point[k] != kNone) {
        const std::size_t i = m.point[k];
        out[k] = {nrm[3 * i], nrm[3 * i + 1], nrm[3 * i + 2]};
      }
    return out;
  }
  // Unorganized without normals: differentiate the surface the z-buffer kept.
  auto seen = [&](int x, int y) -> V3 {
    if (x < 0 || y < 0 || x >= m.width || y >= m.height) return {kNaN, kNaN, kNaN};
    const std::size_t i = m.point[static_cast<std::size_t>(y) * static_cast<std::size_t>(m.width) + static_cast<std::size_t>(x)];
    return i == kNone ? V3{kNaN, kNaN, kNaN} : sub(pointAt(cloud, i), m.cameraOrigin);
  };
  for (int y = 0; y < m.height; ++y) {
    for (int x = 0; x < m.width; ++x) {
      const V3 p = seen(x, y);
      if (!finite3(p)) continue;
      V3 dx{}, dy{};
      if (gridDerivative([&](int k) { return seen(x + k, y); }, p, dx) &&
          gridDerivative([&](int k) { return seen(x, y + k); }, p, dy))
        out[static_cast<std::size_t>(y) * static_cast<std::size_t>(m.width) + static_cast<std::size_t>(x)] =
            orientedNormal(dx, dy, p);
    }
    progress.row(y, m.height);
  }
  return out;
}

void renderView(const HostPointCloud& cloud, const PixelMap& m, const std::vector<V3>& normals, RenderView view,
                const RenderOptions& opt, HostImage& image, int xOffset, Progress& progress) {
  float zNear = 0, zFar = 1;
  if (view == RenderView::depth) {
    // Robust range: the 2nd and 98th percentiles of the depths in the picture.
    std::vector<float> zs;
    zs.reserve(m.point.size());
    for (std::size_t k : m.point)
      if (k != kNone) zs.push_back(cloud.xyz[3 * k + 2] - m.cameraOrigin.z);
    if (!zs.empty()) {
      const std::size_t a = zs.size() * 2 / 100, b = std::min(zs.size() - 1, zs.size() * 98 / 100);
      std::nth_element(zs.begin(), zs.begin() + static_cast<std::ptrdiff_t>(a), zs.end());
      zNear = zs[a];
      std::nth_element(zs.begin(), zs.begin() + static_cast<std::ptrdiff_t>(b), zs.end());
      zFar = zs[b];
      if (!(zFar > zNear)) zFar = zNear + 1;
    }
  }
  for (int y = 0; y < m.height; ++y) {
    std::uint8_t* row = image.row(y) + 3 * static_cast<std::size_t>(xOffset);
    for (int x = 0; x < m.width; ++x) {
      const std::size_t k = static_cast<std::size_t>(y) * static_cast<std::size_t>(m.width) + static_cast<std::size_t>(x);
      std::uint8_t* px = row + 3 * static_cast<std::size_t>(x);
      const std::size_t i = m.point[k];
      std::array<std::uint8_t, 3> c{opt.background[0], opt.background[1], opt.background[2]};
      if (i != kNone) {
        const V3 n = normals.empty() ? V3{kNaN, kNaN, kNaN} : normals[k];  // empty: this view needs none
        if (view == RenderView::depth) {
          c = depthColor((cloud.xyz[3 * i + 2] - m.cameraOrigin.z - zNear) / (zFar - zNear));
        } else if (view == RenderView::normals) {
          if (finite3(n))
            c = {static_cast<std::uint8_t>(std::lround(127.5f * (n.x + 1))),
                 static_cast<std::uint8_t>(std::lround(127.5f * (1 - n.y))),
                 static_cast<std::uint8_t>(std::lround(127.5f * (1 - n.z)))};
          else
            c = {128, 128, 128};
        } else if (cloud.hasColors()) {
          c = {cloud.rgba[4 * i], cloud.rgba[4 * i + 1], cloud.rgba[4 * i + 2]};
        } else {
          // Headlight shading: surfaces facing the camera are bright.
          const V3 p = sub(pointAt(cloud, i), m.cameraOrigin);
          const float len = std::sqrt(dotV(p, p));
          const float facing = finite3(n) && len > 0 ? std::fabs(dotV(n, p)) / len : 0.6f;
          const auto g = static_cast<std::uint8_t>(std::lround(40 + 200 * facing));
          c = {g, g, g};
        }
      }
      px[0] = c[0];
      px[1] = c[1];
      px[2] = c[2];
    }
    progress.row(y, m.height);
  }
}

}  // namespace

std::vector<float> estimateOrganizedNormals(const HostPointCloud& cloud) {
  cloud.validate();
  if (!cloud.isOrganized())
    invalid("estimateOrganizedNormals: the cloud is unorganized (height 0, width 0); normals from the grid need an "
            "organized cloud");
  const int H = cloud.height, W = cloud.width;
  std::vector<float> out(cloud.xyz.size(), kNaN);
  auto at = [&](int r, int c) -> V3 {
    if (r < 0 || c < 0 || r >= H || c >= W) return {kNaN, kNaN, kNaN};
    return pointAt(cloud, static_cast<std::size_t>(r) * static_cast<std::size_t>(W) + static_cast<std::size_t>(c));
  };
  for (int r = 0; r < H; ++r)
    for (int c = 0; c < W; ++c) {
      const V3 p = at(r, c);
      if (!finite3(p)) continue;
      V3 dx{}, dy{};
      if (!gridDerivative([&](int k) { return at(r, c + k); }, p, dx) ||
          !gridDerivative([&](int k) { return at(r + k, c); }, p, dy))
        continue;
      const V3 n = orientedNormal(dx, dy, p);
      const std::size_t i = static_cast<std::size_t>(r) * static_cast<std::size_t>(W) + static_cast<std::size_t>(c);
      out[3 * i] = n.x;
      out[3 * i + 1] = n.y;
      out[3 * i + 2] = n.z;
    }
  return out;
}

namespace {
HostImage renderCloudImpl(const HostPointCloud& cloud, const RenderOptions& options) {
  cloud.validate();
  options.validate();
  if (cloud.empty()) invalid("renderCloud: the cloud has no points");
  if (cloud.validCount() == 0) invalid("renderCloud: the cloud has no valid (finite) point to show");
  RenderProjection projection = options.projection;
  if (projection == RenderProjection::automatic)
    projection = cloud.isOrganized() ? RenderProjection::grid : RenderProjection::pinhole;
  if (projection == RenderProjection::grid && !cloud.isOrganized())
    invalid("renderCloud: grid projection needs an organized cloud; this one is unorganized (" +
            std::to_string(cloud.size()) + " points)");

  // One view's size: as asked, else the grid (organized) or 1280 x 800, keeping the
  // aspect ratio when only one side is given.
  const bool grid = projection == RenderProjection::grid;
  const int defaultW = grid ? cloud.width : 1280, defaultH = grid ? cloud.height : 800;
  int outW = options.width, outH = options.height;
  if (outW == 0 && outH == 0) { outW = defaultW; outH = defaultH; }
  else if (outW == 0) outW = std::max(1, static_cast<int>(std::lround(double(outH) * defaultW / defaultH)));
  else if (outH == 0) outH = std::max(1, static_cast<int>(std::lround(double(outW) * defaultH / defaultW)));

  const std::vector<RenderView> views =
      options.view == RenderView::all ? std::vector<RenderView>{RenderView::color, RenderView::depth, RenderView::normals}
                                      : std::vector<RenderView>{options.view};
  const bool needNormals = std::any_of(views.begin(), views.end(), [&](RenderView v) {
    return v == RenderView::normals || (v == RenderView::color && !cloud.hasColors());
  });
  // One view's size in pixels: a given camera sets it, else outW x outH.
  const bool givenCamera = !grid && options.camera.fx > 0;
  const int viewW = givenCamera ? options.camera.width : outW, viewH = givenCamera ? options.camera.height : outH;
  const int gap = views.size() > 1 ? 8 : 0;
  const std::size_t totalW = checkedMul(static_cast<std::size_t>(viewW) + gap, views.size(), "renderCloud: width") - gap;
  if (totalW > static_cast<std::size_t>(std::numeric_limits<int>::max()))
    io_detail::fail(ErrorCode::OutOfRange, "renderCloud: image width " + std::to_string(totalW) + " does not fit in int");

  // Refuse before allocating what the render would hold at once: per pixel of one view
  // the point index (8 bytes), normals (12) when a view needs them, the z-buffer (4,
  // pinhole) and the depth percentiles (4, depth view); the image (3 per pixel); per
  // point the projections (12, pinhole) and grid normals (12) when estimated.
  const double pixels = static_cast<double>(viewW) * viewH;
  const bool depthView = std::find(views.begin(), views.end(), RenderView::depth) != views.end();
  const bool estimatedNormals = needNormals && !cloud.hasNormals() && cloud.isOrganized();
  const double bytes = pixels * (8 + (needNormals ? 12 : 0) + (grid ? 0 : 4) + (depthView ? 4 : 0)) +
                       3.0 * static_cast<double>(totalW) * viewH +
                       static_cast<double>(cloud.size()) * ((grid ? 0 : 12) + (estimatedNormals ? 12 : 0));
  if (options.memoryLimitBytes != 0 && bytes > static_cast<double>(options.memoryLimitBytes))
    io_detail::fail(ErrorCode::OutOfRange,
                    "renderCloud: a " + std::to_string(viewW) + " x " + std::to_string(viewH) + " picture" +
                        (views.size() > 1 ? " (3 views side by side)" : "") + " needs about " +
                        io_detail::byteSizeText(static_cast<std::uint64_t>(bytes)) +
                        " of host memory, more than the limit of " + io_detail::byteSizeText(options.memoryLimitBytes) +
                        " (RenderOptions::memoryLimitBytes); render a smaller picture or raise the limit");

  // Progress: the pixel map, then the normals (when needed), then each view.
  Progress progress(options.progress);
  const double mapShare = 0.3, normalsShare = needNormals ? 0.2 : 0.0;
  progress.phase(0.0, mapShare);
  const PixelMap map = grid ? mapGrid(cloud, outW, outH, progress) : mapPinhole(cloud, options, outW, outH, progress);
  progress.phase(mapShare, mapShare + normalsShare);
  const std::vector<V3> normals = needNormals ? pixelNormals(cloud, map, progress) : std::vector<V3>{};

  HostImage image(map.height, static_cast<int>(totalW), 3, 8);
  for (int y = 0; y < image.height; ++y)
    for (int x = 0; x < image.width; ++x)
      for (int c = 0; c < 3; ++c) image.row(y)[3 * static_cast<std::size_t>(x) + c] = 12;  // separators
  const double viewShare = (1.0 - mapShare - normalsShare) / static_cast<double>(views.size());
  for (std::size_t v = 0; v < views.size(); ++v) {
    const double begin = mapShare + normalsShare + viewShare * static_cast<double>(v);
    progress.phase(begin, begin + viewShare);
    renderView(cloud, map, normals, views[v], options, image, static_cast<int>(v) * (map.width + gap), progress);
  }
  progress.finish();
  return image;
}
}  // namespace

HostImage renderCloud(const HostPointCloud& cloud, const RenderOptions& options) {
  return io_detail::translateAllocationFailure("renderCloud", [&] { return renderCloudImpl(cloud, options); });
}

}  // namespace devicearray
