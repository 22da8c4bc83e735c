/* The strided N-d copy and pattern fill of both backends' copy and fill steps (the
 * layout and the instances: src/backend/strided_layout.h). */
#ifndef DEVICEARRAY_KERNELS_STRIDED_COPY_H
#define DEVICEARRAY_KERNELS_STRIDED_COPY_H

#include "prelude.h"
#include "backend/strided_layout.h"

/* Byte offsets (dst, src) of word i: its mixed-radix digits over the axes, i below
 * 2^31 (32-bit division by the layout's multipliers) or any (64-bit division). */
DA_FN_INLINE void da_strided_offsets_i32(const da_strided_layout* p, da_u64 i, da_i64* dstOffset,
                                         da_i64* srcOffset) {
  da_i64 d = 0, s = 0;
  da_u32 rest = (da_u32)i;
  for (int a = p->dims - 1; a > 0; --a) {
    const da_u64 size = p->size[a];
    const da_u32 divisor = (da_u32)size;
    const da_u32 q = divisor == 1 ? rest : da_mul_hi(rest, (da_u32)(size >> 32)) >> p->shift[a];
    const da_i64 r = (da_i64)(rest - q * divisor);
    d += r * p->dstStep[a];
    s += r * p->srcStep[a];
    rest = q;
  }
  *dstOffset = d + (da_i64)rest * p->dstStep[0];
  *srcOffset = s + (da_i64)rest * p->srcStep[0];
}

DA_FN_INLINE void da_strided_offsets_i64(const da_strided_layout* p, da_u64 i, da_i64* dstOffset,
                                         da_i64* srcOffset) {
  da_i64 d = 0, s = 0;
  da_u64 rest = i;
  for (int a = p->dims - 1; a > 0; --a) {
    const da_u64 n = p->size[a];
    const da_u64 q = rest / n;
    const da_i64 r = (da_i64)(rest - q * n);
    d += r * p->dstStep[a];
    s += r * p->srcStep[a];
    rest = q;
  }
  *dstOffset = d + (da_i64)rest * p->dstStep[0];
  *srcOffset = s + (da_i64)rest * p->srcStep[0];
}

/* The first word of this work item, and its k-th word: one group apart. */
#define DA_STRIDED_FIRST_WORD()                                                                                        \
  ((da_u64)DA_GROUP_ID() * (DA_STRIDED_GROUP * DA_STRIDED_WORDS_PER_ITEM) + (da_u32)DA_LOCAL_ID())
#define DA_STRIDED_WORD(first, k) ((first) + (da_u64)(k) * DA_STRIDED_GROUP)

#define DA_STRIDED_COPY_KERNEL(width, Word, index, groups)                                                             \
  DA_KERNEL_GROUP(da_strided_copy_##width##_##index, DA_STRIDED_GROUP, groups)                                         \
  (DA_BUFFER(da_u8, dst), DA_BUFFER(const da_u8, src), DA_BY_VALUE(da_strided_layout, layout)) {                       \
    DA_AFTER_PREVIOUS_KERNEL();                                                                                        \
    DA_BUFFER_INIT(da_u8, dst);                                                                                        \
    DA_BUFFER_INIT(const da_u8, src);                                                                                  \
    const da_u64 first = DA_STRIDED_FIRST_WORD();                                                                      \
    Word values[DA_STRIDED_WORDS_PER_ITEM];                                                                            \
    da_i64 dstOffsets[DA_STRIDED_WORDS_PER_ITEM];                                                                      \
    DA_UNROLL for (int k = 0; k < DA_STRIDED_WORDS_PER_ITEM; ++k) {                                                    \
      const da_u64 i = DA_STRIDED_WORD(first, k);                                                                      \
      if (i < layout.total) {                                                                                          \
        da_i64 srcOffset;                                                                                              \
        da_strided_offsets_##index(&layout, i, &dstOffsets[k], &srcOffset);                                            \
        values[k] = *(DA_GLOBAL const Word*)(src + srcOffset);                                                         \
      }                                                                                                                \
    }                                                                                                                  \
    DA_UNROLL for (int k = 0; k < DA_STRIDED_WORDS_PER_ITEM; ++k) {                                                    \
      if (DA_STRIDED_WORD(first, k) < layout.total) *(DA_GLOBAL Word*)(dst + dstOffsets[k]) = values[k];               \
    }                                                                                                                  \
  }

/* The pattern word is chosen by a run-time index: staging the pattern in local
 * memory keeps that dynamic index away from the kernel arguments. */
#define DA_STRIDED_FILL_KERNEL(width, Word, index, groups)                                                             \
  DA_KERNEL_GROUP(da_strided_fill_##width##_##index, DA_STRIDED_GROUP, groups)                                         \
  (DA_BUFFER(da_u8, dst), DA_BY_VALUE(da_strided_layout, layout), DA_BY_VALUE(da_fill_pattern, fill)) {                \
    DA_AFTER_PREVIOUS_KERNEL();                                                                                        \
    DA_BUFFER_INIT(da_u8, dst);                                                                                        \
    DA_LOCAL_ARRAY(Word, pattern, 32 / width);                                                                         \
    if (DA_LOCAL_ID() < 32) ((DA_LOCAL da_u8*)pattern)[DA_LOCAL_ID()] = fill.bytes[DA_LOCAL_ID()];                     \
    DA_BARRIER();                                                                                                      \
    const da_u64 first = DA_STRIDED_FIRST_WORD();                                                                      \
    DA_UNROLL for (int k = 0; k < DA_STRIDED_WORDS_PER_ITEM; ++k) {                                                    \
      const da_u64 i = DA_STRIDED_WORD(first, k);                                                                      \
      if (i >= layout.total) return;                                                                                   \
      da_i64 dstOffset, patternOffset;                                                                                 \
      da_strided_offsets_##index(&layout, i, &dstOffset, &patternOffset);                                              \
      *(DA_GLOBAL Word*)(dst + dstOffset) = pattern[patternOffset / (da_i64)width];                                    \
    }                                                                                                                  \
  }

#define DA_STRIDED_KERNELS(width, Word, groups)                                                                        \
  DA_STRIDED_COPY_KERNEL(width, Word, i32, groups) DA_STRIDED_COPY_KERNEL(width, Word, i64, 1)                         \
  DA_STRIDED_FILL_KERNEL(width, Word, i32, DA_STRIDED_FILL_GROUPS) DA_STRIDED_FILL_KERNEL(width, Word, i64, 1)
DA_STRIDED_WORDS(DA_STRIDED_KERNELS)

#endif /* DEVICEARRAY_KERNELS_STRIDED_COPY_H */
