#pragma once
// The kernel's side of the blocks' progress records (src/core/gpu_block_progress.h): thread 0 of
// a block writes its block's record in mapped host memory when the block starts and ends a kernel,
// and around a wait that has polled kPollsPerAbortCheck times without what it waits for. Plain
// volatile stores, posted to host memory: the block never waits for them.

#include <cstdint>

#include "src/core/gpu_block_progress.h"
#include "src/device/kernel_work.h"

namespace weft::device {

/// Where a wait is in a lane's steps (the lane within the block's, its step, the round).
struct WaitSite {
  uint32_t lane = 0;
  uint32_t step = 0;
  uint32_t steps = 0;
  uint64_t piece = 0;
};

/// This block's record, or nothing where the work has none for it. Thread 0 only.
class BlockProgressWriter {
 public:
  __device__ explicit BlockProgressWriter(const KernelWork& work)
      : record_(work.blockProgress != nullptr && blockIdx.x < core::kRecordedBlocks ? work.blockProgress + blockIdx.x
                                                                                   : nullptr),
        kernel_(work.kernel) {}

  __device__ void started() const {
    if (record_ == nullptr) return;
    record_->activity = static_cast<uint32_t>(core::BlockActivity::kRunning);
    record_->kernel = kernel_;
  }

  __device__ void done() const { setActivity(core::BlockActivity::kDone); }

  /// The block has waited a while for `wanted` (it sees `seen`) from rank `peer`.
  __device__ void waiting(core::BlockActivity activity, int32_t peer, int32_t channel, const WaitSite& site,
                          uint64_t seen, uint64_t wanted) const {
    if (record_ == nullptr) return;
    record_->peer = peer;
    record_->channel = channel;
    record_->lane = site.lane;
    record_->step = site.step;
    record_->steps = site.steps;
    record_->piece = site.piece;
    record_->seen = seen;
    record_->wanted = wanted;
    record_->activity = static_cast<uint32_t>(activity);
  }

  /// The wait that waiting() recorded has ended.
  __device__ void running() const { setActivity(core::BlockActivity::kRunning); }

 private:
  __device__ void setActivity(core::BlockActivity activity) const {
    if (record_ != nullptr) record_->activity = static_cast<uint32_t>(activity);
  }

  volatile core::GpuBlockProgress* record_;
  uint64_t kernel_;
};

/// One wait of thread 0, recorded the first time it looks at the abort flag in vain (note) and
/// cleared when it ends (end), where it was recorded.
class RecordedWait {
 public:
  __device__ explicit RecordedWait(const BlockProgressWriter& progress) : progress_(progress) {}

  __device__ void note(core::BlockActivity activity, int32_t peer, int32_t channel, const WaitSite& site,
                       uint64_t seen, uint64_t wanted) {
    if (!recorded_) progress_.waiting(activity, peer, channel, site, seen, wanted);
    recorded_ = true;
  }

  __device__ void end() const {
    if (recorded_) progress_.running();
  }

 private:
  const BlockProgressWriter& progress_;
  bool recorded_ = false;
};

}  // namespace weft::device
