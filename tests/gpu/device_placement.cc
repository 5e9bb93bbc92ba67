#include "tests/gpu/device_placement.h"

#include <cstring>

#include "tests/harness/rank_check.h"

namespace weft::gpu_tests {
namespace {

constexpr size_t kGuardBytes = 256;
constexpr unsigned char kGuardByte = 0xA5;

}  // namespace

DevicePlacement::~DevicePlacement() { release(); }

void* DevicePlacement::place(void* host, size_t bytes) {
  void* memory = nullptr;
  cudaError_t error = cudaMallocAsync(&memory, bytes + 2 * kGuardBytes, stream_);
  RANK_EXPECT(error == cudaSuccess) << "cudaMallocAsync of " << bytes << " bytes: " << cudaGetErrorString(error);
  if (error != cudaSuccess) return host;
  char* device = static_cast<char*>(memory);
  placed_.push_back({host, device, bytes});
  error = cudaMemsetAsync(device, kGuardByte, bytes + 2 * kGuardBytes, stream_);
  if (error == cudaSuccess && bytes > 0) {
    error = cudaMemcpyAsync(device + kGuardBytes, host, bytes, cudaMemcpyHostToDevice, stream_);
  }
  RANK_EXPECT(error == cudaSuccess) << "copying a buffer to the GPU: " << cudaGetErrorString(error);
  return device + kGuardBytes;
}

void DevicePlacement::ready() {
  cudaError_t error = cudaStreamSynchronize(stream_);
  RANK_EXPECT(error == cudaSuccess) << "waiting for the copies to the GPU: " << cudaGetErrorString(error);
  if (barrier_ == nullptr) return;
  // A one-element allreduce of host memory takes the host path: it returns once every rank came.
  int token = 1;
  RANK_EXPECT(ncclAllReduce(&token, &token, 1, ncclInt32, ncclSum, barrier_, nullptr) == ncclSuccess)
      << "the barrier before the call: " << ncclGetLastError(barrier_);
}

void DevicePlacement::finish() {
  // Wait for the call first: a copy to pageable memory would wait for it inside the driver, where
  // it can hold up a peer thread's allocation that the call itself waits for.
  cudaError_t waited = cudaStreamSynchronize(stream_);
  RANK_EXPECT(waited == cudaSuccess) << "waiting for the call: " << cudaGetErrorName(waited) << ": "
                                    << cudaGetErrorString(waited);
  std::vector<unsigned char> guards(2 * kGuardBytes);
  for (const Placed& placed : placed_) {
    cudaError_t error = cudaMemcpyAsync(placed.host, placed.device + kGuardBytes, placed.bytes,
                                        cudaMemcpyDeviceToHost, stream_);
    if (error == cudaSuccess) {
      error = cudaMemcpyAsync(guards.data(), placed.device, kGuardBytes, cudaMemcpyDeviceToHost, stream_);
    }
    if (error == cudaSuccess) {
      error = cudaMemcpyAsync(guards.data() + kGuardBytes, placed.device + kGuardBytes + placed.bytes, kGuardBytes,
                              cudaMemcpyDeviceToHost, stream_);
    }
    if (error == cudaSuccess) error = cudaStreamSynchronize(stream_);
    RANK_EXPECT(error == cudaSuccess) << "waiting for the call and copying back: " << cudaGetErrorName(error) << ": "
                                     << cudaGetErrorString(error);
    if (error != cudaSuccess) break;
    for (size_t i = 0; i < guards.size(); ++i) {
      RANK_EXPECT(guards[i] == kGuardByte) << "a GPU buffer of " << placed.bytes << " bytes was written "
                                          << (i < kGuardBytes ? "before its start" : "after its end");
      if (guards[i] != kGuardByte) break;
    }
  }
  release();
}

void DevicePlacement::release() {
  for (const Placed& placed : placed_) (void)cudaFreeAsync(placed.device, stream_);
  placed_.clear();
}

}  // namespace weft::gpu_tests
