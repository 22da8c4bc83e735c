// Registers the RGB-D kernels (src/kernels/rgbd.h) for the CUDA backend's
// DeviceImpl::launch; the OpenCL backend compiles the same bodies from the embedded
// program source.
#include "kernels/prelude.h"
#include "kernels/rgbd.h"
#include "cuda/kernel_registry.hpp"

DA_CUDA_REGISTER(da_rgbd_from_depth);
DA_CUDA_REGISTER(da_rgbd_clear);
DA_CUDA_REGISTER(da_rgbd_project);
DA_CUDA_REGISTER(da_rgbd_write);
