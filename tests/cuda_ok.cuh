// CUDA_OK(expr): a gtest assertion that a CUDA runtime call succeeded, naming the call
// and the error.
#pragma once

#include <cuda_runtime.h>

#include <gtest/gtest.h>

#define CUDA_OK(expr)                                                           \
  do {                                                                          \
    const cudaError_t err_ = (expr);                                            \
    ASSERT_EQ(err_, cudaSuccess) << #expr << ": " << cudaGetErrorString(err_); \
  } while (0)
