// PointCloud::clone and UnorganizedPointCloud::clone: a cloud's arrays copied to another
// device (DeviceArray::clone, which crosses devices and backends), its transform kept.
#include "pointcloud/pointcloud_internal.hpp"

namespace devicearray {

namespace {

void requireValid(const ComputeDevice& device, const char* fn) {
  if (!device.isValid()) detail::pc::raise(ErrorCode::InvalidArgument, fn, "invalid ComputeDevice");
}

}  // namespace

PointCloud PointCloud::clone(const ComputeDevice& device) const {
  constexpr const char* fn = "PointCloud::clone";
  if (isEmpty()) detail::pc::raise(ErrorCode::InvalidState, fn, "the cloud is empty");
  requireValid(device, fn);
  PointCloud out(xyz_.clone(device), colors_.clone(device), snrs_.clone(device));
  out.colorSpace_ = colorSpace_;
  out.transform_ = transform_;
  return out;
}

UnorganizedPointCloud UnorganizedPointCloud::clone(const ComputeDevice& device) const {
  constexpr const char* fn = "UnorganizedPointCloud::clone";
  if (!device_.isValid()) detail::pc::raise(ErrorCode::InvalidState, fn, "the cloud has never been on a device");
  requireValid(device, fn);
  return fromParts(device, storedXYZ().clone(device), storedColors().clone(device), storedSNRs().clone(device),
                   transform_, storedNormals().clone(device), colorSpace_)
      .withTransformationOf(*this);
}

}  // namespace devicearray
