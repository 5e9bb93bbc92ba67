#include "perf/gpu/allreduce_check.h"

namespace {

constexpr int kMaxRanks = 8;
constexpr int kThreads = 256;
constexpr unsigned kMaxBlocks = 1024;

struct Ranks {
  float* buffers[kMaxRanks];
};

__device__ __forceinline__ float inputValue(size_t i, int rank) {
  return static_cast<float>((i * 7 + static_cast<size_t>(rank) * 13) % 64);
}

__global__ void fillInputs(Ranks inputs, int n, size_t count) {
  for (size_t i = blockIdx.x * static_cast<size_t>(kThreads) + threadIdx.x; i < count;
       i += static_cast<size_t>(gridDim.x) * kThreads) {
    for (int r = 0; r < n; ++r) inputs.buffers[r][i] = inputValue(i, r);
  }
}

__global__ void countMismatches(Ranks outputs, int n, size_t count, unsigned long long* mismatches) {
  unsigned long long wrong = 0;
  for (size_t i = blockIdx.x * static_cast<size_t>(kThreads) + threadIdx.x; i < count;
       i += static_cast<size_t>(gridDim.x) * kThreads) {
    float expected = 0;
    for (int r = 0; r < n; ++r) expected += inputValue(i, r);
    for (int r = 0; r < n; ++r) wrong += outputs.buffers[r][i] != expected ? 1 : 0;
  }
  if (wrong > 0) atomicAdd(mismatches, wrong);
}

unsigned blocksFor(size_t count) {
  const size_t blocks = (count + kThreads - 1) / kThreads;
  return blocks == 0 ? 1 : blocks > kMaxBlocks ? kMaxBlocks : static_cast<unsigned>(blocks);
}

}  // namespace

cudaError_t launchFillInputs(float* const* inputs, int n, size_t count, cudaStream_t stream) {
  if (n < 1 || n > kMaxRanks) return cudaErrorInvalidValue;
  Ranks ranks{};
  for (int r = 0; r < n; ++r) ranks.buffers[r] = inputs[r];
  fillInputs<<<blocksFor(count), kThreads, 0, stream>>>(ranks, n, count);
  return cudaGetLastError();
}

cudaError_t launchCountMismatches(const float* const* outputs, int n, size_t count, unsigned long long* mismatches,
                                  cudaStream_t stream) {
  if (n < 1 || n > kMaxRanks) return cudaErrorInvalidValue;
  Ranks ranks{};
  for (int r = 0; r < n; ++r) ranks.buffers[r] = const_cast<float*>(outputs[r]);
  countMismatches<<<blocksFor(count), kThreads, 0, stream>>>(ranks, n, count, mismatches);
  return cudaGetLastError();
}
