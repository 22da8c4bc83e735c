// Registers the camera-filter kernels (src/kernels/camera_filters.h) for the CUDA
// backend's DeviceImpl::launch; the OpenCL backend compiles the same bodies from the
// embedded program source.
#include "kernels/prelude.h"
#include "kernels/camera_filters.h"
#include "cuda/kernel_registry.hpp"

DA_CUDA_REGISTER(da_cf_snr);
DA_CUDA_REGISTER(da_cf_outlier);
DA_CUDA_REGISTER(da_cf_smooth);
DA_CUDA_REGISTER(da_cf_fill);
