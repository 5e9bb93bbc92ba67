#include "src/core/gpu_stall_watch.h"

#include <algorithm>

#include "src/core/progress_record.h"

namespace weft::core {
namespace {

bool sameRecord(const GpuBlockProgress& a, const GpuBlockProgress& b) {
  return a.kernel == b.kernel && a.activity == b.activity && a.peer == b.peer && a.channel == b.channel &&
         a.lane == b.lane && a.step == b.step && a.steps == b.steps && a.piece == b.piece && a.seen == b.seen &&
         a.wanted == b.wanted && a.blocks == b.blocks;
}

// Whether some recorded block of the newest kernel that has a block waiting has not started it:
// its record still names an earlier kernel. Such a block may be waiting for a multiprocessor
// (another stream's kernel holds them), and the waiting block may wait for it.
bool newestKernelPartlyStarted(const std::vector<GpuBlockProgress>& records) {
  const GpuBlockProgress* newest = nullptr;
  for (const GpuBlockProgress& record : records) {
    const bool waits = isGpuWait(static_cast<BlockActivity>(record.activity));
    if (waits && (newest == nullptr || record.kernel > newest->kernel)) newest = &record;
  }
  if (newest == nullptr) return false;
  const size_t blocks = std::min<size_t>(newest->blocks, records.size());
  for (size_t b = 0; b < blocks; ++b) {
    if (records[b].kernel != newest->kernel) return true;
  }
  return false;
}

}  // namespace

GpuStallClock::Clock::duration GpuStallClock::look(const GpuBlockProgress* blocks, Clock::time_point now) {
  bool waiting = false;
  bool running = false;
  bool changed = !stuck_;
  for (size_t b = 0; b < kRecordedBlocks; ++b) {
    const GpuBlockProgress block = readGpuBlock(blocks[b]);
    const auto activity = static_cast<BlockActivity>(block.activity);
    waiting |= isGpuWait(activity);
    running |= activity == BlockActivity::kRunning;
    if (!sameRecord(block, last_[b])) {
      changed = true;
      last_[b] = block;
    }
  }
  if (!waiting || running) {
    stuck_ = false;
    return Clock::duration::zero();
  }
  partlyStarted_ = newestKernelPartlyStarted(last_);
  if (changed) {
    stuck_ = true;
    stuckSince_ = now;
    return Clock::duration::zero();
  }
  return now - stuckSince_;
}

GpuStallWatch::GpuStallWatch(double timeoutSeconds, const GpuBlockProgress* blocks, std::function<bool()> inFlight,
                             std::function<void(const Status&)> onStall)
    : timeoutSeconds_(timeoutSeconds),
      blocks_(blocks),
      inFlight_(std::move(inFlight)),
      onStall_(std::move(onStall)),
      thread_([this] { run(); }) {}

GpuStallWatch::~GpuStallWatch() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_one();
  thread_.join();
}

void GpuStallWatch::run() {
  GpuStallClock clock;
  const auto timeout = std::chrono::duration<double>(timeoutSeconds_);
  std::unique_lock<std::mutex> lock(mutex_);
  while (!wake_.wait_for(lock, kLookPeriod, [this] { return stopping_; })) {
    lock.unlock();  // a look, and the report, must not hold up the destructor's stop
    if (!inFlight_()) {
      clock.reset();
    } else if (const auto stuck = clock.look(blocks_, GpuStallClock::Clock::now());
               stuck > (clock.partlyStarted() ? 2 * timeout : timeout)) {
      onStall_(remoteError("its GPU kernel made no progress for %.0f s (WEFT_TIMEOUT=%.0f): %s; a peer may be stuck "
                           "or not calling the same operation",
                           std::chrono::duration<double>(stuck).count(), timeoutSeconds_,
                           describeFirstGpuWait(clock.lastLook()).c_str()));
      return;  // reported once: the communicator ends its kernels
    }
    lock.lock();
  }
}

}  // namespace weft::core
