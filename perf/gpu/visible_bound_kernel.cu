#include "perf/gpu/visible_bound.h"

namespace {

constexpr int kMaxRanks = 8;

struct Buffers {
  const float4* inputs[kMaxRanks];
  float4* outputs[kMaxRanks];
};

__global__ void visibleAllReduce(Buffers buffers, int n, size_t vectors) {
  for (size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x; i < vectors;
       i += static_cast<size_t>(gridDim.x) * blockDim.x) {
    float4 sum = buffers.inputs[0][i];
    for (int r = 1; r < n; ++r) {
      const float4 v = buffers.inputs[r][i];
      sum.x += v.x;
      sum.y += v.y;
      sum.z += v.z;
      sum.w += v.w;
    }
    for (int r = 0; r < n; ++r) buffers.outputs[r][i] = sum;
  }
}

}  // namespace

cudaError_t launchVisibleAllReduce(const float* const* inputs, float* const* outputs, int n, size_t count,
                                   cudaStream_t stream) {
  if (n < 1 || n > kMaxRanks || count % 4 != 0) return cudaErrorInvalidValue;
  Buffers buffers{};
  for (int r = 0; r < n; ++r) {
    buffers.inputs[r] = reinterpret_cast<const float4*>(inputs[r]);
    buffers.outputs[r] = reinterpret_cast<float4*>(outputs[r]);
  }
  int device = 0;
  int multiprocessors = 0;
  cudaGetDevice(&device);
  cudaDeviceGetAttribute(&multiprocessors, cudaDevAttrMultiProcessorCount, device);
  const size_t vectors = count / 4;
  const int threads = 512;
  size_t blocks = (vectors + threads - 1) / threads;
  const size_t most = static_cast<size_t>(multiprocessors) * 4;
  if (blocks > most) blocks = most;
  if (blocks == 0) blocks = 1;
  visibleAllReduce<<<static_cast<unsigned>(blocks), threads, 0, stream>>>(buffers, n, vectors);
  return cudaGetLastError();
}
