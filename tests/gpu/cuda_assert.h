#pragma once
// GoogleTest assertions on CUDA runtime calls, for the GPU tests.

#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

/// Asserts that a CUDA runtime call succeeded, naming the call and CUDA's words where it did not.
#define ASSERT_CUDA(call)                                                                   \
  do {                                                                                      \
    const cudaError_t error_ = (call);                                                      \
    ASSERT_EQ(error_, cudaSuccess) << #call << ": " << cudaGetErrorString(error_);          \
  } while (0)
