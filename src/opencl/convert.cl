/* Depth conversion for the OpenCL backend's convert():
 *   dst(r, v) = saturate<dstDepth>(alpha * src(r, v) + beta)
 * with OpenCV's rules: integers round half to even and clamp (NaN -> 0), the
 * saturate_cast of src/kernels/saturate.h; F32 results round to nearest; F16
 * results go through float first (as OpenCV's float16_t does) and overflow to
 * infinity.
 *
 * One kernel serves all 64 depth pairs through a run-time switch, which keeps
 * the program small; the switch is uniform across work items, so it costs no
 * divergence. Depth codes are OpenCV's: U8 S8 U16 S16 S32 F32 F64 F16 = 0..7.
 *
 * Arithmetic is double when the device has fp64 (DA_HAS_FP64, defined by the
 * backend), else float. Integer-to-integer conversions without scaling use 64-bit
 * integers, so S32 values stay exact even without fp64. */

#pragma OPENCL FP_CONTRACT OFF

#ifdef DA_HAS_FP64
typedef double da_real;
#define DA_SAT(depth, v) da_sat_##depth##_d(v)
#else
typedef float da_real;
#define DA_SAT(depth, v) da_sat_##depth##_f(v)
#endif

inline int da_depth_bytes(int depth) {
  switch (depth) {
    case 0: case 1: return 1;
    case 2: case 3: case 7: return 2;
    case 4: case 5: return 4;
    default: return 8;
  }
}

inline da_real da_load_real(global const uchar* p, int depth) {
  switch (depth) {
    case 0: return (da_real)(*p);
    case 1: return (da_real)(*(global const char*)p);
    case 2: return (da_real)(*(global const ushort*)p);
    case 3: return (da_real)(*(global const short*)p);
    case 4: return (da_real)(*(global const int*)p);
    case 5: return (da_real)(*(global const float*)p);
#ifdef DA_HAS_FP64
    case 6: return *(global const double*)p;
#endif
    case 7: return (da_real)vload_half(0, (global const half*)p);
    default: return (da_real)0;
  }
}

inline void da_store_real(global uchar* p, int depth, da_real v) {
  switch (depth) {
    case 0: *p = DA_SAT(u8, v); break;
    case 1: *(global char*)p = DA_SAT(s8, v); break;
    case 2: *(global ushort*)p = DA_SAT(u16, v); break;
    case 3: *(global short*)p = DA_SAT(s16, v); break;
    case 4: *(global int*)p = DA_SAT(s32, v); break;
    case 5: *(global float*)p = (float)v; break;
#ifdef DA_HAS_FP64
    case 6: *(global double*)p = v; break;
#endif
    case 7: vstore_half_rte((float)v, 0, (global half*)p); break;
    default: break;
  }
}

inline long da_load_int(global const uchar* p, int depth) {
  switch (depth) {
    case 0: return (long)(*p);
    case 1: return (long)(*(global const char*)p);
    case 2: return (long)(*(global const ushort*)p);
    case 3: return (long)(*(global const short*)p);
    default: return (long)(*(global const int*)p);
  }
}

inline void da_store_int(global uchar* p, int depth, long v) {
  switch (depth) {
    case 0: *p = convert_uchar_sat(v); break;
    case 1: *(global char*)p = convert_char_sat(v); break;
    case 2: *(global ushort*)p = convert_ushort_sat(v); break;
    case 3: *(global short*)p = convert_short_sat(v); break;
    default: *(global int*)p = convert_int_sat(v); break;
  }
}

/* Index space: (value, row). integerCopy != 0 selects the exact 64-bit integer path
 * (both depths integral, alpha == 1, beta == 0). */
kernel void da_convert(global uchar* dst, ulong dstOffset, long dstStep, int dstDepth, global const uchar* src,
                       ulong srcOffset, long srcStep, int srcDepth, long rows, long values, da_real alpha,
                       da_real beta, int integerCopy) {
  const long v = (long)get_global_id(0);
  const long r = (long)get_global_id(1);
  if (v >= values || r >= rows) return;
  global const uchar* s = src + srcOffset + r * srcStep + v * da_depth_bytes(srcDepth);
  global uchar* d = dst + dstOffset + r * dstStep + v * da_depth_bytes(dstDepth);
  if (integerCopy) {
    da_store_int(d, dstDepth, da_load_int(s, srcDepth));
  } else {
    const da_real x = da_load_real(s, srcDepth);
    da_store_real(d, dstDepth, (alpha == (da_real)1 && beta == (da_real)0) ? x : x * alpha + beta);
  }
}
