/* Parameters of the plane-fit normal kernels (src/kernels/pointcloud_normals.h),
 * declared once for the kernels and for the host code that launches them
 * (kernel_params.h). Normals are oriented towards the viewpoint (camX, camY, camZ). */
#ifndef DEVICEARRAY_BACKEND_NORMAL_SIGNATURES_H
#define DEVICEARRAY_BACKEND_NORMAL_SIGNATURES_H

#include "backend/kernel_params.h"

/* Organized cloud: plane fit over the valid points of the (2 radius + 1)^2 window around
 * each point, one kernel da_nrm_window_<radius> per radius in [1, DA_NRM_MAX_RADIUS]. One
 * work-group of DA_NRM_TILE_W x DA_NRM_TILE_H work items per tile of the grid, row-major
 * over the tiles.
 *
 * With `restricted`, the points that a region of interest applied later surely removes
 * get NaN without a fit: keepU, keepV and keepN are the box's slab coordinates as affine
 * functions of the point (c0 x + c1 y + c2 z + c3, the later transform folded in), with
 * the bounds [0, keepLenU], [0, keepLenV] and [keepLo, keepHi]; keepTol0..3 bound the
 * rounding of the slab coordinates as tol0 |x| + tol1 |y| + tol2 |z| + tol3. */
#define DA_NRM_TILE_W 32
#define DA_NRM_TILE_H 8
#define DA_NRM_WINDOW_GROUP (DA_NRM_TILE_W * DA_NRM_TILE_H)
#define DA_NRM_MAX_RADIUS 7
#define DA_NRM_WINDOW_PARAMS(S0, B0, S, B)                                                                          \
  S0(int, width) S(int, height) S(float, camX) S(float, camY) S(float, camZ) S(int, restricted)                  \
  S(float, keepU0) S(float, keepU1) S(float, keepU2) S(float, keepU3) S(float, keepV0) S(float, keepV1)            \
  S(float, keepV2) S(float, keepV3) S(float, keepN0) S(float, keepN1) S(float, keepN2) S(float, keepN3)            \
  S(float, keepLenU) S(float, keepLenV) S(float, keepLo) S(float, keepHi) S(float, keepTol0) S(float, keepTol1)    \
  S(float, keepTol2) S(float, keepTol3) B(const float, xyz) B(float, normals)

/* Most neighbours of an unorganized cloud's plane fit, and the bins of the squared
 * distances through which a work item finds its k-th nearest neighbour. */
#define DA_NRM_MAX_NEIGHBOURS 256
#define DA_NRM_DISTANCE_BINS 64

/* Unorganized cloud: plane fit over each point's k nearest neighbours closer than one
 * cell edge in a neighbour grid of the same points (see neighbour_grid_signatures.h for
 * the grid buffers); one work item per sorted point, written at its original index. */
#define DA_NRM_KNN_PARAMS(S0, B0, S, B)                                                                             \
  S0(da_i64, n) S(int, k) S(da_u32, mask) S(float, camX) S(float, camY) S(float, camZ)                             \
  B(const float, grid) B(const float, sortedXyz) B(const da_u32, order) B(const da_u32, claims)                    \
  B(const da_u64, slotKeys) B(const da_u32, slotRanges) B(float, normals)

/* n' = R n for the rows r0..r2 of a rotation (NaN normals stay NaN); in place allowed. */
#define DA_NRM_ROTATE_PARAMS(S0, B0, S, B)                                                                          \
  S0(da_i64, n) S(float, r00) S(float, r01) S(float, r02) S(float, r10) S(float, r11) S(float, r12) S(float, r20)   \
  S(float, r21) S(float, r22) B(const float, normalsIn) B(float, normalsOut)

#if defined(__cplusplus)
#include "backend/kernel_signature.hpp"

namespace devicearray::detail::kernels {
DA_KERNEL_SIGNATURE(da_nrm_window_1, DA_NRM_WINDOW_PARAMS);
DA_KERNEL_SIGNATURE(da_nrm_window_2, DA_NRM_WINDOW_PARAMS);
DA_KERNEL_SIGNATURE(da_nrm_window_3, DA_NRM_WINDOW_PARAMS);
DA_KERNEL_SIGNATURE(da_nrm_window_4, DA_NRM_WINDOW_PARAMS);
DA_KERNEL_SIGNATURE(da_nrm_window_5, DA_NRM_WINDOW_PARAMS);
DA_KERNEL_SIGNATURE(da_nrm_window_6, DA_NRM_WINDOW_PARAMS);
DA_KERNEL_SIGNATURE(da_nrm_window_7, DA_NRM_WINDOW_PARAMS);
DA_KERNEL_SIGNATURE(da_nrm_knn, DA_NRM_KNN_PARAMS);
DA_KERNEL_SIGNATURE(da_nrm_rotate, DA_NRM_ROTATE_PARAMS);
}  // namespace devicearray::detail::kernels
#endif

#endif /* DEVICEARRAY_BACKEND_NORMAL_SIGNATURES_H */
