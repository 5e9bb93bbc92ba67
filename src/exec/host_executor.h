#pragma once
// The host executor: runs the step programs of a plan's operations on host buffers, on the calling
// thread, to completion.
//
// Every operation's program is split into lanes; every lane is a small state machine that moves
// one piece (at most one slot) per turn, and all lanes of all operations (of any communicators)
// are progressed round robin, so a group that mixes communicators, or sends and receives in any
// order, cannot deadlock. Lanes that use the same connection end run in call order. When a turn
// makes no progress the thread waits through the wait helper (abort, timeout, back-off).

#include <memory>
#include <span>
#include <string>
#include <vector>

#include "algorithms/datatype.h"
#include "algorithms/step.h"
#include "algorithms/tuner.h"
#include "src/base/status.h"
#include "src/base/wait.h"
#include "src/core/connection_table.h"
#include "src/core/op.h"
#include "src/core/progress_record.h"
#include "src/exec/landings.h"

namespace weft::exec {

class HostExecutor {
 public:
  HostExecutor();
  ~HostExecutor();

  /// Runs `ops` (in call order; any communicators; host buffers) to completion, first setting up
  /// the connections they need that do not exist yet. Blocks. On failure every communicator
  /// involved records the error (Communicator::asyncError) unless it is kInvalidArgument.
  Status run(std::span<const core::Op> ops);

 private:
  struct LaneState;
  struct EndpointQueue;
  struct DirectWork;
  // A receive step of one lane whose output overlaps what a send step of another lane reads
  // (sendrecv or all-to-all in place): a piece of it is written only once the send has read the
  // bytes it overwrites, and it never lands directly (transport::Landing).
  struct Guard {
    size_t step = 0;      // of the guarded lane
    int sendLane = 0;
    size_t sendStep = 0;
    UserBytes src;        // what the send step reads
  };
  // What one operation's plan (its program, lanes and queues) depends on beyond what is fixed at
  // the communicator's init: a call with the same key runs the same plan, with only the buffers,
  // the sequence number and the reduction's scalar new.
  struct PlanKey {
    uint64_t comm = 0;  // core::Communicator::instanceId(); 0: no plan
    algorithms::Collective collective{};
    size_t count = 0;
    algorithms::DataType type{};
    int root = 0;
    algorithms::RedOpKind reduction{};
    algorithms::TuneChoice choice;
    bool operator==(const PlanKey&) const = default;
  };

  /// Makes what `ops` run on: their programs, the connections those need, lanes and queues. A
  /// call of one operation with the last call's PlanKey (a loop of the same call) that does not
  /// run direct reuses the last plan instead, its lanes set back to their start. After
  /// chooseAlgorithms.
  Status plan(std::span<const core::Op> ops);
  /// Fills choices_: each op's algorithm and protocol.
  Status chooseAlgorithms(std::span<const core::Op> ops);
  Status buildPrograms(std::span<const core::Op> ops);
  /// Fills `work` with the allgathers and buffers of `op` as a direct collective
  /// (direct_collectives.h), reusing its storage.
  static void prepareDirectWork(const core::Op& op, DirectWork* work);
  Status connectMissing(std::span<const core::Op> ops);
  void buildQueues(std::span<const core::Op> ops);
  /// Fills guards_ for the lanes of the current plan and its buffers.
  void buildGuards();
  /// True if a guard of `lane`'s current step forbids writing its current piece yet.
  bool guardHolds(const LaneState& lane) const;
  /// True if `step` of `lane` has a guard.
  bool guarded(const LaneState& lane, size_t step) const;
  /// Tells the receiving ends of the lane's current phase that take landings (ib) which pieces
  /// come and where each may be written (landings.h).
  Status announceLandings(const LaneState& lane);
  /// Moves `lane` as far as it can without waiting. Sets *progressed if anything moved.
  Status advance(LaneState& lane, bool* progressed);
  /// Pushes pending data of every sending end the plan uses and moves on the setup of its
  /// receiving ends (RecvConnection::progress), without waiting.
  Status pushConnections();
  /// Waits until every sending end used by the plan has handed its data on.
  Status flushSends(const WaitContext& context);
  /// Writes what the operations are doing into their communicators' progress records.
  void publishProgress(std::span<const core::Op> ops, core::ProgressState state);
  void describeLane(const LaneState& lane, core::ProgressRecord* record) const;
  /// WARNs one line per unfinished lane; returns the first.
  std::string describeWaits() const;

  // Scratch reused across calls, so a call on established connections allocates nothing.
  std::vector<algorithms::Program> programs_;
  std::vector<LaneState> lanes_;
  std::vector<EndpointQueue> queues_;
  std::vector<int> laneQueues_;  // lane i's queues are laneQueues_[first, first + count)
  std::vector<uint64_t> sequences_;  // op i's number on its communicator
  std::vector<algorithms::TuneChoice> choices_;  // op i's algorithm and protocol
  PlanKey lastPlan_;  // what lanes_ and queues_ hold, when they hold one op's plan that can run again
  std::vector<uint8_t> runsDirect_;  // op i runs direct (chosen by buildPrograms)
  // The direct collectives of the ops, in order: the first directsUsed_ are this call's; the rest
  // are kept for their storage.
  std::vector<std::unique_ptr<DirectWork>> directs_;
  size_t directsUsed_ = 0;
  std::vector<char> directScratch_;
  std::vector<transport::Landing> landings_;  // announceLandings' list
  std::vector<Guard> guards_;  // by lane, then step
  std::vector<std::vector<char>> opScratch_;  // op i's BufferKind::kScratch memory (grows, never shrinks)
};

/// The calling thread's executor.
HostExecutor& threadHostExecutor();

}  // namespace weft::exec
