#pragma once
// The order in which a thread block runs the rounds of a run of lanes (KernelRun, kernel_work.h):
// the stretches of rounds it takes, lane by lane, window by window. The step kernel walks its runs
// with it (src/device/lane_loop.h), every thread of a block in step; the block plan's tests walk
// their plans with it (tests/unit/block_plan_test.cc), so that what they prove is what the kernel
// does. A folded distance's tables hold each lane once, however many windows its rounds take.

#include <cstdint>

#include "src/device/host_device.h"
#include "src/device/kernel_work.h"

namespace weft::device {

/// Walks one run: the first stream's next `window` rounds, then the second's, and so on until both
/// streams end; a stream's rounds are its lanes' one after the other. Use:
///
///     RunWalk walk(run);
///     while (walk.more()) {
///       uint64_t from, to;
///       walk.take(roundsOfLane(walk.lane()), &from, &to);  // run rounds [from, to) of that lane
///     }
///
/// A window of 0 counts as unbounded, so no run is walked forever.
class RunWalk {
 public:
  WEFT_HOST_DEVICE explicit RunWalk(const KernelRun& run)
      : window_(run.window != 0 ? run.window : ~uint64_t{0}), left_(window_) {
    current_.next = run.firstLane;
    current_.end = other_.next = run.firstLane + run.streamLanes[0];
    other_.end = other_.next + run.streamLanes[1];
  }

  /// Whether a stretch is left to run; if so, lane() is its lane.
  WEFT_HOST_DEVICE bool more() {
    if (current_.next < current_.end && left_ > 0) return true;
    for (int turn = 0; turn < 2; ++turn) {  // the window is used up, or the stream has ended
      const Stream turned = other_;
      other_ = current_;
      current_ = turned;
      left_ = window_;
      if (current_.next < current_.end) return true;
    }
    return false;
  }

  /// The lane (an index into the kernel's lanes) of the next stretch.
  WEFT_HOST_DEVICE uint32_t lane() const { return current_.next; }

  /// Given the rounds of lane(), the stretch of them to run now, [*from, *to), and moves past it.
  WEFT_HOST_DEVICE void take(uint64_t laneRounds, uint64_t* from, uint64_t* to) {
    const uint64_t at = current_.round < laneRounds ? current_.round : laneRounds;
    const uint64_t rest = laneRounds - at;
    *from = at;
    *to = left_ < rest ? at + left_ : laneRounds;
    left_ -= *to - at;
    if (*to == laneRounds) {
      ++current_.next;
      current_.round = 0;
    } else {
      current_.round = *to;
    }
  }

 private:
  // Where a stream is. The walk swaps the two rather than index them, so that a GPU thread keeps
  // them in registers.
  struct Stream {
    uint32_t next = 0;  // its next lane
    uint32_t end = 0;   // one past its last lane
    uint64_t round = 0;  // of `next`, where a window ended inside it
  };

  uint64_t window_;
  uint64_t left_;  // rounds of the current window not yet taken
  Stream current_;
  Stream other_;
};

}  // namespace weft::device
