// Recursive halving-doubling AllReduce (algorithms/rhd_schedule.cc): its program on a power of two
// and on a rank count that folds, its exchange count, and simulated runs at every rank count up
// to 64, in and out of place, piece after piece over two slots in every interleaving, that must
// give every rank the exact sum, finalized once, and never deadlock.

#include <gtest/gtest.h>

#include <bit>
#include <vector>

#include "algorithms/schedule.h"
#include "tests/unit/schedule_test_support.h"

namespace weft::algorithms {
namespace {

using tests::describe;

Program rhdProgram(int nranks, int rank, size_t count) {
  Program program;
  buildRhdAllReduce({Collective::kAllReduce, count, 0, nranks, rank}, &program);
  return program;
}

TEST(RhdSchedule, FourRanksHalveThenDouble) {
  // Rank 2 (binary 10): keeps the upper half [4, 8) with rank 0, then [4, 6) with rank 3, where
  // its sum is final; then sends [4, 6) to rank 3 and [4, 8) to rank 0, taking back what it gave.
  EXPECT_EQ(describe(rhdProgram(4, 2, 8)),
            "c0: s@0+ >0 #4 | <0 s@4+ =>r@4 #4 || r@6 >3 #2 | <3 r@4+ ! =>r@4 #2 || r@4 >3 #2 | <3 =>r@6 #2 || "
            "r@4 >0 #4 | <0 =>r@0 #4\n");
}

TEST(RhdSchedule, ThreeRanksFoldThePairIntoOne) {
  // Rank 0 hands its input to rank 1 and waits for the result; rank 1 reduces it, then works with
  // rank 2 as a power of two, and hands the result back.
  EXPECT_EQ(describe(rhdProgram(3, 0, 4)), "c0: s@0+ >1 #4 || <1 =>r@0 #4\n");
  EXPECT_EQ(describe(rhdProgram(3, 1, 4)),
            "c0: <0 s@0+ =>r@0 #4 || r@2 >2 #2 | <2 r@0+ ! =>r@0 #2 || r@0 >2 #2 | <2 =>r@2 #2 || r@0 >0 #4\n");
  EXPECT_EQ(describe(rhdProgram(1, 0, 3)), "c0: s@0+ ! =>r@0 #3\n");
  EXPECT_TRUE(rhdProgram(4, 1, 0).lanes.empty());
}

TEST(RhdSchedule, ExchangesGrowWithTheLogarithmOfTheRanks) {
  for (int nranks : {2, 4, 8, 16, 64, 5, 12}) {
    const int p = static_cast<int>(std::bit_floor(static_cast<unsigned>(nranks)));
    const int rank = nranks - 1;  // never folded
    const Program program = rhdProgram(nranks, rank, 1 << 12);
    int phases = 0;
    for (const Step& step : program.lanes[0].steps) phases += step.startsPhase ? 1 : 0;
    EXPECT_EQ(phases, 2 * std::countr_zero(static_cast<unsigned>(p))) << nranks;
  }
}

TEST(RhdScheduleSimulated, EveryRankCountUpTo64IsExact) {
  tests::expectExactAtEveryRankCountUpTo64(Collective::kAllReduce, rhdProgram, 13);
}

}  // namespace
}  // namespace weft::algorithms
