/* Strided N-d copy for the OpenCL backend's copy() when a layout is neither one
 * contiguous run nor expressible as a clEnqueueCopyBufferRect region.
 *
 * One work item moves one word of `wordBytes` bytes (16, 8, 4, 2 or 1: the widest
 * size dividing the element size, every step and both offsets, so every access is
 * naturally aligned). The layout travels by value as a struct of 64-bit integers
 * only, so host and device agree on its layout without padding rules. Axis
 * dims-1 varies fastest; element bytes are innermost. Steps may be negative. */

#define DA_COPY_MAX_DIMS 32

typedef struct {
  long size[DA_COPY_MAX_DIMS];
  long dstStep[DA_COPY_MAX_DIMS];
  long srcStep[DA_COPY_MAX_DIMS];
} da_copy_layout;

kernel void da_copy_strided(global uchar* dst, ulong dstOffset, global const uchar* src, ulong srcOffset,
                            da_copy_layout layout, int dims, int wordBytes, long wordsPerElem,
                            long totalWords) {
  const long gid = (long)get_global_id(0);
  if (gid >= totalWords) return;
  long elem = gid / wordsPerElem;
  const long byteInElem = (gid - elem * wordsPerElem) * wordBytes;
  long d = (long)dstOffset + byteInElem;
  long s = (long)srcOffset + byteInElem;
  for (int axis = dims - 1; axis >= 0; --axis) {
    const long n = layout.size[axis];
    const long i = elem % n;
    elem /= n;
    d += i * layout.dstStep[axis];
    s += i * layout.srcStep[axis];
  }
  switch (wordBytes) {
    case 16: *(global uint4*)(dst + d) = *(global const uint4*)(src + s); break;
    case 8: *(global ulong*)(dst + d) = *(global const ulong*)(src + s); break;
    case 4: *(global uint*)(dst + d) = *(global const uint*)(src + s); break;
    case 2: *(global ushort*)(dst + d) = *(global const ushort*)(src + s); break;
    default: dst[d] = src[s]; break;
  }
}
