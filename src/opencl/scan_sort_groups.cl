/* The work-group shape of the OpenCL device's exclusive scan and radix sort (host
 * code: opencl_primitives.cpp; the geometry: src/backend/scan_sort_geometry.h).
 *
 * Why two shapes: scan_sort_reduce.cl gives each work item one contiguous chunk, which
 * suits a CPU (a core streams through its chunk; no barriers), but leaves a GPU with
 * a few hundred work items whose neighbouring loads lie a chunk apart. Here a
 * work-group of DA_ALG_GROUP work items owns a tile of consecutive elements: it loads
 * the tile coalesced (work item i reads elements i, i + DA_ALG_GROUP, ...) into local
 * memory, each work item then takes a few consecutive elements of the tile, and the
 * group combines their results with a scan in local memory (OpenCL C 1.2 has no
 * work-group functions). The host runs these kernels on GPUs and other non-CPU
 * devices, the chunked ones on CPUs.
 *
 * Scan, reduce-then-scan: da_alg_scan_tile_sums writes every tile's sum, the host
 * scans the sums (with these kernels, recursively), and da_alg_scan_tiles scans each
 * tile from its scanned sum; each element is read twice and written once, and in place
 * works because a work-group reads its whole tile before writing it. A scan of a few
 * tiles is one launch of da_alg_scan_tiles_in_turn: a launch costs more than a
 * work-group's pass over a handful of tiles.
 *
 * Radix sort, DA_ALG_RADIX_BITS a pass: da_alg_radix_tile_counts writes each tile's
 * digit counts digit-major (hist[d * tiles + t]), the host scans them, and
 * da_alg_radix_tile_scatter ranks every key of a tile among the tile's keys of its
 * digit in tile order (so the sort is stable), groups the tile by digit in local
 * memory and writes each digit's run, coalesced, from its scanned offset.
 *
 * Bounds of the valid points, one launch a level: da_alg_bounds_tiles folds each tile
 * of points (then of the tiles' bounds) into one (min xyz, max xyz) tuple, until one
 * tile is left. The sum of the valid points stays chunked (scan_sort_reduce.cl): its
 * double (or float pair) accumulators would not fit this file's local-memory tree as
 * simply, and no per-frame stage needs it. */

/* Local index of element i of a tile whose work items read DA_ALG_SCAN_ITEMS
 * consecutive elements: one padding word per 32 keeps those reads on distinct banks. */
#define DA_ALG_PAD(i) ((i) + ((i) >> 5))

/* The work-group scans: da_group_inclusive_scan (src/kernels/group_scan.h) over
 * DA_ALG_GROUP work items. */
#if DA_ALG_COUNT_WORDS > DA_GROUP_SCAN_MAX_WORDS
#error "a tile's digit counts are more words than da_group_inclusive_scan scans"
#endif

/* ---------------------------------------------------------------- scan ---- */

/* The gate of every scan kernel here: a scan of a radix pass's digit counts does nothing
 * when the pass is past the key width (DA_ALG_PASS_SORTS with the pass's shift), as the
 * pass's own kernels do; other scans pass shift 0 and no width, which always scans. */
#define DA_ALG_SCAN_GATE_PARAMS(S, B) S(int, shift) S(int, widthGiven) B(const da_u32, width)

/* sums[t] = the sum of tile t of in[0, n). */
#define DA_ALG_SCAN_TILE_SUMS_PARAMS(S0, B0, S, B) \
  S0(long, n) DA_ALG_SCAN_GATE_PARAMS(S, B) B(const da_u32, in) B(da_u32, sums)
DA_KERNEL_GROUP(da_alg_scan_tile_sums, DA_ALG_GROUP, 1)(DA_PARAMS(DA_ALG_SCAN_TILE_SUMS_PARAMS)) {
  DA_BUFFERS_INIT(DA_ALG_SCAN_TILE_SUMS_PARAMS);
  DA_LOCAL_ARRAY(da_u32, part, DA_ALG_GROUP);
  if (!DA_ALG_PASS_SORTS(widthGiven, width, shift)) return;
  const int item = DA_LOCAL_ID();
  const long base = DA_GROUP_ID() * DA_ALG_SCAN_TILE;
  da_u32 s = 0u;
  for (int k = 0; k < DA_ALG_SCAN_ITEMS; ++k) {
    const long i = base + k * DA_ALG_GROUP + item;
    if (i < n) s += in[i];
  }
  part[item] = s;
  for (int width = DA_ALG_GROUP / 2; width > 0; width >>= 1) {
    DA_BARRIER();
    if (item < width) part[item] += part[item + width];
  }
  if (item == 0) sums[DA_GROUP_ID()] = part[0];
}

/* Exclusive scan of tile `base` of in[0, n) into out, starting from `seed`; returns
 * the tile's sum to every work item. Every work item calls it; it ends with a barrier,
 * so `tile` and `sums` may be reused right after. In place works: the tile is read
 * whole before it is written. */
inline da_u32 da_alg_scan_tile(long n, long base, da_u32 seed, DA_GLOBAL const da_u32* in, DA_GLOBAL da_u32* out,
                               DA_LOCAL da_u32* tile, DA_LOCAL da_u32* sums) {
  const int item = DA_LOCAL_ID();
  for (int k = 0; k < DA_ALG_SCAN_ITEMS; ++k) {
    const int j = k * DA_ALG_GROUP + item;
    tile[DA_ALG_PAD(j)] = base + j < n ? in[base + j] : 0u;
  }
  DA_BARRIER();
  da_u32 v[DA_ALG_SCAN_ITEMS];
  da_u32 mine = 0u;
  for (int e = 0; e < DA_ALG_SCAN_ITEMS; ++e) {
    v[e] = tile[DA_ALG_PAD(DA_ALG_SCAN_ITEMS * item + e)];
    mine += v[e];
  }
  sums[item] = mine;
  da_group_inclusive_scan(sums, 1, DA_ALG_GROUP);
  /* The scan's barriers also mean every item has read its values: tile is free. */
  da_u32 running = sums[item] - mine + seed;
  const da_u32 total = sums[DA_ALG_GROUP - 1];
  for (int e = 0; e < DA_ALG_SCAN_ITEMS; ++e) {
    tile[DA_ALG_PAD(DA_ALG_SCAN_ITEMS * item + e)] = running;
    running += v[e];
  }
  DA_BARRIER();
  for (int k = 0; k < DA_ALG_SCAN_ITEMS; ++k) {
    const int j = k * DA_ALG_GROUP + item;
    if (base + j < n) out[base + j] = tile[DA_ALG_PAD(j)];
  }
  DA_BARRIER();
  return total;
}

/* out = the exclusive scan of in[0, n), tile by tile, each tile starting from
 * seeds[t] (its scanned tile sum) when seeded, else from 0 (a single tile); in place
 * when in and out are the same memory. */
#define DA_ALG_SCAN_TILES_PARAMS(S0, B0, S, B) \
  S0(long, n) DA_ALG_SCAN_GATE_PARAMS(S, B) S(int, seeded) B(const da_u32, seeds) B(const da_u32, in) B(da_u32, out)
DA_KERNEL_GROUP(da_alg_scan_tiles, DA_ALG_GROUP, 1)(DA_PARAMS(DA_ALG_SCAN_TILES_PARAMS)) {
  DA_BUFFERS_INIT(DA_ALG_SCAN_TILES_PARAMS);
  DA_LOCAL_ARRAY(da_u32, tile, DA_ALG_PAD(DA_ALG_SCAN_TILE));
  DA_LOCAL_ARRAY(da_u32, sums, DA_ALG_GROUP);
  if (!DA_ALG_PASS_SORTS(widthGiven, width, shift)) return;
  const long t = DA_GROUP_ID();
  (void)da_alg_scan_tile(n, t * DA_ALG_SCAN_TILE, seeded ? seeds[t] : 0u, in, out, tile, sums);
}

/* out = the exclusive scan of in[0, n) by one work-group that scans the tiles in turn,
 * carrying the running sum: for a few tiles (a radix pass's digit counts), one launch
 * instead of the tile sums, their scan and the seeded scan. */
#define DA_ALG_SCAN_TILES_IN_TURN_PARAMS(S0, B0, S, B) \
  S0(long, n) DA_ALG_SCAN_GATE_PARAMS(S, B) B(const da_u32, in) B(da_u32, out)
DA_KERNEL_GROUP(da_alg_scan_tiles_in_turn, DA_ALG_GROUP, 1)(DA_PARAMS(DA_ALG_SCAN_TILES_IN_TURN_PARAMS)) {
  DA_BUFFERS_INIT(DA_ALG_SCAN_TILES_IN_TURN_PARAMS);
  DA_LOCAL_ARRAY(da_u32, tile, DA_ALG_PAD(DA_ALG_SCAN_TILE));
  DA_LOCAL_ARRAY(da_u32, sums, DA_ALG_GROUP);
  if (!DA_ALG_PASS_SORTS(widthGiven, width, shift)) return;
  da_u32 carry = 0u;
  for (long base = 0; base < n; base += DA_ALG_SCAN_TILE) carry += da_alg_scan_tile(n, base, carry, in, out, tile, sums);
}

/* ---------------------------------------------------------- radix sort ---- */

/* Counter copies per digit in da_alg_radix_tile_counts: work items spread their
 * increments over them, so that keys of one digit (say, all high bits zero) do not
 * all wait on one local atomic. */
#define DA_ALG_COUNT_COPIES 8

/* hist[d * tiles + t] = how many keys of tile t of keys[0, n) have digit d
 * (DA_ALG_RADIX_BITS bits at `shift`, below endBit), counting the keys before the keyed end only
 * (endGiven, keyedEnd: see DA_ALG_KEYED_COUNT); nothing for a pass past the key width
 * (widthGiven, width: see DA_ALG_PASS_SORTS). */
#define DA_ALG_RADIX_TILE_COUNTS_PARAMS(S0, B0, S, B)                                                      \
  S0(long, n) S(long, tiles) S(int, shift) S(int, endBit) S(int, widthGiven) B(const da_u32, width)      \
      S(int, endGiven) B(const da_u32, keyedEnd) B(const da_u64, keys) B(da_u32, hist)
DA_KERNEL_GROUP(da_alg_radix_tile_counts, DA_ALG_GROUP, 1)(DA_PARAMS(DA_ALG_RADIX_TILE_COUNTS_PARAMS)) {
  DA_BUFFERS_INIT(DA_ALG_RADIX_TILE_COUNTS_PARAMS);
  DA_LOCAL_ARRAY(da_u32, counts, DA_ALG_DIGITS * DA_ALG_COUNT_COPIES);
  if (!DA_ALG_PASS_SORTS(widthGiven, width, shift)) return;
  const int item = DA_LOCAL_ID();
  const long t = DA_GROUP_ID();
  const long base = t * DA_ALG_SORT_TILE;
  const long m = DA_ALG_KEYED_COUNT(n, endGiven, keyedEnd);
  for (int i = item; i < DA_ALG_DIGITS * DA_ALG_COUNT_COPIES; i += DA_ALG_GROUP) counts[i] = 0u;
  DA_BARRIER();
  for (int k = 0; k < DA_ALG_SORT_ITEMS; ++k) {
    const long i = base + k * DA_ALG_GROUP + item;
    if (i < m) {
      const int d = DA_ALG_DIGIT(keys[i], shift, endBit);
      atomic_inc(&counts[d * DA_ALG_COUNT_COPIES + item % DA_ALG_COUNT_COPIES]);
    }
  }
  DA_BARRIER();
  if (item < DA_ALG_DIGITS) {
    da_u32 total = 0u;
    for (int c = 0; c < DA_ALG_COUNT_COPIES; ++c) total += counts[item * DA_ALG_COUNT_COPIES + c];
    hist[item * tiles + t] = total;
  }
}

/* Count d of packed counts c (16 bits each, two to a word). c is selected word by
 * word instead of indexed by d, which would put it in memory on a GPU. */
inline da_u32 da_alg_packed_count(const da_u32* c, int d) {
  da_u32 word = 0u;
  for (int w = 0; w < DA_ALG_COUNT_WORDS; ++w) word = w == (d >> 1) ? c[w] : word;
  return (word >> ((d & 1) * 16)) & 0xFFFFu;
}

/* Stable scatter of tile t of (keysIn, valuesIn)[0, n), up to the keyed end: its keys
 * with digit d go, in order, from offsets[d * tiles + t] (the scanned hist of
 * da_alg_radix_tile_counts). A pass past the key width copies the tile instead, or does
 * nothing (DA_ALG_PASS_COPIES). */
#define DA_ALG_RADIX_TILE_SCATTER_PARAMS(S0, B0, S, B)                                                     \
  S0(long, n) S(long, tiles) S(int, shift) S(int, endBit) S(int, toOutput) S(int, widthGiven)            \
      B(const da_u32, width)                                                                               \
      S(int, endGiven) B(const da_u32, keyedEnd) B(const da_u32, offsets) B(const da_u64, keysIn)          \
      B(const da_u32, valuesIn) B(da_u64, keysOut) B(da_u32, valuesOut)
DA_KERNEL_GROUP(da_alg_radix_tile_scatter, DA_ALG_GROUP, 1)(DA_PARAMS(DA_ALG_RADIX_TILE_SCATTER_PARAMS)) {
  DA_BUFFERS_INIT(DA_ALG_RADIX_TILE_SCATTER_PARAMS);
  DA_LOCAL_ARRAY(da_u64, tileKeys, DA_ALG_SORT_TILE);
  DA_LOCAL_ARRAY(da_u32, tileValues, DA_ALG_SORT_TILE);
  DA_LOCAL_ARRAY(da_u32, counts, DA_ALG_COUNT_WORDS * DA_ALG_GROUP);
  DA_LOCAL_ARRAY(da_u32, digitStart, DA_ALG_DIGITS);   /* in the tile grouped by digit */
  DA_LOCAL_ARRAY(da_u32, digitOffset, DA_ALG_DIGITS);  /* in the output */
  const int item = DA_LOCAL_ID();
  const long t = DA_GROUP_ID();
  const long base = t * DA_ALG_SORT_TILE;
  const long m = DA_ALG_KEYED_COUNT(n, endGiven, keyedEnd);
  if (base >= m) return; /* the whole group: nothing of its tile is sorted */
  const int size = (int)min((long)DA_ALG_SORT_TILE, m - base);
  if (!DA_ALG_PASS_SORTS(widthGiven, width, shift)) {
    if (DA_ALG_PASS_COPIES(widthGiven, width, shift, toOutput))
      for (int j = item; j < size; j += DA_ALG_GROUP) {
        keysOut[base + j] = keysIn[base + j];
        valuesOut[base + j] = valuesIn[base + j];
      }
    return;
  }
  for (int k = 0; k < DA_ALG_SORT_ITEMS; ++k) {
    const int j = k * DA_ALG_GROUP + item;
    if (j < size) {
      tileKeys[j] = keysIn[base + j];
      tileValues[j] = valuesIn[base + j];
    }
  }
  DA_BARRIER();
  /* This item's keys, consecutive in the tile; for each, its digit (DA_ALG_DIGITS
   * past the tile's end: counted nowhere) and how many of the item's earlier keys
   * share it. mine: the item's count of every digit. */
  da_u64 key[DA_ALG_SORT_ITEMS];
  da_u32 value[DA_ALG_SORT_ITEMS];
  int digit[DA_ALG_SORT_ITEMS];
  da_u32 before[DA_ALG_SORT_ITEMS];
  da_u32 mine[DA_ALG_COUNT_WORDS];
  for (int w = 0; w < DA_ALG_COUNT_WORDS; ++w) mine[w] = 0u;
  for (int e = 0; e < DA_ALG_SORT_ITEMS; ++e) {
    const int j = DA_ALG_SORT_ITEMS * item + e;
    digit[e] = DA_ALG_DIGITS;
    before[e] = 0u;
    key[e] = 0UL;
    value[e] = 0u;
    if (j < size) {
      key[e] = tileKeys[j];
      value[e] = tileValues[j];
      const int d = DA_ALG_DIGIT(key[e], shift, endBit);
      digit[e] = d;
      before[e] = da_alg_packed_count(mine, d);
      for (int w = 0; w < DA_ALG_COUNT_WORDS; ++w) mine[w] += w == (d >> 1) ? 1u << ((d & 1) * 16) : 0u;
    }
  }
  for (int w = 0; w < DA_ALG_COUNT_WORDS; ++w) counts[w * DA_ALG_GROUP + item] = mine[w];
  da_group_inclusive_scan(counts, DA_ALG_COUNT_WORDS, DA_ALG_GROUP);
  if (item < DA_ALG_DIGITS) {
    /* The tile's counts are the last item's inclusive sums. */
    da_u32 start = 0u;
    for (int d = 0; d < item; ++d)
      start += (counts[(d >> 1) * DA_ALG_GROUP + DA_ALG_GROUP - 1] >> ((d & 1) * 16)) & 0xFFFFu;
    digitStart[item] = start;
    digitOffset[item] = offsets[item * tiles + t];
  }
  /* The items before this one, per digit: inclusive minus own, field by field (no
   * field borrows: each inclusive count includes the item's own). */
  da_u32 earlier[DA_ALG_COUNT_WORDS];
  for (int w = 0; w < DA_ALG_COUNT_WORDS; ++w) earlier[w] = counts[w * DA_ALG_GROUP + item] - mine[w];
  DA_BARRIER();
  /* Every item has read its keys from the tile (before the scan's barriers): the
   * tile now takes them grouped by digit. */
  for (int e = 0; e < DA_ALG_SORT_ITEMS; ++e) {
    const int d = digit[e];
    if (d < DA_ALG_DIGITS) {
      const da_u32 rank = digitStart[d] + da_alg_packed_count(earlier, d) + before[e];
      tileKeys[rank] = key[e];
      tileValues[rank] = value[e];
    }
  }
  DA_BARRIER();
  for (int k = 0; k < DA_ALG_SORT_ITEMS; ++k) {
    const int j = k * DA_ALG_GROUP + item;
    if (j < size) {
      const da_u64 k64 = tileKeys[j];
      const int d = DA_ALG_DIGIT(k64, shift, endBit);
      const da_u32 position = digitOffset[d] + (da_u32)j - digitStart[d];
      keysOut[position] = k64;
      valuesOut[position] = tileValues[j];
    }
  }
}

/* The rest of a sort whose passes the host launched only up to its guess of the key
 * width: one work-group sorts keys / values [0, n) (up to the keyed end), already
 * sorted by the bits below fromShift, by the bits from fromShift up to the width,
 * DA_ALG_RADIX_BITS a pass, and leaves the result in keys / values (altKeys /
 * altValues hold n entries). It returns at once when the width is within the guess,
 * which is what the host's guess is for: one launch instead of three per pass past it.
 * A pass counts the digits of all entries, then scatters tile after tile of
 * DA_ALG_GROUP entries, each ranked among its tile's entries of its digit with the
 * packed counts of da_alg_radix_tile_scatter, behind the tiles before it: stable.
 * One work-group is slow (a guess too low costs far more than a right one saves), and
 * it needs no second launch to order its tiles. */
#define DA_ALG_RADIX_REST_PARAMS(S0, B0, S, B)                                                           \
  S0(long, n) S(int, fromShift) S(int, endBit) B(const da_u32, width) S(int, endGiven)                  \
      B(const da_u32, keyedEnd) B(da_u64, keys) B(da_u32, values) B(da_u64, altKeys) B(da_u32, altValues)
DA_KERNEL_GROUP(da_alg_radix_rest, DA_ALG_GROUP, 1)(DA_PARAMS(DA_ALG_RADIX_REST_PARAMS)) {
  DA_BUFFERS_INIT(DA_ALG_RADIX_REST_PARAMS);
  DA_LOCAL_ARRAY(da_u32, counts, DA_ALG_COUNT_WORDS * DA_ALG_GROUP);
  DA_LOCAL_ARRAY(da_u32, digitStart, DA_ALG_DIGITS);
  const int top = min((int)width[0], endBit);
  if (top <= fromShift) return; /* the whole group */
  const int item = DA_LOCAL_ID();
  const long m = DA_ALG_KEYED_COUNT(n, endGiven, keyedEnd);
  DA_GLOBAL da_u64* srcK = keys;
  DA_GLOBAL da_u32* srcV = values;
  DA_GLOBAL da_u64* dstK = altKeys;
  DA_GLOBAL da_u32* dstV = altValues;
  for (int shift = fromShift; shift < top; shift += DA_ALG_RADIX_BITS) {
    /* Where each digit's entries start: the exclusive scan of the pass's histogram. */
    if (item < DA_ALG_DIGITS) digitStart[item] = 0u;
    DA_BARRIER();
    for (long i = item; i < m; i += DA_ALG_GROUP)
      atomic_inc(&digitStart[DA_ALG_DIGIT(srcK[i], shift, endBit)]);
    DA_BARRIER();
    if (item == 0) {
      da_u32 sum = 0u;
      for (int d = 0; d < DA_ALG_DIGITS; ++d) {
        const da_u32 c = digitStart[d];
        digitStart[d] = sum;
        sum += c;
      }
    }
    for (long base = 0; base < m; base += DA_ALG_GROUP) {
      const long i = base + item;
      const int d = i < m ? DA_ALG_DIGIT(srcK[i], shift, endBit) : DA_ALG_DIGITS;
      da_u32 mine[DA_ALG_COUNT_WORDS];
      for (int w = 0; w < DA_ALG_COUNT_WORDS; ++w) {
        mine[w] = d < DA_ALG_DIGITS && w == (d >> 1) ? 1u << ((d & 1) * 16) : 0u;
        counts[w * DA_ALG_GROUP + item] = mine[w];
      }
      da_group_inclusive_scan(counts, DA_ALG_COUNT_WORDS, DA_ALG_GROUP); /* barriers first and last */
      if (d < DA_ALG_DIGITS) {
        da_u32 earlier[DA_ALG_COUNT_WORDS];
        for (int w = 0; w < DA_ALG_COUNT_WORDS; ++w) earlier[w] = counts[w * DA_ALG_GROUP + item] - mine[w];
        const da_u32 to = digitStart[d] + da_alg_packed_count(earlier, d);
        dstK[to] = srcK[i];
        dstV[to] = srcV[i];
      }
      DA_BARRIER(); /* every item has read digitStart before it moves past the tile */
      if (item < DA_ALG_DIGITS)
        digitStart[item] += (counts[(item >> 1) * DA_ALG_GROUP + DA_ALG_GROUP - 1] >> ((item & 1) * 16)) & 0xFFFFu;
      DA_BARRIER(); /* and the tile's counts before the next tile writes them */
    }
    DA_GLOBAL da_u64* const k = srcK;
    DA_GLOBAL da_u32* const v = srcV;
    srcK = dstK, srcV = dstV, dstK = k, dstV = v;
    /* The pass's global writes are visible to the next pass's (and the copy's) reads. */
    barrier(CLK_LOCAL_MEM_FENCE | CLK_GLOBAL_MEM_FENCE);
  }
  if (srcK != keys)
    for (long i = item; i < m; i += DA_ALG_GROUP) {
      keys[i] = srcK[i];
      values[i] = srcV[i];
    }
}

/* ------------------------------------------------------------- bounds ---- */

/* out[6 t .. 6 t + 5] = (min x, y, z, max x, y, z) over tile t: of the valid points
 * of xyz[0, n) when fromPoints, else of the n tuples of `in` (the level before; the
 * unused buffer argument is any valid buffer). +inf / -inf where nothing is valid. */
#define DA_ALG_BOUNDS_TILES_PARAMS(S0, B0, S, B) \
  S0(long, n) S(int, fromPoints) B(const float, xyz) B(const float, in) B(float, out)
DA_KERNEL_GROUP(da_alg_bounds_tiles, DA_ALG_GROUP, 1)(DA_PARAMS(DA_ALG_BOUNDS_TILES_PARAMS)) {
  DA_BUFFERS_INIT(DA_ALG_BOUNDS_TILES_PARAMS);
  DA_LOCAL_ARRAY(float, part, 6 * DA_ALG_GROUP);
  const int item = DA_LOCAL_ID();
  const long base = DA_GROUP_ID() * DA_ALG_BOUNDS_TILE;
  float b[6] = {INFINITY, INFINITY, INFINITY, -INFINITY, -INFINITY, -INFINITY};
  for (int k = 0; k < DA_ALG_BOUNDS_ITEMS; ++k) {
    const long i = base + k * DA_ALG_GROUP + item;  /* neighbouring items, neighbouring points */
    if (i >= n) break;
    if (fromPoints) {
      const float x = xyz[3 * i], y = xyz[3 * i + 1], z = xyz[3 * i + 2];
      if (!da_pc_valid(x, y, z)) continue;
      b[0] = fmin(b[0], x);
      b[1] = fmin(b[1], y);
      b[2] = fmin(b[2], z);
      b[3] = fmax(b[3], x);
      b[4] = fmax(b[4], y);
      b[5] = fmax(b[5], z);
    } else {
      for (int c = 0; c < 3; ++c) {
        b[c] = fmin(b[c], in[6 * i + c]);
        b[3 + c] = fmax(b[3 + c], in[6 * i + 3 + c]);
      }
    }
  }
  for (int c = 0; c < 6; ++c) part[c * DA_ALG_GROUP + item] = b[c];
  for (int width = DA_ALG_GROUP / 2; width > 0; width >>= 1) {
    DA_BARRIER();
    if (item < width)
      for (int c = 0; c < 6; ++c) {
        const float mine = part[c * DA_ALG_GROUP + item], other = part[c * DA_ALG_GROUP + item + width];
        part[c * DA_ALG_GROUP + item] = c < 3 ? fmin(mine, other) : fmax(mine, other);
      }
  }
  if (item < 6) out[6 * DA_GROUP_ID() + item] = part[item * DA_ALG_GROUP];
}
