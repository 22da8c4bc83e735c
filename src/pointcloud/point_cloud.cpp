// PointCloud: organized clouds on one device. Kernels: src/kernels/pointcloud.h.
#include <cmath>
#include <cstring>

#include "pointcloud/pending_point_count.hpp"
#include "pointcloud/pointcloud_internal.hpp"
#include "pointcloud/scratch_layout.hpp"
#include "pointcloud/voxel_grid.hpp"

namespace devicearray {

using detail::Allocation;
using detail::BufferRef;
using detail::LaunchGeometry;
using detail::OrderedUse;
using detail::QueueImpl;
namespace kernels = detail::kernels;
namespace pc = detail::pc;

namespace {

int blockSize(Downsampling d, const char* fn) {
  switch (d) {
    case Downsampling::by2x2: return 2;
    case Downsampling::by3x3: return 3;
    case Downsampling::by4x4: return 4;
  }
  pc::raise(ErrorCode::InvalidArgument, fn,
            "Downsampling value " + std::to_string(static_cast<int>(d)) + " is not by2x2, by3x3 or by4x4");
}

template <class F>
void checkCompanion(const DeviceArray<F>& a, const DeviceArray<PointXYZ>& xyz, const char* what, const char* fn) {
  if (a.isEmpty()) return;
  if (!a.isOrganized() || a.height() != xyz.height() || a.width() != xyz.width())
    pc::raise(ErrorCode::InvalidArgument, fn,
              std::string(what) + " array is " + std::to_string(a.height()) + "x" + std::to_string(a.width()) +
                  (a.isOrganized() ? "" : " (unorganized)") + " but the XYZ array is organized " +
                  std::to_string(xyz.height()) + "x" + std::to_string(xyz.width()));
  pc::checkSameDevice(a, xyz, what, fn);
}

/// Mask on the device: storage, offset and row step of a U8 {H, W} GpuMatND.
struct DeviceMask {
  Allocation* storage;
  std::size_t offset;
  std::size_t rowStep;
};

/// Throws unless a mask (`what`: "mask" or "host mask") of this type and shape fits
/// `cloud`: one uint8 per point, 2-D like the cloud; the message says which is wrong.
template <class Mask>
void checkMaskGeometry(const Mask& mask, const char* what, const PointCloud& cloud, const char* fn) {
  if (mask.type() != makeType(Depth::U8, 1))
    pc::raise(ErrorCode::InvalidArgument, fn,
              std::string("the ") + what + " has type " + std::to_string(mask.type()) +
                  "; it must be makeType(Depth::U8, 1) (" + std::to_string(makeType(Depth::U8, 1)) + ")");
  if (mask.dims != 2 || mask.size.size() != 2 || mask.size[0] != cloud.height() || mask.size[1] != cloud.width()) {
    std::string given;
    for (const int length : mask.size) given += (given.empty() ? "" : "x") + std::to_string(length);
    pc::raise(ErrorCode::InvalidArgument, fn,
              std::string("the ") + what + " must be 2-D " + std::to_string(cloud.height()) + "x" +
                  std::to_string(cloud.width()) + " like the cloud, but is " + given);
  }
}

DeviceMask checkMask(const GpuMatND& mask, const PointCloud& cloud, const char* fn) {
  if (mask.empty()) pc::raise(ErrorCode::InvalidArgument, fn, "the mask is empty");
  checkMaskGeometry(mask, "mask", cloud, fn);
  if (mask.device() != cloud.device())
    pc::raise(ErrorCode::InvalidArgument, fn,
              "the mask lives on " + mask.device().toString() + " but the cloud on " + cloud.device().toString());
  if (mask.step.back() != 1)
    pc::raise(ErrorCode::InvalidArgument, fn, "mask pixels must be contiguous within a row (step[1] == 1)");
  return DeviceMask{detail::allocationOf(mask).get(), detail::offsetOf(mask), mask.step[0]};
}

GpuMatND uploadMask(const HostMat& mask, const PointCloud& cloud, const char* fn) {
  if (mask.empty()) pc::raise(ErrorCode::InvalidArgument, fn, "the host mask is empty");
  checkMaskGeometry(mask, "host mask", cloud, fn);
  GpuMatND d({cloud.height(), cloud.width()}, makeType(Depth::U8, 1), cloud.device());
  d.upload(mask);
  return d;
}

void enqueueRoi(QueueImpl& q, const pc::RoiParams& r, const DeviceArray<PointXYZ>& in,
                const DeviceArray<PointXYZ>& out) {
  OrderedUse use(q, {pc::storageOf(in), pc::storageOf(out)});
  const std::size_t n = in.size();
  detail::launch<kernels::da_pc_roi>(q, LaunchGeometry::items(n), pc::i64(n), r.o[0], r.o[1], r.o[2], r.u[0], r.u[1],
                                     r.u[2], r.lenU, r.v[0], r.v[1], r.v[2], r.lenV, r.n[0], r.n[1], r.n[2], r.lo,
                                     r.hi, pc::arg(in), pc::arg(out));
  use.commit();
}

void enqueueTransformRoi(QueueImpl& q, const Matrix4x4& m, const pc::RoiParams& r, const DeviceArray<PointXYZ>& in,
                         const DeviceArray<PointXYZ>& out) {
  OrderedUse use(q, {pc::storageOf(in), pc::storageOf(out)});
  const std::size_t n = in.size();
  detail::launch<kernels::da_pc_transform_roi>(q, LaunchGeometry::items(n), pc::i64(n), m[0], m[1], m[2], m[3], m[4],
                                               m[5], m[6], m[7], m[8], m[9], m[10], m[11], r.o[0], r.o[1], r.o[2],
                                               r.u[0], r.u[1], r.u[2], r.lenU, r.v[0], r.v[1], r.v[2], r.lenV, r.n[0],
                                               r.n[1], r.n[2], r.lo, r.hi, pc::arg(in), pc::arg(out));
  use.commit();
}

}  // namespace

// ---------------------------------------------------------- construction ----

PointCloud::PointCloud(DeviceArray<PointXYZ> xyz, DeviceArray<ColorRGBA> colors, DeviceArray<SNR> snrs) {
  constexpr const char* fn = "PointCloud::PointCloud";
  if (xyz.isEmpty()) pc::raise(ErrorCode::InvalidArgument, fn, "the XYZ array is empty");
  if (!xyz.isOrganized())
    pc::raise(ErrorCode::InvalidArgument, fn, "the XYZ array is unorganized; a PointCloud needs an H x W array");
  checkCompanion(colors, xyz, "the colour", fn);
  checkCompanion(snrs, xyz, "the SNR", fn);
  height_ = xyz.height();
  width_ = xyz.width();
  xyz_ = std::move(xyz);
  colors_ = std::move(colors);
  snrs_ = std::move(snrs);
}

PointCloud PointCloud::withStoredColors(DeviceArray<ColorRGBA> codes, ColorSpace space) const {
  PointCloud out = *this;
  checkCompanion(codes, xyz_, "the colour", "PointCloud::withStoredColors");
  out.colors_ = std::move(codes);
  out.colorSpace_ = out.colors_.isValid() ? space : ColorSpace::linear;
  return out;
}

PointCloud PointCloud::fromHost(const HostPointCloud& cloud, const ComputeDevice& device) {
  constexpr const char* fn = "PointCloud::fromHost";
  cloud.validate();
  if (!cloud.isOrganized())
    pc::raise(ErrorCode::InvalidArgument, fn, "the host cloud is unorganized (height and width are 0)");
  // The host arrays have the formats' layouts (packed floats and bytes), and uploads copy
  // bytes: the arrays go up as they are, without an element-wise copy of a camera frame.
  static_assert(sizeof(PointXYZ) == 3 * sizeof(float) && sizeof(ColorRGBA_SRGB) == 4 && sizeof(SNR) == sizeof(float));
  DeviceArray<PointXYZ> dxyz = DeviceArray<PointXYZ>::fromHost(reinterpret_cast<const PointXYZ*>(cloud.xyz.data()),
                                                                cloud.height, cloud.width, device);
  DeviceArray<ColorRGBA_SRGB> dcolors;
  if (cloud.hasColors())
    dcolors = DeviceArray<ColorRGBA_SRGB>::fromHost(reinterpret_cast<const ColorRGBA_SRGB*>(cloud.rgba.data()),
                                                    cloud.height, cloud.width, device);
  DeviceArray<SNR> dsnr;
  if (cloud.hasSNR())
    dsnr = DeviceArray<SNR>::fromHost(reinterpret_cast<const SNR*>(cloud.snr.data()), cloud.height, cloud.width,
                                      device);
  return PointCloud(std::move(dxyz), std::move(dcolors), std::move(dsnr));
}

PointCloud PointCloud::fromHost(int height, int width, const PointXYZ* xyz, const ColorRGBA* colors, const SNR* snrs,
                                const ComputeDevice& device) {
  constexpr const char* fn = "PointCloud::fromHost";
  if (xyz == nullptr) pc::raise(ErrorCode::InvalidArgument, fn, "xyz is null");
  DeviceArray<PointXYZ> dxyz = DeviceArray<PointXYZ>::fromHost(xyz, height, width, device);
  DeviceArray<ColorRGBA> dcolors;
  if (colors != nullptr) dcolors = DeviceArray<ColorRGBA>::fromHost(colors, height, width, device);
  DeviceArray<SNR> dsnr;
  if (snrs != nullptr) dsnr = DeviceArray<SNR>::fromHost(snrs, height, width, device);
  return PointCloud(std::move(dxyz), std::move(dcolors), std::move(dsnr));
}

HostPointCloud PointCloud::toHost() const {
  constexpr const char* fn = "PointCloud::toHost";
  if (isEmpty()) pc::raise(ErrorCode::InvalidState, fn, "the cloud is empty");
  HostPointCloud out;
  out.height = height_;
  out.width = width_;
  pc::downloadAttributes(device(), xyz_, colors_, colorSpace_, snrs_, out);
  return out;
}

ComputeDevice PointCloud::device() const {
  if (isEmpty()) pc::raise(ErrorCode::InvalidState, "PointCloud::device", "the cloud is empty");
  return xyz_.device();
}

const DeviceArray<ColorRGBA>& PointCloud::requireColors(const char* fn) const {
  if (isEmpty()) pc::raise(ErrorCode::InvalidState, fn, "the cloud is empty");
  if (!hasColors()) pc::raise(ErrorCode::InvalidState, fn, "the cloud has no colours");
  return colors_;
}

// ---------------------------------------------------------------- access ----

DeviceArray<PointXYZ> PointCloud::devicePointsXYZ(StreamOrQueue sq) const {
  (void)pc::queueOf(device(), sq, "PointCloud::devicePointsXYZ");
  return convert<PointXYZ>(xyz_, sq);
}
DeviceArray<PointXYZW> PointCloud::devicePointsXYZW(StreamOrQueue sq) const {
  (void)pc::queueOf(device(), sq, "PointCloud::devicePointsXYZW");
  return convert<PointXYZW>(xyz_, sq);
}
DeviceArray<PointZ> PointCloud::devicePointsZ(StreamOrQueue sq) const {
  (void)pc::queueOf(device(), sq, "PointCloud::devicePointsZ");
  return convert<PointZ>(xyz_, sq);
}
DeviceArray<SNR> PointCloud::deviceSNRs(StreamOrQueue sq) const {
  constexpr const char* fn = "PointCloud::deviceSNRs";
  (void)pc::queueOf(device(), sq, fn);
  if (!hasSNRs()) pc::raise(ErrorCode::InvalidState, fn, "the cloud has no SNR values");
  return convert<SNR>(snrs_, sq);
}

DeviceArray<NormalXYZ> PointCloud::deviceNormalsXYZ(StreamOrQueue sq) const {
  constexpr const char* fn = "PointCloud::deviceNormalsXYZ";
  const auto q = pc::queueOf(device(), sq, fn);
  DeviceArray<NormalXYZ> normals = pc::allocateOrganized<NormalXYZ>(*q, height_, width_, fn);
  OrderedUse use(*q, {pc::storageOf(xyz_), pc::storageOf(normals)});
  detail::launch<kernels::da_pc_normals>(
      *q, LaunchGeometry::grid(static_cast<std::size_t>(width_), static_cast<std::size_t>(height_)), width_, height_,
      transform_[3], transform_[7], transform_[11], pc::arg(xyz_), pc::arg(normals));
  use.commit();
  return normals;
}

// ------------------------------------------------------------ downsample ----

PointCloud PointCloud::downsampled(Downsampling d, StreamOrQueue sq) const {
  constexpr const char* fn = "PointCloud::downsampled";
  const int k = blockSize(d, fn);
  const auto q = pc::queueOf(device(), sq, fn);
  const int outH = height_ / k, outW = width_ / k;
  if (outH == 0 || outW == 0)
    pc::raise(ErrorCode::InvalidArgument, fn,
              "a " + std::to_string(height_) + "x" + std::to_string(width_) + " cloud has no complete " +
                  std::to_string(k) + "x" + std::to_string(k) + " block");
  DeviceArray<PointXYZ> xyz = pc::allocateOrganized<PointXYZ>(*q, outH, outW, fn);
  DeviceArray<ColorRGBA> colors;
  DeviceArray<SNR> snrs;
  if (hasColors()) colors = pc::allocateOrganized<ColorRGBA>(*q, outH, outW, fn);
  if (hasSNRs()) snrs = pc::allocateOrganized<SNR>(*q, outH, outW, fn);
  const pc::SrgbTables tables = pc::srgbTables(*q);
  OrderedUse use(*q, {pc::storageOf(xyz_), pc::storageOf(colors_), pc::storageOf(snrs_), pc::storageOf(xyz),
                      pc::storageOf(colors), pc::storageOf(snrs), tables.owner.get()});
  detail::launch<kernels::da_pc_downsample>(
      *q, LaunchGeometry::grid(static_cast<std::size_t>(outW), static_cast<std::size_t>(outH)), width_, outW, outH, k,
      hasColors() ? 1 : 0, colorSpace_ == ColorSpace::srgb ? 1 : 0, hasSNRs() ? 1 : 0, pc::arg(xyz_),
      pc::argOr(colors_, xyz_), pc::argOr(snrs_, xyz_), pc::arg(xyz), pc::argOr(colors, xyz), pc::argOr(snrs, xyz),
      tables.decode, tables.encode);
  use.commit();
  PointCloud out(std::move(xyz), std::move(colors), std::move(snrs));
  out.colorSpace_ = colorSpace_;
  out.transform_ = transform_;
  return out;
}

PointCloud PointCloud::downsampled(Downsampling d) const {
  PointCloud out = downsampled(d, device().sdkStreamOrQueue());
  pc::finishDeviceQueue(device());
  return out;
}
void PointCloud::downsample(Downsampling d, StreamOrQueue sq) { *this = downsampled(d, sq); }
void PointCloud::downsample(Downsampling d) { *this = downsampled(d); }

// ------------------------------------------------------------- transform ----

PointCloud PointCloud::transformed(const Matrix4x4& m, StreamOrQueue sq) const {
  constexpr const char* fn = "PointCloud::transformed";
  pc::checkAffine(m, fn);
  const auto q = pc::queueOf(device(), sq, fn);
  PointCloud out = *this;
  out.xyz_ = pc::allocateOrganized<PointXYZ>(*q, height_, width_, fn);
  pc::enqueueTransform(*q, m, xyz_, out.xyz_);
  out.transform_ = pc::multiply(m, transform_);
  return out;
}
PointCloud PointCloud::transformed(const Matrix4x4& m) const {
  PointCloud out = transformed(m, device().sdkStreamOrQueue());
  pc::finishDeviceQueue(device());
  return out;
}
void PointCloud::transform(const Matrix4x4& m, StreamOrQueue sq) {
  constexpr const char* fn = "PointCloud::transform";
  pc::checkAffine(m, fn);
  const auto q = pc::queueOf(device(), sq, fn);
  pc::enqueueTransform(*q, m, xyz_, xyz_);
  transform_ = pc::multiply(m, transform_);
}
void PointCloud::transform(const Matrix4x4& m) {
  transform(m, device().sdkStreamOrQueue());
  pc::finishDeviceQueue(device());
}

// ------------------------------------------------------------------ mask ----

namespace {
void enqueueMask(QueueImpl& q, const DeviceMask& m, int height, int width, const DeviceArray<PointXYZ>& in,
                 const DeviceArray<PointXYZ>& out) {
  OrderedUse use(q, {m.storage, pc::storageOf(in), pc::storageOf(out)});
  detail::launch<kernels::da_pc_mask>(
      q, LaunchGeometry::grid(static_cast<std::size_t>(width), static_cast<std::size_t>(height)), width, height,
      static_cast<std::int64_t>(m.rowStep), BufferRef{m.storage, m.offset}, pc::arg(in), pc::arg(out));
  use.commit();
}
}  // namespace

void PointCloud::mask(const GpuMatND& mask, StreamOrQueue sq) {
  constexpr const char* fn = "PointCloud::mask";
  const auto q = pc::queueOf(device(), sq, fn);
  enqueueMask(*q, checkMask(mask, *this, fn), height_, width_, xyz_, xyz_);
}
void PointCloud::mask(const GpuMatND& m) {
  mask(m, device().sdkStreamOrQueue());
  pc::finishDeviceQueue(device());
}
void PointCloud::mask(const HostMat& m) {
  const GpuMatND d = uploadMask(m, *this, "PointCloud::mask");
  mask(d);
}
void PointCloud::mask(const std::uint8_t* m, int height, int width) {
  constexpr const char* fn = "PointCloud::mask";
  if (isEmpty()) pc::raise(ErrorCode::InvalidState, fn, "the cloud is empty");
  if (m == nullptr) pc::raise(ErrorCode::InvalidArgument, fn, "the mask pointer is null");
  if (height != height_ || width != width_)
    pc::raise(ErrorCode::InvalidArgument, fn,
              "the mask is " + std::to_string(height) + "x" + std::to_string(width) + " but the cloud is " +
                  std::to_string(height_) + "x" + std::to_string(width_));
  mask(HostMat({height, width}, makeType(Depth::U8, 1), const_cast<std::uint8_t*>(m)));
}
void PointCloud::mask(const std::vector<bool>& m, int height, int width) {
  constexpr const char* fn = "PointCloud::mask";
  if (static_cast<std::size_t>(height < 0 ? 0 : height) * static_cast<std::size_t>(width < 0 ? 0 : width) !=
      m.size())
    pc::raise(ErrorCode::InvalidArgument, fn,
              "the mask has " + std::to_string(m.size()) + " values, not height * width = " + std::to_string(height) +
                  " * " + std::to_string(width));
  std::vector<std::uint8_t> bytes(m.size());
  for (std::size_t i = 0; i < m.size(); ++i) bytes[i] = m[i] ? 1 : 0;
  mask(bytes.data(), height, width);
}
PointCloud PointCloud::masked(const GpuMatND& mask, StreamOrQueue sq) const {
  constexpr const char* fn = "PointCloud::masked";
  const auto q = pc::queueOf(device(), sq, fn);
  const DeviceMask m = checkMask(mask, *this, fn);
  PointCloud out = *this;
  out.xyz_ = pc::allocateOrganized<PointXYZ>(*q, height_, width_, fn);
  enqueueMask(*q, m, height_, width_, xyz_, out.xyz_);
  return out;
}
PointCloud PointCloud::masked(const GpuMatND& m) const {
  PointCloud out = masked(m, device().sdkStreamOrQueue());
  pc::finishDeviceQueue(device());
  return out;
}
PointCloud PointCloud::masked(const HostMat& m) const {
  const GpuMatND d = uploadMask(m, *this, "PointCloud::masked");
  return masked(d);
}

// ------------------------------------------------------------------- ROI ----

void PointCloud::maskByRegionOfInterest(const RegionOfInterestBox& box, StreamOrQueue sq) {
  constexpr const char* fn = "PointCloud::maskByRegionOfInterest";
  const pc::RoiParams r = pc::checkBox(box, fn);
  const auto q = pc::queueOf(device(), sq, fn);
  enqueueRoi(*q, r, xyz_, xyz_);
}
void PointCloud::maskByRegionOfInterest(const RegionOfInterestBox& box) {
  maskByRegionOfInterest(box, device().sdkStreamOrQueue());
  pc::finishDeviceQueue(device());
}
PointCloud PointCloud::maskedByRegionOfInterest(const RegionOfInterestBox& box, StreamOrQueue sq) const {
  constexpr const char* fn = "PointCloud::maskedByRegionOfInterest";
  const pc::RoiParams r = pc::checkBox(box, fn);
  const auto q = pc::queueOf(device(), sq, fn);
  PointCloud out = *this;
  out.xyz_ = pc::allocateOrganized<PointXYZ>(*q, height_, width_, fn);
  enqueueRoi(*q, r, xyz_, out.xyz_);
  return out;
}
void PointCloud::transformAndMaskByRegionOfInterest(const Matrix4x4& m, const RegionOfInterestBox& box,
                                                    StreamOrQueue sq) {
  constexpr const char* fn = "PointCloud::transformAndMaskByRegionOfInterest";
  pc::checkAffine(m, fn);
  const pc::RoiParams r = pc::checkBox(box, fn);
  const auto q = pc::queueOf(device(), sq, fn);
  enqueueTransformRoi(*q, m, r, xyz_, xyz_);
  transform_ = pc::multiply(m, transform_);
}
void PointCloud::transformAndMaskByRegionOfInterest(const Matrix4x4& m, const RegionOfInterestBox& box) {
  transformAndMaskByRegionOfInterest(m, box, device().sdkStreamOrQueue());
  pc::finishDeviceQueue(device());
}
PointCloud PointCloud::maskedByRegionOfInterest(const RegionOfInterestBox& box) const {
  PointCloud out = maskedByRegionOfInterest(box, device().sdkStreamOrQueue());
  pc::finishDeviceQueue(device());
  return out;
}

// ------------------------------------------------------------- unorganize ----

namespace {

/// Enqueues the compaction of `cloud`'s valid points (and of `normals`, empty or the
/// cloud's) into arrays at its point count (capacity), missing points past the
/// compacted count, which goes to the result's count word. No host synchronization.
pc::CompactResult enqueueValidPoints(detail::QueueImpl& q, const PointCloud& cloud, const DeviceArray<NormalXYZ>& normals,
                                     const char* fn) {
  const std::size_t n = cloud.size();
  const auto& xyz = cloud.storedXYZ();
  const auto& colors = cloud.storedColors();
  const auto& snrs = cloud.storedSNRs();
  pc::ScratchLayout layout;
  const std::size_t offsetsAt = layout.add(n + 1, sizeof(std::uint32_t), fn);
  const auto scratch = layout.allocate(q);
  const pc::CompactResult cap =
      pc::allocateAttributes(q, n, cloud.hasColors(), cloud.hasSNRs(), normals.isValid(), fn, 1);
  OrderedUse use(q, {pc::storageOf(xyz), pc::storageOf(colors), pc::storageOf(snrs), pc::storageOf(normals),
                     scratch.get(), cap.block.get()});
  q.device()->primitives().validPointOffsets(q, pc::bufferOf(xyz), n, {scratch.get(), offsetsAt});
  pc::enqueueCompaction(q, n, {scratch.get(), offsetsAt}, xyz, colors, snrs, normals, cap);
  use.commit();
  return cap;
}

/// Checks that `normals` are the cloud's: organized, of its height, width and device.
void checkGridNormals(const PointCloud& cloud, const DeviceArray<NormalXYZ>& normals, const char* fn) {
  if (cloud.isEmpty()) pc::raise(ErrorCode::InvalidState, fn, "the cloud is empty");
  if (normals.isEmpty()) pc::raise(ErrorCode::InvalidArgument, fn, "the normals are empty");
  if (!normals.isOrganized() || normals.height() != cloud.height() || normals.width() != cloud.width())
    pc::raise(ErrorCode::InvalidArgument, fn,
              "the normals are " + std::string(normals.isOrganized() ? "" : "unorganized, ") +
                  std::to_string(normals.height()) + " x " + std::to_string(normals.width()) + "; the cloud is " +
                  std::to_string(cloud.height()) + " x " + std::to_string(cloud.width()));
  if (normals.device() != cloud.device())
    pc::raise(ErrorCode::InvalidArgument, fn,
              "the normals are on " + normals.device().toString() + ", the cloud on " + cloud.device().toString());
}

UnorganizedPointCloud unorganizedOnStream(const PointCloud& cloud, const DeviceArray<NormalXYZ>& normals,
                                          const Matrix4x4& transform, ColorSpace colorSpace, StreamOrQueue sq,
                                          const char* fn) {
  const auto q = pc::queueOf(cloud.device(), sq, fn);
  const pc::CompactResult cap = enqueueValidPoints(*q, cloud, normals, fn);
  return UnorganizedPointCloud::fromCapacity(cloud.device(), cap.xyz, cap.colors, cap.snrs, transform, cap.normals,
                                             std::make_shared<detail::PointCountWord>(cap.block, cap.countAt), colorSpace);
}

UnorganizedPointCloud unorganizedBlocking(const PointCloud& cloud, const DeviceArray<NormalXYZ>& normals,
                                          const Matrix4x4& transform, ColorSpace colorSpace, const char* fn) {
  const auto q = pc::queueOf(cloud.device(), cloud.device().sdkStreamOrQueue(), fn);
  const pc::CompactResult cap = enqueueValidPoints(*q, cloud, normals, fn);
  std::uint32_t count = 0;
  pc::readBack(*q, cap.block.get(), cap.countAt, &count, sizeof(count));
  const pc::CompactResult r = pc::trimmed(*q, cap, cloud.size(), count, fn);
  UnorganizedPointCloud out =
      UnorganizedPointCloud::fromParts(cloud.device(), r.xyz, r.colors, r.snrs, transform, r.normals, colorSpace);
  pc::finishDeviceQueue(cloud.device());
  return out;
}

}  // namespace

UnorganizedPointCloud PointCloud::toUnorganizedPointCloud(StreamOrQueue sq) const {
  return unorganizedOnStream(*this, {}, transform_, colorSpace_, sq, "PointCloud::toUnorganizedPointCloud");
}

UnorganizedPointCloud PointCloud::toUnorganizedPointCloud() const {
  return unorganizedBlocking(*this, {}, transform_, colorSpace_, "PointCloud::toUnorganizedPointCloud");
}

UnorganizedPointCloud PointCloud::toUnorganizedPointCloud(const DeviceArray<NormalXYZ>& normals,
                                                          StreamOrQueue sq) const {
  constexpr const char* fn = "PointCloud::toUnorganizedPointCloud";
  checkGridNormals(*this, normals, fn);
  return unorganizedOnStream(*this, normals, transform_, colorSpace_, sq, fn);
}

UnorganizedPointCloud PointCloud::toUnorganizedPointCloud(const DeviceArray<NormalXYZ>& normals) const {
  constexpr const char* fn = "PointCloud::toUnorganizedPointCloud";
  checkGridNormals(*this, normals, fn);
  return unorganizedBlocking(*this, normals, transform_, colorSpace_, fn);
}

// ------------------------------------------------------------------ voxels ----

namespace {

constexpr const char* kVoxelDownsampled = "PointCloud::voxelDownsampled";

/// The cloud's arrays (and `normals`, empty or the cloud's) as a voxel grid reads them.
pc::VoxelSource voxelSourceOf(const PointCloud& cloud, const DeviceArray<NormalXYZ>& normals) {
  return {cloud.storedXYZ(), cloud.storedColors(), cloud.colorSpace(), cloud.storedSNRs(), normals, true};
}

void checkVoxelCall(const PointCloud& cloud, float voxelSize, int minPointsPerVoxel) {
  if (cloud.isEmpty()) pc::raise(ErrorCode::InvalidState, kVoxelDownsampled, "the cloud is empty");
  pc::checkVoxelArguments(voxelSize, minPointsPerVoxel, kVoxelDownsampled);
}

UnorganizedPointCloud voxelsOnStream(const PointCloud& cloud, const DeviceArray<NormalXYZ>& normals, float voxelSize,
                                     int minPointsPerVoxel, StreamOrQueue sq) {
  checkVoxelCall(cloud, voxelSize, minPointsPerVoxel);
  const ComputeDevice device = cloud.device();
  const auto q = pc::queueOf(device, sq, kVoxelDownsampled);
  return pc::voxelGridOnStream(device, *q, voxelSourceOf(cloud, normals), cloud.transformationMatrix(), voxelSize,
                               minPointsPerVoxel, kVoxelDownsampled);
}

UnorganizedPointCloud voxelsBlocking(const PointCloud& cloud, const DeviceArray<NormalXYZ>& normals, float voxelSize,
                                     int minPointsPerVoxel) {
  checkVoxelCall(cloud, voxelSize, minPointsPerVoxel);
  const ComputeDevice device = cloud.device();
  const auto q = pc::queueOf(device, device.sdkStreamOrQueue(), kVoxelDownsampled);
  return pc::voxelGridBlocking(device, *q, voxelSourceOf(cloud, normals), cloud.transformationMatrix(), voxelSize,
                               minPointsPerVoxel, kVoxelDownsampled);
}

}  // namespace

UnorganizedPointCloud PointCloud::voxelDownsampled(float voxelSize, int minPointsPerVoxel) const {
  return voxelsBlocking(*this, {}, voxelSize, minPointsPerVoxel);
}

UnorganizedPointCloud PointCloud::voxelDownsampled(float voxelSize, int minPointsPerVoxel, StreamOrQueue sq) const {
  return voxelsOnStream(*this, {}, voxelSize, minPointsPerVoxel, sq);
}

UnorganizedPointCloud PointCloud::voxelDownsampled(const DeviceArray<NormalXYZ>& normals, float voxelSize,
                                                   int minPointsPerVoxel) const {
  checkGridNormals(*this, normals, kVoxelDownsampled);
  return voxelsBlocking(*this, normals, voxelSize, minPointsPerVoxel);
}

UnorganizedPointCloud PointCloud::voxelDownsampled(const DeviceArray<NormalXYZ>& normals, float voxelSize,
                                                   int minPointsPerVoxel, StreamOrQueue sq) const {
  checkGridNormals(*this, normals, kVoxelDownsampled);
  return voxelsOnStream(*this, normals, voxelSize, minPointsPerVoxel, sq);
}

}  // namespace devicearray
