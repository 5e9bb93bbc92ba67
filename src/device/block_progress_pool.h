#pragma once
// The pinned host arrays that a communicator's kernels write their blocks' progress into
// (src/core/gpu_block_progress.h), one per communicator on the GPU path. An array goes back to a
// process-wide pool when its communicator is destroyed and is never freed, so a hang report that
// reads the records of a communicator going away (from a signal handler) reads memory that is
// still there.

#include "src/base/status.h"
#include "src/core/gpu_block_progress.h"

namespace weft::device {

struct BlockProgressArray {
  core::GpuBlockProgress* host = nullptr;
  core::GpuBlockProgress* device = nullptr;  // the same memory as the GPU addresses it
  int capacity = 0;
};

/// An array of at least `blocks` records, all zero (BlockActivity::kNone): a free one of the pool,
/// or a new one.
Status acquireBlockProgress(int blocks, BlockProgressArray* out);

/// Returns `array` to the pool. No kernel may write it any more.
void releaseBlockProgress(const BlockProgressArray& array);

}  // namespace weft::device
