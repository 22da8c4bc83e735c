// The work-groups of a launch that leaves their size to the device (KernelLaunch's
// localSize 0).
//
// Without a local size, an OpenCL 1.2 implementation must pick one that divides the
// global size in every dimension. For a prime count, such as the n + 1 flags of a
// compaction's scan, that is 1: one work item per group, which on a GPU runs a 32nd of
// a warp's lanes and costs a block slot per item. So a launch whose global size is not
// a multiple of the usual group gets that group and a global size rounded up to it;
// every shared kernel bounds its work items by its own counts (CUDA rounds its grids up
// the same way), so the extra items do nothing.
#pragma once

#include <array>
#include <cstddef>

namespace devicearray::detail::opencl {

struct FittedWorkGroups {
  std::array<std::size_t, 3> global{1, 1, 1};
  std::array<std::size_t, 3> local{1, 1, 1};
  bool explicitLocal = false;  ///< false: pass no local size, leave it to the device
};

/// The index space to enqueue for `global` (of `workDims` dimensions) when the launch
/// names no work-group size. Where every dimension is a multiple of the usual group
/// (128 items in 1-D; 32 x 4 in 2-D and 3-D, rows of an image coalesced as on CUDA),
/// the device keeps its own choice. Otherwise the launch takes that group, halved
/// (rows first) until it fits `maxGroupItems` (the kernel's CL_KERNEL_WORK_GROUP_SIZE),
/// with each dimension of the global size rounded up to a multiple of it.
FittedWorkGroups fitWorkGroups(int workDims, const std::array<std::size_t, 3>& global, std::size_t maxGroupItems);

}  // namespace devicearray::detail::opencl
