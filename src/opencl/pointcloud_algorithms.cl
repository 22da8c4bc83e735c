/* OpenCL side of src/backend/algorithms.hpp (host code: src/opencl/algorithms.cpp).
 *
 * Why hand-written: Boost.Compute would bring its own context/queue/program cache and
 * is barely maintained; clpp/VexCL are heavier still. These primitives are small.
 *
 * Why chunk-per-work-item: the kernels depend on no work-group size (no local memory,
 * no barriers; KernelLaunch::localSize stays 0), so every OpenCL implementation runs
 * them with the shape it prefers. Each work item owns one contiguous chunk of `chunk` elements and processes
 * it sequentially; a level of per-chunk results is combined by the same kernels
 * recursively. Every algorithm stays work-efficient (O(n) work per pass) and
 * deterministic, and the radix sort is stable because each chunk scatters its keys in
 * order into offsets that come from a digit-major exclusive scan of per-chunk counts. */

/* ---------------------------------------------------------------- scan ---- */

/* partial[c] = sum of in[c*chunk .. min(n, (c+1)*chunk)) */
DA_KERNEL(da_alg_scan_reduce)(long n, long chunk, long chunks, DA_BUFFER(const da_u32, in), DA_BUFFER(da_u32, partial)) {
  DA_BUFFER_INIT(const da_u32, in);
  DA_BUFFER_INIT(da_u32, partial);
  const long c = DA_ID(0);
  if (c >= chunks) return;
  const long begin = c * chunk;
  const long end = min(begin + chunk, n);
  da_u32 s = 0;
  for (long i = begin; i < end; ++i) s += in[i];
  partial[c] = s;
}

/* out[i] = partial[c] + exclusive scan of chunk c (partial already scanned); in place ok. */
DA_KERNEL(da_alg_scan_apply)(long n, long chunk, long chunks, int hasPartial, DA_BUFFER(const da_u32, partial),
                             DA_BUFFER(const da_u32, in), DA_BUFFER(da_u32, out)) {
  DA_BUFFER_INIT(const da_u32, partial);
  DA_BUFFER_INIT(const da_u32, in);
  DA_BUFFER_INIT(da_u32, out);
  const long c = DA_ID(0);
  if (c >= chunks) return;
  const long begin = c * chunk;
  const long end = min(begin + chunk, n);
  da_u32 running = hasPartial ? partial[c] : 0u;
  for (long i = begin; i < end; ++i) {
    const da_u32 v = in[i];
    out[i] = running;
    running += v;
  }
}

/* ---------------------------------------------------------- radix sort ---- */

/* hist[d * chunks + c] = how many keys of chunk c have digit d (4 bits at `shift`). */
DA_KERNEL(da_alg_radix_count)(long n, long chunk, long chunks, int shift, DA_BUFFER(const da_u64, keys),
                              DA_BUFFER(da_u32, hist)) {
  DA_BUFFER_INIT(const da_u64, keys);
  DA_BUFFER_INIT(da_u32, hist);
  const long c = DA_ID(0);
  if (c >= chunks) return;
  da_u32 count[16];
  for (int d = 0; d < 16; ++d) count[d] = 0u;
  const long begin = c * chunk;
  const long end = min(begin + chunk, n);
  for (long i = begin; i < end; ++i) ++count[(keys[i] >> shift) & 15UL];
  for (int d = 0; d < 16; ++d) hist[d * chunks + c] = count[d];
}

/* Stable scatter of chunk c: its keys with digit d go, in order, from offsets[d*chunks+c]. */
DA_KERNEL(da_alg_radix_scatter)(long n, long chunk, long chunks, int shift, DA_BUFFER(const da_u32, offsets),
                                DA_BUFFER(const da_u64, keysIn), DA_BUFFER(const da_u32, valuesIn),
                                DA_BUFFER(da_u64, keysOut), DA_BUFFER(da_u32, valuesOut)) {
  DA_BUFFER_INIT(const da_u32, offsets);
  DA_BUFFER_INIT(const da_u64, keysIn);
  DA_BUFFER_INIT(const da_u32, valuesIn);
  DA_BUFFER_INIT(da_u64, keysOut);
  DA_BUFFER_INIT(da_u32, valuesOut);
  const long c = DA_ID(0);
  if (c >= chunks) return;
  da_u32 next[16];
  for (int d = 0; d < 16; ++d) next[d] = offsets[d * chunks + c];
  const long begin = c * chunk;
  const long end = min(begin + chunk, n);
  for (long i = begin; i < end; ++i) {
    const da_u64 k = keysIn[i];
    const da_u32 pos = next[(k >> shift) & 15UL]++;
    keysOut[pos] = k;
    valuesOut[pos] = valuesIn[i];
  }
}

/* ------------------------------------------------------------ reductions ---- */

/* Every reduction kernel takes `last`: non-zero when it writes the final result
 * (one chunk), which the host reads. */

#ifdef DA_HAS_FP64

/* partial[4c..4c+3] = (sum x, sum y, sum z, count) of the finite points of chunk c. */
DA_KERNEL(da_alg_sum_xyz)(long n, long chunk, long chunks, int last, DA_BUFFER(const float, xyz),
                          DA_BUFFER(double, partial)) {
  DA_BUFFER_INIT(const float, xyz);
  DA_BUFFER_INIT(double, partial);
  (void)last;
  const long c = DA_ID(0);
  if (c >= chunks) return;
  const long begin = c * chunk;
  const long end = min(begin + chunk, n);
  double sx = 0.0, sy = 0.0, sz = 0.0, cnt = 0.0;
  for (long i = begin; i < end; ++i) {
    const float x = xyz[3 * i], y = xyz[3 * i + 1], z = xyz[3 * i + 2];
    if (!da_pc_valid(x, y, z)) continue;
    sx += x;
    sy += y;
    sz += z;
    cnt += 1.0;
  }
  partial[4 * c] = sx;
  partial[4 * c + 1] = sy;
  partial[4 * c + 2] = sz;
  partial[4 * c + 3] = cnt;
}

/* out[4c..4c+3] = sum of the 4-tuples in[4i..4i+3] of chunk c. */
DA_KERNEL(da_alg_sum4)(long n, long chunk, long chunks, int last, DA_BUFFER(const double, in),
                       DA_BUFFER(double, out)) {
  DA_BUFFER_INIT(const double, in);
  DA_BUFFER_INIT(double, out);
  (void)last;
  const long c = DA_ID(0);
  if (c >= chunks) return;
  const long begin = c * chunk;
  const long end = min(begin + chunk, n);
  double s0 = 0.0, s1 = 0.0, s2 = 0.0, s3 = 0.0;
  for (long i = begin; i < end; ++i) {
    s0 += in[4 * i];
    s1 += in[4 * i + 1];
    s2 += in[4 * i + 2];
    s3 += in[4 * i + 3];
  }
  out[4 * c] = s0;
  out[4 * c + 1] = s1;
  out[4 * c + 2] = s2;
  out[4 * c + 3] = s3;
}

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

/* Slot i of a partial buffer: a pair, or (last level) double bits. */
inline void da_pair_store(DA_GLOBAL float* out, long i, da_pair v, int last) {
  if (last) ((DA_GLOBAL ulong*)out)[i] = da_pair_to_double_bits(v.hi, v.lo);
  else {
    out[2 * i] = v.hi;
    out[2 * i + 1] = v.lo;
  }
}

DA_KERNEL(da_alg_sum_xyz)(long n, long chunk, long chunks, int last, DA_BUFFER(const float, xyz),
                          DA_BUFFER(float, partial)) {
  DA_BUFFER_INIT(const float, xyz);
  DA_BUFFER_INIT(float, partial);
  const long c = DA_ID(0);
  if (c >= chunks) return;
  const long begin = c * chunk;
  const long end = min(begin + chunk, n);
  da_pair sx = {0.0f, 0.0f}, sy = {0.0f, 0.0f}, sz = {0.0f, 0.0f}, cnt = {0.0f, 0.0f};
  for (long i = begin; i < end; ++i) {
    const float x = xyz[3 * i], y = xyz[3 * i + 1], z = xyz[3 * i + 2];
    if (!da_pc_valid(x, y, z)) continue;
    sx = da_pair_add(sx, x);
    sy = da_pair_add(sy, y);
    sz = da_pair_add(sz, z);
    cnt = da_pair_add(cnt, 1.0f);
  }
  da_pair_store(partial, 4 * c, sx, last);
  da_pair_store(partial, 4 * c + 1, sy, last);
  da_pair_store(partial, 4 * c + 2, sz, last);
  da_pair_store(partial, 4 * c + 3, cnt, last);
}

DA_KERNEL(da_alg_sum4)(long n, long chunk, long chunks, int last, DA_BUFFER(const float, in), DA_BUFFER(float, out)) {
  DA_BUFFER_INIT(const float, in);
  DA_BUFFER_INIT(float, out);
  const long c = DA_ID(0);
  if (c >= chunks) return;
  const long begin = c * chunk;
  const long end = min(begin + chunk, n);
  da_pair s[4] = {{0.0f, 0.0f}, {0.0f, 0.0f}, {0.0f, 0.0f}, {0.0f, 0.0f}};
  for (long i = begin; i < end; ++i)
    for (int k = 0; k < 4; ++k) s[k] = da_pair_add(da_pair_add(s[k], in[8 * i + 2 * k]), in[8 * i + 2 * k + 1]);
  for (int k = 0; k < 4; ++k) da_pair_store(out, 4 * c + k, s[k], last);
}

#endif /* DA_HAS_FP64 */

/* partial[3c..3c+2] = component-wise min of the finite points of chunk c (+inf if none). */
DA_KERNEL(da_alg_min_xyz)(long n, long chunk, long chunks, int last, DA_BUFFER(const float, xyz),
                          DA_BUFFER(float, partial)) {
  DA_BUFFER_INIT(const float, xyz);
  DA_BUFFER_INIT(float, partial);
  (void)last;
  const long c = DA_ID(0);
  if (c >= chunks) return;
  const long begin = c * chunk;
  const long end = min(begin + chunk, n);
  float mx = INFINITY, my = INFINITY, mz = INFINITY;
  for (long i = begin; i < end; ++i) {
    const float x = xyz[3 * i], y = xyz[3 * i + 1], z = xyz[3 * i + 2];
    if (!da_pc_valid(x, y, z)) continue;
    mx = fmin(mx, x);
    my = fmin(my, y);
    mz = fmin(mz, z);
  }
  partial[3 * c] = mx;
  partial[3 * c + 1] = my;
  partial[3 * c + 2] = mz;
}

/* out[3c..3c+2] = component-wise min of the triples in[3i..3i+2] of chunk c. */
DA_KERNEL(da_alg_min3)(long n, long chunk, long chunks, int last, DA_BUFFER(const float, in), DA_BUFFER(float, out)) {
  DA_BUFFER_INIT(const float, in);
  DA_BUFFER_INIT(float, out);
  (void)last;
  const long c = DA_ID(0);
  if (c >= chunks) return;
  const long begin = c * chunk;
  const long end = min(begin + chunk, n);
  float mx = INFINITY, my = INFINITY, mz = INFINITY;
  for (long i = begin; i < end; ++i) {
    mx = fmin(mx, in[3 * i]);
    my = fmin(my, in[3 * i + 1]);
    mz = fmin(mz, in[3 * i + 2]);
  }
  out[3 * c] = mx;
  out[3 * c + 1] = my;
  out[3 * c + 2] = mz;
}
