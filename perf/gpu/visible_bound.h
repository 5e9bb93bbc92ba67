#pragma once
// The bound an allreduce of n ranks sharing one GPU is measured against: every rank's input read
// once and every rank's output written once, by one kernel that sees all the buffers.

#include <cuda_runtime_api.h>

#include <cstddef>

/// Enqueues out[r][i] = sum over s of in[s][i] for every rank r (n <= 8), `count` floats each,
/// buffers 16-byte aligned: one wave of resident blocks, each thread with four 16-byte words of
/// every input in flight.
cudaError_t launchVisibleAllReduce(const float* const* inputs, float* const* outputs, int n, size_t count,
                                   cudaStream_t stream);
