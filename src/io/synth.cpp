// A synthetic organized point cloud, as a structured-light 3-D camera sees a scene.
//
// The scene lives in a world frame (millimetres, y up, the floor is y = 0). Each pixel's
// ray is traced against the floor, boxes and spheres; the projector, offset from the
// camera by the baseline, must also see the point, otherwise it lies in a projector
// shadow and is missing, as on a real camera. Random numbers come from a hash of
// (seed, pixel, purpose), so the result does not depend on the standard library's
// distributions and each pixel could be computed independently.
#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <limits>
#include <numbers>
#include <string>
#include <vector>

#include "devicearray/synthetic_scene.hpp"
#include "io/io_detail.hpp"

namespace devicearray {

using io_detail::invalid;

// ----------------------------------------------------------- PinholeCamera ---

PinholeCamera PinholeCamera::withFieldOfView(int width, int height, double horizontalFovDegrees) {
  if (width <= 0 || height <= 0)
    invalid("PinholeCamera::withFieldOfView: size " + std::to_string(width) + " x " + std::to_string(height) +
            " must be positive");
  if (!(horizontalFovDegrees >= 1.0 && horizontalFovDegrees <= 179.0))
    invalid("PinholeCamera::withFieldOfView: field of view " + std::to_string(horizontalFovDegrees) +
            " degrees must be in [1, 179]");
  const double f = 0.5 * width / std::tan(0.5 * horizontalFovDegrees * std::numbers::pi / 180.0);
  return PinholeCamera{width, height, f, f, 0.5 * (width - 1), 0.5 * (height - 1)};
}

void PinholeCamera::validate() const {
  if (width <= 0 || height <= 0)
    invalid("PinholeCamera::validate: size " + std::to_string(width) + " x " + std::to_string(height) +
            " must be positive");
  if (!(std::isfinite(fx) && std::isfinite(fy) && fx > 0 && fy > 0))
    invalid("PinholeCamera::validate: focal lengths fx " + std::to_string(fx) + ", fy " + std::to_string(fy) +
            " must be finite and positive");
  if (!(std::isfinite(cx) && std::isfinite(cy)))
    invalid("PinholeCamera::validate: principal point must be finite");
}

void SynthOptions::validate() const {
  camera.validate();
  const std::string fn = "SynthOptions::validate: ";
  if (!(std::isfinite(projectorBaselineMm) && projectorBaselineMm >= 0))
    invalid(fn + "projectorBaselineMm " + std::to_string(projectorBaselineMm) + " must be finite and >= 0");
  if (!(std::isfinite(depthNoiseCoefficient) && depthNoiseCoefficient >= 0))
    invalid(fn + "depthNoiseCoefficient " + std::to_string(depthNoiseCoefficient) + " must be finite and >= 0");
  if (!(dropoutProbability >= 0 && dropoutProbability <= 1))
    invalid(fn + "dropoutProbability " + std::to_string(dropoutProbability) + " must be in [0, 1]");
  if (!(std::isfinite(minSNR) && minSNR >= 0)) invalid(fn + "minSNR " + std::to_string(minSNR) + " must be finite and >= 0");
  for (float v : cameraPose)
    if (!std::isfinite(v)) invalid(fn + "cameraPose must be finite");
  if (cameraPose[12] != 0 || cameraPose[13] != 0 || cameraPose[14] != 0 || cameraPose[15] != 1)
    invalid(fn + "cameraPose must be affine (last row 0 0 0 1)");
  // Rigid: the rotation part's columns are orthonormal and keep handedness.
  for (int a = 0; a < 3; ++a)
    for (int b = 0; b < 3; ++b) {
      double d = 0;
      for (int r = 0; r < 3; ++r)
        d += double(cameraPose[static_cast<std::size_t>(4 * r + a)]) * cameraPose[static_cast<std::size_t>(4 * r + b)];
      if (std::fabs(d - (a == b ? 1.0 : 0.0)) > 1e-4)
        invalid(fn + "cameraPose must be a rigid transform (its upper-left 3x3 a rotation)");
    }
  const auto& m = cameraPose;
  const double det = double(m[0]) * (double(m[5]) * m[10] - double(m[6]) * m[9]) -
                     double(m[1]) * (double(m[4]) * m[10] - double(m[6]) * m[8]) +
                     double(m[2]) * (double(m[4]) * m[9] - double(m[5]) * m[8]);
  if (det < 0) invalid(fn + "cameraPose must be a rotation, not a reflection");
}

namespace {

// ------------------------------------------------------------------ maths ---

struct Vec3 {
  double x = 0, y = 0, z = 0;
  Vec3 operator+(const Vec3& o) const { return {x + o.x, y + o.y, z + o.z}; }
  Vec3 operator-(const Vec3& o) const { return {x - o.x, y - o.y, z - o.z}; }
  Vec3 operator*(double s) const { return {x * s, y * s, z * s}; }
};
double dot(const Vec3& a, const Vec3& b) { return a.x * b.x + a.y * b.y + a.z * b.z; }
Vec3 cross(const Vec3& a, const Vec3& b) { return {a.y * b.z - a.z * b.y, a.z * b.x - a.x * b.z, a.x * b.y - a.y * b.x}; }
Vec3 normalized(const Vec3& v) { return v * (1.0 / std::sqrt(dot(v, v))); }

// Counter-based random numbers: splitmix64's finalizer over (seed, pixel, purpose).
std::uint64_t mix(std::uint64_t z) {
  z += 0x9E3779B97F4A7C15ull;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}
double uniform01(std::uint64_t seed, std::uint64_t index, std::uint64_t purpose) {
  const std::uint64_t h = mix(mix(mix(seed) ^ index) ^ (purpose * 0xD1B54A32D192ED03ull));
  return static_cast<double>(h >> 11) * 0x1.0p-53;  // [0, 1)
}
double gaussian(std::uint64_t seed, std::uint64_t index, std::uint64_t purpose) {
  const double u1 = 1.0 - uniform01(seed, index, purpose);  // (0, 1]
  const double u2 = uniform01(seed, index, purpose + 1);
  return std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * std::numbers::pi * u2);
}

/// Sequential random numbers for the scene layout.
class LayoutRandom {
 public:
  explicit LayoutRandom(std::uint64_t seed) : seed_(seed) {}
  double uniform(double lo, double hi) { return lo + (hi - lo) * uniform01(seed_, counter_++, 0x5CE7E); }

 private:
  std::uint64_t seed_;
  std::uint64_t counter_ = 0;
};

double srgbEncode(double linear) {
  linear = std::clamp(linear, 0.0, 1.0);
  return linear <= 0.0031308 ? 12.92 * linear : 1.055 * std::pow(linear, 1.0 / 2.4) - 0.055;
}

// ------------------------------------------------------------------ scene ---

struct Hit {
  double t = std::numeric_limits<double>::infinity();
  Vec3 normal;
  int object = -1;
};

struct Box {
  Vec3 center;           // world; the box stands on the floor
  Vec3 half;             // half extents along its local axes
  double yaw = 0;        // rotation about the world y axis
  Vec3 albedo;           // linear RGB reflectance
};

struct Sphere {
  Vec3 center;
  double radius = 0;
  Vec3 albedo;
};

struct Stain {  // dark elliptical spots on the floor
  double x = 0, z = 0, rx = 0, rz = 0;
};

struct Scene {
  std::vector<Box> boxes;
  std::vector<Sphere> spheres;
  std::vector<Stain> stains;
  double floorMinX = -1500, floorMaxX = 1500, floorMinZ = 200, floorMaxZ = 2800;

  // Object ids: 0 = floor, 1.. = boxes, then spheres.
  int sphereId(std::size_t i) const { return 1 + static_cast<int>(boxes.size() + i); }

  void intersect(const Vec3& o, const Vec3& d, double tMin, Hit& best) const {
    if (d.y < 0) {
      const double t = -o.y / d.y;
      if (t > tMin && t < best.t) {
        const Vec3 p = o + d * t;
        if (p.x >= floorMinX && p.x <= floorMaxX && p.z >= floorMinZ && p.z <= floorMaxZ)
          best = {t, {0, 1, 0}, 0};
      }
    }
    for (std::size_t i = 0; i < boxes.size(); ++i) intersectBox(boxes[i], static_cast<int>(i) + 1, o, d, tMin, best);
    for (std::size_t i = 0; i < spheres.size(); ++i) {
      const Sphere& s = spheres[i];
      const Vec3 oc = o - s.center;
      const double a = dot(d, d), b = dot(oc, d), c = dot(oc, oc) - s.radius * s.radius;
      const double disc = b * b - a * c;
      if (disc < 0) continue;
      const double sq = std::sqrt(disc);
      for (double t : {(-b - sq) / a, (-b + sq) / a}) {
        if (t > tMin && t < best.t) {
          best = {t, normalized((o + d * t) - s.center), sphereId(i)};
          break;
        }
      }
    }
  }

  static void intersectBox(const Box& b, int id, const Vec3& o, const Vec3& d, double tMin, Hit& best) {
    // Rotate the ray into the box frame (yaw about y), then intersect the slabs.
    const double c = std::cos(b.yaw), s = std::sin(b.yaw);
    auto toLocal = [&](const Vec3& v) { return Vec3{c * v.x - s * v.z, v.y, s * v.x + c * v.z}; };
    const Vec3 lo = toLocal(o - b.center), ld = toLocal(d);
    const double oa[3] = {lo.x, lo.y, lo.z}, da[3] = {ld.x, ld.y, ld.z}, ha[3] = {b.half.x, b.half.y, b.half.z};
    double tNear = -std::numeric_limits<double>::infinity(), tFar = std::numeric_limits<double>::infinity();
    int axis = -1;
    double sign = 0;
    for (int k = 0; k < 3; ++k) {
      if (std::fabs(da[k]) < 1e-12) {
        if (std::fabs(oa[k]) > ha[k]) return;
        continue;
      }
      double t1 = (-ha[k] - oa[k]) / da[k], t2 = (ha[k] - oa[k]) / da[k];
      double entrySign = -1;
      if (t1 > t2) { std::swap(t1, t2); entrySign = 1; }
      if (t1 > tNear) { tNear = t1; axis = k; sign = entrySign; }
      tFar = std::min(tFar, t2);
    }
    if (axis < 0 || tNear > tFar || tNear <= tMin || tNear >= best.t) return;
    Vec3 ln{axis == 0 ? sign : 0, axis == 1 ? sign : 0, axis == 2 ? sign : 0};
    // Back to world: inverse rotation.
    const Vec3 wn{c * ln.x + s * ln.z, ln.y, -s * ln.x + c * ln.z};
    best = {tNear, wn, id};
  }

  Vec3 albedo(int object, const Vec3& p) const {
    if (object == 0) {
      for (const Stain& st : stains) {
        const double dx = (p.x - st.x) / st.rx, dz = (p.z - st.z) / st.rz;
        if (dx * dx + dz * dz < 1.0) return {0.025, 0.022, 0.02};
      }
      // 250 mm tiles in two tones with darker 8 mm grout lines.
      const double tile = 250.0, grout = 8.0;
      const double fx = std::fmod(std::fabs(p.x + 10000.0), tile), fz = std::fmod(std::fabs(p.z + 10000.0), tile);
      if (fx < grout || fz < grout) return {0.16, 0.15, 0.14};
      const bool odd = (static_cast<long>(std::floor((p.x + 10000.0) / tile)) +
                        static_cast<long>(std::floor((p.z + 10000.0) / tile))) % 2 != 0;
      return odd ? Vec3{0.50, 0.46, 0.40} : Vec3{0.36, 0.34, 0.31};
    }
    if (object <= static_cast<int>(boxes.size())) return boxes[static_cast<std::size_t>(object - 1)].albedo;
    return spheres[static_cast<std::size_t>(object - 1 - static_cast<int>(boxes.size()))].albedo;
  }
};

Scene buildScene(std::uint64_t seed) {
  LayoutRandom r(seed);
  Scene scene;
  auto jitter = [&](double v, double amount) { return v + r.uniform(-amount, amount); };
  struct BoxSpec { double x, z, w, h, d, yawDeg; Vec3 albedo; };
  const BoxSpec boxes[] = {
      {-380, 1050, 300, 200, 240, 20, {0.62, 0.10, 0.08}},   // red
      {330, 1650, 420, 360, 300, -30, {0.08, 0.18, 0.60}},   // blue
      {40, 820, 160, 110, 150, 45, {0.70, 0.55, 0.06}},      // yellow
      {-700, 2150, 380, 520, 300, 10, {0.45, 0.32, 0.20}},   // cardboard brown, far
  };
  for (const auto& b : boxes) {
    const double scale = r.uniform(0.85, 1.15);
    const double h = b.h * scale;
    scene.boxes.push_back({{jitter(b.x, 70), h / 2, jitter(b.z, 70)},
                           {b.w * scale / 2, h / 2, b.d * scale / 2},
                           (b.yawDeg + r.uniform(-15, 15)) * std::numbers::pi / 180.0,
                           b.albedo * r.uniform(0.9, 1.1)});
  }
  struct SphereSpec { double x, z, radius; Vec3 albedo; };
  const SphereSpec spheres[] = {
      {120, 1250, 170, {0.10, 0.55, 0.15}},   // green
      {-420, 1850, 120, {0.03, 0.03, 0.035}}, // black: too dark to measure well
      {650, 1000, 100, {0.75, 0.75, 0.72}},   // white
      {800, 2300, 200, {0.55, 0.25, 0.55}},   // purple, far
  };
  for (const auto& s : spheres) {
    const double radius = s.radius * r.uniform(0.85, 1.15);
    scene.spheres.push_back({{jitter(s.x, 60), radius, jitter(s.z, 60)}, radius, s.albedo});
  }
  for (int i = 0; i < 3; ++i)
    scene.stains.push_back({r.uniform(-900, 900), r.uniform(700, 2300), r.uniform(40, 110), r.uniform(30, 90)});
  return scene;
}

// Random-number purposes (distinct streams per pixel).
enum : std::uint64_t { kDepthNoise = 1, kSnrNoise = 3, kDropout = 5, kColorNoise = 7, kEdge = 11 };

}  // namespace

namespace {
HostPointCloud synthesizeSceneImpl(const SynthOptions& options) {
  const PinholeCamera& cam = options.camera;
  const int H = cam.height, W = cam.width;
  HostPointCloud cloud = HostPointCloud::organized(H, W, options.withColors, options.withSNR, options.withNormals);
  const std::size_t n = cloud.size();
  const Scene scene = buildScene(options.seed);

  // The default camera is 1.1 m above the floor looking at a point 1.3 m ahead; x right,
  // y down, z forward. The pose moves the camera within that camera's frame.
  const Vec3 up{0, 1, 0};
  const Vec3 eye0{0, 1100, 0};
  const Vec3 zc0 = normalized(Vec3{0, 0, 1300} - eye0);
  const Vec3 xc0 = normalized(cross(zc0, up));
  const Vec3 yc0 = cross(zc0, xc0);
  const auto& pose = options.cameraPose;
  auto fromDefaultCamera = [&](double x, double y, double z) { return xc0 * x + yc0 * y + zc0 * z; };
  const Vec3 eye = eye0 + fromDefaultCamera(pose[3], pose[7], pose[11]);
  const Vec3 xc = fromDefaultCamera(pose[0], pose[4], pose[8]);
  const Vec3 yc = fromDefaultCamera(pose[1], pose[5], pose[9]);
  const Vec3 zc = fromDefaultCamera(pose[2], pose[6], pose[10]);
  const Vec3 projector = eye + xc * options.projectorBaselineMm;

  // Pass 1: trace. depth = camera z of the exact hit (NaN for none); `lit` says whether
  // the projector sees the point.
  std::vector<float> depth(n, std::numeric_limits<float>::quiet_NaN());
  std::vector<std::uint8_t> lit(n, 0);
  std::vector<float> snr(n, 0.0f);
  std::vector<std::array<float, 3>> shade(n, {0.1f, 0.1f, 0.11f});
  std::vector<std::array<float, 3>> normalCam(n);

  const int progressRows = std::max(1, H / 100);
  for (int v = 0; v < H; ++v) {
    if (options.progress && v % progressRows == 0) options.progress(0.9 * v / H);
    for (int u = 0; u < W; ++u) {
      const std::size_t i = static_cast<std::size_t>(v) * static_cast<std::size_t>(W) + static_cast<std::size_t>(u);
      const Vec3 dc{(u - cam.cx) / cam.fx, (v - cam.cy) / cam.fy, 1.0};
      const Vec3 dir = xc * dc.x + yc * dc.y + zc * dc.z;
      Hit hit;
      scene.intersect(eye, dir, 1e-6, hit);
      if (hit.object < 0) continue;  // nothing there: out of the camera's range
      const Vec3 p = eye + dir * hit.t;
      Vec3 nrm = hit.normal;
      if (dot(nrm, dir) > 0) nrm = nrm * -1.0;  // inside faces of spheres/boxes are never seen from outside
      depth[i] = static_cast<float>(hit.t);     // |dc.z| = 1, so t is the camera z
      normalCam[i] = {static_cast<float>(dot(nrm, xc)), static_cast<float>(dot(nrm, yc)), static_cast<float>(dot(nrm, zc))};

      const Vec3 toProj = projector - p;
      const double distProj = std::sqrt(dot(toProj, toProj));
      const Vec3 lProj = toProj * (1.0 / distProj);
      const double cosProj = dot(nrm, lProj);
      bool visibleToProjector = cosProj > 0;
      if (visibleToProjector && options.projectorBaselineMm > 0) {
        Hit blocker;
        blocker.t = 1.0 - 1e-4;  // only blockers strictly between the projector and p
        scene.intersect(projector, p - projector, 1e-6, blocker);
        visibleToProjector = blocker.object < 0;
      }
      lit[i] = visibleToProjector ? 1 : 0;
      const Vec3 albedo = scene.albedo(hit.object, p);
      const double viewCos = std::max(0.0, -dot(nrm, normalized(dir)));
      const double lum = 0.2126 * albedo.x + 0.7152 * albedo.y + 0.0722 * albedo.z;
      if (visibleToProjector) {
        // Returned pattern power falls with the square of the distance and with the
        // cosine of incidence; grazing views see less of it.
        const double dm = distProj / 1000.0;
        snr[i] = static_cast<float>(130.0 * lum * cosProj * std::sqrt(viewCos) / (dm * dm) *
                                    (1.0 + 0.05 * gaussian(options.seed, i, kSnrNoise)));
      }
      // The colour image is lit by the projector's white flash plus ambient light.
      const double light = 0.18 + (visibleToProjector ? 0.82 * cosProj : 0.0);
      shade[i] = {static_cast<float>(albedo.x * light), static_cast<float>(albedo.y * light),
                  static_cast<float>(albedo.z * light)};
    }
  }

  // Pass 2: holes, noise and output.
  for (int v = 0; v < H; ++v) {
    if (options.progress && v % progressRows == 0) options.progress(0.9 + 0.1 * v / H);
    for (int u = 0; u < W; ++u) {
      const std::size_t i = static_cast<std::size_t>(v) * static_cast<std::size_t>(W) + static_cast<std::size_t>(u);
      if (cloud.hasColors()) {
        for (int c = 0; c < 3; ++c) {
          const double noisy = srgbEncode(shade[i][static_cast<std::size_t>(c)]) * 255.0 +
                               1.5 * gaussian(options.seed, i * 3 + static_cast<std::size_t>(c), kColorNoise);
          cloud.rgba[4 * i + static_cast<std::size_t>(c)] = static_cast<std::uint8_t>(std::clamp(std::lround(noisy), 0L, 255L));
        }
        cloud.rgba[4 * i + 3] = 255;
      }
      const float z = depth[i];
      bool valid = std::isfinite(z) && lit[i] && snr[i] >= options.minSNR;
      if (valid && uniform01(options.seed, i, kDropout) < options.dropoutProbability) valid = false;
      if (valid) {
        // Depth edges: pixels next to a jump of more than 2 % of the depth mix both
        // surfaces on a real sensor; most of them are filtered out as unreliable.
        for (const auto& [du, dv] : {std::pair{-1, 0}, {1, 0}, {0, -1}, {0, 1}}) {
          const int uu = u + du, vv = v + dv;
          if (uu < 0 || vv < 0 || uu >= W || vv >= H) continue;
          const std::size_t j = static_cast<std::size_t>(vv) * static_cast<std::size_t>(W) + static_cast<std::size_t>(uu);
          const float zn = depth[j];
          if (!std::isfinite(zn) || std::fabs(zn - z) > 0.02f * z) {
            if (uniform01(options.seed, i, kEdge) < 0.85) valid = false;
            break;
          }
        }
      }
      if (options.withSNR) cloud.snr[i] = std::isfinite(z) ? snr[i] : 0.0f;
      if (!valid) continue;
      const double sigma = options.depthNoiseCoefficient * double(z) * double(z);
      const double zNoisy = z + sigma * gaussian(options.seed, i, kDepthNoise);
      // Noise moves the point along its viewing ray, as triangulation errors do.
      cloud.xyz[3 * i + 0] = static_cast<float>((u - cam.cx) / cam.fx * zNoisy);
      cloud.xyz[3 * i + 1] = static_cast<float>((v - cam.cy) / cam.fy * zNoisy);
      cloud.xyz[3 * i + 2] = static_cast<float>(zNoisy);
      if (options.withNormals)
        for (int c = 0; c < 3; ++c) cloud.normals[3 * i + static_cast<std::size_t>(c)] = normalCam[i][static_cast<std::size_t>(c)];
    }
  }
  if (options.progress) options.progress(1.0);
  return cloud;
}
}  // namespace

HostPointCloud synthesizeScene(const SynthOptions& options) {
  options.validate();
  return io_detail::translateAllocationFailure("synthesizeScene", [&] { return synthesizeSceneImpl(options); });
}

}  // namespace devicearray
