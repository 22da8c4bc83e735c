/* Parameters of the point-cloud kernels (src/kernels/pointcloud.h), declared once for
 * the kernels and for the host code that launches them (kernel_params.h).
 *
 * XYZ and normal buffers hold 3 floats per point, colours 4 u8 per point, SNRs 1 float
 * per point.
 * An attribute a cloud does not have is passed as any valid buffer with its has* flag 0. */
#ifndef DEVICEARRAY_BACKEND_POINTCLOUD_SIGNATURES_H
#define DEVICEARRAY_BACKEND_POINTCLOUD_SIGNATURES_H

#include "backend/kernel_params.h"

/* k x k block means of an organized cloud (inW wide) into an outW x outH one. srgb: the
 * colour codes are sRGB-encoded, averaged in linear light through srgbDecode (sRGB code
 * -> float) and srgbEncode (the float -> sRGB bucket table, linear_light.h). */
#define DA_PC_DOWNSAMPLE_PARAMS(S0, B0, S, B)                                                                       \
  S0(int, inW) S(int, outW) S(int, outH) S(int, k) S(int, hasColor) S(int, srgb) S(int, hasSnr)                      \
  B(const float, xyzIn) B(const da_u8, rgbaIn) B(const float, snrIn) B(float, xyzOut) B(da_u8, rgbaOut)              \
  B(float, snrOut) B(const float, srgbDecode) B(const da_u32, srgbEncode)

/* p' = M p for valid points; m<row><column> are the first three rows of M. */
#define DA_PC_TRANSFORM_PARAMS(S0, B0, S, B)                                                                        \
  S0(da_i64, n) S(float, m00) S(float, m01) S(float, m02) S(float, m03) S(float, m10) S(float, m11) S(float, m12)   \
  S(float, m13) S(float, m20) S(float, m21) S(float, m22) S(float, m23) B(const float, xyzIn) B(float, xyzOut)

/* The mean of the valid points as one point (NaN when there is none), from the sums
 * that ParallelPrimitives::sumValidXYZ writes (sum x, sum y, sum z, count as binary64,
 * read as their bit patterns: devices without double precision read them too). */
#define DA_PC_CENTROID_PARAMS(S0, B0, S, B) B0(const da_u64, sums) B(float, centroid)

/* p' = p - c for valid points, in place; c is the point at `centroid`, which the device
 * computed (da_pc_centroid), so the host never reads it. */
#define DA_PC_CENTER_PARAMS(S0, B0, S, B) S0(da_i64, n) B(const float, centroid) B(float, xyz)

/* Points whose mask byte is 0 become NaN; maskStep is the mask's row step in bytes. */
#define DA_PC_MASK_PARAMS(S0, B0, S, B)                                                                             \
  S0(int, width) S(int, height) S(da_i64, maskStep) B(const da_u8, mask) B(const float, xyzIn) B(float, xyzOut)

/* Oriented-box region of interest: origin o, unit axes u, v (lengths lenU, lenV), unit
 * normal n with the extent [lo, hi] along it. */
#define DA_PC_ROI_PARAMS(S0, B0, S, B)                                                                              \
  S0(da_i64, n) S(float, ox) S(float, oy) S(float, oz) S(float, ux) S(float, uy) S(float, uz) S(float, lenU)        \
  S(float, vx) S(float, vy) S(float, vz) S(float, lenV) S(float, nx) S(float, ny) S(float, nz) S(float, lo)         \
  S(float, hi) B(const float, xyzIn) B(float, xyzOut)

/* da_pc_transform, then da_pc_roi, in one pass: the same points bit for bit. */
#define DA_PC_TRANSFORM_ROI_PARAMS(S0, B0, S, B)                                                                    \
  S0(da_i64, n) S(float, m00) S(float, m01) S(float, m02) S(float, m03) S(float, m10) S(float, m11) S(float, m12)   \
  S(float, m13) S(float, m20) S(float, m21) S(float, m22) S(float, m23) S(float, ox) S(float, oy) S(float, oz)      \
  S(float, ux) S(float, uy) S(float, uz) S(float, lenU) S(float, vx) S(float, vy) S(float, vz) S(float, lenV)       \
  S(float, nx) S(float, ny) S(float, nz) S(float, lo) S(float, hi) B(const float, xyzIn) B(float, xyzOut)

/* Unit normals of an organized cloud, oriented towards the camera position. */
#define DA_PC_NORMALS_PARAMS(S0, B0, S, B)                                                                          \
  S0(int, width) S(int, height) S(float, camX) S(float, camY) S(float, camZ) B(const float, xyz) B(float, normals)

/* flags[i] = point i is valid, flags[n] = 0. */
#define DA_PC_VALID_FLAGS_PARAMS(S0, B0, S, B) S0(da_i64, n) B(const float, xyz) B(da_u32, flags)

/* Order-preserving compaction by the exclusive scan of keep flags (validity, outlier tests). */
#define DA_PC_COMPACT_PARAMS(S0, B0, S, B)                                                                          \
  S0(da_i64, n) S(int, hasColor) S(int, hasSnr) S(int, hasNormal) B(const da_u32, offsets) B(const float, xyzIn)  \
  B(const da_u8, rgbaIn) B(const float, snrIn) B(const float, normalIn) B(float, xyzOut) B(da_u8, rgbaOut)          \
  B(float, snrOut) B(float, normalOut) B(da_u32, countOut)

/* The voxel grid's bounds as words the caller zeroed (0 = no valid point):
 * bounds[c] = the largest ~da_vx_ordered(p[c]) over the valid points p, which is
 * ~da_vx_ordered of the min corner's coordinate c, and bounds[3 + c] the largest
 * da_vx_ordered(p[c]), the max corner's; bounds[DA_VX_KEYED_END] = one past the last
 * valid point's index, past which every key is missing, so the sort and the reduction
 * stop there (a compaction's capacity holds its valid points first). Work-groups of
 * DA_VX_BOUNDS_GROUP work items, each taking DA_VX_BOUNDS_ITEMS points, add at most
 * DA_VX_BOUNDS_WORDS atomic maxima each; groupValid[g] = the valid points of work-group
 * g, which takes the DA_VX_BOUNDS_GROUP * DA_VX_BOUNDS_ITEMS points from g times that
 * (da_vx_keys_packed numbers the valid points from them). */
#define DA_VX_BOUNDS_GROUP 256
#define DA_VX_BOUNDS_ITEMS 8
#define DA_VX_BOUNDS_WORDS 7
#define DA_VX_KEYED_END 6
#define DA_VX_BOUNDS_PARAMS(S0, B0, S, B) S0(da_i64, n) B(const float, xyz) B(da_u32, bounds) B(da_u32, groupValid)

/* Voxel keys (and point indices): each point's voxel ranked in the grid anchored at
 * the min corner of `bounds` (da_vx_bounds' words), at the point's position.
 * status[0] = 1 on overflow, status[2] = the key width (the bits of the grid's cell
 * count). */
#define DA_VX_KEYS_PARAMS(S0, B0, S, B)                                                                             \
  S0(da_i64, n) S(float, voxelSize) B(const da_u32, bounds) B(const float, xyz) B(da_u64, keys) B(da_u32, indices) \
  B(da_u32, status)

/* The same keys of the valid points only, packed in their order, missing keys from
 * their count up to `fill`, and the count written over bounds[DA_VX_KEYED_END]. Work-
 * groups as da_vx_bounds', each numbering its valid points from the counts da_vx_bounds
 * left in groupValid: no device-wide scan of the points' validity. */
#define DA_VX_KEYS_PACKED_PARAMS(S0, B0, S, B)                                                                      \
  S0(da_i64, n) S(float, voxelSize) S(da_i64, fill) B(da_u32, bounds) B(const float, xyz)                          \
  B(const da_u32, groupValid) B(da_u64, keys) B(da_u32, indices) B(da_u32, status)

/* Sorted positions per tile of the voxel reduction: da_vx_reduce_tiles loads a tile's
 * points in one work-group, all gathers at once, and sums each run of equal keys from
 * local memory, rather than one work item walking a voxel's points in global memory.
 * da_vx_tile_heads numbers the voxels within each tile and da_vx_tile_offsets numbers
 * the tiles' voxels, so the voxels' output slots need no device-wide scan of every
 * sorted position: the tiles past the valid points (missing keys sort last) are
 * skipped, and a frame's voxel grid runs over a compaction's whole capacity. Each
 * kernel reads the sorted keys only before keyedEnd[0] (bounds[DA_VX_KEYED_END]; the
 * sort orders only the positions before it) and takes every later key as missing. */
#define DA_VX_TILE 256
/* Positions of a tile's blocks: da_vx_reduce_tiles adds a run's terms within each block
 * in parallel, then the blocks' sums. */
#define DA_VX_SUB 16
/* Work items of da_vx_tile_offsets' one work-group. */
#define DA_VX_SCAN_GROUP 256

/* Work-groups of one tile at a time: rank[j] = the kept voxels that start in j's tile
 * before position j, tileHeads[t] = those that start in tile t. A kept voxel starts
 * where a run of valid keys does, and holds at least minPoints positions (the keys are
 * sorted: position j + minPoints - 1 has the same key). Written for the tiles up to the
 * first that starts with a missing key (it gets tileHeads 0 and no rank); the tiles
 * after it hold no voxel and may get nothing. */
#define DA_VX_TILE_HEADS_PARAMS(S0, B0, S, B)                                                                       \
  S0(da_i64, n) S(int, minPoints) B(const da_u32, keyedEnd) B(const da_u64, keys) B(da_u32, rank)          \
  B(da_u32, tileHeads)

/* One work-group: tileOffsets[t] = the kept voxels of the tiles before t (the
 * exclusive scan of tileHeads) for the tiles that start with a valid key (and, past
 * them, as far as the scan's last chunk goes), status[1] = the kept voxel count. */
#define DA_VX_TILE_OFFSETS_PARAMS(S0, B0, S, B)                                                                     \
  S0(da_i64, n) B(const da_u32, keyedEnd) B(const da_u64, keys) B(const da_u32, tileHeads)                 \
  B(da_u32, tileOffsets) B(da_u32, status)

/* The running sums of a voxel (da_vx_sums): floats (weighted and plain position sums,
 * the SNR^2 weight, normal sums) and 64-bit words (point count, colour terms). */
#define DA_VX_SUM_FLOATS 10
#define DA_VX_SUM_WORDS 5

/* The voxels within one tile of sorted positions, written out; for the voxels that run
 * over a tile's edge, the tile's share of them: slot 0 of tile k the run that enters
 * it from tile k - 1, slot 1 the run that started in it and leaves it (tileFloats and
 * tileWords: 2 * DA_VX_SUM_FLOATS floats and 2 * DA_VX_SUM_WORDS words per tile), and
 * tileVoxel[k] the output slot of the run that starts in tile k and leaves it (~0 when
 * it is not kept; not written when no run does).
 * A voxel's slot is tileOffsets[t] + rank[h], h its first position and t h's tile.
 * Output slots from the kept count status[1] on get missing points. */
#define DA_VX_REDUCE_TILES_PARAMS(S0, B0, S, B)                                                                     \
  S0(da_i64, n) S(int, hasColor) S(int, srgb) S(int, hasSnr) S(int, hasNormals) S(int, minPoints)                 \
  B(const da_u32, keyedEnd) B(const da_u64, keys) B(const da_u32, rank) B(const da_u32, tileOffsets)              \
  B(const da_u32, order) B(const float, xyzIn) B(const da_u8, rgbaIn) B(const float, snrIn)                        \
  B(const float, normalsIn) B(const float, srgbDecode) B(float, tileFloats) B(da_u64, tileWords)                    \
  B(da_u32, tileVoxel) B(float, xyzOut) B(da_u8, rgbaOut) B(float, snrOut) B(float, normalsOut)                    \
  B(const da_u32, srgbEncode) B(const da_u32, status)

/* The voxels that run over a tile's edge (one work item per tile), from the tiles'
 * shares that da_vx_reduce_tiles stored. */
#define DA_VX_REDUCE_SPANNING_PARAMS(S0, B0, S, B)                                                                  \
  S0(da_i64, n) S(int, hasColor) S(int, srgb) S(int, hasSnr) S(int, hasNormals) B(const da_u32, keyedEnd)         \
  B(const da_u64, keys) B(const da_u32, tileVoxel) B(const float, tileFloats) B(const da_u64, tileWords)            \
  B(float, xyzOut) B(da_u8, rgbaOut) B(float, snrOut) B(float, normalsOut) B(const da_u32, srgbEncode)

#if defined(__cplusplus)
#include "backend/kernel_signature.hpp"

namespace devicearray::detail::kernels {
DA_KERNEL_SIGNATURE(da_pc_downsample, DA_PC_DOWNSAMPLE_PARAMS);
DA_KERNEL_SIGNATURE(da_pc_transform, DA_PC_TRANSFORM_PARAMS);
DA_KERNEL_SIGNATURE(da_pc_centroid, DA_PC_CENTROID_PARAMS);
DA_KERNEL_SIGNATURE(da_pc_center, DA_PC_CENTER_PARAMS);
DA_KERNEL_SIGNATURE(da_pc_mask, DA_PC_MASK_PARAMS);
DA_KERNEL_SIGNATURE(da_pc_roi, DA_PC_ROI_PARAMS);
DA_KERNEL_SIGNATURE(da_pc_transform_roi, DA_PC_TRANSFORM_ROI_PARAMS);
DA_KERNEL_SIGNATURE(da_pc_normals, DA_PC_NORMALS_PARAMS);
DA_KERNEL_SIGNATURE(da_pc_valid_flags, DA_PC_VALID_FLAGS_PARAMS);
DA_KERNEL_SIGNATURE(da_pc_compact, DA_PC_COMPACT_PARAMS);
DA_KERNEL_SIGNATURE(da_vx_bounds, DA_VX_BOUNDS_PARAMS);
DA_KERNEL_SIGNATURE(da_vx_keys, DA_VX_KEYS_PARAMS);
DA_KERNEL_SIGNATURE(da_vx_keys_packed, DA_VX_KEYS_PACKED_PARAMS);
DA_KERNEL_SIGNATURE(da_vx_tile_heads, DA_VX_TILE_HEADS_PARAMS);
DA_KERNEL_SIGNATURE(da_vx_tile_offsets, DA_VX_TILE_OFFSETS_PARAMS);
DA_KERNEL_SIGNATURE(da_vx_reduce_tiles, DA_VX_REDUCE_TILES_PARAMS);
DA_KERNEL_SIGNATURE(da_vx_reduce_spanning, DA_VX_REDUCE_SPANNING_PARAMS);
}  // namespace devicearray::detail::kernels
#endif

#endif /* DEVICEARRAY_BACKEND_POINTCLOUD_SIGNATURES_H */
