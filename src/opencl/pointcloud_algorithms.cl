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

/* partial[4c..4c+3] = (sum x, sum y, sum z, count) of the finite points of chunk c. */
DA_KERNEL(da_alg_sum_xyz)(long n, long chunk, long chunks, DA_BUFFER(const float, xyz), DA_BUFFER(double, partial)) {
  DA_BUFFER_INIT(const float, xyz);
  DA_BUFFER_INIT(double, partial);
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
DA_KERNEL(da_alg_sum4)(long n, long chunk, long chunks, DA_BUFFER(const double, in), DA_BUFFER(double, out)) {
  DA_BUFFER_INIT(const double, in);
  DA_BUFFER_INIT(double, out);
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

/* partial[3c..3c+2] = component-wise min of the finite points of chunk c (+inf if none). */
DA_KERNEL(da_alg_min_xyz)(long n, long chunk, long chunks, DA_BUFFER(const float, xyz), DA_BUFFER(float, partial)) {
  DA_BUFFER_INIT(const float, xyz);
  DA_BUFFER_INIT(float, partial);
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
DA_KERNEL(da_alg_min3)(long n, long chunk, long chunks, DA_BUFFER(const float, in), DA_BUFFER(float, out)) {
  DA_BUFFER_INIT(const float, in);
  DA_BUFFER_INIT(float, out);
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
