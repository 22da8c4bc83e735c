/* Parameters of the backend self-test kernel (src/kernels/selftest.h): y = a * x + y
 * over n floats (kernel_params.h). */
#ifndef DEVICEARRAY_BACKEND_SELFTEST_SIGNATURES_H
#define DEVICEARRAY_BACKEND_SELFTEST_SIGNATURES_H

#include "backend/kernel_params.h"

#define DA_SELFTEST_AXPY_PARAMS(S0, B0, S, B) S0(int, n) S(float, a) B(const float, x) B(float, y)

#if defined(__cplusplus)
#include "backend/kernel_signature.hpp"

namespace devicearray::detail::kernels {
DA_KERNEL_SIGNATURE(da_selftest_axpy, DA_SELFTEST_AXPY_PARAMS);
}  // namespace devicearray::detail::kernels
#endif

#endif /* DEVICEARRAY_BACKEND_SELFTEST_SIGNATURES_H */
