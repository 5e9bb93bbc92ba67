#pragma once
// Fills a Program lane by lane, reusing the capacity of the lanes it already holds.

#include <cstddef>
#include <vector>

#include "algorithms/step.h"

namespace weft::algorithms {

/// Marks the first of the steps appended since `first` (steps[first]) as starting a phase
/// (Step::startsPhase), if any was appended.
inline void markPhaseStart(std::vector<Step>& steps, size_t first) {
  if (first < steps.size()) steps[first].startsPhase = true;
}

/// The one step of a reduction on a single rank: its input, scaled and finalized, into the
/// receive buffer.
inline Step singleRankReduction(size_t count) {
  Step own;
  own.count = count;
  own.src = {BufferKind::kSend, 0};
  own.contribute = true;
  own.finalize = true;
  own.dst = {BufferKind::kRecv, 0};
  return own;
}

class ProgramBuilder {
 public:
  /// Empties `program` (keeping its lanes' storage); `program` must outlive the builder.
  explicit ProgramBuilder(Program* program) : program_(program) {}
  /// Drops the lanes that were not refilled, and a last lane left without steps.
  ~ProgramBuilder() {
    if (used_ > 0 && program_->lanes[used_ - 1].steps.empty()) --used_;
    program_->lanes.resize(used_);
  }
  ProgramBuilder(const ProgramBuilder&) = delete;
  ProgramBuilder& operator=(const ProgramBuilder&) = delete;

  /// Starts a lane on `channel` and returns its steps to append to. A lane left without steps is
  /// reused by the next call rather than kept.
  std::vector<Step>& startLane(int channel) {
    if (used_ == 0 || !program_->lanes[used_ - 1].steps.empty()) {
      if (used_ == program_->lanes.size()) program_->lanes.emplace_back();
      ++used_;
    }
    Lane& lane = program_->lanes[used_ - 1];
    lane.channel = channel;
    lane.steps.clear();
    return lane.steps;
  }

 private:
  Program* program_;
  size_t used_ = 0;
};

}  // namespace weft::algorithms
