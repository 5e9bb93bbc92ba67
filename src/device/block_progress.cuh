#pragma once
// The kernel's side of the blocks' progress records (src/core/gpu_block_progress.h): thread 0 of
// a block writes its block's record in mapped host memory when the block starts and ends a kernel,
// and a thread writes it around a wait that has polled kPollsPerAbortCheck times without what it
// waits for. Plain volatile stores, posted to host memory: the block never waits for them.

#include <cstdint>

#include "src/core/gpu_block_progress.h"
#include "src/device/kernel_work.h"

namespace weft::device {

/// This block's record, or nothing where the work has none for it. started() and done() are
/// thread 0's; a wait is recorded by whichever thread holds the block's claim on the record.
class BlockProgressWriter {
 public:
  /// `waitClaim`: a word of the block's shared memory, 0 before any thread records a wait.
  __device__ BlockProgressWriter(const KernelWork& work, unsigned int* waitClaim)
      : record_(work.blockProgress != nullptr && blockIdx.x < core::kRecordedBlocks ? work.blockProgress + blockIdx.x
                                                                                   : nullptr),
        kernel_(work.kernel),
        waitClaim_(waitClaim) {}

  __device__ void started() const {
    if (record_ == nullptr) return;
    record_->activity = static_cast<uint32_t>(core::BlockActivity::kRunning);
    record_->blocks = gridDim.x;
    record_->kernel = kernel_;
  }

  __device__ void done() const { setActivity(core::BlockActivity::kDone); }

  /// Claims the record for a wait of the calling thread: false where the block has no record or
  /// another of its threads holds the claim (its wait is the one recorded).
  __device__ bool claimForWait() const {
    if (record_ == nullptr || atomicCAS(waitClaim_, 0u, 1u) != 0u) return false;
    __threadfence_block();  // the record's stores after the last holder's (running())
    return true;
  }

  /// The block has waited a while for `wanted` (it sees `seen`) from rank `peer`. The caller holds
  /// the claim, so the block has a record.
  __device__ void waiting(core::BlockActivity activity, int32_t peer, int32_t channel, const core::WaitSite& site,
                          uint64_t seen, uint64_t wanted) const {
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

  /// The wait that waiting() recorded has ended; its claim is given back once the record says so,
  /// so that another thread's wait is recorded after it, not before.
  __device__ void running() const {
    setActivity(core::BlockActivity::kRunning);
    __threadfence_system();
    atomicExch(waitClaim_, 0u);
  }

 private:
  __device__ void setActivity(core::BlockActivity activity) const {
    if (record_ != nullptr) record_->activity = static_cast<uint32_t>(activity);
  }

  volatile core::GpuBlockProgress* record_;
  uint64_t kernel_;
  unsigned int* waitClaim_;
};

/// One wait of one thread, recorded when the thread looks at the abort flag in vain while no other
/// thread of its block has a wait recorded (note), and cleared when it ends (end), where it was
/// recorded. So a block whose thread 0 has what it waits for still shows the wait of another.
class RecordedWait {
 public:
  __device__ explicit RecordedWait(const BlockProgressWriter& progress) : progress_(progress) {}

  __device__ void note(core::BlockActivity activity, int32_t peer, int32_t channel, const core::WaitSite& site,
                       uint64_t seen, uint64_t wanted) {
    if (recorded_ || !progress_.claimForWait()) return;
    progress_.waiting(activity, peer, channel, site, seen, wanted);
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
