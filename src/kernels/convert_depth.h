/* The depth conversions of both backends' convert steps, OpenCV's convertTo (parameters,
 * pairs and work types: src/backend/depth_conversion_signatures.h). Integer results
 * round half to even and saturate (saturate.h; NaN becomes 0, as in OpenCV's CUDA
 * module); F32 results round to nearest; F16 results round to nearest even through
 * float, as OpenCV's float16_t (a direct double rounding differs just above a half-way
 * point between two halves), and overflow to infinity.
 *
 * Each depth's load into and store from each work type is written once, below. CUDA
 * compiles one kernel per pair from them; OpenCL one kernel that picks the depths at
 * run time, which keeps the program small (the choice is the same for every work item,
 * so it costs no divergence). */
#ifndef DEVICEARRAY_KERNELS_CONVERT_DEPTH_H
#define DEVICEARRAY_KERNELS_CONVERT_DEPTH_H

#include "prelude.h"
#include "saturate.h"
#include "backend/depth_conversion_signatures.h"

#if defined(__OPENCL_VERSION__)
/* alpha * v + beta rounds the product and the sum separately on OpenCL (nvcc fuses
 * them); the default comes back at the end of this file. */
#pragma OPENCL FP_CONTRACT OFF
#endif

/* X(code, depth, T, ACCESS): OpenCV's depths, their element types (F16 as its bits;
 * also named da_depth_<depth>) and how an element is read and written (ACCESS##_LOAD,
 * ACCESS##_STORE). An OpenCL device without double precision has no F64. */
#define DA_INTEGER_DEPTHS(X) \
  X(0, u8, da_u8, DA_VALUE) X(1, s8, da_i8, DA_VALUE) X(2, u16, da_u16, DA_VALUE) X(3, s16, da_i16, DA_VALUE) \
  X(4, s32, da_i32, DA_VALUE)
#if defined(__OPENCL_VERSION__) && !defined(DA_HAS_FP64)
#define DA_DEPTHS(X) DA_INTEGER_DEPTHS(X) X(5, f32, float, DA_VALUE) X(7, f16, da_u16, DA_HALF)
#else
#define DA_DEPTHS(X) \
  DA_INTEGER_DEPTHS(X) X(5, f32, float, DA_VALUE) X(6, f64, double, DA_VALUE) X(7, f16, da_u16, DA_HALF)
#endif
#define DA_DEPTH_TYPE(code, depth, T, ACCESS) typedef T da_depth_##depth;
DA_DEPTHS(DA_DEPTH_TYPE)
#define DA_VALUE_LOAD(p) (*(p))
#define DA_VALUE_STORE(p, x) (*(p) = (x))
#define DA_HALF_LOAD(p) da_load_half(p)
#define DA_HALF_STORE(p, x) da_store_half(p, x)

/* The floating depths' saturate_cast: a plain conversion, F16 through float. */
#define da_sat_f32_f(v) (v)
#define da_sat_f32_d(v) ((float)(v))
#define da_sat_f64_f(v) ((double)(v))
#define da_sat_f64_d(v) (v)
#define da_sat_f16_f(v) (v)
#define da_sat_f16_d(v) ((float)(v))

/* In work type w: da_load_<depth>_<w>(p) is the element at p, da_store_<depth>_<w>(p, v)
 * stores v there, saturated to the depth, and da_scale_<w> applies alpha and beta, or
 * leaves an unscaled value as it is. */
#define DA_DEPTH_ACCESS(code, depth, T, ACCESS, w, Work)                                                  \
  DA_FN_INLINE Work da_load_##depth##_##w(DA_GLOBAL const T* p) { return (Work)ACCESS##_LOAD(p); }        \
  DA_FN_INLINE void da_store_##depth##_##w(DA_GLOBAL T* p, Work v) { ACCESS##_STORE(p, da_sat_##depth##_##w(v)); }
#define DA_CONVERT_WORK(w, Work)                                                                          \
  DA_FN_INLINE Work da_scale_##w(Work v, int scale, Work alpha, Work beta) { return scale ? v * alpha + beta : v; }

#define DA_DEPTH_ACCESS_f(code, depth, T, ACCESS) DA_DEPTH_ACCESS(code, depth, T, ACCESS, f, float)
DA_DEPTHS(DA_DEPTH_ACCESS_f)
DA_CONVERT_WORK(f, float)
#if !defined(__OPENCL_VERSION__) || defined(DA_HAS_FP64)
#define DA_DEPTH_ACCESS_d(code, depth, T, ACCESS) DA_DEPTH_ACCESS(code, depth, T, ACCESS, d, double)
DA_DEPTHS(DA_DEPTH_ACCESS_d)
DA_CONVERT_WORK(d, double)
#endif

#if defined(__CUDACC__)

/* Row r and value c of work item i: below 2^31 values by the fast division. */
DA_FN_INLINE void da_convert_depth_position(da_u64 i, da_i64 values, da_u32 multiplier, da_u32 shift, int small,
                                           da_i64* r, da_i64* c) {
  if (small) {
    const da_u32 q = da_fast_div((da_u32)i, (da_u32)values, multiplier, shift);
    *r = q;
    *c = (da_i64)((da_u32)i - q * (da_u32)values);
  } else {
    *r = (da_i64)(i / (da_u64)values);
    *c = (da_i64)(i - (da_u64)*r * (da_u64)values);
  }
}

#define DA_CONVERT_DEPTH_KERNEL(s, d, w)                                                                  \
  DA_KERNEL_GROUP(da_convert_depth_##s##_##d, DA_CONVERT_DEPTH_GROUP, 1)                                  \
  (DA_PARAMS(DA_CONVERT_DEPTH_PARAMS_##w)) {                                                              \
    DA_BUFFERS_INIT(DA_CONVERT_DEPTH_PARAMS_##w);                                                         \
    const da_u64 i = (da_u64)DA_ID(0);                                                                    \
    if (i >= (da_u64)rows * (da_u64)values) return;                                                       \
    da_i64 r, c;                                                                                          \
    da_convert_depth_position(i, values, valuesMultiplier, valuesShift, small, &r, &c);                  \
    da_store_##d##_##w((DA_GLOBAL da_depth_##d*)(dst + r * dstStep) + c,                                  \
                       da_scale_##w(da_load_##s##_##w((DA_GLOBAL const da_depth_##s*)(src + r * srcStep) + c), \
                                    scale, alpha, beta));                                                 \
  }
DA_CONVERT_DEPTH_PAIRS(DA_CONVERT_DEPTH_KERNEL)

#elif defined(__OPENCL_VERSION__)

#ifdef DA_HAS_FP64
typedef double da_real;
#define DA_REAL(name) name##_d
#else
typedef float da_real;
#define DA_REAL(name) name##_f
#endif

/* The element's address is computed once, before the switches (an address per case
 * makes the kernel slower to compile on PoCL). */
#define DA_DEPTH_BYTES(code, depth, T, ACCESS) \
  case code: return (int)sizeof(T);
#define DA_LOAD_REAL(code, depth, T, ACCESS) \
  case code: return DA_REAL(da_load_##depth)((DA_GLOBAL const T*)p);
#define DA_STORE_REAL(code, depth, T, ACCESS) \
  case code: DA_REAL(da_store_##depth)((DA_GLOBAL T*)p, v); break;
DA_FN_INLINE int da_depth_bytes(int depth) {
  switch (depth) { DA_DEPTHS(DA_DEPTH_BYTES) default: return 0; }
}
DA_FN_INLINE da_real da_load_real(DA_GLOBAL const da_u8* p, int depth) {
  switch (depth) { DA_DEPTHS(DA_LOAD_REAL) default: return (da_real)0; }
}
DA_FN_INLINE void da_store_real(DA_GLOBAL da_u8* p, int depth, da_real v) {
  switch (depth) { DA_DEPTHS(DA_STORE_REAL) default: break; }
}

/* The integer path: exact in 64 bits, saturated by OpenCL's conversions. */
#define da_sat_u8_l(v) convert_uchar_sat(v)
#define da_sat_s8_l(v) convert_char_sat(v)
#define da_sat_u16_l(v) convert_ushort_sat(v)
#define da_sat_s16_l(v) convert_short_sat(v)
#define da_sat_s32_l(v) convert_int_sat(v)
#define DA_LOAD_INTEGER(code, depth, T, ACCESS) \
  case code: return (da_i64)*(DA_GLOBAL const T*)p;
#define DA_STORE_INTEGER(code, depth, T, ACCESS) \
  case code: *(DA_GLOBAL T*)p = da_sat_##depth##_l(v); break;
DA_FN_INLINE da_i64 da_load_integer(DA_GLOBAL const da_u8* p, int depth) {
  switch (depth) { DA_INTEGER_DEPTHS(DA_LOAD_INTEGER) default: return 0; }
}
DA_FN_INLINE void da_store_integer(DA_GLOBAL da_u8* p, int depth, da_i64 v) {
  switch (depth) { DA_INTEGER_DEPTHS(DA_STORE_INTEGER) default: break; }
}

DA_KERNEL(DA_REAL(da_convert_depths))(DA_PARAMS(DA_REAL(DA_CONVERT_DEPTHS_PARAMS))) {
  DA_BUFFERS_INIT(DA_REAL(DA_CONVERT_DEPTHS_PARAMS));
  const da_i64 v = DA_ID(0);
  const da_i64 r = DA_ID(1);
  if (v >= values || r >= rows) return;
  DA_GLOBAL const da_u8* from = src + r * srcStep + v * da_depth_bytes(srcDepth);
  DA_GLOBAL da_u8* to = dst + r * dstStep + v * da_depth_bytes(dstDepth);
  if (integerCopy)
    da_store_integer(to, dstDepth, da_load_integer(from, srcDepth));
  else
    da_store_real(to, dstDepth, DA_REAL(da_scale)(da_load_real(from, srcDepth), scale, alpha, beta));
}

#pragma OPENCL FP_CONTRACT DEFAULT
#endif

#endif /* DEVICEARRAY_KERNELS_CONVERT_DEPTH_H */
