/* Parameters and launch geometry of the point-to-plane ICP kernels
 * (src/kernels/pointcloud_registration.h), declared once for the kernels and for the
 * host code that launches them (kernel_params.h). */
#ifndef DEVICEARRAY_BACKEND_REGISTRATION_SIGNATURES_H
#define DEVICEARRAY_BACKEND_REGISTRATION_SIGNATURES_H

#include "backend/kernel_params.h"

/* Work items per work-group of da_icp_terms, and the most work-groups it runs (enough to
 * fill a large GPU; each adds DA_ICP_TERMS partial sums for da_icp_sum to add up). */
#define DA_ICP_GROUP 256
#define DA_ICP_MAX_GROUPS 1024
/* Sums one ICP step needs: the upper triangle of the 6x6 normal matrix J^T J (21, row
 * by row), J^T r (6), the sum of squared residuals and the number of correspondences. */
#define DA_ICP_TERMS 29

/* Each work-group sums the terms of its share of the source points, each moved by the
 * current estimate (rows m0..m2), paired with its nearest target point closer than
 * sqrt(maxDist2) that has a normal, into partials[group * DA_ICP_TERMS + term]. The
 * rotation part of J is taken about (cx, cy, cz), which keeps it well conditioned. The
 * target's grid buffers are those of neighbour_grid_signatures.h; its normals are in
 * the grid's sorted order. */
#define DA_ICP_TERMS_PARAMS(S0, B0, S, B)                                                                           \
  S0(da_i64, n) S(int, groups) S(float, maxDist2) S(da_u32, mask) S(float, m00) S(float, m01) S(float, m02)        \
  S(float, m03) S(float, m10) S(float, m11) S(float, m12) S(float, m13) S(float, m20) S(float, m21) S(float, m22)   \
  S(float, m23) S(float, cx) S(float, cy) S(float, cz) B(const float, source) B(const float, grid)                  \
  B(const float, sortedXyz) B(const float, sortedNormals) B(const da_u32, claims) B(const da_u64, slotKeys)        \
  B(const da_u32, slotRanges) B(float, partials)

/* sums[t] = the sum over `groups` work-groups of partials[group * DA_ICP_TERMS + t]. */
#define DA_ICP_SUM_PARAMS(S0, B0, S, B) S0(int, groups) B(const float, partials) B(float, sums)

#if defined(__cplusplus)
#include "backend/kernel_signature.hpp"

namespace devicearray::detail::kernels {
DA_KERNEL_SIGNATURE(da_icp_terms, DA_ICP_TERMS_PARAMS);
DA_KERNEL_SIGNATURE(da_icp_sum, DA_ICP_SUM_PARAMS);
}  // namespace devicearray::detail::kernels
#endif

#endif /* DEVICEARRAY_BACKEND_REGISTRATION_SIGNATURES_H */
