#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstring>
#include <limits>

#include "core/color_tables.hpp"
#include "core/roi_base.hpp"

#include "pointcloud/pointcloud_internal.hpp"
#include "pointcloud/scratch_layout.hpp"

namespace devicearray::detail::pc {

std::shared_ptr<QueueImpl> queueOf(const ComputeDevice& device, const StreamOrQueue& sq, const char* fn) {
  if (!device.isValid()) raise(ErrorCode::InvalidState, fn, "the cloud is empty (it has no device)");
  return device.impl()->queueFor(sq, fn);
}

std::size_t checkedBytes(std::size_t count, std::size_t elemBytes, const char* fn) {
  if (elemBytes != 0 && count > std::numeric_limits<std::size_t>::max() / elemBytes)
    raise(ErrorCode::OutOfRange, fn,
          std::to_string(count) + " x " + std::to_string(elemBytes) + " bytes overflows std::size_t");
  return count * elemBytes;
}

std::shared_ptr<Allocation> scratch(QueueImpl& q, std::size_t count, std::size_t elemBytes, const char* fn) {
  const std::size_t bytes = checkedBytes(count, elemBytes, fn);
  return q.device()->allocate(bytes > 0 ? bytes : 1, q);
}

void fillU32(QueueImpl& q, Allocation* a, std::size_t offset, std::size_t count, std::uint32_t v) {
  FillDesc f;
  f.dims = 1;
  f.size[0] = static_cast<std::int64_t>(count);
  f.step[0] = sizeof(std::uint32_t);
  f.elemSize = sizeof(std::uint32_t);
  f.dst = MemRef::dev(a, offset);
  std::memcpy(f.pattern.data(), &v, sizeof v);
  q.device()->fill(f, q);
}

void copyBytes(QueueImpl& q, Allocation* dst, std::size_t dstOffset, Allocation* src, std::size_t srcOffset,
               std::size_t bytes) {
  CopyDesc d;
  d.dims = 0;
  d.elemSize = bytes;
  d.dst = MemRef::dev(dst, dstOffset);
  d.src = MemRef::dev(src, srcOffset);
  q.device()->copy(d, q);
}

void readBack(QueueImpl& q, Allocation* src, std::size_t srcOffset, void* dst, std::size_t bytes) {
  OrderedUse use(q, {src});
  CopyDesc d;
  d.dims = 0;
  d.elemSize = bytes;
  d.dst = MemRef::hostPtr(dst);
  d.src = MemRef::dev(src, srcOffset);
  // The host waits for this copy below anyway: let the driver do it directly instead
  // of staging it through host callbacks, which cost far more than a few bytes.
  d.hostMayBlock = true;
  q.device()->copy(d, q);
  use.commit()->synchronize();
}

RoiParams checkBox(const RegionOfInterestBox& b, const char* fn) {
  const PointXYZ* pts[3] = {&b.origin, &b.pointA, &b.pointB};
  for (const PointXYZ* p : pts)
    if (!std::isfinite(p->x) || !std::isfinite(p->y) || !std::isfinite(p->z))
      raise(ErrorCode::InvalidArgument, fn, "the box points must be finite");
  if (!std::isfinite(b.minExtent) || !std::isfinite(b.maxExtent) || b.minExtent > b.maxExtent)
    raise(ErrorCode::InvalidArgument, fn,
          "the extent [" + std::to_string(b.minExtent) + ", " + std::to_string(b.maxExtent) +
              "] must be finite with min <= max");
  const double u[3] = {double(b.pointA.x) - b.origin.x, double(b.pointA.y) - b.origin.y,
                       double(b.pointA.z) - b.origin.z};
  const double v[3] = {double(b.pointB.x) - b.origin.x, double(b.pointB.y) - b.origin.y,
                       double(b.pointB.z) - b.origin.z};
  const double lu = std::sqrt(u[0] * u[0] + u[1] * u[1] + u[2] * u[2]);
  const double lv = std::sqrt(v[0] * v[0] + v[1] * v[1] + v[2] * v[2]);
  if (lu == 0.0 || lv == 0.0)
    raise(ErrorCode::InvalidArgument, fn, "point A or point B coincides with the origin (degenerate box)");
  if (!spansBase(u, v))
    raise(ErrorCode::InvalidArgument, fn, "O, A and B are collinear, so they span no base (degenerate box)");
  const double n[3] = {u[1] * v[2] - u[2] * v[1], u[2] * v[0] - u[0] * v[2], u[0] * v[1] - u[1] * v[0]};
  const double ln = std::sqrt(n[0] * n[0] + n[1] * n[1] + n[2] * n[2]);
  RoiParams r{};
  r.o[0] = b.origin.x;
  r.o[1] = b.origin.y;
  r.o[2] = b.origin.z;
  for (int i = 0; i < 3; ++i) {
    r.u[i] = static_cast<float>(u[i] / lu);
    r.v[i] = static_cast<float>(v[i] / lv);
    r.n[i] = static_cast<float>(n[i] / ln);
  }
  r.lenU = static_cast<float>(lu);
  r.lenV = static_cast<float>(lv);
  r.lo = b.minExtent;
  r.hi = b.maxExtent;
  return r;
}

void checkAffine(const Matrix4x4& m, const char* fn) {
  for (std::size_t i = 0; i < 16; ++i)
    if (!std::isfinite(m[i]))
      raise(ErrorCode::InvalidArgument, fn,
            "matrix element " + std::to_string(i) + " is " + std::to_string(m[i]) + "; all elements must be finite");
  if (m[12] != 0.0f || m[13] != 0.0f || m[14] != 0.0f || m[15] != 1.0f)
    raise(ErrorCode::InvalidArgument, fn,
          "the last row is (" + std::to_string(m[12]) + ", " + std::to_string(m[13]) + ", " + std::to_string(m[14]) +
              ", " + std::to_string(m[15]) + "); point transforms must be affine (last row 0 0 0 1)");
}

Matrix4x4 multiply(const Matrix4x4& a, const Matrix4x4& b) {
  Matrix4x4 r{};
  for (int i = 0; i < 4; ++i)
    for (int j = 0; j < 4; ++j) {
      double s = 0;
      for (int k = 0; k < 4; ++k) s += static_cast<double>(a[4 * i + k]) * static_cast<double>(b[4 * k + j]);
      r[static_cast<std::size_t>(4 * i + j)] = static_cast<float>(s);
    }
  return r;
}

void enqueueTransform(QueueImpl& q, const Matrix4x4& m, const DeviceArray<PointXYZ>& in,
                      const DeviceArray<PointXYZ>& out) {
  OrderedUse use(q, {storageOf(in), storageOf(out)});
  const std::size_t n = in.size();
  launch<kernels::da_pc_transform>(q, LaunchGeometry::items(n), i64(n), m[0], m[1], m[2], m[3], m[4], m[5], m[6], m[7],
                                   m[8], m[9], m[10], m[11], arg(in), arg(out));
  use.commit();
}

void enqueueRotateNormals(QueueImpl& q, const Matrix4x4& m, const DeviceArray<NormalXYZ>& in,
                          const DeviceArray<NormalXYZ>& out) {
  OrderedUse use(q, {storageOf(in), storageOf(out)});
  const std::size_t n = in.size();
  launch<kernels::da_nrm_rotate>(q, LaunchGeometry::items(n), i64(n), m[0], m[1], m[2], m[4], m[5], m[6], m[8], m[9],
                                 m[10], arg(in), arg(out));
  use.commit();
}

CompactResult allocateAttributes(QueueImpl& q, std::size_t count, bool colors, bool snrs, bool normals,
                                 const char* fn, std::size_t countWords) {
  checkPointCount(count, fn);
  ScratchLayout layout;
  const std::size_t xyzAt = layout.add(count, sizeof(PointXYZ), fn);
  const std::size_t colorsAt = colors ? layout.add(count, sizeof(ColorRGBA), fn) : 0;
  const std::size_t snrsAt = snrs ? layout.add(count, sizeof(SNR), fn) : 0;
  const std::size_t normalsAt = normals ? layout.add(count, sizeof(NormalXYZ), fn) : 0;
  const std::size_t countAt = countWords > 0 ? layout.add(countWords, sizeof(std::uint32_t), fn) : 0;
  const std::shared_ptr<Allocation> block = layout.allocate(q);
  const int n = static_cast<int>(count);
  CompactResult r;
  r.block = block;
  r.countAt = countAt;
  r.xyz = wrapStorage<PointXYZ>(block, xyzAt, false, 1, n);
  if (colors) r.colors = wrapStorage<ColorRGBA>(block, colorsAt, false, 1, n);
  if (snrs) r.snrs = wrapStorage<SNR>(block, snrsAt, false, 1, n);
  if (normals) r.normals = wrapStorage<NormalXYZ>(block, normalsAt, false, 1, n);
  return r;
}

namespace {
template <class F>
void copyPrefix(QueueImpl& q, const DeviceArray<F>& dst, const DeviceArray<F>& src, std::size_t count) {
  copyBytes(q, storageOf(dst), bufferOf(dst).offset, storageOf(src), bufferOf(src).offset, count * sizeof(F));
}
}  // namespace

CompactResult trimmed(QueueImpl& q, const CompactResult& cap, std::size_t capacityCount, std::size_t count,
                      const char* fn) {
  CompactResult r;
  if (count == 0) return r;
  if (count * 4 >= capacityCount) {
    // Mostly full: share the capacity allocation.
    r.xyz = prefixOf(cap.xyz, count);
    if (cap.colors.isValid()) r.colors = prefixOf(cap.colors, count);
    if (cap.snrs.isValid()) r.snrs = prefixOf(cap.snrs, count);
    if (cap.normals.isValid()) r.normals = prefixOf(cap.normals, count);
    return r;
  }
  r = allocateAttributes(q, count, cap.colors.isValid(), cap.snrs.isValid(), cap.normals.isValid(), fn);
  OrderedUse use(q, {storageOf(r.xyz), storageOf(r.colors), storageOf(r.snrs), storageOf(r.normals),
                     storageOf(cap.xyz), storageOf(cap.colors), storageOf(cap.snrs), storageOf(cap.normals)});
  copyPrefix(q, r.xyz, cap.xyz, count);
  if (r.colors.isValid()) copyPrefix(q, r.colors, cap.colors, count);
  if (r.snrs.isValid()) copyPrefix(q, r.snrs, cap.snrs, count);
  if (r.normals.isValid()) copyPrefix(q, r.normals, cap.normals, count);
  use.commit();
  return r;
}

void enqueueCompaction(QueueImpl& q, std::size_t n, BufferRef offsets, const DeviceArray<PointXYZ>& xyz,
                       const DeviceArray<ColorRGBA>& colors, const DeviceArray<SNR>& snrs,
                       const DeviceArray<NormalXYZ>& normals, const CompactResult& cap) {
  // At least one work item, so that the count word is written for n = 0 too.
  launch<kernels::da_pc_compact>(q, LaunchGeometry::items(std::max<std::size_t>(n, 1)), i64(n),
                                 colors.isValid() ? 1 : 0, snrs.isValid() ? 1 : 0, normals.isValid() ? 1 : 0, offsets,
                                 arg(xyz), argOr(colors, xyz), argOr(snrs, xyz), argOr(normals, xyz), arg(cap.xyz),
                                 argOr(cap.colors, cap.xyz), argOr(cap.snrs, cap.xyz), argOr(cap.normals, cap.xyz),
                                 BufferRef{cap.block.get(), cap.countAt});
}

void downloadAttributes(const ComputeDevice& device, const DeviceArray<PointXYZ>& xyz,
                        const DeviceArray<ColorRGBA>& colors, ColorSpace colorSpace, const DeviceArray<SNR>& snrs,
                        HostPointCloud& out) {
  static_assert(sizeof(PointXYZ) == 3 * sizeof(float) && sizeof(ColorRGBA_SRGB) == 4 && sizeof(SNR) == sizeof(float));
  const std::vector<PointXYZ> p = xyz.toHost();
  out.xyz.resize(3 * p.size());
  std::memcpy(out.xyz.data(), p.data(), out.xyz.size() * sizeof(float));
  if (colors.isValid()) {
    const std::vector<ColorRGBA_SRGB> c = colorSpace == ColorSpace::srgb
                                              ? srgbView(colors).toHost()
                                              : convert<ColorRGBA_SRGB>(colors, device.sdkStreamOrQueue()).toHost();
    out.rgba.resize(4 * c.size());
    std::memcpy(out.rgba.data(), c.data(), out.rgba.size());
  }
  if (snrs.isValid()) {
    const std::vector<SNR> s = snrs.toHost();
    out.snr.resize(s.size());
    std::memcpy(out.snr.data(), s.data(), out.snr.size() * sizeof(float));
  }
}

SrgbTables srgbTables(QueueImpl& q) {
  SrgbTables t;
  t.owner = deviceColorTables(q.device(), q);
  t.decode = BufferRef{t.owner.get(), offsetof(ColorTables, srgbToFloat)};
  t.encode = BufferRef{t.owner.get(), offsetof(ColorTables, srgbBuckets)};
  return t;
}

DeviceArray<ColorRGBA> inColorSpace(const DeviceArray<ColorRGBA>& codes, ColorSpace from, ColorSpace to,
                                    StreamOrQueue sq) {
  if (from == to) return codes;
  if (to == ColorSpace::srgb) return storedCodes(convert<ColorRGBA_SRGB>(codes, sq));
  return convert<ColorRGBA>(srgbView(codes), sq);
}

void finishDeviceQueue(const ComputeDevice& device) { device.impl()->libraryQueue()->synchronize(); }

}  // namespace devicearray::detail::pc

namespace devicearray::detail {

DeviceArray<ColorRGBA_SRGB> srgbView(const DeviceArray<ColorRGBA>& codes) {
  return codes.isEmpty() ? DeviceArray<ColorRGBA_SRGB>() : DeviceArray<ColorRGBA_SRGB>::fromGpuMatND(codes.toGpuMatND());
}
DeviceArray<ColorRGBA> storedCodes(const DeviceArray<ColorRGBA_SRGB>& codes) {
  return codes.isEmpty() ? DeviceArray<ColorRGBA>() : DeviceArray<ColorRGBA>::fromGpuMatND(codes.toGpuMatND());
}

}  // namespace devicearray::detail
