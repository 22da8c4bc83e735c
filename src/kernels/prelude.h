/* Shared-kernel prelude: lets one kernel body compile as CUDA C++, as OpenCL C,
 * and as plain host C++ (for constexpr-style helpers used by host code).
 *
 * A kernel is written once in src/kernels/NAME.h, its parameters declared once in a
 * header of src/backend/ that the host code launching it includes too
 * (src/backend/kernel_params.h):
 *
 *   #define DA_SCALE_PARAMS(S0, B0, S, B) S0(int, n) S(float, s) B(float, data)
 *
 *   DA_KERNEL(da_scale)(DA_PARAMS(DA_SCALE_PARAMS)) {
 *     DA_BUFFERS_INIT(DA_SCALE_PARAMS);
 *     const long i = DA_ID(0);
 *     if (i < n) data[i] *= s;
 *   }
 *
 * On CUDA a buffer argument is a plain typed pointer (the backend folds the
 * byte offset in); on OpenCL it is a (global T* base, ulong offset) pair, since a
 * cl_mem cannot carry an offset and sub-buffers have alignment rules.
 * The CUDA backend registers each kernel by name (DA_CUDA_REGISTER), the OpenCL
 * backend compiles all of src/kernels/ into one program.
 *
 * Kernels that cooperate through local (shared) memory are declared with
 * DA_KERNEL_GROUP(name, size, minGroups): they run in work-groups of exactly `size`
 * work items (KernelLaunch::localSize; CUDA fits at least minGroups of them on a
 * multiprocessor), may declare DA_LOCAL_ARRAY(T, name, n) at kernel scope,
 * pass DA_LOCAL pointers to helpers, and synchronise with DA_BARRIER().
 *
 * A struct of fixed-size fields (src/backend/strided_layout.h) is a parameter
 * DA_BY_VALUE(T, name); helpers that every work item calls in its inner loop are
 * DA_FN_INLINE; da_mul_hi(a, b) is the high 32 bits of the 32-bit product.
 *
 * Half-precision values are kept as their bits (da_u16): da_load_half(p) reads one
 * as a float, da_store_half(p, x) writes float x rounded to nearest even (overflow
 * to infinity), with each backend's own conversion. */
#ifndef DEVICEARRAY_KERNELS_PRELUDE_H
#define DEVICEARRAY_KERNELS_PRELUDE_H

#if defined(__OPENCL_VERSION__)
/* The backend defines DA_HAS_FP64 for devices with cl_khr_fp64; the program uses
 * double only under it, so it builds on devices without double precision too. */
#ifdef DA_HAS_FP64
#pragma OPENCL EXTENSION cl_khr_fp64 : enable
#endif
#define DA_KERNEL(name) kernel void name
#define DA_KERNEL_GROUP(name, size, minGroups) kernel __attribute__((reqd_work_group_size(size, 1, 1))) void name
#define DA_GLOBAL global
#define DA_LOCAL local
#define DA_LOCAL_ARRAY(T, name, n) local T name[n]
#define DA_BARRIER() barrier(CLK_LOCAL_MEM_FENCE)
#define DA_UNROLL /* OpenCL C 1.2 has no unroll pragma; constant trip counts unroll anyway */
#define DA_LOCAL_ID() ((int)get_local_id(0))
#define DA_GROUP_ID() ((long)get_group_id(0))
#define DA_GROUPS() ((long)get_num_groups(0))
#define da_make_float4(a, b, c, d) ((float4)((a), (b), (c), (d)))
#define da_make_u32x4(a, b, c, d) ((uint4)((a), (b), (c), (d)))
typedef uint4 da_u32x4;
#define DA_BUFFER(T, name) global T* name##_base, ulong name##_offset
#define DA_BUFFER_INIT(T, name) global T* name = (global T*)((global uchar*)name##_base + name##_offset)
#define DA_ID(d) ((long)get_global_id(d))
#define DA_FN inline
#define DA_FN_INLINE inline
#define DA_BY_VALUE(T, name) const T name
#define da_mul_hi(a, b) mul_hi((uint)(a), (uint)(b))
#define DA_NAN NAN
#define DA_INFINITY INFINITY
typedef char da_i8;
typedef uchar da_u8;
typedef short da_i16;
typedef ushort da_u16;
typedef int da_i32;
typedef uint da_u32;
typedef long da_i64;
typedef ulong da_u64;
#define da_isnan(x) isnan(x)
#define da_sqrtf(x) sqrt(x)
#define da_fabsf(x) fabs(x)
#define da_powf(x, y) pow((float)(x), (float)(y))
#define da_floorf(x) floor(x)
#define da_acosf(x) acos(x)
#define da_cosf(x) cos(x)
#define da_fminf(x, y) fmin((float)(x), (float)(y))
#define da_fmaxf(x, y) fmax((float)(x), (float)(y))
#define da_float_bits(x) as_uint(x)
#define da_float_from_bits(b) as_float((uint)(b))
#define da_load_half(p) vload_half(0, (global const half*)(p))
#define da_store_half(p, x) vstore_half_rte((x), 0, (global half*)(p))

#else /* CUDA C++ or host C++ */
#include <cmath>
#include <cstdint>
#include <cstring>
#if defined(__CUDACC__)
#include <cuda_fp16.h>
#define DA_KERNEL(name) extern "C" __global__ void name
#define DA_KERNEL_GROUP(name, size, minGroups) extern "C" __global__ void __launch_bounds__(size, minGroups) name
#define DA_LOCAL_ARRAY(T, name, n) __shared__ T name[n]
#define DA_BARRIER() __syncthreads()
/* Loop unrolling hint for device code (the host pass of nvcc's compiler ignores it). */
#if defined(__CUDA_ARCH__)
#define DA_UNROLL _Pragma("unroll")
#else
#define DA_UNROLL
#endif
#define DA_LOCAL_ID() ((int)threadIdx.x)
#define DA_GROUP_ID() ((long)blockIdx.x)
#define DA_GROUPS() ((long)gridDim.x)
#define da_make_float4(a, b, c, d) make_float4((a), (b), (c), (d))
#define da_make_u32x4(a, b, c, d) make_uint4((a), (b), (c), (d))
typedef uint4 da_u32x4;
#define DA_FN __host__ __device__ inline
#define DA_FN_INLINE __device__ __forceinline__
/* Read in place: a struct's arrays may be indexed at run time without a copy to
 * local memory. */
#define DA_BY_VALUE(T, name) const __grid_constant__ T name
#define da_mul_hi(a, b) __umulhi((a), (b))
#define da_load_half(p) __half2float(*(const __half*)(p))
#define da_store_half(p, x) (*(__half*)(p) = __float2half_rn(x))
#define DA_ID(d) \
  ((long)((d) == 0 ? blockIdx.x * (long)blockDim.x + threadIdx.x \
                   : (d) == 1 ? blockIdx.y * (long)blockDim.y + threadIdx.y : blockIdx.z * (long)blockDim.z + threadIdx.z))
#else
#define DA_FN inline
#endif
#define DA_GLOBAL
#define DA_LOCAL
#define DA_BUFFER(T, name) T* name
#define DA_BUFFER_INIT(T, name) (void)0
#define DA_NAN NAN
#define DA_INFINITY INFINITY
typedef std::int8_t da_i8;
typedef std::uint8_t da_u8;
typedef std::int16_t da_i16;
typedef std::uint16_t da_u16;
typedef std::int32_t da_i32;
typedef std::uint32_t da_u32;
typedef std::int64_t da_i64;
typedef std::uint64_t da_u64;
#define da_isnan(x) ((x) != (x))
#define da_sqrtf(x) sqrtf(x)
#define da_fabsf(x) fabsf(x)
#define da_powf(x, y) powf((x), (y))
#define da_floorf(x) floorf(x)
#define da_acosf(x) acosf(x)
#define da_cosf(x) cosf(x)
#define da_fminf(x, y) fminf((x), (y))
#define da_fmaxf(x, y) fmaxf((x), (y))
/* The bit pattern of a float. */
DA_FN da_u32 da_float_bits(float x) {
#if defined(__CUDA_ARCH__)
  return __float_as_uint(x);
#else
  da_u32 bits;
  std::memcpy(&bits, &x, sizeof bits);
  return bits;
#endif
}
/* The float whose bit pattern is `bits` (the copy is a register move on the device). */
DA_FN float da_float_from_bits(da_u32 bits) {
  float x;
  std::memcpy(&x, &bits, sizeof x);
  return x;
}
#endif

/* Programmatic dependent launch (sm_90 and later): the CUDA backend lets a kernel's
 * blocks start while the kernel before it in the stream finishes (cuda_launch.cu), to
 * hide the gap between dependent launches. Every kernel waits here, in DA_BUFFERS_INIT
 * before its first access to memory, until that kernel has completed and its writes
 * are visible, then lets the next kernel's blocks be scheduled. Elsewhere kernels start
 * in stream order and this is nothing. */
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
#define DA_AFTER_PREVIOUS_KERNEL()                    \
  asm volatile("griddepcontrol.wait;" ::: "memory"); \
  asm volatile("griddepcontrol.launch_dependents;" ::: "memory")
#else
#define DA_AFTER_PREVIOUS_KERNEL() (void)0
#endif

/* n / divisor as da_mul_hi(n, *multiplier) >> *shift, exact for n and divisor below
 * 2^31 (divisor 1 excepted: n itself). Computed once on the host per divisor, so an
 * index decomposition costs a multiply-high and a shift instead of a division. */
DA_FN void da_fast_div_magic(da_u32 divisor, da_u32* multiplier, da_u32* shift) {
  da_u32 log2Ceil = 0;
  while (((da_u64)1 << log2Ceil) < divisor) ++log2Ceil;
  *multiplier = divisor > 1 ? (da_u32)((((da_u64)1 << (31 + log2Ceil)) + divisor - 1) / divisor) : 0u;
  *shift = divisor > 1 ? log2Ceil - 1 : 0u;
}

/* n / divisor with the constants of da_fast_div_magic. */
DA_FN da_u32 da_fast_div(da_u32 n, da_u32 divisor, da_u32 multiplier, da_u32 shift) {
#if defined(__OPENCL_VERSION__) || defined(__CUDA_ARCH__)
  return divisor == 1 ? n : da_mul_hi(n, multiplier) >> shift;
#else
  return divisor == 1 ? n : (da_u32)(((da_u64)n * multiplier) >> 32) >> shift;
#endif
}

#endif /* DEVICEARRAY_KERNELS_PRELUDE_H */
