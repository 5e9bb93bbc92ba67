#pragma once
// A BufferPlacement (tests/multirank/collective_run.h) that runs a collective on GPU memory: each
// host buffer is copied into a fresh device buffer (stream-ordered allocation) with guard bytes on
// both sides, and copied back after the call.
//
// Ranks that are threads of one process share the process's CUDA context, where allocating,
// freeing or copying from pageable memory can wait for every kernel on the device, including a
// peer's kernel that waits for this rank: a deadlock that NCCL's rules for several communicators
// per device forbid too. So with `barrier` set, every rank has finished its copies before any
// rank makes the call.

#include <cuda_runtime_api.h>

#include <vector>

#include "nccl.h"
#include "tests/multirank/collective_run.h"

namespace weft::gpu_tests {

class DevicePlacement final : public multirank::BufferPlacement {
 public:
  /// Uses `stream` (the rank's own) for every copy and call. With `barrier` (the communicator of
  /// ranks that are threads of this process), ready() also waits for every rank to be ready.
  explicit DevicePlacement(cudaStream_t stream, ncclComm_t barrier = nullptr) : stream_(stream), barrier_(barrier) {}
  ~DevicePlacement() override;

  void* place(void* host, size_t bytes) override;
  void ready() override;
  cudaStream_t stream() const override { return stream_; }
  void finish() override;

 private:
  struct Placed {
    void* host;
    char* device;  // the allocation: guard, buffer, guard
    size_t bytes;
  };
  void release();

  cudaStream_t stream_;
  ncclComm_t barrier_;
  std::vector<Placed> placed_;
};

}  // namespace weft::gpu_tests
