/* A trivial shared kernel that exercises the launch path of both backends
 * (buffer arguments with byte offsets, 32-bit scalars): y = a * x + y over n floats.
 * Used by tests/backend_launch_test.cpp. */
#ifndef DEVICEARRAY_KERNELS_SELFTEST_H
#define DEVICEARRAY_KERNELS_SELFTEST_H

#include "prelude.h"
#include "backend/selftest_signatures.h"

DA_KERNEL(da_selftest_axpy)(DA_PARAMS(DA_SELFTEST_AXPY_PARAMS)) {
  DA_BUFFERS_INIT(DA_SELFTEST_AXPY_PARAMS);
  const long i = DA_ID(0);
  if (i < n) y[i] = a * x[i] + y[i];
}

#endif /* DEVICEARRAY_KERNELS_SELFTEST_H */
