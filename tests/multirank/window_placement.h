#pragma once
// A BufferPlacement (collective_run.h) that places a run's buffers in memory windows: two
// allocations of ncclMemAlloc, each registered with ncclCommWindowRegister when the placement is
// made (every rank of the communicator makes one together), with guard bytes around each buffer.

#include <cstddef>
#include <vector>

#include "nccl.h"
#include "tests/multirank/collective_run.h"

namespace weft::multirank {

class WindowPlacement final : public BufferPlacement {
 public:
  /// Registers two windows, each holding a buffer of up to `maxBytes`. Records a failure
  /// (rank_check.h) if a call fails. Every rank of `comm` makes one at the same point.
  WindowPlacement(ncclComm_t comm, size_t maxBytes);
  /// Deregisters the windows and frees their memory.
  ~WindowPlacement() override;

  /// The run's first buffer goes into the first window, its second into the second.
  void* place(void* host, size_t bytes) override;
  cudaStream_t stream() const override { return cudaStream_t{}; }
  /// Copies each placed buffer back over its host buffer and checks its guards.
  void finish() override;

 private:
  struct Area {
    char* memory = nullptr;
    ncclWindow_t window = nullptr;
    void* host = nullptr;  // what is placed here, or null
    size_t bytes = 0;
  };

  ncclComm_t comm_;
  size_t maxBytes_;
  Area areas_[2];
  size_t placed_ = 0;
};

}  // namespace weft::multirank
