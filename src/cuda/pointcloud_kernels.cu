// Registers the shared point-cloud kernels (src/kernels/pointcloud*.h) for the CUDA
// backend's DeviceImpl::launch (src/pointcloud/ launches them with launch<>). The OpenCL
// backend compiles the same bodies from the embedded program source.
#include "kernels/prelude.h"
#include "kernels/pointcloud.h"
#include "kernels/pointcloud_neighbours.h"
#include "kernels/pointcloud_normals.h"
#include "kernels/pointcloud_outliers.h"
#include "kernels/pointcloud_registration.h"
#include "cuda/kernel_registry.hpp"

DA_CUDA_REGISTER(da_pc_downsample);
DA_CUDA_REGISTER(da_pc_transform);
DA_CUDA_REGISTER(da_pc_centroid);
DA_CUDA_REGISTER(da_pc_center);
DA_CUDA_REGISTER(da_pc_mask);
DA_CUDA_REGISTER(da_pc_roi);
DA_CUDA_REGISTER(da_pc_transform_roi);
DA_CUDA_REGISTER(da_pc_normals);
DA_CUDA_REGISTER(da_pc_valid_flags);
DA_CUDA_REGISTER(da_pc_compact);
DA_CUDA_REGISTER(da_vx_bounds);
DA_CUDA_REGISTER(da_vx_keys);
DA_CUDA_REGISTER(da_vx_keys_packed);
DA_CUDA_REGISTER(da_vx_tile_heads);
DA_CUDA_REGISTER(da_vx_tile_offsets);
DA_CUDA_REGISTER(da_vx_reduce_tiles);
DA_CUDA_REGISTER(da_vx_reduce_spanning);
DA_CUDA_REGISTER(da_ng_setup);
DA_CUDA_REGISTER(da_ng_keys);
DA_CUDA_REGISTER(da_ng_gather);
DA_CUDA_REGISTER(da_ng_insert);
DA_CUDA_REGISTER(da_ng_ends);
DA_CUDA_REGISTER(da_ng_knn);
DA_CUDA_REGISTER(da_nrm_window_1);
DA_CUDA_REGISTER(da_nrm_window_2);
DA_CUDA_REGISTER(da_nrm_window_3);
DA_CUDA_REGISTER(da_nrm_window_4);
DA_CUDA_REGISTER(da_nrm_window_5);
DA_CUDA_REGISTER(da_nrm_window_6);
DA_CUDA_REGISTER(da_nrm_window_7);
DA_CUDA_REGISTER(da_nrm_knn);
DA_CUDA_REGISTER(da_nrm_rotate);
DA_CUDA_REGISTER(da_sor_mean);
DA_CUDA_REGISTER(da_sor_keep);
DA_CUDA_REGISTER(da_ror_flags);
DA_CUDA_REGISTER(da_icp_terms);
DA_CUDA_REGISTER(da_icp_sum);
