// Plain host reference of the point-cloud operations of point_cloud.hpp, written
// independently of the kernels (double accumulation, straightforward loops), for
// tests/point_cloud_test.cpp.
#pragma once

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <numeric>
#include <vector>

#include "devicearray/formats.hpp"

namespace pcref {

using devicearray::ColorRGBA;
using devicearray::NormalXYZ;
using devicearray::PointXYZ;
using devicearray::SNR;

inline bool valid(const PointXYZ& p) { return std::isfinite(p.x) && std::isfinite(p.y) && std::isfinite(p.z); }
inline PointXYZ nanPoint() { return {NAN, NAN, NAN}; }

struct Cloud {
  int height = 0, width = 0;
  std::vector<PointXYZ> xyz;
  std::vector<ColorRGBA> rgba;  // empty = none
  std::vector<SNR> snr;         // empty = none
};

inline double weight(float s) { return std::isfinite(s) ? double(s) * double(s) : 0.0; }

/// Sums of a point set: SNR^2-weighted (w, with the weight sum in w[3]), plain (u) and
/// colour channels (c); the means of block downsampling and of voxels alike.
struct Sums {
  double w[4] = {0, 0, 0, 0}, u[3] = {0, 0, 0}, c[4] = {0, 0, 0, 0};
  void addPoint(const PointXYZ& p, double wi) {
    w[0] += wi * p.x;
    w[1] += wi * p.y;
    w[2] += wi * p.z;
    w[3] += wi;
    u[0] += p.x;
    u[1] += p.y;
    u[2] += p.z;
  }
  void addColor(const ColorRGBA& rgba) {
    c[0] += rgba.r;
    c[1] += rgba.g;
    c[2] += rgba.b;
    c[3] += rgba.a;
  }
  /// The weighted mean, or the plain mean of `count` points when every weight is 0.
  PointXYZ mean(int count) const {
    if (w[3] > 0) return {float(w[0] / w[3]), float(w[1] / w[3]), float(w[2] / w[3])};
    return {float(u[0] / count), float(u[1] / count), float(u[2] / count)};
  }
  /// Each colour channel's sum / n, rounded half up.
  ColorRGBA meanColor(double n) const {
    auto avg = [&](double v) { return std::uint8_t(std::floor(v / n + 0.5)); };
    return {avg(c[0]), avg(c[1]), avg(c[2]), avg(c[3])};
  }
};

inline Cloud downsample(const Cloud& in, int k) {
  Cloud out;
  out.height = in.height / k;
  out.width = in.width / k;
  const std::size_t n = std::size_t(out.height) * std::size_t(out.width);
  out.xyz.resize(n);
  if (!in.rgba.empty()) out.rgba.resize(n);
  if (!in.snr.empty()) out.snr.resize(n);
  for (int oy = 0; oy < out.height; ++oy)
    for (int ox = 0; ox < out.width; ++ox) {
      Sums sums;
      int count = 0;
      for (int dy = 0; dy < k; ++dy)
        for (int dx = 0; dx < k; ++dx) {
          const std::size_t i = std::size_t(oy * k + dy) * std::size_t(in.width) + std::size_t(ox * k + dx);
          if (!in.rgba.empty()) sums.addColor(in.rgba[i]);
          const PointXYZ& p = in.xyz[i];
          if (!valid(p)) continue;
          sums.addPoint(p, in.snr.empty() ? 1.0 : weight(in.snr[i].value));
          ++count;
        }
      const std::size_t o = std::size_t(oy) * std::size_t(out.width) + std::size_t(ox);
      out.xyz[o] = count == 0 ? nanPoint() : sums.mean(count);
      if (!in.snr.empty()) out.snr[o].value = float(std::sqrt(count ? sums.w[3] : 0.0));
      if (!in.rgba.empty()) out.rgba[o] = sums.meanColor(k * k);
    }
  return out;
}

inline std::vector<PointXYZ> transform(const std::vector<PointXYZ>& in, const std::array<float, 16>& m) {
  std::vector<PointXYZ> out(in.size());
  for (std::size_t i = 0; i < in.size(); ++i) {
    const PointXYZ& p = in[i];
    if (!valid(p)) {
      out[i] = p;
      continue;
    }
    out[i] = {float(double(m[0]) * p.x + double(m[1]) * p.y + double(m[2]) * p.z + m[3]),
              float(double(m[4]) * p.x + double(m[5]) * p.y + double(m[6]) * p.z + m[7]),
              float(double(m[8]) * p.x + double(m[9]) * p.y + double(m[10]) * p.z + m[11])};
  }
  return out;
}

inline std::array<float, 16> multiply(const std::array<float, 16>& a, const std::array<float, 16>& b) {
  std::array<float, 16> r{};
  for (int i = 0; i < 4; ++i)
    for (int j = 0; j < 4; ++j) {
      double s = 0;
      for (int k = 0; k < 4; ++k) s += double(a[4 * i + k]) * double(b[4 * k + j]);
      r[std::size_t(4 * i + j)] = float(s);
    }
  return r;
}

/// Signed distance of p to the box boundary (>0 inside), and whether inside, in double.
struct RoiDecision {
  bool inside;
  double margin;  // smallest distance to any of the six bounds (for tolerance near faces)
};
inline RoiDecision roi(const PointXYZ& p, const PointXYZ& o, const PointXYZ& a, const PointXYZ& b, float lo,
                       float hi) {
  const double u[3] = {double(a.x) - o.x, double(a.y) - o.y, double(a.z) - o.z};
  const double v[3] = {double(b.x) - o.x, double(b.y) - o.y, double(b.z) - o.z};
  const double lu = std::sqrt(u[0] * u[0] + u[1] * u[1] + u[2] * u[2]);
  const double lv = std::sqrt(v[0] * v[0] + v[1] * v[1] + v[2] * v[2]);
  double n[3] = {u[1] * v[2] - u[2] * v[1], u[2] * v[0] - u[0] * v[2], u[0] * v[1] - u[1] * v[0]};
  const double ln = std::sqrt(n[0] * n[0] + n[1] * n[1] + n[2] * n[2]);
  const double d[3] = {double(p.x) - o.x, double(p.y) - o.y, double(p.z) - o.z};
  const double pu = (d[0] * u[0] + d[1] * u[1] + d[2] * u[2]) / lu;
  const double pv = (d[0] * v[0] + d[1] * v[1] + d[2] * v[2]) / lv;
  const double pn = (d[0] * n[0] + d[1] * n[1] + d[2] * n[2]) / ln;
  if (!valid(p)) return {false, 1e30};
  const double margins[6] = {pu, lu - pu, pv, lv - pv, pn - lo, hi - pn};
  double m = 1e30;
  bool inside = true;
  for (double x : margins) {
    inside = inside && x >= 0;
    m = std::min(m, std::fabs(x));
  }
  return {inside, m};
}

inline std::vector<NormalXYZ> normals(int h, int w, const std::vector<PointXYZ>& xyz, const std::array<double, 3>& cam) {
  std::vector<NormalXYZ> out(xyz.size(), NormalXYZ{NAN, NAN, NAN});
  auto at = [&](int r, int c) { return xyz[std::size_t(r) * std::size_t(w) + std::size_t(c)]; };
  auto diff = [&](int r, int c, int dr, int dc, double d[3]) {
    const PointXYZ p = at(r, c);
    const int rb = r - dr, cb = c - dc, ra = r + dr, ca = c + dc;
    const bool hb = rb >= 0 && cb >= 0 && valid(at(rb, cb));
    const bool ha = ra < h && ca < w && valid(at(ra, ca));
    PointXYZ from = p, to = p;
    if (hb) from = at(rb, cb);
    if (ha) to = at(ra, ca);
    if (!hb && !ha) return false;
    d[0] = double(to.x) - from.x;
    d[1] = double(to.y) - from.y;
    d[2] = double(to.z) - from.z;
    return true;
  };
  for (int r = 0; r < h; ++r)
    for (int c = 0; c < w; ++c) {
      const PointXYZ p = at(r, c);
      double dh[3], dv[3];
      if (!valid(p) || !diff(r, c, 0, 1, dh) || !diff(r, c, 1, 0, dv)) continue;
      double n[3] = {dh[1] * dv[2] - dh[2] * dv[1], dh[2] * dv[0] - dh[0] * dv[2], dh[0] * dv[1] - dh[1] * dv[0]};
      const double len = std::sqrt(n[0] * n[0] + n[1] * n[1] + n[2] * n[2]);
      if (!(len > 0)) continue;
      const double dot = n[0] * (p.x - cam[0]) + n[1] * (p.y - cam[1]) + n[2] * (p.z - cam[2]);
      const double s = (dot > 0 ? -1.0 : 1.0) / len;
      out[std::size_t(r) * std::size_t(w) + std::size_t(c)] = {float(n[0] * s), float(n[1] * s), float(n[2] * s)};
    }
  return out;
}

/// Valid points in order, with their attributes.
inline Cloud compact(const Cloud& in) {
  Cloud out;
  for (std::size_t i = 0; i < in.xyz.size(); ++i) {
    if (!valid(in.xyz[i])) continue;
    out.xyz.push_back(in.xyz[i]);
    if (!in.rgba.empty()) out.rgba.push_back(in.rgba[i]);
    if (!in.snr.empty()) out.snr.push_back(in.snr[i]);
  }
  out.width = int(out.xyz.size());
  out.height = out.xyz.empty() ? 0 : 1;
  return out;
}

/// Voxel downsampling: keys from float voxel coordinates relative to the min corner
/// (computed with the same float expression as the device), stable sort, per-voxel
/// SNR^2-weighted means in double.
inline Cloud voxel(const Cloud& in, float size, int minPoints) {
  float mn[3] = {INFINITY, INFINITY, INFINITY};
  for (const PointXYZ& p : in.xyz)
    if (valid(p)) {
      mn[0] = std::min(mn[0], p.x);
      mn[1] = std::min(mn[1], p.y);
      mn[2] = std::min(mn[2], p.z);
    }
  std::vector<std::pair<std::uint64_t, std::size_t>> keyed;
  for (std::size_t i = 0; i < in.xyz.size(); ++i) {
    const PointXYZ& p = in.xyz[i];
    if (!valid(p)) continue;
    const auto ix = std::uint64_t(std::floor((p.x - mn[0]) / size));
    const auto iy = std::uint64_t(std::floor((p.y - mn[1]) / size));
    const auto iz = std::uint64_t(std::floor((p.z - mn[2]) / size));
    keyed.emplace_back((ix << 42) | (iy << 21) | iz, i);
  }
  std::stable_sort(keyed.begin(), keyed.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  Cloud out;
  for (std::size_t s = 0; s < keyed.size();) {
    std::size_t e = s;
    while (e < keyed.size() && keyed[e].first == keyed[s].first) ++e;
    const int count = int(e - s);
    if (count >= minPoints) {
      Sums sums;
      for (std::size_t j = s; j < e; ++j) {
        const std::size_t i = keyed[j].second;
        sums.addPoint(in.xyz[i], in.snr.empty() ? 1.0 : weight(in.snr[i].value));
        if (!in.rgba.empty()) sums.addColor(in.rgba[i]);
      }
      out.xyz.push_back(sums.mean(count));
      if (!in.snr.empty()) out.snr.push_back({float(std::sqrt(sums.w[3]))});
      if (!in.rgba.empty()) out.rgba.push_back(sums.meanColor(count));
    }
    s = e;
  }
  out.width = int(out.xyz.size());
  return out;
}

}  // namespace pcref
