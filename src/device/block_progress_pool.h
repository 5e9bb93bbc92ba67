#pragma once
// The host memory that a communicator's kernels write their blocks' progress into
// (src/core/gpu_block_progress.h), kRecordedBlocks records per communicator on the GPU path. The
// memory goes back to a process-wide pool with the communicator's other GPU memory (when it is
// destroyed, or later: local_clique.h) and is never freed, so a hang report that reads the records
// of a communicator going away (from a signal handler) reads memory that is still there; each
// communicator keeps it registered with CUDA (mapped, so that its kernels write it) until then.

#include "src/base/status.h"
#include "src/core/gpu_block_progress.h"

namespace weft::device {

struct BlockProgressArray {
  core::GpuBlockProgress* host = nullptr;    // kRecordedBlocks records; null: none
  core::GpuBlockProgress* device = nullptr;  // the same memory as the GPU addresses it
};

/// Records all zero (BlockActivity::kNone), registered with CUDA: memory of the pool, or new.
Status acquireBlockProgress(BlockProgressArray* out);

/// Unregisters `array` and returns it to the pool. No kernel may write it any more.
void releaseBlockProgress(const BlockProgressArray& array);

}  // namespace weft::device
