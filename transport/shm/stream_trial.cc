#include "transport/shm/stream_trial.h"

#include <algorithm>

namespace weft::transport::shm {

const char* slotWritesName(bool streamed) { return streamed ? "with non-temporal stores" : "through the caches"; }

SlotStreamTrial::SlotStreamTrial(Policy policy) : policy_(policy), streamed_(policy == Policy::kStreamed) {}

bool SlotStreamTrial::record(bool streamed, int64_t probeNanos, int64_t now) {
  if (inTrial_ && now - trialStartedAt_ > kRetrialNanos) {  // too few big pieces: give up
    inTrial_ = false;
    tried_ = true;
    settledAt_ = now;
    return true;
  }
  if (inTrial_) return recordProbe(streamed, probeNanos, now);
  if (tried_ && now - settledAt_ < kRetrialNanos) return false;
  inTrial_ = true;
  trialStartedAt_ = now;
  cachedProbeNanos_ = -1;
  pairs_ = 0;
  return true;
}

bool SlotStreamTrial::recordProbe(bool streamed, int64_t probeNanos, int64_t now) {
  if (probeNanos < 0) {  // not probed (its slot's last piece was small): no neighbour for the next
    cachedProbeNanos_ = -1;
    return false;
  }
  if (!streamed) {
    cachedProbeNanos_ = probeNanos;
    return false;
  }
  if (cachedProbeNanos_ < 0) return false;  // no cached probe just before it to compare with
  // A probe faster than the clock's resolution counts as one nanosecond.
  ratios_[pairs_++] = static_cast<double>(std::max<int64_t>(probeNanos, 1)) /
                      static_cast<double>(std::max<int64_t>(cachedProbeNanos_, 1));
  cachedProbeNanos_ = -1;
  if (pairs_ < kTrialPairs) return false;
  // The median of an even count: the mean of the two middle ratios.
  std::sort(ratios_.begin(), ratios_.end());
  lastRatio_ = (ratios_[kTrialPairs / 2 - 1] + ratios_[kTrialPairs / 2]) / 2;
  streamed_ = lastRatio_ <= kStreamRatio;
  ++decisions_;
  inTrial_ = false;
  tried_ = true;
  settledAt_ = now;
  return true;
}

}  // namespace weft::transport::shm
