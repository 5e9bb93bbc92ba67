#pragma once
// WEFT_TIMEOUT on GPU buffers. A host call fails once it has made no progress for WEFT_TIMEOUT
// seconds; a call on GPU buffers has returned already, and its kernel waits on the GPU. The watch
// gives that kernel the same deadline: a thread looks at the communicator's block records
// (gpu_block_progress.h) ten times a second and, once they have shown its kernels stuck for that
// long, reports it once; the communicator then ends its kernels and records the error
// (ncclCommGetAsyncError), as a dead peer does.
//
// "Stuck" is what the records can prove: a block is in a wait and stays there, no block runs, and no
// record changes. A kernel that computes, or whose waits end before they are recorded, is never
// stuck; nor is one that has not started (the stream may be busy with the caller's earlier work).
// One some of whose blocks have not started (they may wait for multiprocessors that another
// stream's kernel holds, and the waiting block for them) gets twice the time.

#include <chrono>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

#include "src/base/status.h"
#include "src/core/gpu_block_progress.h"

namespace weft::core {

/// How long a communicator's GPU kernels have gone without progress, from successive looks at its
/// blocks' records. Not thread-safe.
class GpuStallClock {
 public:
  using Clock = std::chrono::steady_clock;

  /// One look at the kRecordedBlocks records `blocks` at `now`. Returns how long they have shown
  /// the kernels stuck: some block in a wait, none running, no record changed since the first look
  /// that showed it so. Zero otherwise.
  Clock::duration look(const GpuBlockProgress* blocks, Clock::time_point now);
  /// Forgets the looks so far (no kernel is in flight).
  void reset() { stuck_ = false; }
  /// Whether, at the latest look that showed the kernels stuck, some recorded block of the newest
  /// kernel with a waiting block had not started it (its record named an earlier kernel; the
  /// records say how many blocks a kernel has). A graph's replays share one number: a block that
  /// has not started a second replay in a row is not seen.
  bool partlyStarted() const { return partlyStarted_; }
  /// The records as the latest look saw them (kRecordedBlocks).
  const GpuBlockProgress* lastLook() const { return last_.data(); }

 private:
  std::vector<GpuBlockProgress> last_ = std::vector<GpuBlockProgress>(kRecordedBlocks);
  Clock::time_point stuckSince_;
  bool stuck_ = false;  // whether the previous look showed the kernels stuck (last_ is that look)
  bool partlyStarted_ = false;
};

/// A thread that looks at a communicator's kernels every kLookPeriod while `inFlight` says one has
/// not ended, and calls `onStall` once, on that thread, when they have been stuck for
/// `timeoutSeconds`, with a kRemoteError that says how long and what the first waiting block waits
/// for. Its thread ends there.
class GpuStallWatch {
 public:
  static constexpr std::chrono::milliseconds kLookPeriod{100};

  /// Starts the thread. `blocks` (kRecordedBlocks records), `inFlight` and `onStall` must stay
  /// valid until the watch is destroyed; `inFlight` and `onStall` run on the watch's thread.
  GpuStallWatch(double timeoutSeconds, const GpuBlockProgress* blocks, std::function<bool()> inFlight,
                std::function<void(const Status&)> onStall);
  /// Stops the thread (at most one look later).
  ~GpuStallWatch();
  GpuStallWatch(const GpuStallWatch&) = delete;
  GpuStallWatch& operator=(const GpuStallWatch&) = delete;

 private:
  void run();

  const double timeoutSeconds_;
  const GpuBlockProgress* blocks_;
  std::function<bool()> inFlight_;
  std::function<void(const Status&)> onStall_;
  std::mutex mutex_;
  std::condition_variable wake_;
  bool stopping_ = false;  // under mutex_
  std::thread thread_;
};

}  // namespace weft::core
