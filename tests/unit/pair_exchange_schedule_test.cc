// The two-rank AllReduce exchange: its program, and simulated runs (in and out of place, every
// interleaving, counts around the piece size, several channels) that must give the exact result
// and never deadlock while the data fits the connection's slots.

#include <gtest/gtest.h>

#include <vector>

#include "algorithms/schedule.h"
#include "tests/unit/schedule_test_support.h"

namespace weft::algorithms {
namespace {

using tests::describe;
using tests::Interleaving;
using tests::Participant;
using tests::ProgramSimulator;
using tests::SimulationResult;
using tests::SimulatorOptions;
using tests::testRings;

std::vector<Participant> pairParticipants(size_t count, const std::vector<Ring>& rings, size_t granule) {
  std::vector<Participant> parts;
  for (int rank = 0; rank < 2; ++rank) {
    OpShape shape{Collective::kAllReduce, count, 0, 2, rank, granule};
    Participant part{shape, {}};
    buildPairExchangeAllReduce(shape, rings, &part.program);
    parts.push_back(part);
  }
  return parts;
}

TEST(PairExchangeSchedule, SendsTheScaledInputThenReducesThePeers) {
  Program program;
  buildPairExchangeAllReduce({Collective::kAllReduce, 10, 0, 2, 1}, testRings(2, 2), &program);
  EXPECT_EQ(describe(program),
            "c0: s@0+ >0 #5 | <0 s@0+ ! =>r@0 #5\n"
            "c1: s@5+ >0 #5 | <0 s@5+ ! =>r@5 #5\n");
}

// Also with the data cut in units of 16 elements, as executors cut a float's (OpShape::granule).
TEST(PairExchangeSchedule, IsExactInEveryInterleavingWhileTheDataFitsTheSlots) {
  ProgramSimulator simulator;
  const size_t kCounts[] = {0, 1, 7, 63, 64, 65, 200, 8 * 64};
  const Interleaving kInterleavings[] = {Interleaving::kRoundRobin, Interleaving::kRandom, Interleaving::kGreedy};
  for (size_t granule : {size_t{1}, size_t{16}}) {
    for (int nChannels : {1, 2, 3}) {
      const std::vector<Ring> rings = testRings(2, nChannels);
      for (size_t count : kCounts) {
        for (bool inPlace : {false, true}) {
          for (Interleaving interleaving : kInterleavings) {
            SimulatorOptions options;
            options.slotElements = 64;
            options.slotCount = 8;  // 8 x 64 elements: every count above fits, on any channel count
            options.inPlace = inPlace;
            options.interleaving = interleaving;
            options.nChannels = nChannels;
            options.seed = count * 31 + static_cast<uint64_t>(nChannels);
            SimulationResult result = simulator.run(pairParticipants(count, rings, granule), options);
            EXPECT_TRUE(result.ok()) << result.message << " (count " << count << ", " << nChannels << " channels, "
                                     << (inPlace ? "in place" : "out of place") << ", granule " << granule << ")";
          }
        }
      }
    }
  }
}

TEST(PairExchangeSchedule, DeadlocksWhenTheDataExceedsTheSlots) {
  // Why callers bound it: both ranks post their whole input before taking the peer's.
  ProgramSimulator simulator;
  SimulatorOptions options;
  options.slotElements = 64;
  options.slotCount = 2;
  SimulationResult result = simulator.run(pairParticipants(64 * 3, testRings(2, 1), 1), options);
  EXPECT_EQ(result.failure, tests::SimulationFailure::kDeadlock) << result.message;
}

}  // namespace
}  // namespace weft::algorithms
