// The voxel grid of a cloud's valid points on the device, shared by
// UnorganizedPointCloud::voxelDownsampled and PointCloud::voxelDownsampled: a key per
// point (its voxel's rank in the grid over the points' extent), a stable sort by key,
// then each voxel's weighted means. Missing points may sit anywhere in the input (a
// camera grid, or a capacity whose count is still on the device): they are ignored.
#pragma once

#include "pointcloud/pointcloud_internal.hpp"

namespace devicearray::detail::pc {

/// The arrays a voxel grid reads, as stored (colour codes in `colorSpace`); the
/// optional ones are empty when the cloud has none. Organized arrays are read as their
/// rows one after the other.
struct VoxelSource {
  const DeviceArray<PointXYZ>& xyz;
  const DeviceArray<ColorRGBA>& colors;
  ColorSpace colorSpace;
  const DeviceArray<SNR>& snrs;
  const DeviceArray<NormalXYZ>& normals;
  /// Whether the grid packs the valid points' keys before sorting them (a scan more):
  /// for an organized frame, whose missing points lie anywhere. Without it, the sort
  /// and the reduction stop after the last valid point, which suits a cloud whose
  /// valid points come first (a compaction's capacity, or no missing point at all).
  bool packValidKeys = false;
};

/// Throws InvalidArgument naming `fn` for voxelSize not finite and > 0 or
/// minPointsPerVoxel < 1.
void checkVoxelArguments(float voxelSize, int minPointsPerVoxel, const char* fn);

/// Enqueues the voxel grid of `source` (not empty) on `q` without blocking: the
/// result's arrays are at the source's capacity and its count stays on the device; the
/// call that reads it throws the too-small error of a grid too fine.
UnorganizedPointCloud voxelGridOnStream(const ComputeDevice& device, QueueImpl& q, const VoxelSource& source,
                                        const Matrix4x4& transform, float voxelSize, int minPointsPerVoxel,
                                        const char* fn);

/// The same, blocking (`q`: the device's SDK queue): it reads the grid's key width
/// first, so the sort has exactly the passes the grid needs and a grid too fine throws
/// before anything is sorted; the result's size is known.
UnorganizedPointCloud voxelGridBlocking(const ComputeDevice& device, QueueImpl& q, const VoxelSource& source,
                                        const Matrix4x4& transform, float voxelSize, int minPointsPerVoxel,
                                        const char* fn);

}  // namespace devicearray::detail::pc
