/* RGB-D: a point cloud from a depth image, and the z-buffered projection of a cloud into
 * depth and colour images (src/pointcloud/rgbd.cpp), written once for CUDA (registered
 * in src/cuda/rgbd_kernels.cu) and OpenCL.
 *
 * Projection in three passes over a z-buffer of float bits (positive floats order like
 * their bits, so an unsigned atomic min keeps the nearest depth): every point lowers its
 * pixel's depth, then the points at exactly that depth lower the pixel's winner index
 * (ties go to the lowest point index, whatever order the points run in), then each
 * pixel writes its winner's depth and colour. */
#ifndef DEVICEARRAY_KERNELS_RGBD_H
#define DEVICEARRAY_KERNELS_RGBD_H

#include "prelude.h"
#include "backend/rgbd_signatures.h"
#include "point_validity.h"

#if defined(__OPENCL_VERSION__)
#define da_rgbd_atomic_lower(p, v) atomic_min((volatile DA_GLOBAL da_u32*)(p), (v))
#else
#define da_rgbd_atomic_lower(p, v) atomicMin((p), (v))
#endif

DA_KERNEL(da_rgbd_from_depth)(DA_PARAMS(DA_RGBD_FROM_DEPTH_PARAMS)) {
  DA_BUFFERS_INIT(DA_RGBD_FROM_DEPTH_PARAMS);
  const long c = DA_ID(0);
  const long r = DA_ID(1);
  if (c >= width || r >= height) return;
  const long i = r * (long)width + c;
  DA_GLOBAL const da_u8* row = depth + r * depthStep;
  const float value = isFloat ? ((DA_GLOBAL const float*)row)[c] : (float)((DA_GLOBAL const da_u16*)row)[c];
  const float z = value * scale;
  /* 0 and non-finite depths are "no measurement". */
  if (!(z > 0.0f) || !da_pc_finite(z)) {
    xyz[3 * i] = DA_NAN;
    xyz[3 * i + 1] = DA_NAN;
    xyz[3 * i + 2] = DA_NAN;
    return;
  }
  xyz[3 * i] = ((float)c - cx) * z / fx;
  xyz[3 * i + 1] = ((float)r - cy) * z / fy;
  xyz[3 * i + 2] = z;
}

DA_KERNEL(da_rgbd_clear)(DA_PARAMS(DA_RGBD_CLEAR_PARAMS)) {
  DA_BUFFERS_INIT(DA_RGBD_CLEAR_PARAMS);
  const long i = DA_ID(0);
  if (i >= n) return;
  zbuffer[i] = DA_RGBD_EMPTY;
  winner[i] = DA_RGBD_EMPTY;
}

/* The pixel index point i projects to (its depth in *z), or -1 when it is missing,
 * not in front of the camera or outside the image. Pixel centres are at integer
 * coordinates, so the pixel is the rounded projection. */
DA_FN long da_rgbd_pixel_of(DA_GLOBAL const float* xyz, long i, int width, int height, float fx, float fy, float cx,
                            float cy, float m00, float m01, float m02, float m03, float m10, float m11, float m12,
                            float m13, float m20, float m21, float m22, float m23, float* z) {
  const float px = xyz[3 * i], py = xyz[3 * i + 1], pz = xyz[3 * i + 2];
  if (!da_pc_valid(px, py, pz)) return -1;
  const float x = m00 * px + m01 * py + m02 * pz + m03;
  const float y = m10 * px + m11 * py + m12 * pz + m13;
  *z = m20 * px + m21 * py + m22 * pz + m23;
  if (!(*z > 0.0f) || !da_pc_finite(*z)) return -1;
  const float u = da_floorf(fx * x / *z + cx + 0.5f);
  const float v = da_floorf(fy * y / *z + cy + 0.5f);
  /* The comparisons are false for NaN, so a non-finite projection is outside too. */
  if (!(u >= 0.0f && u < (float)width && v >= 0.0f && v < (float)height)) return -1;
  return (long)v * width + (long)u;
}

DA_KERNEL(da_rgbd_project)(DA_PARAMS(DA_RGBD_PROJECT_PARAMS)) {
  DA_BUFFERS_INIT(DA_RGBD_PROJECT_PARAMS);
  const long i = DA_ID(0);
  if (i >= n) return;
  float z = 0.0f;
  const long p = da_rgbd_pixel_of(xyz, i, width, height, fx, fy, cx, cy, m00, m01, m02, m03, m10, m11, m12, m13, m20,
                                  m21, m22, m23, &z);
  if (p < 0) return;
  if (pass == 0)
    da_rgbd_atomic_lower(zbuffer + p, da_float_bits(z));
  else if (zbuffer[p] == da_float_bits(z))
    da_rgbd_atomic_lower(winner + p, (da_u32)i);
}

DA_KERNEL(da_rgbd_write)(DA_PARAMS(DA_RGBD_WRITE_PARAMS)) {
  DA_BUFFERS_INIT(DA_RGBD_WRITE_PARAMS);
  const long c = DA_ID(0);
  const long r = DA_ID(1);
  if (c >= width || r >= height) return;
  const long p = r * (long)width + c;
  const da_u32 w = winner[p];
  const int empty = w == DA_RGBD_EMPTY;
  DA_GLOBAL da_u8* row = depth + r * depthStep;
  const float z = empty ? 0.0f : da_float_from_bits(zbuffer[p]);
  if (isFloat) {
    ((DA_GLOBAL float*)row)[c] = empty ? DA_NAN : z / scale;
  } else {
    const float q = da_floorf(z / scale + 0.5f);
    ((DA_GLOBAL da_u16*)row)[c] = (da_u16)(empty || q > 65535.0f ? 0.0f : q);
  }
  if (hasColor) {
    const long s = (long)w;
    rgbaOut[4 * p] = empty ? 0 : rgbaIn[4 * s];
    rgbaOut[4 * p + 1] = empty ? 0 : rgbaIn[4 * s + 1];
    rgbaOut[4 * p + 2] = empty ? 0 : rgbaIn[4 * s + 2];
    rgbaOut[4 * p + 3] = empty ? 0 : rgbaIn[4 * s + 3];
  }
}

#endif /* DEVICEARRAY_KERNELS_RGBD_H */
