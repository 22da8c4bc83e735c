/* Launch geometry of the work-group scan and radix sort of the OpenCL backend
 * (src/opencl/scan_sort_groups.cl), shared by the kernels and the host code that
 * launches them (src/opencl/opencl_primitives.cpp), so that the two cannot disagree;
 * plain macros, valid in C++ and OpenCL C, with no kernel body. cmake/EmbedOpenCL.cmake
 * puts it into the OpenCL program before the kernels. */
#ifndef DEVICEARRAY_BACKEND_SCAN_SORT_GEOMETRY_H
#define DEVICEARRAY_BACKEND_SCAN_SORT_GEOMETRY_H

/* Work items per work-group of every kernel of scan_sort_groups.cl. */
#define DA_ALG_GROUP 256
/* Scan: consecutive elements per work item, and the tile of one work-group (the
 * larger the tile, the fewer tile sums the next level scans). */
#define DA_ALG_SCAN_ITEMS 8
#define DA_ALG_SCAN_TILE (DA_ALG_GROUP * DA_ALG_SCAN_ITEMS)
/* Radix sort: key bits per pass, their digit values, consecutive keys per work item
 * and the tile of one work-group. A tile's (key, value) pairs and its per-item digit
 * counts (16-bit counts, two to a word) take 20 KiB of local memory: within the 32 KiB
 * every OpenCL 1.2 device has. */
#define DA_ALG_RADIX_BITS 4
#define DA_ALG_DIGITS (1 << DA_ALG_RADIX_BITS)
#define DA_ALG_COUNT_WORDS (DA_ALG_DIGITS / 2)
#define DA_ALG_SORT_ITEMS 4
#define DA_ALG_SORT_TILE (DA_ALG_GROUP * DA_ALG_SORT_ITEMS)
/* A radix pass sorts the DA_ALG_RADIX_BITS bits at `shift` while shift < the key width:
 * the uint32 word the caller gave (a bound only the device knows), else 64. From that
 * width on every pass keeps the order, and the first of them copies the pairs to the
 * sort's outputs if they are not there (`toOutput`: its destination is the outputs).
 * DA_ALG_PASS_SORTS and DA_ALG_PASS_COPIES take (widthGiven, widthWord, shift[, toOutput]). */
/* The digit of `key` that the pass at `shift` sorts by: its DA_ALG_RADIX_BITS bits at
 * `shift`, those from endBit on left out (the sort orders by bits [0, endBit) only). */
#define DA_ALG_DIGIT(key, shift, endBit)                                                         \
  ((int)(((key) >> (shift)) &                                                                    \
         ((endBit) - (shift) >= DA_ALG_RADIX_BITS ? (da_u64)(DA_ALG_DIGITS - 1)                  \
                                                  : (((da_u64)1 << ((endBit) - (shift))) - 1))))
#define DA_ALG_KEY_WIDTH(given, word) ((given) ? (int)(word)[0] : 64)
#define DA_ALG_PASS_SORTS(given, word, shift) ((shift) < DA_ALG_KEY_WIDTH(given, word))
#define DA_ALG_PASS_COPIES(given, word, shift, toOutput) \
  ((toOutput) && (shift) - DA_ALG_RADIX_BITS < DA_ALG_KEY_WIDTH(given, word))
/* The entries a pass sorts of the n given: those before the keyed end word, when given
 * (every later entry is missing, and its output position may stay unwritten). */
#define DA_ALG_KEYED_COUNT(n, given, word) ((given) ? min((long)(n), (long)(word)[0]) : (long)(n))
/* Bounds of valid points: points (or tuples of the level before) per work item, and
 * the tile of one work-group. */
#define DA_ALG_BOUNDS_ITEMS 8
#define DA_ALG_BOUNDS_TILE (DA_ALG_GROUP * DA_ALG_BOUNDS_ITEMS)
#if DA_ALG_SORT_TILE > 65535
#error "a tile's digit counts are 16-bit fields"
#endif

#endif /* DEVICEARRAY_BACKEND_SCAN_SORT_GEOMETRY_H */
