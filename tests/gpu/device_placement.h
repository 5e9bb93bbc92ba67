#pragma once
// A BufferPlacement (tests/multirank/collective_run.h) that runs a collective on GPU memory: each
// host buffer is copied into a fresh device buffer (stream-ordered allocation, so that no
// device-wide synchronisation couples the ranks) with guard bytes on both sides, and copied back
// after the call.

#include <cuda_runtime_api.h>

#include <vector>

#include "tests/multirank/collective_run.h"

namespace weft::gpu_tests {

class DevicePlacement final : public multirank::BufferPlacement {
 public:
  /// Uses `stream` (the rank's own) for every copy and call.
  explicit DevicePlacement(cudaStream_t stream) : stream_(stream) {}
  ~DevicePlacement() override;

  void* place(void* host, size_t bytes) override;
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
  std::vector<Placed> placed_;
};

}  // namespace weft::gpu_tests
