// UnorganizedPointCloud: compact lists of valid points on one device.
#include <cstring>
#include <string>

#include "pointcloud/pending_point_count.hpp"
#include "pointcloud/pending_transformation.hpp"
#include "pointcloud/pointcloud_internal.hpp"
#include "pointcloud/scratch_layout.hpp"
#include "pointcloud/voxel_grid.hpp"

namespace devicearray {

using detail::LaunchGeometry;
using detail::OrderedUse;
namespace kernels = detail::kernels;
namespace pc = detail::pc;

namespace {

template <class F>
DeviceArray<F> flattened(const DeviceArray<F>& a) {
  if (a.isEmpty() || !a.isOrganized()) return a;
  return pc::prefixOf(a, a.size());
}

template <class F>
void checkCompanion(const DeviceArray<F>& a, const DeviceArray<PointXYZ>& xyz, const char* what, const char* fn) {
  if (a.isEmpty()) return;
  if (a.size() != xyz.size())
    pc::raise(ErrorCode::InvalidArgument, fn,
              std::string(what) + " array has " + std::to_string(a.size()) + " elements but XYZ has " +
                  std::to_string(xyz.size()));
  pc::checkSameDevice(a, xyz, what, fn);
}

}  // namespace

UnorganizedPointCloud::UnorganizedPointCloud(DeviceArray<PointXYZ> xyz, DeviceArray<ColorRGBA> colors,
                                             DeviceArray<SNR> snrs, DeviceArray<NormalXYZ> normals) {
  constexpr const char* fn = "UnorganizedPointCloud::UnorganizedPointCloud";
  if (xyz.isEmpty()) pc::raise(ErrorCode::InvalidArgument, fn, "the XYZ array is empty");
  checkCompanion(colors, xyz, "the colour", fn);
  checkCompanion(snrs, xyz, "the SNR", fn);
  checkCompanion(normals, xyz, "the normal", fn);
  device_ = xyz.device();
  xyz_ = flattened(xyz);
  colors_ = flattened(colors);
  snrs_ = flattened(snrs);
  normals_ = flattened(normals);
}

UnorganizedPointCloud UnorganizedPointCloud::fromParts(ComputeDevice device, DeviceArray<PointXYZ> xyz,
                                                       DeviceArray<ColorRGBA> colors, DeviceArray<SNR> snrs,
                                                       const Matrix4x4& transform, DeviceArray<NormalXYZ> normals,
                                                       ColorSpace colorSpace) {
  UnorganizedPointCloud c;
  c.device_ = std::move(device);
  c.xyz_ = std::move(xyz);
  c.colorSpace_ = colors.isValid() ? colorSpace : ColorSpace::linear;
  c.colors_ = std::move(colors);
  c.snrs_ = std::move(snrs);
  c.normals_ = std::move(normals);
  c.transform_ = transform;
  return c;
}

UnorganizedPointCloud UnorganizedPointCloud::fromCapacity(ComputeDevice device, DeviceArray<PointXYZ> xyz,
                                                          DeviceArray<ColorRGBA> colors, DeviceArray<SNR> snrs,
                                                          const Matrix4x4& transform, DeviceArray<NormalXYZ> normals,
                                                          std::shared_ptr<detail::PointCountWord> count,
                                                          ColorSpace colorSpace) {
  UnorganizedPointCloud c = fromParts(std::move(device), std::move(xyz), std::move(colors), std::move(snrs),
                                      transform, std::move(normals), colorSpace);
  c.pending_ = std::make_shared<detail::PendingPointCount>(std::move(count));
  return c;
}

const detail::PointArrays& UnorganizedPointCloud::trimmedArrays() const {
  return pending_->trimmed(detail::PointArrays{xyz_, colors_, snrs_, normals_});
}

void UnorganizedPointCloud::settleSize() {
  if (!pending_) return;
  const detail::PointArrays points = trimmedArrays();
  xyz_ = points.xyz;
  colors_ = points.colors;
  snrs_ = points.snrs;
  normals_ = points.normals;
  pending_.reset();
}

const Matrix4x4& UnorganizedPointCloud::transformationMatrix() const {
  return pendingTransform_ ? pendingTransform_->matrix() : transform_;
}

void UnorganizedPointCloud::accumulate(const Matrix4x4& m, DeviceArray<PointXYZ> centroid) {
  if (pendingTransform_ && pendingTransform_->isResolved()) {
    transform_ = pendingTransform_->matrix();
    pendingTransform_.reset();
  }
  if (centroid.isValid())
    pendingTransform_ = pendingTransform_ ? pendingTransform_->followedByCentring(std::move(centroid))
                                          : std::make_shared<const detail::PendingTransformation>(transform_,
                                                                                                  std::move(centroid));
  else if (pendingTransform_)
    pendingTransform_ = pendingTransform_->followedBy(m);
  else
    transform_ = pc::multiply(m, transform_);
}

UnorganizedPointCloud UnorganizedPointCloud::withTransformationOf(const UnorganizedPointCloud& source) && {
  transform_ = source.transform_;
  pendingTransform_ = source.pendingTransform_;
  return std::move(*this);
}

bool UnorganizedPointCloud::isSizeKnown() const noexcept { return !pending_ || pending_->isCountRead(); }

UnorganizedPointCloud UnorganizedPointCloud::reread() const {
  UnorganizedPointCloud copy = *this;
  if (pending_) copy.pending_ = pending_->unread();
  if (pendingTransform_) copy.pendingTransform_ = pendingTransform_->unread();
  return copy;
}
std::size_t UnorganizedPointCloud::size() const { return storedXYZ().size(); }
bool UnorganizedPointCloud::isEmpty() const { return storedXYZ().isEmpty(); }
const DeviceArray<PointXYZ>& UnorganizedPointCloud::storedXYZ() const { return pending_ ? trimmedArrays().xyz : xyz_; }
const DeviceArray<ColorRGBA>& UnorganizedPointCloud::storedColors() const {
  return pending_ ? trimmedArrays().colors : colors_;
}
const DeviceArray<SNR>& UnorganizedPointCloud::storedSNRs() const { return pending_ ? trimmedArrays().snrs : snrs_; }
const DeviceArray<NormalXYZ>& UnorganizedPointCloud::storedNormals() const {
  return pending_ ? trimmedArrays().normals : normals_;
}

UnorganizedPointCloud UnorganizedPointCloud::fromHost(const HostPointCloud& cloud, const ComputeDevice& device) {
  constexpr const char* fn = "UnorganizedPointCloud::fromHost";
  cloud.validate();
  if (!device.isValid()) pc::raise(ErrorCode::InvalidArgument, fn, "the device handle is invalid");
  std::vector<PointXYZ> xyz;
  std::vector<ColorRGBA_SRGB> colors;
  std::vector<SNR> snrs;
  std::vector<NormalXYZ> normals;
  for (std::size_t i = 0; i < cloud.size(); ++i) {
    if (!cloud.isValid(i)) continue;
    if (cloud.hasNormals())
      normals.push_back(NormalXYZ{cloud.normals[3 * i], cloud.normals[3 * i + 1], cloud.normals[3 * i + 2]});
    xyz.push_back(PointXYZ{cloud.xyz[3 * i], cloud.xyz[3 * i + 1], cloud.xyz[3 * i + 2]});
    if (cloud.hasColors())
      colors.push_back(ColorRGBA_SRGB{cloud.rgba[4 * i], cloud.rgba[4 * i + 1], cloud.rgba[4 * i + 2],
                                      cloud.rgba[4 * i + 3]});
    if (cloud.hasSNR()) snrs.push_back(SNR{cloud.snr[i]});
  }
  if (xyz.empty()) return fromParts(device, {}, {}, {}, identityMatrix4x4());
  DeviceArray<PointXYZ> dxyz = DeviceArray<PointXYZ>::fromHost(xyz.data(), xyz.size(), device);
  DeviceArray<ColorRGBA_SRGB> dcolors;
  if (!colors.empty()) dcolors = DeviceArray<ColorRGBA_SRGB>::fromHost(colors.data(), colors.size(), device);
  DeviceArray<SNR> dsnr;
  if (!snrs.empty()) dsnr = DeviceArray<SNR>::fromHost(snrs.data(), snrs.size(), device);
  DeviceArray<NormalXYZ> dnormals;
  if (!normals.empty()) dnormals = DeviceArray<NormalXYZ>::fromHost(normals.data(), normals.size(), device);
  return UnorganizedPointCloud(std::move(dxyz), std::move(dcolors), std::move(dsnr), std::move(dnormals));
}

HostPointCloud UnorganizedPointCloud::toHost() const {
  HostPointCloud out;
  if (isEmpty()) return out;
  pc::downloadAttributes(device_, storedXYZ(), storedColors(), colorSpace_, storedSNRs(), out);
  if (hasNormals()) {
    static_assert(sizeof(NormalXYZ) == 3 * sizeof(float));
    const std::vector<NormalXYZ> normals = storedNormals().toHost();
    out.normals.resize(3 * normals.size());
    std::memcpy(out.normals.data(), normals.data(), out.normals.size() * sizeof(float));
  }
  return out;
}

ComputeDevice UnorganizedPointCloud::device() const {
  if (!device_.isValid())
    pc::raise(ErrorCode::InvalidState, "UnorganizedPointCloud::device", "the cloud has never been on a device");
  return device_;
}

const DeviceArray<ColorRGBA>& UnorganizedPointCloud::requireColors(const char* fn) const {
  if (!hasColors()) pc::raise(ErrorCode::InvalidState, fn, "the cloud has no colours");
  return storedColors();
}

DeviceArray<PointXYZ> UnorganizedPointCloud::devicePointsXYZ(StreamOrQueue sq) const {
  (void)pc::queueOf(device(), sq, "UnorganizedPointCloud::devicePointsXYZ");
  return isEmpty() ? DeviceArray<PointXYZ>() : convert<PointXYZ>(storedXYZ(), sq);
}
DeviceArray<PointXYZW> UnorganizedPointCloud::devicePointsXYZW(StreamOrQueue sq) const {
  (void)pc::queueOf(device(), sq, "UnorganizedPointCloud::devicePointsXYZW");
  return isEmpty() ? DeviceArray<PointXYZW>() : convert<PointXYZW>(storedXYZ(), sq);
}
DeviceArray<SNR> UnorganizedPointCloud::deviceSNRs(StreamOrQueue sq) const {
  constexpr const char* fn = "UnorganizedPointCloud::deviceSNRs";
  (void)pc::queueOf(device(), sq, fn);
  if (isEmpty()) return {};
  if (!hasSNRs()) pc::raise(ErrorCode::InvalidState, fn, "the cloud has no SNR values");
  return convert<SNR>(storedSNRs(), sq);
}
DeviceArray<NormalXYZ> UnorganizedPointCloud::deviceNormalsXYZ(StreamOrQueue sq) const {
  constexpr const char* fn = "UnorganizedPointCloud::deviceNormalsXYZ";
  (void)pc::queueOf(device(), sq, fn);
  if (isEmpty()) return {};
  if (!hasNormals()) pc::raise(ErrorCode::InvalidState, fn, "the cloud has no normals (see estimateNormals)");
  return convert<NormalXYZ>(storedNormals(), sq);
}

// ----------------------------------------------------------------- voxels ----

UnorganizedPointCloud UnorganizedPointCloud::voxelDownsampled(float voxelSize, int minPointsPerVoxel,
                                                              StreamOrQueue sq) const {
  constexpr const char* fn = "UnorganizedPointCloud::voxelDownsampled";
  pc::checkVoxelArguments(voxelSize, minPointsPerVoxel, fn);
  const auto q = pc::queueOf(device(), sq, fn);
  // xyz_ is the capacity while the count is still on the device: its missing points
  // are ignored, so no host read of this cloud's count is needed.
  if (xyz_.isEmpty()) return fromParts(device_, {}, {}, {}, transform_, {}, colorSpace_).withTransformationOf(*this);
  return pc::voxelGridOnStream(device_, *q, {xyz_, colors_, colorSpace_, snrs_, normals_}, transform_, voxelSize,
                               minPointsPerVoxel, fn)
      .withTransformationOf(*this);
}

UnorganizedPointCloud UnorganizedPointCloud::voxelDownsampled(float voxelSize, int minPointsPerVoxel) const {
  constexpr const char* fn = "UnorganizedPointCloud::voxelDownsampled";
  pc::checkVoxelArguments(voxelSize, minPointsPerVoxel, fn);
  const auto q = pc::queueOf(device(), device().sdkStreamOrQueue(), fn);  // a cloud on no device throws here
  if (isEmpty()) return fromParts(device_, {}, {}, {}, transform_).withTransformationOf(*this);
  return pc::voxelGridBlocking(device_, *q, {storedXYZ(), storedColors(), colorSpace_, storedSNRs(), storedNormals()},
                               transform_, voxelSize, minPointsPerVoxel, fn)
      .withTransformationOf(*this);
}

// -------------------------------------------------------------- transform ----

UnorganizedPointCloud UnorganizedPointCloud::transformed(const Matrix4x4& m, StreamOrQueue sq) const {
  constexpr const char* fn = "UnorganizedPointCloud::transformed";
  pc::checkAffine(m, fn);
  const auto q = pc::queueOf(device(), sq, fn);
  UnorganizedPointCloud out = *this;
  out.accumulate(m);
  // xyz_ may be a capacity whose count is on the device: the result shares that count
  // and its missing points stay missing, so no host read is needed.
  if (xyz_.isEmpty()) return out;
  out.xyz_ = pc::allocateUnorganized<PointXYZ>(*q, xyz_.size(), fn);
  pc::enqueueTransform(*q, m, xyz_, out.xyz_);
  if (hasNormals()) {
    out.normals_ = pc::allocateUnorganized<NormalXYZ>(*q, xyz_.size(), fn);
    pc::enqueueRotateNormals(*q, m, normals_, out.normals_);
  }
  if (pending_) out.pending_ = pending_->forOtherArrays();  // new arrays, the same points
  return out;
}
UnorganizedPointCloud UnorganizedPointCloud::transformed(const Matrix4x4& m) const {
  UnorganizedPointCloud out = transformed(m, device().sdkStreamOrQueue());
  pc::finishDeviceQueue(device());
  return out;
}
void UnorganizedPointCloud::transform(const Matrix4x4& m, StreamOrQueue sq) {
  constexpr const char* fn = "UnorganizedPointCloud::transform";
  pc::checkAffine(m, fn);
  const auto q = pc::queueOf(device(), sq, fn);
  if (!xyz_.isEmpty()) pc::enqueueTransform(*q, m, xyz_, xyz_);  // the capacity, as in transformed()
  if (hasNormals()) pc::enqueueRotateNormals(*q, m, normals_, normals_);
  accumulate(m);
}
void UnorganizedPointCloud::transform(const Matrix4x4& m) {
  transform(m, device().sdkStreamOrQueue());
  pc::finishDeviceQueue(device());
}

// ----------------------------------------------------------------- extend ----

void UnorganizedPointCloud::extend(const UnorganizedPointCloud& other, StreamOrQueue sq) {
  constexpr const char* fn = "UnorganizedPointCloud::extend";
  if (other.isEmpty()) return;
  if (!device_.isValid()) {
    *this = UnorganizedPointCloud(other).withTransformationOf(*this);
    return;
  }
  if (other.device() != device_)
    pc::raise(ErrorCode::InvalidArgument, fn,
              "the other cloud lives on " + other.device().toString() + " but this one on " + device_.toString());
  const auto q = pc::queueOf(device_, sq, fn);
  settleSize();  // the result gets new arrays of the exact size
  if (isEmpty()) {
    *this = UnorganizedPointCloud(other).withTransformationOf(*this);
    return;
  }
  if (hasColors() != other.hasColors() || hasSNRs() != other.hasSNRs() || hasNormals() != other.hasNormals())
    pc::raise(ErrorCode::InvalidArgument, fn,
              std::string("the clouds have different attributes (colours: ") + (hasColors() ? "yes" : "no") + "/" +
                  (other.hasColors() ? "yes" : "no") + ", SNR: " + (hasSNRs() ? "yes" : "no") + "/" +
                  (other.hasSNRs() ? "yes" : "no") + ", normals: " + (hasNormals() ? "yes" : "no") + "/" +
                  (other.hasNormals() ? "yes" : "no") + ")");
  const std::size_t a = size(), b = other.size();
  pc::checkPointCount(a + b, fn);
  // Colours keep this cloud's space; the other's are converted when theirs differs.
  const DeviceArray<ColorRGBA> otherColors = pc::inColorSpace(other.colors_, other.colorSpace_, colorSpace_, sq);
  UnorganizedPointCloud out = *this;
  out.xyz_ = pc::allocateUnorganized<PointXYZ>(*q, a + b, fn);
  if (hasColors()) out.colors_ = pc::allocateUnorganized<ColorRGBA>(*q, a + b, fn);
  if (hasSNRs()) out.snrs_ = pc::allocateUnorganized<SNR>(*q, a + b, fn);
  if (hasNormals()) out.normals_ = pc::allocateUnorganized<NormalXYZ>(*q, a + b, fn);
  OrderedUse use(*q, {pc::storageOf(xyz_), pc::storageOf(colors_), pc::storageOf(snrs_), pc::storageOf(normals_),
                      pc::storageOf(other.xyz_), pc::storageOf(otherColors), pc::storageOf(other.snrs_),
                      pc::storageOf(other.normals_), pc::storageOf(out.xyz_), pc::storageOf(out.colors_),
                      pc::storageOf(out.snrs_), pc::storageOf(out.normals_)});
  auto append = [&](const auto& dst, const auto& first, const auto& second, std::size_t elem) {
    if (dst.isEmpty()) return;
    pc::copyBytes(*q, pc::storageOf(dst), 0, pc::storageOf(first), pc::bufferOf(first).offset, a * elem);
    pc::copyBytes(*q, pc::storageOf(dst), a * elem, pc::storageOf(second), pc::bufferOf(second).offset, b * elem);
  };
  append(out.xyz_, xyz_, other.xyz_, sizeof(PointXYZ));
  append(out.colors_, colors_, otherColors, sizeof(ColorRGBA));
  append(out.snrs_, snrs_, other.snrs_, sizeof(SNR));
  append(out.normals_, normals_, other.normals_, sizeof(NormalXYZ));
  use.commit();
  *this = std::move(out);
}
void UnorganizedPointCloud::extend(const UnorganizedPointCloud& other) {
  if (!device_.isValid() && !other.device_.isValid()) return;
  const ComputeDevice d = device_.isValid() ? device_ : other.device_;
  extend(other, d.sdkStreamOrQueue());
  pc::finishDeviceQueue(d);
}

// ----------------------------------------------------------------- colour ----

void UnorganizedPointCloud::paintUniformColor(ColorRGBA color, StreamOrQueue sq) {
  constexpr const char* fn = "UnorganizedPointCloud::paintUniformColor";
  const auto q = pc::queueOf(device(), sq, fn);
  settleSize();  // the new colours have the exact size
  if (isEmpty()) return;
  DeviceArray<ColorRGBA> painted = pc::allocateUnorganized<ColorRGBA>(*q, size(), fn);
  OrderedUse use(*q, {pc::storageOf(painted)});
  static_assert(sizeof(ColorRGBA) == sizeof(std::uint32_t), "one colour is one 32-bit fill word");
  std::uint32_t word = 0;
  std::memcpy(&word, &color, sizeof word);
  pc::fillU32(*q, pc::bufferOf(painted).allocation, pc::bufferOf(painted).offset, size(), word);
  use.commit();
  colors_ = std::move(painted);
  colorSpace_ = ColorSpace::linear;  // the colour's own space
}
void UnorganizedPointCloud::paintUniformColor(ColorRGBA color) {
  paintUniformColor(color, device().sdkStreamOrQueue());
  pc::finishDeviceQueue(device());
}

// --------------------------------------------------------------- centroid ----

namespace {

/// Enqueues the mean of the valid points among all of `xyz`'s elements (NaN when there
/// is none) into a new one-point array; the reduction's sums share its allocation.
DeviceArray<PointXYZ> enqueueCentroid(detail::QueueImpl& q, const DeviceArray<PointXYZ>& xyz, const char* fn) {
  pc::ScratchLayout layout;
  const std::size_t sumsAt = layout.add(4, sizeof(double), fn);
  const std::size_t centroidAt = layout.add(1, sizeof(PointXYZ), fn);
  const auto block = layout.allocate(q);
  DeviceArray<PointXYZ> centroid = pc::wrapStorage<PointXYZ>(block, centroidAt, false, 1, 1);
  OrderedUse use(q, {pc::storageOf(xyz), block.get()});
  if (xyz.isEmpty()) {
    // No point: the sums of none (4 binary64 zeros).
    pc::fillU32(q, block.get(), sumsAt, 4 * sizeof(double) / sizeof(std::uint32_t), 0u);
  } else {
    q.device()->primitives().sumValidXYZ(q, pc::bufferOf(xyz), xyz.size(), {block.get(), sumsAt});
  }
  detail::launch<kernels::da_pc_centroid>(q, LaunchGeometry::items(3), pc::arg(block, sumsAt), pc::arg(centroid));
  use.commit();
  return centroid;
}

}  // namespace

DeviceArray<PointXYZ> UnorganizedPointCloud::deviceCentroid(StreamOrQueue sq) const {
  constexpr const char* fn = "UnorganizedPointCloud::deviceCentroid";
  const auto q = pc::queueOf(device(), sq, fn);
  // xyz_ is the capacity while the count is still on the device: its missing points are
  // ignored, so no host read of the count is needed.
  return enqueueCentroid(*q, xyz_, fn);
}

std::array<float, 3> UnorganizedPointCloud::centroid(StreamOrQueue sq) const {
  constexpr const char* fn = "UnorganizedPointCloud::centroid";
  const auto q = pc::queueOf(device(), sq, fn);
  if (isEmpty()) pc::raise(ErrorCode::InvalidState, fn, "the cloud has no points");
  return detail::readCentroid(*q, enqueueCentroid(*q, storedXYZ(), fn));
}
std::array<float, 3> UnorganizedPointCloud::centroid() const {
  return centroid(device().sdkStreamOrQueue());
}

void UnorganizedPointCloud::center(StreamOrQueue sq) {
  constexpr const char* fn = "UnorganizedPointCloud::center";
  const auto q = pc::queueOf(device(), sq, fn);
  // Without arrays the cloud has no points, which the host knows without a read.
  if (xyz_.isEmpty()) pc::raise(ErrorCode::InvalidState, "UnorganizedPointCloud::centroid", "the cloud has no points");
  DeviceArray<PointXYZ> c = enqueueCentroid(*q, xyz_, fn);
  {
    OrderedUse use(*q, {pc::storageOf(xyz_), pc::storageOf(c)});
    detail::launch<kernels::da_pc_center>(*q, LaunchGeometry::items(xyz_.size()), pc::i64(xyz_.size()), pc::arg(c),
                                          pc::arg(xyz_));
    use.commit();
  }
  accumulate(identityMatrix4x4(), std::move(c));
}
void UnorganizedPointCloud::center() {
  const std::array<float, 3> c = centroid();
  Matrix4x4 t = identityMatrix4x4();
  t[3] = -c[0];
  t[7] = -c[1];
  t[11] = -c[2];
  transform(t);
}

}  // namespace devicearray
