/* Parameters of the RGB-D kernels (src/kernels/rgbd.h): a point cloud from a depth image
 * and the projection of a cloud into depth and colour images, declared once for the
 * kernels and for the host code that launches them (kernel_params.h). */
#ifndef DEVICEARRAY_BACKEND_RGBD_SIGNATURES_H
#define DEVICEARRAY_BACKEND_RGBD_SIGNATURES_H

#include "backend/kernel_params.h"

/* The z-buffer and winner value of a pixel no point projects to. */
#define DA_RGBD_EMPTY 0xFFFFFFFFu

/* Depth pixel (c, r) -> point: z = depth * scale, x = (c - cx) z / fx, y = (r - cy) z / fy.
 * `depth` is a U16 (isFloat 0) or F32 (isFloat 1) image with a row step in bytes. */
#define DA_RGBD_FROM_DEPTH_PARAMS(S0, B0, S, B)                                                                     \
  S0(int, width) S(int, height) S(da_i64, depthStep) S(int, isFloat) S(float, scale) S(float, fx) S(float, fy)      \
  S(float, cx) S(float, cy) B(const da_u8, depth) B(float, xyz)

/* zbuffer[p] = winner[p] = DA_RGBD_EMPTY for the n pixels. */
#define DA_RGBD_CLEAR_PARAMS(S0, B0, S, B) S0(da_i64, n) B(da_u32, zbuffer) B(da_u32, winner)

/* The projection of point i: p' = M p (m<row><column>: the first three rows of M), then
 * pixel (round(fx x'/z' + cx), round(fy y'/z' + cy)) of a width x height image. Pass 0
 * lowers the pixel's z-buffer to z', pass 1 (after pass 0) its winner to i when z' is the
 * pixel's depth. */
#define DA_RGBD_PROJECT_PARAMS(S0, B0, S, B)                                                                        \
  S0(da_i64, n) S(int, pass) S(int, width) S(int, height) S(float, fx) S(float, fy) S(float, cx) S(float, cy) S(float, m00)      \
  S(float, m01) S(float, m02) S(float, m03) S(float, m10) S(float, m11) S(float, m12) S(float, m13) S(float, m20)   \
  S(float, m21) S(float, m22) S(float, m23) B(const float, xyz) B(da_u32, zbuffer) B(da_u32, winner)

/* Depth and colour images from the winners: U16 (isFloat 0: round(z / scale), 0 when
 * empty or out of range) or F32 (isFloat 1: z / scale, NaN when empty), with a row step
 * in bytes; colour (hasColor) RGBA of the winner, 0 0 0 0 when empty. */
#define DA_RGBD_WRITE_PARAMS(S0, B0, S, B)                                                                          \
  S0(int, width) S(int, height) S(int, isFloat) S(float, scale) S(da_i64, depthStep) S(int, hasColor)               \
  B(const da_u32, zbuffer) B(const da_u32, winner) B(const da_u8, rgbaIn) B(da_u8, depth) B(da_u8, rgbaOut)

#if defined(__cplusplus)
#include "backend/kernel_signature.hpp"

namespace devicearray::detail::kernels {
DA_KERNEL_SIGNATURE(da_rgbd_from_depth, DA_RGBD_FROM_DEPTH_PARAMS);
DA_KERNEL_SIGNATURE(da_rgbd_clear, DA_RGBD_CLEAR_PARAMS);
DA_KERNEL_SIGNATURE(da_rgbd_project, DA_RGBD_PROJECT_PARAMS);
DA_KERNEL_SIGNATURE(da_rgbd_write, DA_RGBD_WRITE_PARAMS);
}  // namespace devicearray::detail::kernels
#endif

#endif /* DEVICEARRAY_BACKEND_RGBD_SIGNATURES_H */
