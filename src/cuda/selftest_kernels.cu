// CUDA registration of the backend self-test kernel (src/kernels/selftest.h),
// launched by tests/backend_launch_test.cpp on both backends.
#include "kernels/prelude.h"
#include "kernels/selftest.h"
#include "cuda/kernel_registry.hpp"

DA_CUDA_REGISTER(da_selftest_axpy);
