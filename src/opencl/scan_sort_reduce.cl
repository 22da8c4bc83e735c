/* The OpenCL device's parallel primitives: exclusive scan, radix sort and the
 * reductions over valid points (host code: opencl_primitives.cpp; the interface:
 * DeviceImpl::exclusiveScanU32 and the rest in src/backend/backend.hpp).
 *
 * Why hand-written: Boost.Compute would bring its own context/queue/program cache and
 * is barely maintained; clpp/VexCL are heavier still. These primitives are small.
 *
 * Why chunk-per-work-item: the kernels depend on no work-group size (no local memory,
 * no barriers; KernelLaunch::localSize stays 0), so every OpenCL implementation runs
 * them with the shape it prefers, and a CPU streams through each chunk on one core.
 * A GPU needs far more work items and coalesced loads: on GPUs (any device that is not
 * a CPU) the scan, the sort and the bounds run the work-group kernels of
 * scan_sort_groups.cl instead, while the sum stays this one. Each work item owns one
 * contiguous chunk of `chunk` elements and processes it sequentially; a level of
 * per-chunk results is combined by the same kernels recursively. Every algorithm stays
 * work-efficient (O(n) work per pass) and deterministic, and the radix sort is stable
 * because each chunk scatters its keys in order into offsets that come from a
 * digit-major exclusive scan of per-chunk counts. */

/* The chunk of this work item, from the kernel's arguments n, chunk and chunks:
 * c, and its elements [begin, end). Work items past the last chunk return. */
#define DA_ALG_CHUNK_RANGE()  \
  const long c = DA_ID(0);    \
  if (c >= chunks) return;    \
  const long begin = c * chunk; \
  const long end = min(begin + chunk, n)

/* ---------------------------------------------------------------- scan ---- */

/* Both scan kernels take the gate of the work-group scans (scan_sort_groups.cl): shift,
 * widthGiven and width, and do nothing for a radix pass past the key width. */

/* partial[c] = sum of in[c*chunk .. min(n, (c+1)*chunk)) */
DA_KERNEL(da_alg_scan_reduce)(long n, long chunk, long chunks, int shift, int widthGiven,
                              DA_BUFFER(const da_u32, width), DA_BUFFER(const da_u32, in), DA_BUFFER(da_u32, partial)) {
  DA_BUFFER_INIT(const da_u32, width);
  DA_BUFFER_INIT(const da_u32, in);
  DA_BUFFER_INIT(da_u32, partial);
  DA_ALG_CHUNK_RANGE();
  if (!DA_ALG_PASS_SORTS(widthGiven, width, shift)) return;
  da_u32 s = 0;
  for (long i = begin; i < end; ++i) s += in[i];
  partial[c] = s;
}

/* out[i] = partial[c] + exclusive scan of chunk c (partial already scanned); in place ok. */
DA_KERNEL(da_alg_scan_apply)(long n, long chunk, long chunks, int shift, int widthGiven, DA_BUFFER(const da_u32, width),
                             int hasPartial, DA_BUFFER(const da_u32, partial), DA_BUFFER(const da_u32, in),
                             DA_BUFFER(da_u32, out)) {
  DA_BUFFER_INIT(const da_u32, width);
  DA_BUFFER_INIT(const da_u32, partial);
  DA_BUFFER_INIT(const da_u32, in);
  DA_BUFFER_INIT(da_u32, out);
  DA_ALG_CHUNK_RANGE();
  if (!DA_ALG_PASS_SORTS(widthGiven, width, shift)) return;
  da_u32 running = hasPartial ? partial[c] : 0u;
  for (long i = begin; i < end; ++i) {
    const da_u32 v = in[i];
    out[i] = running;
    running += v;
  }
}

/* ---------------------------------------------------------- radix sort ---- */

/* hist[d * chunks + c] = how many keys of chunk c have digit d (4 bits at `shift`,
 * below endBit), counting the keys before the keyed end (DA_ALG_KEYED_COUNT) only. */
DA_KERNEL(da_alg_radix_count)(long n, long chunk, long chunks, int shift, int endBit, int widthGiven,
                              DA_BUFFER(const da_u32, width), int endGiven, DA_BUFFER(const da_u32, keyedEnd),
                              DA_BUFFER(const da_u64, keys), DA_BUFFER(da_u32, hist)) {
  DA_BUFFER_INIT(const da_u32, width);
  DA_BUFFER_INIT(const da_u32, keyedEnd);
  DA_BUFFER_INIT(const da_u64, keys);
  DA_BUFFER_INIT(da_u32, hist);
  const long c = DA_ID(0);
  if (c >= chunks || !DA_ALG_PASS_SORTS(widthGiven, width, shift)) return;
  da_u32 count[16];
  for (int d = 0; d < 16; ++d) count[d] = 0u;
  const long begin = c * chunk;
  const long end = min(begin + chunk, DA_ALG_KEYED_COUNT(n, endGiven, keyedEnd));
  for (long i = begin; i < end; ++i) ++count[DA_ALG_DIGIT(keys[i], shift, endBit)];
  for (int d = 0; d < 16; ++d) hist[d * chunks + c] = count[d];
}

/* Stable scatter of chunk c (its keys before the keyed end): its keys with digit d go,
 * in order, from offsets[d*chunks+c].
 * A pass past the key width copies the chunk instead, or does nothing
 * (DA_ALG_PASS_COPIES in src/backend/scan_sort_geometry.h). */
DA_KERNEL(da_alg_radix_scatter)(long n, long chunk, long chunks, int shift, int endBit, int toOutput, int widthGiven,
                                DA_BUFFER(const da_u32, width), int endGiven, DA_BUFFER(const da_u32, keyedEnd),
                                DA_BUFFER(const da_u32, offsets), DA_BUFFER(const da_u64, keysIn),
                                DA_BUFFER(const da_u32, valuesIn), DA_BUFFER(da_u64, keysOut),
                                DA_BUFFER(da_u32, valuesOut)) {
  DA_BUFFER_INIT(const da_u32, width);
  DA_BUFFER_INIT(const da_u32, keyedEnd);
  DA_BUFFER_INIT(const da_u32, offsets);
  DA_BUFFER_INIT(const da_u64, keysIn);
  DA_BUFFER_INIT(const da_u32, valuesIn);
  DA_BUFFER_INIT(da_u64, keysOut);
  DA_BUFFER_INIT(da_u32, valuesOut);
  const long c = DA_ID(0);
  if (c >= chunks) return;
  const long begin = c * chunk;
  const long end = min(begin + chunk, DA_ALG_KEYED_COUNT(n, endGiven, keyedEnd));
  if (!DA_ALG_PASS_SORTS(widthGiven, width, shift)) {
    if (DA_ALG_PASS_COPIES(widthGiven, width, shift, toOutput))
      for (long i = begin; i < end; ++i) {
        keysOut[i] = keysIn[i];
        valuesOut[i] = valuesIn[i];
      }
    return;
  }
  da_u32 next[16];
  for (int d = 0; d < 16; ++d) next[d] = offsets[d * chunks + c];
  for (long i = begin; i < end; ++i) {
    const da_u64 k = keysIn[i];
    const da_u32 pos = next[DA_ALG_DIGIT(k, shift, endBit)]++;
    keysOut[pos] = k;
    valuesOut[pos] = valuesIn[i];
  }
}

/* ------------------------------------------------------------ reductions ---- */

/* A reduction folds, per chunk, the valid points of an xyz buffer (3 floats each) into
 * WIDTH values: the first WIDTH of (x, y, z, 1), so a sum's fourth value counts the
 * points. DA_ALG_REDUCTION(NAME, WIDTH, ACC, SLOT) defines its kernel
 *   da_alg_NAME(n, chunk, chunks, last, fromPoints, xyz, in, out)
 * which writes one tuple of WIDTH values per chunk to `out`: of the points of `xyz`
 * when fromPoints, else of the tuples of `in` (the previous level; the unused buffer
 * argument is any valid buffer). The host runs it, first on the points and then on
 * the tuples, until one chunk is left; `last` is non-zero for the launch that writes
 * the final tuple, which the host reads. The operation supplies, for the accumulator
 * type ACC and the element type SLOT of the tuple buffers:
 *   ACC  da_alg_NAME_identity()                        the start of every accumulator
 *   ACC  da_alg_NAME_fold(ACC acc, float x)            acc with one coordinate added
 *   ACC  da_alg_NAME_merge(ACC acc, const SLOT* b, i)  acc with tuple value i of b added
 *   void da_alg_NAME_store(SLOT* b, i, ACC acc, last)  writes tuple value i of b */
#define DA_ALG_REDUCTION(NAME, WIDTH, ACC, SLOT)                                                         \
  DA_KERNEL(da_alg_##NAME)(long n, long chunk, long chunks, int last, int fromPoints,                    \
                           DA_BUFFER(const float, xyz), DA_BUFFER(const SLOT, in), DA_BUFFER(SLOT, out)) { \
    DA_BUFFER_INIT(const float, xyz);                                                                    \
    DA_BUFFER_INIT(const SLOT, in);                                                                      \
    DA_BUFFER_INIT(SLOT, out);                                                                           \
    DA_ALG_CHUNK_RANGE();                                                                                \
    ACC acc[WIDTH];                                                                                      \
    for (int k = 0; k < WIDTH; ++k) acc[k] = da_alg_##NAME##_identity();                                 \
    for (long i = begin; i < end; ++i) {                                                                 \
      if (fromPoints) {                                                                                  \
        const float p[4] = {xyz[3 * i], xyz[3 * i + 1], xyz[3 * i + 2], 1.0f};                           \
        if (!da_pc_valid(p[0], p[1], p[2])) continue;                                                    \
        for (int k = 0; k < WIDTH; ++k) acc[k] = da_alg_##NAME##_fold(acc[k], p[k]);                     \
      } else {                                                                                           \
        for (int k = 0; k < WIDTH; ++k) acc[k] = da_alg_##NAME##_merge(acc[k], in, WIDTH * i + k);       \
      }                                                                                                  \
    }                                                                                                    \
    for (int k = 0; k < WIDTH; ++k) da_alg_##NAME##_store(out, WIDTH * c + k, acc[k], last);             \
  }

/* sumValidXYZ: (sum x, sum y, sum z, count) as doubles. */
#ifdef DA_HAS_FP64

inline double da_alg_sum_identity(void) { return 0.0; }
inline double da_alg_sum_fold(double acc, float x) { return acc + x; }
inline double da_alg_sum_merge(double acc, DA_GLOBAL const double* in, long i) { return acc + in[i]; }
inline void da_alg_sum_store(DA_GLOBAL double* out, long i, double v, int last) {
  (void)last;
  out[i] = v;
}
DA_ALG_REDUCTION(sum, 4, double, double)

#else  /* no double precision on this device */

/* A sum is the unevaluated pair hi + lo of floats (|lo| <= ulp(hi) / 2): about 48
 * bits, so coordinate sums stay as exact as with double and counts exact up to 2^48.
 * A pair takes the 8 bytes of a double in the partial buffers; the last level writes
 * the binary64 bits of hi + lo, which the host reads as the double it expects. */
#pragma OPENCL FP_CONTRACT OFF

typedef struct {
  float hi;
  float lo;
} da_pair;

/* (hi, lo) + x by Knuth's two-sum, renormalized. */
inline da_pair da_pair_add(da_pair a, float x) {
  const float s = a.hi + x;
  const float bp = s - a.hi;
  const float err = (a.hi - (s - bp)) + (x - bp);
  const float t = a.lo + err;
  da_pair r;
  r.hi = s + t;
  r.lo = t - (r.hi - s);
  return r;
}

/* A float as an integer significand m and exponent e (value = m * 2^e). */
inline void da_float_parts(float x, long* m, int* e) {
  const uint b = as_uint(x);
  const int biased = (int)((b >> 23) & 0xFFu);
  *m = (long)(b & 0x7FFFFFu);
  if (biased == 0) {
    *e = -149;
  } else {
    *m |= 0x800000L;
    *e = biased - 150;
  }
  if ((b >> 31) != 0u) *m = -*m;
}

/* The binary64 bits nearest (ties to even) to hi + lo, for a pair as da_pair_add
 * leaves it, computed with integers: the device has no double to do it. */
inline ulong da_pair_to_double_bits(float hi, float lo) {
  {  /* renormalize (two-sum), so that |lo| <= ulp(hi) / 2 below */
    const float s = hi + lo;
    const float bp = s - hi;
    lo = (hi - (s - bp)) + (lo - bp);
    hi = s;
  }
  const uint hb = as_uint(hi);
  const ulong sign = (ulong)(hb >> 31) << 63;
  if (((hb >> 23) & 0xFFu) == 0xFFu) return sign | (0x7FFUL << 52) | ((ulong)(hb & 0x7FFFFFu) << 29);
  if (hi == 0.0f) return sign;
  long mh, ml = 0;
  int eh, el = 0;
  da_float_parts(fabs(hi), &mh, &eh);
  if (lo != 0.0f) {
    da_float_parts(lo, &ml, &el);
    if (hi < 0.0f) ml = -ml;  /* relative to |hi| */
  }
  /* |hi| + lo = mh * 2^eh + ml * 2^el, el < eh. Shift mh left (it has 24 bits, so up
   * to 37 keeps the sum below 2^62) and lo right by the rest, keeping a sticky bit. */
  const int d = lo != 0.0f ? eh - el : 0;
  const int k = d < 37 ? d : 37;
  long m = mh << k;
  int e = eh - k;
  const int rest = d - k;
  if (rest == 0) {
    m += ml;
  } else {
    const long kept = rest < 63 ? (ml >> rest) : (ml < 0 ? -1L : 0L);
    const bool lost = rest < 63 ? (ml - (kept << rest)) != 0 : ml != 0;
    m += kept;
    if (lost) {
      m = (m << 1) | 1L;
      e -= 1;
    }
  }
  if (m <= 0) return sign;
  ulong u = (ulong)m;
  const int bits = 64 - (int)clz(u);
  if (bits > 53) {
    int drop = bits - 53;
    ulong q = u >> drop;
    const ulong rem = u & ((1UL << drop) - 1UL);
    const ulong halfway = 1UL << (drop - 1);
    if (rem > halfway || (rem == halfway && (q & 1UL) != 0UL)) q += 1UL;
    if ((q >> 53) != 0UL) {
      q >>= 1;
      drop += 1;
    }
    u = q;
    e += drop;
  } else {
    u <<= (53 - bits);
    e -= 53 - bits;
  }
  return sign | ((ulong)(e + 52 + 1023) << 52) | (u & 0xFFFFFFFFFFFFFUL);
}

inline da_pair da_alg_sum_identity(void) {
  da_pair zero;
  zero.hi = 0.0f;
  zero.lo = 0.0f;
  return zero;
}
inline da_pair da_alg_sum_fold(da_pair acc, float x) { return da_pair_add(acc, x); }
/* Value i of a partial buffer is a pair: two floats in the 8 bytes of a double. */
inline da_pair da_alg_sum_merge(da_pair acc, DA_GLOBAL const float* in, long i) {
  return da_pair_add(da_pair_add(acc, in[2 * i]), in[2 * i + 1]);
}
/* A pair, or (last level) the bits of the double the host reads. */
inline void da_alg_sum_store(DA_GLOBAL float* out, long i, da_pair v, int last) {
  if (last) {
    ((DA_GLOBAL ulong*)out)[i] = da_pair_to_double_bits(v.hi, v.lo);
  } else {
    out[2 * i] = v.hi;
    out[2 * i + 1] = v.lo;
  }
}
DA_ALG_REDUCTION(sum, 4, da_pair, float)

#endif /* DA_HAS_FP64 */

/* boundsValidXYZ: the component-wise minimum (+inf when no point is valid) and
 * maximum (-inf), each a reduction folding with one function from its identity. */
#define DA_ALG_EXTREME(NAME, FOLD, IDENTITY)                                                                  \
  inline float da_alg_##NAME##_identity(void) { return IDENTITY; }                                            \
  inline float da_alg_##NAME##_fold(float acc, float x) { return FOLD(acc, x); }                              \
  inline float da_alg_##NAME##_merge(float acc, DA_GLOBAL const float* in, long i) { return FOLD(acc, in[i]); } \
  inline void da_alg_##NAME##_store(DA_GLOBAL float* out, long i, float v, int last) {                        \
    (void)last;                                                                                               \
    out[i] = v;                                                                                               \
  }                                                                                                           \
  DA_ALG_REDUCTION(NAME, 3, float, float)
DA_ALG_EXTREME(lower, fmin, INFINITY) /* not "min"/"max": OpenCL headers may define those as macros */
DA_ALG_EXTREME(upper, fmax, -INFINITY)
