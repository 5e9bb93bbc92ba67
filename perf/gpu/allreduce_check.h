#pragma once
// Known inputs for the GPU allreduce benchmark and a check of its outputs on the GPU, so that a
// fast wrong answer is never reported as a speed.

#include <cuda_runtime_api.h>

#include <cstddef>

/// Enqueues in[r][i] = (7i + 13r) mod 64 for every rank r < n (n <= 8), `count` floats each: small
/// integers, so their float sum is exact in any order.
cudaError_t launchFillInputs(float* const* inputs, int n, size_t count, cudaStream_t stream);

/// Enqueues a count, added to *mismatches (device memory), of the elements of out[r] (r < n, the
/// first `count` floats each) that differ from the sum over the n ranks of launchFillInputs' values.
cudaError_t launchCountMismatches(const float* const* outputs, int n, size_t count, unsigned long long* mismatches,
                                  cudaStream_t stream);
