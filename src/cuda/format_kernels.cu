// CUDA registration of the format-conversion kernels shared with OpenCL
// (src/kernels/convert_formats.h); launched by src/core/device_array.cpp with
// launch<> (backend/kernel_signature.hpp).
#include "kernels/prelude.h"
#include "kernels/convert_formats.h"
#include "cuda/kernel_registry.hpp"

DA_CUDA_REGISTER(da_convert_points);
DA_CUDA_REGISTER(da_convert_points_z);
DA_CUDA_REGISTER(da_convert_color_u8_u8);
DA_CUDA_REGISTER(da_convert_color_u8_u8_items);
DA_CUDA_REGISTER(da_convert_color_u8_f32);
DA_CUDA_REGISTER(da_convert_color_f32_u8);
