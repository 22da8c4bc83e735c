/* Point-to-plane ICP on the device, written once for CUDA (registered in
 * src/cuda/pointcloud_kernels.cu) and OpenCL: each source point p (moved by the current
 * estimate) is paired with its nearest target point q, normal n, through the target's
 * neighbour grid (pointcloud_neighbours.h). A small motion (rotation w about c,
 * translation t) changes the residual r = (p - q) . n by w . ((p - c) x n) + t . n, so
 * the step minimizing the sum of squared residuals solves (J^T J) x = -J^T r with rows
 * J = ((p - c) x n, n). The device sums J^T J and J^T r; the host solves the 6x6 system. */
#ifndef DEVICEARRAY_KERNELS_POINTCLOUD_REGISTRATION_H
#define DEVICEARRAY_KERNELS_POINTCLOUD_REGISTRATION_H

#include "prelude.h"
#include "backend/registration_signatures.h"
#include "point_validity.h"
#include "pointcloud_neighbours.h"

DA_KERNEL_GROUP(da_icp_terms, DA_ICP_GROUP, 2)(DA_PARAMS(DA_ICP_TERMS_PARAMS)) {
  DA_BUFFERS_INIT(DA_ICP_TERMS_PARAMS);
  DA_LOCAL_ARRAY(float, lane, DA_ICP_GROUP);
  float acc[DA_ICP_TERMS];
  for (int t = 0; t < DA_ICP_TERMS; ++t) acc[t] = 0.0f;
  const long stride = (long)groups * DA_ICP_GROUP;
  for (long i = DA_GROUP_ID() * DA_ICP_GROUP + DA_LOCAL_ID(); i < n; i += stride) {
    const float sx = source[3 * i], sy = source[3 * i + 1], sz = source[3 * i + 2];
    if (!da_pc_valid(sx, sy, sz)) continue;
    const float px = m00 * sx + m01 * sy + m02 * sz + m03;
    const float py = m10 * sx + m11 * sy + m12 * sz + m13;
    const float pz = m20 * sx + m21 * sy + m22 * sz + m23;
    float d2 = 0.0f;
    const da_u32 j =
        da_ng_nearest(px, py, pz, maxDist2, mask, grid, sortedXyz, claims, slotKeys, slotRanges, &d2);
    if (j == DA_NG_NO_POINT) continue;
    const float nx = sortedNormals[3 * j], ny = sortedNormals[3 * j + 1], nz = sortedNormals[3 * j + 2];
    if (!da_pc_valid(nx, ny, nz)) continue;
    const float r = (px - sortedXyz[3 * j]) * nx + (py - sortedXyz[3 * j + 1]) * ny + (pz - sortedXyz[3 * j + 2]) * nz;
    const float dx = px - cx, dy = py - cy, dz = pz - cz;
    float jr[6];
    jr[0] = dy * nz - dz * ny; /* (p - c) x n */
    jr[1] = dz * nx - dx * nz;
    jr[2] = dx * ny - dy * nx;
    jr[3] = nx;
    jr[4] = ny;
    jr[5] = nz;
    int t = 0;
    DA_UNROLL
    for (int u = 0; u < 6; ++u) {
      DA_UNROLL
      for (int v = u; v < 6; ++v) acc[t++] += jr[u] * jr[v];
    }
    DA_UNROLL
    for (int u = 0; u < 6; ++u) acc[21 + u] += jr[u] * r;
    acc[27] += r * r;
    acc[28] += 1.0f;
  }
  /* Tree reduction of each term through local memory; the group's sum goes to partials. */
  for (int t = 0; t < DA_ICP_TERMS; ++t) {
    lane[DA_LOCAL_ID()] = acc[t];
    DA_BARRIER();
    for (int s = DA_ICP_GROUP / 2; s > 0; s >>= 1) {
      if (DA_LOCAL_ID() < s) lane[DA_LOCAL_ID()] += lane[DA_LOCAL_ID() + s];
      DA_BARRIER();
    }
    if (DA_LOCAL_ID() == 0) partials[DA_GROUP_ID() * DA_ICP_TERMS + t] = lane[0];
    DA_BARRIER();
  }
}

DA_KERNEL(da_icp_sum)(DA_PARAMS(DA_ICP_SUM_PARAMS)) {
  DA_BUFFERS_INIT(DA_ICP_SUM_PARAMS);
  const long t = DA_ID(0);
  if (t >= DA_ICP_TERMS) return;
  float s = 0.0f;
  for (int g = 0; g < groups; ++g) s += partials[g * DA_ICP_TERMS + t];
  sums[t] = s;
}

#endif /* DEVICEARRAY_KERNELS_POINTCLOUD_REGISTRATION_H */
