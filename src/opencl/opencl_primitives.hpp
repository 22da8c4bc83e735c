// The two shapes of the OpenCL device's parallel primitives (opencl_primitives.cpp;
// why two: src/opencl/scan_sort_groups.cl). A device picks one when it is created
// (makePrimitives in opencl_device.hpp); the tests make both on every device.
#pragma once

#include <memory>

#include "backend/parallel_primitives.hpp"

namespace devicearray::detail::opencl {

/// How the scan and the radix sort share out their elements: chunked runs one
/// contiguous chunk per work item (scan_sort_reduce.cl; for CPUs), workGroups a tile
/// per work-group of 256 work items (scan_sort_groups.cl; for GPUs). The reductions
/// are chunked in both.
enum class PrimitivesShape { chunked, workGroups };

/// The primitives of `device`, an OpenCL device (InvalidArgument otherwise), in
/// `shape`. workGroups falls back to chunked, on first use, where the device cannot
/// run the kernels in work-groups of 256 work items.
std::unique_ptr<ParallelPrimitives> makePrimitives(DeviceImpl& device, PrimitivesShape shape);

}  // namespace devicearray::detail::opencl
