// Bruck's AllGather and ReduceScatter (algorithms/bruck_schedule.cc): their programs on five
// ranks, and simulated runs at every rank count up to 64, in and out of place, piece after piece
// over two slots in every interleaving (the executor's order at any size), that must give every
// rank its exact result and never deadlock.

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "algorithms/schedule.h"
#include "tests/unit/schedule_test_support.h"

namespace weft::algorithms {
namespace {

using tests::describe;
using tests::Participant;
using tests::ProgramSimulator;
using tests::SimulationResult;
using tests::SimulatorOptions;

Program bruckProgram(int nranks, int rank, size_t count) {
  Program program;
  buildBruckAllGather({Collective::kAllGather, count, 0, nranks, rank}, &program);
  return program;
}

Program bruckReduceScatterProgram(int nranks, int rank, size_t count) {
  Program program;
  buildBruckReduceScatter({Collective::kReduceScatter, count, 0, nranks, rank}, &program);
  return program;
}

TEST(BruckSchedule, FiveRanksGatherInThreeSteps) {
  // Rank 3: its own block, then 1, 2 and 1 blocks to ranks 2, 1, 4 and from ranks 4, 0, 2.
  EXPECT_EQ(describe(bruckProgram(5, 3, 2)),
            "c0: s@0 =>r@6 #2 | r@6 >2 #2 | <4 =>r@8 #2 | r@6 >1 #4 | <0 =>r@0 #4 | r@6 >4 #2 | <2 =>r@4 #2\n");
  // Rank 4's first two places are blocks 4 and 0: sent as two steps, received by rank 2 as two.
  EXPECT_EQ(describe(bruckProgram(5, 4, 2)),
            "c0: s@0 =>r@8 #2 | r@8 >3 #2 | <0 =>r@0 #2 | r@8 >2 #2 | r@0 >2 #2 | <1 =>r@2 #4 | r@8 >0 #2 | "
            "<3 =>r@6 #2\n");
  EXPECT_EQ(describe(bruckProgram(5, 2, 2)),
            "c0: s@0 =>r@4 #2 | r@4 >1 #2 | <3 =>r@6 #2 | r@4 >0 #4 | <4 =>r@8 #2 | <4 =>r@0 #2 | r@4 >3 #2 | "
            "<1 =>r@2 #2\n");
}

TEST(BruckSchedule, OneRankCopiesAndNothingGivesNoLane) {
  EXPECT_EQ(describe(bruckProgram(1, 0, 3)), "c0: s@0 =>r@0 #3\n");
  EXPECT_TRUE(bruckProgram(4, 1, 0).lanes.empty());
}

TEST(BruckSchedule, StepsGrowWithTheLogarithmOfTheRanks) {
  for (int nranks : {2, 3, 4, 8, 9, 64}) {
    int sends = 0;
    const Program program = bruckProgram(nranks, 0, 1);
    for (const Step& step : program.lanes[0].steps) sends += step.sendPeer >= 0 ? 1 : 0;
    // Rank 0's window never wraps: one send per step.
    EXPECT_EQ(sends, static_cast<int>(std::ceil(std::log2(nranks)))) << nranks;
  }
}

TEST(BruckScheduleSimulated, EveryRankCountUpTo64IsExact) {
  tests::expectExactAtEveryRankCountUpTo64(Collective::kAllGather, bruckProgram, 11);
}

TEST(BruckReduceScatterSchedule, FiveRanksReduceInThreePhases) {
  // Rank 1, distances 4, 2, 1: place 4 (block 0) to rank 0; places 2, 3 (blocks 3, 4) to rank 3,
  // place 1 to rank 2, each exchange a phase; place 0 (block 1) gathers every distance's sum and
  // ends in the receive buffer. Scratch holds places 0 and 1. The exchange at distance 2 is cut
  // after its first place at both ends, since the receiver's place 0 is in scratch and place 1 not.
  EXPECT_EQ(describe(bruckReduceScatterProgram(5, 1, 2)),
            "c0: s@0+ >0 #2 | <2 s@2+ =>x@0 #2 || s@6+ >3 #2 | s@8+ >3 #2 | <4 x@0+ =>x@0 #2 | "
            "<4 s@4+ =>x@2 #2 || x@2 >2 #2 | <0 x@0+ ! =>r@0 #2\n");
  EXPECT_EQ(describe(bruckReduceScatterProgram(1, 0, 3)), "c0: s@0+ ! =>r@0 #3\n");
  EXPECT_TRUE(bruckReduceScatterProgram(4, 1, 0).lanes.empty());
}

TEST(BruckReduceScatterScheduleSimulated, EveryRankCountUpTo64IsExact) {
  tests::expectExactAtEveryRankCountUpTo64(Collective::kReduceScatter, bruckReduceScatterProgram, 12);
}

// The phases are what makes it exact: run round after round across exchanges, a send reads a
// place before a later piece of the previous exchange's receive has summed into it.
TEST(BruckReduceScatterScheduleSimulated, WithoutPhasesAPieceIsSentBeforeItIsSummed) {
  // At 8 ranks the exchange at distance 4 receives places [0, 4) in one step; the next one sends
  // places [2, 4), the second half of what that step receives.
  std::vector<Participant> parts;
  for (int rank = 0; rank < 8; ++rank) {
    Program program = bruckReduceScatterProgram(8, rank, 4);
    for (Step& step : program.lanes[0].steps) step.startsPhase = false;
    parts.push_back({{Collective::kReduceScatter, 4, 0, 8, rank}, program});
  }
  SimulatorOptions options;
  options.slotElements = 1;
  options.pieceMajor = true;
  const SimulationResult result = ProgramSimulator().run(parts, options);
  EXPECT_EQ(result.failure, tests::SimulationFailure::kWrongResult) << result.message;
}

}  // namespace
}  // namespace weft::algorithms
