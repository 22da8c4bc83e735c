/* Launch geometry of the format-conversion kernels (src/kernels/convert_formats.h),
 * shared by the kernels and the host code that launches them, so that the two cannot
 * disagree; plain macros, valid in C++, CUDA C++ and OpenCL C, with no kernel body.
 * cmake/EmbedOpenCL.cmake puts it into the OpenCL program before the kernels. */
#ifndef DEVICEARRAY_BACKEND_CONVERSION_GEOMETRY_H
#define DEVICEARRAY_BACKEND_CONVERSION_GEOMETRY_H

/* Work items per work-group of every conversion kernel, and the local memory of one
 * work-group for its tile (the tile's source bytes, then its converted bytes). The
 * tile length follows the two element sizes so that every conversion keeps as many
 * source bytes in flight as fit; 28 KiB plus the 2 KiB tables of the 8-bit -> float
 * kernel stays within the 32 KiB of local memory every OpenCL 1.2 device has.
 * Work-groups per multiprocessor that CUDA must fit (__launch_bounds__, which caps the
 * registers): more for the colour kernels, fewer for the point kernel, whose registers
 * that leaves free. The measurements behind these numbers are in docs/PERFORMANCE.md. */
#define DA_CVT_GROUP 256
#define DA_CVT_LOCAL_BYTES 28672
#define DA_CVT_POINT_MIN_GROUPS 4
#define DA_CVT_COLOR_MIN_GROUPS 7
/* The kernels that are not tiled (da_convert_color_f32_u8, da_convert_color_u8_u8_items):
 * consecutive elements per work item (4: four 3-byte elements are three words) and
 * elements per work-group; work-groups per multiprocessor of da_convert_color_f32_u8. */
#define DA_CVT_ITEMS 4
#define DA_CVT_ITEMS_TILE (DA_CVT_GROUP * DA_CVT_ITEMS)
#define DA_CVT_F32_U8_MIN_GROUPS 6
#if DA_CVT_ITEMS != 4
#error "the untiled conversion kernels pack four 3-byte elements into three words"
#endif
/* 8-bit -> 8-bit conversions of fewer elements than this take da_convert_color_u8_u8_items:
 * a camera frame is fewer tiles than a large GPU has work-group slots, and a tile's
 * work-group stores nothing until its last load has arrived. Above it, the tiles
 * keep more loads in flight. */
#define DA_CVT_U8_ITEMS_MAX_ELEMENTS (16 << 20)
/* Elements per tile for the given source and destination element sizes: a multiple
 * of 16, so that both parts of the tile, and every tile's start in global memory,
 * stay 16-byte aligned. */
#define DA_CVT_TILE(srcBytes, dstBytes) ((DA_CVT_LOCAL_BYTES / ((srcBytes) + (dstBytes))) / 16 * 16)
/* Elements per work item of da_convert_points_z (not tiled). */
#define DA_CVT_Z_ITEMS 4
/* Quantization buckets (see da_cvt_quantize): floats in [2^-DA_CVT_BUCKET_OCTAVES, 1),
 * 2^DA_CVT_BUCKET_BITS buckets per octave. Below that range every float quantizes to
 * 0 (the first boundary is 2^-12.69 for sRGB, 2^-8.99 for linear). */
#define DA_CVT_BUCKET_OCTAVES 13
#define DA_CVT_BUCKET_BITS 7
#define DA_CVT_BUCKETS (DA_CVT_BUCKET_OCTAVES << DA_CVT_BUCKET_BITS)
/* 16-byte loads each work item keeps in flight while it stages a tile. */
#define DA_CVT_BATCH 4

#endif /* DEVICEARRAY_BACKEND_CONVERSION_GEOMETRY_H */
