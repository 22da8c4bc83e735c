/* The one test of a valid point, shared by the point-cloud kernels (pointcloud.h), the
 * parallel primitives' reductions (CUDA: src/cuda/cuda_primitives.cu; OpenCL:
 * src/opencl/scan_sort_reduce.cl) and every backend. */
#ifndef DEVICEARRAY_KERNELS_POINT_VALIDITY_H
#define DEVICEARRAY_KERNELS_POINT_VALIDITY_H

#include "prelude.h"

/* A point is valid when x, y and z are all finite: v - v is 0 for finite v and NaN
 * for NaN or +-inf (no isfinite in the prelude, and this form is the same on every
 * compiler without fast-math). */
DA_FN int da_pc_finite(float v) { return (v - v) == 0.0f; }
DA_FN int da_pc_valid(float x, float y, float z) { return da_pc_finite(x) && da_pc_finite(y) && da_pc_finite(z); }

#endif /* DEVICEARRAY_KERNELS_POINT_VALIDITY_H */
