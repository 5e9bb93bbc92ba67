#pragma once
// A BufferPlacement (collective_run.h) that places a run's buffers in memory windows: two
// allocations of ncclMemAlloc, each registered with ncclCommWindowRegister when the placement is
// made (every rank of the communicator makes one together), with guard bytes around each buffer.

#include <cstddef>
#include <cstdint>
#include <vector>

#include "nccl.h"
#include "tests/multirank/collective_run.h"

namespace weft::multirank {

/// Memory from ncclMemAlloc registered as a window of `comm` (every rank of it makes one at the
/// same point); deregistered and freed at the end. Records a failure (rank_check.h) if a call fails.
class WindowedMemory {
 public:
  WindowedMemory(ncclComm_t comm, size_t bytes);
  ~WindowedMemory();
  WindowedMemory(const WindowedMemory&) = delete;
  WindowedMemory& operator=(const WindowedMemory&) = delete;

  char* data() const { return memory_; }  // null if the allocation failed
  int32_t* ints() const { return reinterpret_cast<int32_t*>(memory_); }

 private:
  ncclComm_t comm_;
  char* memory_ = nullptr;
  ncclWindow_t window_ = nullptr;
};

class WindowPlacement final : public BufferPlacement {
 public:
  /// Registers two windows, each holding a buffer of up to `maxBytes`. Records a failure
  /// (rank_check.h) if a call fails. Every rank of `comm` makes one at the same point.
  WindowPlacement(ncclComm_t comm, size_t maxBytes);

  /// The run's first buffer goes into the first window, its second into the second.
  void* place(void* host, size_t bytes) override;
  cudaStream_t stream() const override { return cudaStream_t{}; }
  /// Copies each placed buffer back over its host buffer and checks its guards.
  void finish() override;

 private:
  struct Area {
    Area(ncclComm_t comm, size_t bytes) : memory(comm, bytes) {}
    WindowedMemory memory;
    void* host = nullptr;  // what is placed here, or null
    size_t bytes = 0;
  };

  size_t maxBytes_;
  Area areas_[2];
  size_t placed_ = 0;
};

}  // namespace weft::multirank
