#include "tests/unit/program_simulator.h"

#include <gtest/gtest.h>

#include <string>
#include <utility>
#include <vector>

#include "tests/unit/schedule_test_support.h"

namespace weft::tests {
namespace {

// Correct programs, then programs broken on purpose: each break must be reported as what it is.

class SimulatorCatches : public ::testing::Test {
 protected:
  void SetUp() override { rings_ = testRings(4, 2); }
  std::vector<Participant> op(Collective collective, size_t count, int root = 0) {
    return participantsFor(collective, 4, root, count, rings_);
  }
  SimulationFailure run(const std::vector<Participant>& parts, size_t slot = 3) {
    SimulatorOptions options;
    options.nChannels = 2;
    options.slotElements = slot;
    last_ = simulate(parts, options);
    return last_.failure;
  }
  std::vector<Ring> rings_;
  SimulationResult last_;
};

TEST_F(SimulatorCatches, NothingInCorrectPrograms) {
  for (Collective collective : kAllCollectives) {
    if (collective == Collective::kRecv) continue;  // runs with kSend
    EXPECT_EQ(run(op(collective, 10, 1)), SimulationFailure::kNone) << last_.message;
    EXPECT_GT(last_.pieces, 0u);
  }
}

TEST_F(SimulatorCatches, AMissingScale) {
  auto parts = op(Collective::kAllReduce, 10);
  parts[1].program.lanes[0].steps[0].contribute = false;
  EXPECT_EQ(run(parts), SimulationFailure::kWrongResult);
  EXPECT_NE(last_.message.find("scaled=3 finalizes=1"), std::string::npos) << last_.message;
}

TEST_F(SimulatorCatches, ReadingMemoryNobodyWrote) {
  auto parts = op(Collective::kAllReduce, 10);
  parts[2].program.lanes[0].steps[0].src.buffer = BufferKind::kRecv;
  EXPECT_EQ(run(parts), SimulationFailure::kWrongResult);
  // Garbage (0x1), which also has no element index to match (0x4).
  EXPECT_NE(last_.message.find("faults=0x5}"), std::string::npos) << last_.message;
}

TEST_F(SimulatorCatches, AScaleThatIsNotWanted) {
  auto parts = op(Collective::kAllGather, 10);
  parts[2].program.lanes[0].steps[1].contribute = true;
  EXPECT_EQ(run(parts), SimulationFailure::kWrongResult);
}

TEST_F(SimulatorCatches, AMissingOrDoubleFinalize) {
  auto parts = op(Collective::kReduce, 10, 3);
  parts[3].program.lanes[1].steps[0].finalize = false;
  EXPECT_EQ(run(parts), SimulationFailure::kWrongResult);
  parts = op(Collective::kAllReduce, 10);
  parts[0].program.lanes[0].steps[0].finalize = true;
  EXPECT_EQ(run(parts), SimulationFailure::kWrongResult);
  EXPECT_NE(last_.message.find("faults=0x10"), std::string::npos) << last_.message;
}

TEST_F(SimulatorCatches, ADoubledContribution) {
  auto parts = op(Collective::kAllReduce, 10);
  // Rank 0's first all-gather step adds its own input again to the finished chunk it receives.
  Step& step = parts[0].program.lanes[0].steps[4];
  ASSERT_TRUE(step.dst.present());
  step.src = {BufferKind::kSend, step.dst.offset};
  step.contribute = true;
  EXPECT_EQ(run(parts), SimulationFailure::kWrongResult);
  EXPECT_NE(last_.message.find("faults=0x12"), std::string::npos) << last_.message;
  Symbol a{1, 5, 1, 0, 0};
  EXPECT_EQ(combineSymbols(a, a).faults, kFaultDoubled);
  EXPECT_EQ(combineSymbols(a, Symbol{2, 6, 1, 0, 0}).faults, kFaultMixed);
  EXPECT_EQ(scaleSymbol(a).faults, kFaultRescaled);
}

TEST_F(SimulatorCatches, AMisplacedBlock) {
  auto parts = op(Collective::kAllToAll, 10);
  parts[1].program.lanes[0].steps[0].src.offset += 10;  // sends block 3 to rank 2
  EXPECT_EQ(run(parts), SimulationFailure::kWrongResult);
  EXPECT_NE(last_.message.find("rank 2 recv[10]"), std::string::npos) << last_.message;
}

TEST_F(SimulatorCatches, AStepCountThatDiffersFromThePeers) {
  auto parts = op(Collective::kBroadcast, 10, 0);
  parts[1].program.lanes[0].steps[0].count = 4;  // channel 0 holds 5 elements
  EXPECT_EQ(run(parts, 64), SimulationFailure::kCountMismatch);
  EXPECT_NE(last_.message.find("5-element step"), std::string::npos) << last_.message;
}

TEST_F(SimulatorCatches, AMissingStepAsDeadlockOrLeftoverData) {
  auto parts = op(Collective::kAllReduce, 40);
  auto& steps = parts[2].program.lanes[1].steps;
  steps.erase(steps.begin() + 1);  // a receive-and-send step
  EXPECT_EQ(run(parts), SimulationFailure::kDeadlock);
  parts = op(Collective::kBroadcast, 10, 0);
  parts[3].program.lanes[0].steps.clear();  // the end of the pipeline
  EXPECT_EQ(run(parts), SimulationFailure::kLeftoverData);
}

TEST_F(SimulatorCatches, OutOfRangeSlicesAndBuffersTheApiDoesNotGive) {
  auto parts = op(Collective::kAllGather, 10);
  parts[0].program.lanes[0].steps[0].dst.offset = 36;
  EXPECT_EQ(run(parts), SimulationFailure::kOutOfRange);
  parts = op(Collective::kBroadcast, 10, 0);
  parts[2].program.lanes[0].steps[0].src = {BufferKind::kSend, 0};  // non-roots have no send buffer
  parts[2].program.lanes[0].steps[0].contribute = true;
  EXPECT_EQ(run(parts), SimulationFailure::kOutOfRange);
}

TEST_F(SimulatorCatches, InvalidSteps) {
  auto parts = op(Collective::kAllGather, 10);
  parts[0].program.lanes[0].steps[2].src = {BufferKind::kRecv, 0};  // a receive with a plain source
  EXPECT_EQ(run(parts), SimulationFailure::kInvalidStep);
  parts = op(Collective::kAllGather, 10);
  parts[0].program.lanes[0].steps[0].dst.buffer = BufferKind::kSend;
  EXPECT_EQ(run(parts), SimulationFailure::kInvalidStep);
  parts = op(Collective::kAllGather, 10);
  parts[0].program.lanes[0].steps[0].count = 0;
  EXPECT_EQ(run(parts), SimulationFailure::kZeroCountStep);
  parts = op(Collective::kAllGather, 10);
  parts[0].program.lanes[0].steps[1].sendPeer = 4;
  EXPECT_EQ(run(parts), SimulationFailure::kInvalidProgram);
}

TEST_F(SimulatorCatches, LanesSharingAConnectionOrMemory) {
  auto parts = op(Collective::kAllReduce, 10);
  parts[0].program.lanes[1] = parts[0].program.lanes[0];
  EXPECT_EQ(run(parts), SimulationFailure::kSharedConnection);
  parts = op(Collective::kAllGather, 10);
  Lane copy = parts[0].program.lanes[0];
  copy.steps.resize(1);  // the local copy again, in a second lane
  parts[0].program.lanes.push_back(copy);
  EXPECT_EQ(run(parts), SimulationFailure::kLaneRace);
}

TEST_F(SimulatorCatches, AnOverwriteThatDataFlowDoesNotOrder) {
  // Rank 0 sends its input to rank 1 in one lane and, in a second lane, receives rank 1's input
  // over the same place (in place): rank 1's value does not hold rank 0's element, so nothing says
  // the send read it first.
  std::vector<Participant> parts;
  for (int rank = 0; rank < 2; ++rank) {
    Participant part{OpShape{Collective::kAllGather, 4, 0, 2, rank}, {}};
    algorithms::Lane send;
    algorithms::Step out;
    out.sendPeer = 1 - rank;
    out.src = {BufferKind::kSend, 0};
    out.count = 4;
    send.steps = {out};
    algorithms::Lane receive;
    algorithms::Step in;
    in.recvPeer = 1 - rank;
    in.dst = {BufferKind::kRecv, static_cast<size_t>(4 * rank)};
    in.count = 4;
    receive.steps = {in};
    part.program.lanes = {send, receive};
    parts.push_back(part);
  }
  SimulatorOptions options;
  options.inPlace = true;
  EXPECT_EQ(simulate(parts, options).failure, SimulationFailure::kLaneRace);
}

TEST_F(SimulatorCatches, StepsInTheWrongOrder) {
  auto parts = op(Collective::kAllGather, 10);
  auto& steps = parts[1].program.lanes[0].steps;
  std::swap(steps[2], steps[3]);  // writes the forwarded blocks to each other's place
  EXPECT_EQ(run(parts), SimulationFailure::kWrongResult);
}

}  // namespace
}  // namespace weft::tests
