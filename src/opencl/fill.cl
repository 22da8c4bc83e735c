/* Strided N-d pattern fill for the OpenCL backend's fill() when the region is not
 * contiguous or the pattern is not a power-of-two size that clEnqueueFillBuffer
 * accepts (e.g. a 3-channel 8-bit or 3-channel float pixel).
 *
 * Same word scheme as da_copy_strided: one work item writes one naturally
 * aligned word of `wordBytes` bytes, taken from the pattern at its position
 * inside the element. */

#define DA_FILL_MAX_DIMS 32

typedef struct {
  long size[DA_FILL_MAX_DIMS];
  long step[DA_FILL_MAX_DIMS];
  uchar pattern[32];
} da_fill_layout;

kernel void da_fill_strided(global uchar* dst, ulong dstOffset, da_fill_layout layout, int dims, int wordBytes,
                            long wordsPerElem, long totalWords) {
  const long gid = (long)get_global_id(0);
  if (gid >= totalWords) return;
  long elem = gid / wordsPerElem;
  const int byteInElem = (int)((gid - elem * wordsPerElem) * wordBytes);
  long d = (long)dstOffset + byteInElem;
  for (int axis = dims - 1; axis >= 0; --axis) {
    const long n = layout.size[axis];
    d += (elem % n) * layout.step[axis];
    elem /= n;
  }
  const uchar* p = layout.pattern + byteInElem;
  switch (wordBytes) {
    case 16: *(global uint4*)(dst + d) = as_uint4(vload16(0, p)); break;
    case 8: *(global ulong*)(dst + d) = as_ulong(vload8(0, p)); break;
    case 4: *(global uint*)(dst + d) = as_uint(vload4(0, p)); break;
    case 2: *(global ushort*)(dst + d) = as_ushort(vload2(0, p)); break;
    default: dst[d] = p[0]; break;
  }
}
