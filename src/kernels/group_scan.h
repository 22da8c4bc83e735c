/* The inclusive scan over a work-group in local memory, for kernels of both backends
 * (OpenCL C 1.2 has no work-group functions): the OpenCL primitives' work-group shape
 * (src/opencl/scan_sort_groups.cl) and the voxel grid's tile numbering (pointcloud.h). */
#ifndef DEVICEARRAY_KERNELS_GROUP_SCAN_H
#define DEVICEARRAY_KERNELS_GROUP_SCAN_H

#include "prelude.h"

/* The most words da_group_inclusive_scan scans at once. */
#define DA_GROUP_SCAN_MAX_WORDS 8

/* In place over a work-group of `lanes` work items: s[w * lanes + item] for w < words
 * (at most DA_GROUP_SCAN_MAX_WORDS) become the sums of word w over the items 0..item
 * (inclusive, Hillis-Steele: two barriers per step). Every work item calls it; it
 * begins and ends with a barrier, so s may be written right before and read right
 * after. */
DA_FN_INLINE void da_group_inclusive_scan(DA_LOCAL da_u32* s, int words, int lanes) {
  const int item = DA_LOCAL_ID();
  for (int offset = 1; offset < lanes; offset <<= 1) {
    da_u32 left[DA_GROUP_SCAN_MAX_WORDS];
    DA_BARRIER();
    for (int w = 0; w < words; ++w) left[w] = item >= offset ? s[w * lanes + item - offset] : 0u;
    DA_BARRIER();
    for (int w = 0; w < words; ++w) s[w * lanes + item] += left[w];
  }
  DA_BARRIER();
}

#endif /* DEVICEARRAY_KERNELS_GROUP_SCAN_H */
