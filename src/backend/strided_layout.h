/* The layout of one launch of the strided copy and fill kernels
 * (src/kernels/strided_copy.h), declared once for the kernels and for the backends'
 * host code that fills it (stridedLayout, backend/region.hpp).
 *
 * A launch moves machine words of 16, 8, 4, 2 or 1 bytes: the widest dividing the
 * element size, every step and both addresses, with the word within its element as
 * the innermost axis, so consecutive work items touch consecutive words and stay
 * coalesced for packed and padded layouts alike (12-byte XYZ inside 16-byte XYZW
 * moves as 4-byte words, three of every four words of each element). A work item
 * moves DA_STRIDED_WORDS_PER_ITEM words, DA_STRIDED_GROUP apart (each access step
 * stays coalesced), issuing all loads before the stores. */
#ifndef DEVICEARRAY_BACKEND_STRIDED_LAYOUT_H
#define DEVICEARRAY_BACKEND_STRIDED_LAYOUT_H

#include "kernels/prelude.h"

#define DA_STRIDED_GROUP 256
#define DA_STRIDED_WORDS_PER_ITEM 4

/* The axes of a copy descriptor, plus the word axis. */
#define DA_STRIDED_MAX_AXES 33

/* Axis 0 outermost, steps in bytes (any sign). Passed by value: 64-bit fields first,
 * so host and device agree without padding rules, and with the fill pattern and both
 * buffers within the 1024 bytes of kernel arguments every OpenCL device takes.
 *
 * Below 2^31 words (the _i32 kernels) an axis divides by its size with a multiply-high
 * and a shift (da_fast_div_magic, computed by the host) instead of a 64-bit division;
 * its multiplier then rides in the high half of the size, which is below 2^31, so one
 * 64-bit load gives both and the layout stays within the argument limit. */
typedef struct {
  da_u64 size[DA_STRIDED_MAX_AXES]; /* _i32: size | multiplier << 32 */
  da_i64 dstStep[DA_STRIDED_MAX_AXES];
  da_i64 srcStep[DA_STRIDED_MAX_AXES]; /* fill: the step of the byte offset in the pattern */
  da_u64 total;                        /* words to move */
  int dims;
  da_u8 shift[DA_STRIDED_MAX_AXES]; /* _i32 */
} da_strided_layout;

/* The element a fill repeats, up to 32 bytes (by value, next to the layout). */
typedef struct {
  da_u8 bytes[32];
} da_fill_pattern;

/* The kernel instances X(word bytes, word type, copy groups), widest first; each with
 * two index variants, _i32 (fewer than 2^31 words: division by multiplication) and
 * _i64. Named da_strided_copy_<bytes>_<index> and da_strided_fill_<bytes>_<index>.
 *
 * The groups a CUDA multiprocessor is to hold at once running an _i32 instance bound
 * its registers: the kernels are memory-bound and rely on occupancy to hide the
 * latency of their loads. Left alone, the compiler spends registers on the unrolled
 * index arithmetic of the narrow-word copies until a multiprocessor holds half as
 * many groups; the wide-word copies keep more bytes in flight per work item and may
 * use more registers (fewer groups). */
#define DA_STRIDED_FILL_GROUPS 8
#define DA_STRIDED_WORDS(X) X(16, da_u32x4, 6) X(8, da_u64, 6) X(4, da_u32, 8) X(2, da_u16, 8) X(1, da_u8, 8)

#endif /* DEVICEARRAY_BACKEND_STRIDED_LAYOUT_H */
