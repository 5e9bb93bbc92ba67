// Bruck's AllGather (algorithms/bruck_schedule.cc): its program on five ranks, and simulated runs
// at every rank count up to 64, in and out of place, piece after piece over two slots in every
// interleaving (the executor's order at any size), that must give every rank every block exactly
// and never deadlock.

#include <gtest/gtest.h>

#include <cmath>
#include <random>
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
  std::mt19937 draw(11);
  ProgramSimulator simulator;
  int failures = 0;
  for (int nranks = 1; nranks <= 64; ++nranks) {
    for (size_t count : {size_t{1}, size_t{3}, size_t{100}}) {
      for (bool inPlace : {false, true}) {
        const SimulatorOptions options = tests::drawnPipelinedOptions(draw, inPlace, 1);
        std::vector<Participant> parts;
        for (int rank = 0; rank < nranks; ++rank) {
          parts.push_back({{Collective::kAllGather, count, 0, nranks, rank}, bruckProgram(nranks, rank, count)});
        }
        const SimulationResult result = simulator.run(parts, options);
        if (result.ok()) continue;
        ADD_FAILURE() << "nranks " << nranks << " count " << count << " slot " << options.slotElements
                      << (inPlace ? " in place" : "") << ": " << result.message;
        if (++failures == 5) return;
      }
    }
  }
}

}  // namespace
}  // namespace weft::algorithms
