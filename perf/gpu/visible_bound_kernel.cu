#include "perf/gpu/visible_bound.h"

namespace {

constexpr int kMaxRanks = 8;
constexpr int kThreads = 512;

// 16-byte words of each of N inputs a thread keeps in flight: fewer for more ranks, so that the
// words fit the registers of 512 threads (128 each) without spilling.
template <int N>
constexpr int kVectorsPerThread = N <= 4 ? 4 : 2;

struct Buffers {
  const float4* inputs[kMaxRanks];
  float4* outputs[kMaxRanks];
};

__device__ __forceinline__ void add(float4& sum, const float4& v) {
  sum.x += v.x;
  sum.y += v.y;
  sum.z += v.z;
  sum.w += v.w;
}

// Every thread loads kVectorsPerThread<N> words of each of the N inputs before adding any (N known at
// compile time, so the loads are all issued at once), then stores the sums to the N outputs.
template <int N>
__global__ void __launch_bounds__(kThreads) visibleAllReduce(Buffers buffers, size_t vectors) {
  const size_t stride = static_cast<size_t>(gridDim.x) * kThreads * kVectorsPerThread<N>;
  for (size_t base = static_cast<size_t>(blockIdx.x) * kThreads * kVectorsPerThread<N> + threadIdx.x; base < vectors;
       base += stride) {
    float4 words[N][kVectorsPerThread<N>];
#pragma unroll
    for (int r = 0; r < N; ++r) {
#pragma unroll
      for (int k = 0; k < kVectorsPerThread<N>; ++k) {
        const size_t i = base + static_cast<size_t>(k) * kThreads;
        if (i < vectors) words[r][k] = buffers.inputs[r][i];
      }
    }
#pragma unroll
    for (int k = 0; k < kVectorsPerThread<N>; ++k) {
      const size_t i = base + static_cast<size_t>(k) * kThreads;
      if (i >= vectors) break;
      float4 sum = words[0][k];
#pragma unroll
      for (int r = 1; r < N; ++r) add(sum, words[r][k]);
#pragma unroll
      for (int r = 0; r < N; ++r) buffers.outputs[r][i] = sum;
    }
  }
}

// The last count % 4 floats, which no 16-byte word holds.
__global__ void visibleAllReduceTail(Buffers buffers, int n, size_t from, size_t count) {
  const size_t i = from + threadIdx.x;
  if (i >= count) return;
  const auto input = [&](int r) { return reinterpret_cast<const float*>(buffers.inputs[r])[i]; };
  float sum = input(0);
  for (int r = 1; r < n; ++r) sum += input(r);
  for (int r = 0; r < n; ++r) reinterpret_cast<float*>(buffers.outputs[r])[i] = sum;
}

// The blocks of visibleAllReduce<N> the current device holds at once (0 where CUDA cannot say),
// asked once: at small sizes the bound's time is its launch's.
template <int N>
size_t residentBlocks() {
  static const size_t resident = [] {
    int device = 0;
    int multiprocessors = 0;
    int perMultiprocessor = 0;
    if (cudaGetDevice(&device) != cudaSuccess ||
        cudaDeviceGetAttribute(&multiprocessors, cudaDevAttrMultiProcessorCount, device) != cudaSuccess ||
        cudaOccupancyMaxActiveBlocksPerMultiprocessor(&perMultiprocessor, visibleAllReduce<N>, kThreads, 0) !=
            cudaSuccess) {
      (void)cudaGetLastError();
      return size_t{0};
    }
    return static_cast<size_t>(multiprocessors) * static_cast<size_t>(perMultiprocessor > 0 ? perMultiprocessor : 1);
  }();
  return resident;
}

template <int N>
cudaError_t launchFor(const Buffers& buffers, size_t vectors, cudaStream_t stream) {
  const size_t resident = residentBlocks<N>();
  if (resident == 0) return cudaErrorInvalidValue;
  // One wave of resident blocks: each then strides over the buffers.
  const size_t perBlock = static_cast<size_t>(kThreads) * kVectorsPerThread<N>;
  size_t blocks = (vectors + perBlock - 1) / perBlock;
  if (blocks > resident) blocks = resident;
  if (blocks == 0) blocks = 1;
  visibleAllReduce<N><<<static_cast<unsigned>(blocks), kThreads, 0, stream>>>(buffers, vectors);
  return cudaGetLastError();
}

}  // namespace

cudaError_t launchVisibleAllReduce(const float* const* inputs, float* const* outputs, int n, size_t count,
                                   cudaStream_t stream) {
  if (n < 1 || n > kMaxRanks) return cudaErrorInvalidValue;
  Buffers buffers{};
  for (int r = 0; r < n; ++r) {
    buffers.inputs[r] = reinterpret_cast<const float4*>(inputs[r]);
    buffers.outputs[r] = reinterpret_cast<float4*>(outputs[r]);
  }
  const size_t vectors = count / 4;
  cudaError_t error = cudaSuccess;
  if (vectors > 0) {
    switch (n) {
      case 1: error = launchFor<1>(buffers, vectors, stream); break;
      case 2: error = launchFor<2>(buffers, vectors, stream); break;
      case 3: error = launchFor<3>(buffers, vectors, stream); break;
      case 4: error = launchFor<4>(buffers, vectors, stream); break;
      case 5: error = launchFor<5>(buffers, vectors, stream); break;
      case 6: error = launchFor<6>(buffers, vectors, stream); break;
      case 7: error = launchFor<7>(buffers, vectors, stream); break;
      default: error = launchFor<8>(buffers, vectors, stream); break;
    }
  }
  if (error == cudaSuccess && count % 4 != 0) {
    visibleAllReduceTail<<<1, 4, 0, stream>>>(buffers, n, vectors * 4, count);
    error = cudaGetLastError();
  }
  return error;
}
