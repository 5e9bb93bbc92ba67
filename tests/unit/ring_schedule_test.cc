#include <gtest/gtest.h>

#include <algorithm>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "algorithms/direct_schedule.h"
#include "algorithms/even_split.h"
#include "algorithms/schedule.h"
#include "tests/unit/schedule_test_support.h"

namespace weft::algorithms {
namespace {

using tests::build;
using tests::describe;
using tests::Interleaving;
using tests::isRooted;
using tests::kAllCollectives;
using tests::simulateOp;
using tests::SimulationFailure;
using tests::SimulationResult;
using tests::SimulatorOptions;
using tests::testRings;

// --- The programs themselves, on small cases that can be read. ---

TEST(CollectiveName, NamesEveryCollective) {
  EXPECT_STREQ(collectiveName(Collective::kAllReduce), "AllReduce");
  EXPECT_STREQ(collectiveName(Collective::kAllGather), "AllGather");
  EXPECT_STREQ(collectiveName(Collective::kReduceScatter), "ReduceScatter");
  EXPECT_STREQ(collectiveName(Collective::kBroadcast), "Broadcast");
  EXPECT_STREQ(collectiveName(Collective::kReduce), "Reduce");
  EXPECT_STREQ(collectiveName(Collective::kAllToAll), "AllToAll");
  EXPECT_STREQ(collectiveName(Collective::kGather), "Gather");
  EXPECT_STREQ(collectiveName(Collective::kScatter), "Scatter");
  EXPECT_STREQ(collectiveName(Collective::kSend), "Send");
  EXPECT_STREQ(collectiveName(Collective::kRecv), "Recv");
  EXPECT_STREQ(collectiveName(static_cast<Collective>(99)), "Unknown");
}

TEST(RingSchedule, AllReduceIsReduceScatterThenAllGather) {
  std::vector<Ring> rings = {{0, 1, 2}};
  EXPECT_EQ(describe(build(Collective::kAllReduce, 6, 0, 3, 0, rings)),
            "c0: s@4+ >1 #2 | <2 s@2+ >1 #2 | <2 s@0+ ! =>r@0 >1 #2 | <2 =>r@4 >1 #2 | <2 =>r@2 #2\n");
  // Rank 1 of a reversed ring receives from 2 and sends to 0; chunks follow ring positions.
  std::vector<Ring> reversed = {{2, 1, 0}};
  EXPECT_EQ(describe(build(Collective::kAllReduce, 6, 0, 3, 1, reversed)),
            "c0: s@0+ >0 #2 | <2 s@4+ >0 #2 | <2 s@2+ ! =>r@2 >0 #2 | <2 =>r@0 >0 #2 | <2 =>r@4 #2\n");
}

TEST(RingSchedule, AllReduceLeavesOutEmptyChunks) {
  std::vector<Ring> rings = {{0, 1, 2, 3}};
  // Two elements over four chunks: chunks 0 and 1 hold one element each, chunks 2 and 3 none.
  EXPECT_EQ(describe(build(Collective::kAllReduce, 2, 0, 4, 2, rings)),
            "c0: s@1+ >3 #1 | <1 s@0+ >3 #1 | <1 =>r@1 >3 #1 | <1 =>r@0 >3 #1\n");
  EXPECT_EQ(describe(build(Collective::kAllReduce, 2, 0, 4, 0, rings)),
            "c0: <3 s@1+ >1 #1 | <3 s@0+ ! =>r@0 >1 #1 | <3 =>r@1 #1\n");
}

TEST(EvenSplit, PartsInUnitsStartOnAUnitAndCoverTheWholeInOrder) {
  for (size_t granule : {size_t{1}, size_t{3}, size_t{16}}) {
    for (size_t parts = 1; parts <= 5; ++parts) {
      for (size_t total = 0; total <= 200; ++total) {
        size_t next = 0;
        for (size_t index = 0; index < parts; ++index) {
          const ElementRange part = evenPartInUnits(total, parts, index, granule);
          ASSERT_EQ(part.offset, next) << total << " in " << parts << " units of " << granule;
          if (part.count > 0) {
            EXPECT_EQ(part.offset % granule, 0u);
          }
          // Whole units, as even as evenPart makes them; the partial unit goes to the last part
          // or to the first without a whole unit, so no part after it holds data.
          const size_t units = total / granule;
          const size_t restPart = std::min(units, parts - 1);
          EXPECT_EQ(part.count,
                    evenPart(units, parts, index).count * granule + (index == restPart ? total % granule : 0));
          next += part.count;
        }
        EXPECT_EQ(next, total);
      }
    }
  }
}

TEST(RingSchedule, AllReduceCutsItsChunksInWholeUnits) {
  std::vector<Ring> rings = {{0, 1, 2}};
  // 42 elements in units of 8: five units in chunks of 2, 2 and 1, and the last chunk also takes
  // the 2 elements left over.
  EXPECT_EQ(describe(build(Collective::kAllReduce, 42, 0, 3, 0, rings, 8)),
            "c0: s@32+ >1 #10 | <2 s@16+ >1 #16 | <2 s@0+ ! =>r@0 >1 #16 | <2 =>r@32 >1 #10 | <2 =>r@16 #16\n");
  // Over channels as well: every step of every rank starts on a unit.
  const std::vector<Ring> channels = testRings(3, 4);
  for (int rank = 0; rank < 3; ++rank) {
    const Program program = build(Collective::kAllReduce, 1000, 0, 3, rank, channels, 16);
    for (const Lane& lane : program.lanes) {
      for (const Step& step : lane.steps) {
        EXPECT_EQ(step.src.offset % 16, 0u);
        EXPECT_EQ(step.dst.offset % 16, 0u);
      }
    }
  }
}

TEST(RingSchedule, SingleRankRunsOneLocalStep) {
  std::vector<Ring> rings = {{0}};
  EXPECT_EQ(describe(build(Collective::kAllReduce, 5, 0, 1, 0, rings)), "c0: s@0+ ! =>r@0 #5\n");
  EXPECT_EQ(describe(build(Collective::kReduceScatter, 5, 0, 1, 0, rings)), "c0: s@0+ ! =>r@0 #5\n");
  EXPECT_EQ(describe(build(Collective::kReduce, 5, 0, 1, 0, rings)), "c0: s@0+ ! =>r@0 #5\n");
  EXPECT_EQ(describe(build(Collective::kAllGather, 5, 0, 1, 0, rings)), "c0: s@0 =>r@0 #5\n");
  EXPECT_EQ(describe(build(Collective::kBroadcast, 5, 0, 1, 0, rings)), "c0: s@0 =>r@0 #5\n");
  EXPECT_EQ(describe(build(Collective::kAllToAll, 5, 0, 1, 0, rings)), "c0: s@0 =>r@0 #5\n");
}

TEST(RingSchedule, ReduceScatterAndAllGatherSplitEveryBlockOverChannels) {
  std::vector<Ring> rings = {{0, 1, 2}, {2, 1, 0}};
  EXPECT_EQ(describe(build(Collective::kReduceScatter, 5, 0, 3, 1, rings)),
            "c0: s@0+ >2 #3 | <0 s@10+ >2 #3 | <0 s@5+ ! =>r@0 #3\n"
            "c1: s@13+ >0 #2 | <2 s@3+ >0 #2 | <2 s@8+ ! =>r@3 #2\n");
  EXPECT_EQ(describe(build(Collective::kAllGather, 5, 0, 3, 1, rings)),
            "c0: s@0 =>r@5 #3 | s@0 >2 #3 | <0 =>r@0 >2 #3 | <0 =>r@10 #3\n"
            "c1: s@3 =>r@8 #2 | s@3 >0 #2 | <2 =>r@13 >0 #2 | <2 =>r@3 #2\n");
}

TEST(RingSchedule, BroadcastAndReducePipelineAroundTheRing) {
  std::vector<Ring> rings = {{0, 1, 2, 3}};
  // Root 1: 1 -> 2 -> 3 -> 0.
  EXPECT_EQ(describe(build(Collective::kBroadcast, 4, 1, 4, 1, rings)), "c0: s@0 >2 #4 | s@0 =>r@0 #4\n");
  EXPECT_EQ(describe(build(Collective::kBroadcast, 4, 1, 4, 2, rings)), "c0: <1 =>r@0 >3 #4\n");
  EXPECT_EQ(describe(build(Collective::kBroadcast, 4, 1, 4, 3, rings)), "c0: <2 =>r@0 >0 #4\n");
  EXPECT_EQ(describe(build(Collective::kBroadcast, 4, 1, 4, 0, rings)), "c0: <3 =>r@0 #4\n");
  // Root 1: 2 -> 3 -> 0 -> 1.
  EXPECT_EQ(describe(build(Collective::kReduce, 4, 1, 4, 2, rings)), "c0: s@0+ >3 #4\n");
  EXPECT_EQ(describe(build(Collective::kReduce, 4, 1, 4, 3, rings)), "c0: <2 s@0+ >0 #4\n");
  EXPECT_EQ(describe(build(Collective::kReduce, 4, 1, 4, 0, rings)), "c0: <3 s@0+ >1 #4\n");
  EXPECT_EQ(describe(build(Collective::kReduce, 4, 1, 4, 1, rings)), "c0: <0 s@0+ ! =>r@0 #4\n");
}

TEST(DirectSchedule, AllToAllSendsStartAfterTheOwnRank) {
  std::vector<Ring> rings = testRings(4, 2);
  EXPECT_EQ(describe(build(Collective::kAllToAll, 3, 0, 4, 1, rings)),
            "c0: s@6 >2 #3\nc0: <0 =>r@0 #3\nc1: s@9 >3 #3\nc1: <3 =>r@9 #3\nc0: s@0 >0 #3\nc0: <2 =>r@6 #3\n"
            "c0: s@3 =>r@3 #3\n");
}

TEST(DirectSchedule, GatherScatterSendRecv) {
  std::vector<Ring> rings = testRings(3, 1);
  EXPECT_EQ(describe(build(Collective::kGather, 2, 1, 3, 0, rings)), "c0: s@0 >1 #2\n");
  EXPECT_EQ(describe(build(Collective::kGather, 2, 1, 3, 1, rings)),
            "c0: <2 =>r@4 #2\nc0: <0 =>r@0 #2\nc0: s@0 =>r@2 #2\n");
  EXPECT_EQ(describe(build(Collective::kScatter, 2, 1, 3, 2, rings)), "c0: <1 =>r@0 #2\n");
  EXPECT_EQ(describe(build(Collective::kScatter, 2, 1, 3, 1, rings)),
            "c0: s@4 >2 #2\nc0: s@0 >0 #2\nc0: s@2 =>r@0 #2\n");
  // Send and Recv use the point-to-point channel after the one ring.
  EXPECT_EQ(describe(build(Collective::kSend, 7, 2, 3, 0, rings)), "c1: s@0 >2 #7\n");
  EXPECT_EQ(describe(build(Collective::kRecv, 7, 0, 3, 2, rings)), "c1: <0 =>r@0 #7\n");
}

TEST(DirectSchedule, BothEndsOfAPairAgreeOnItsChannelAndLanesSpread) {
  for (int nranks = 1; nranks <= 9; ++nranks) {
    for (int nChannels = 1; nChannels <= 4; ++nChannels) {
      for (int src = 0; src < nranks; ++src) {
        std::vector<int> perChannel(nChannels, 0);
        for (int distance = 1; distance < nranks; ++distance) {
          int channel = directChannel(src, (src + distance) % nranks, nranks, nChannels);
          ASSERT_GE(channel, 0);
          ASSERT_LT(channel, nChannels);
          EXPECT_EQ(channel, (distance - 1) % nChannels);
          ++perChannel[channel];
        }
        // Consecutive peers use consecutive channels, so no channel carries two more than another.
        auto [least, most] = std::minmax_element(perChannel.begin(), perChannel.end());
        EXPECT_LE(*most - *least, 1);
      }
    }
  }
}

TEST(RingSchedule, CountZeroGivesAnEmptyProgram) {
  std::vector<Ring> rings = testRings(4, 3);
  for (Collective collective : kAllCollectives) {
    Program program = build(Collective::kAllReduce, 100, 0, 4, 1, rings);
    ASSERT_FALSE(program.lanes.empty());
    buildRingProgram({collective, 0, 2, 4, 1}, rings, &program);
    EXPECT_TRUE(program.lanes.empty()) << collectiveName(collective);
  }
}

TEST(RingSchedule, ChannelsWithoutDataGetNoLane) {
  std::vector<Ring> rings = testRings(4, 3);
  Program program = build(Collective::kBroadcast, 2, 0, 4, 1, rings);
  ASSERT_EQ(program.lanes.size(), 2u);
  EXPECT_EQ(program.lanes[0].channel, 0);
  EXPECT_EQ(program.lanes[1].channel, 1);
  program = build(Collective::kAllReduce, 3, 0, 4, 1, rings);
  ASSERT_EQ(program.lanes.size(), 3u);
  for (const Lane& lane : program.lanes) {
    // One element per channel: only the chunk that holds it moves, 2n-1 = 7 steps minus the rest.
    size_t elements = 0;
    for (const Step& step : lane.steps) elements += step.count;
    EXPECT_EQ(lane.steps.size(), elements);
    EXPECT_LE(lane.steps.size(), 2u);
  }
}

TEST(RingSchedule, RebuildingIsDeterministicAndReusesCapacity) {
  for (Collective collective : kAllCollectives) {
    for (int nranks : {1, 2, 5, 8}) {
      std::vector<Ring> rings = testRings(nranks, 3);
      for (int rank = 0; rank < nranks; ++rank) {
        OpShape shape{collective, 1000, nranks - 1, nranks, rank};
        Program first;
        buildRingProgram(shape, rings, &first);
        Program reused = build(Collective::kAllToAll, 5000, 0, nranks, rank, rings);
        buildRingProgram(shape, rings, &reused);
        EXPECT_EQ(describe(first), describe(reused)) << collectiveName(collective) << " rank " << rank;
        const Step* storage = reused.lanes.empty() ? nullptr : reused.lanes[0].steps.data();
        buildRingProgram(shape, rings, &reused);
        EXPECT_EQ(describe(first), describe(reused));
        if (storage != nullptr) {
          EXPECT_EQ(reused.lanes[0].steps.data(), storage);
        }
      }
    }
  }
}

TEST(RingSchedule, RingCollectivesUseOneLanePerChannelAndTheRingNeighbours) {
  for (Collective collective : {Collective::kAllReduce, Collective::kAllGather, Collective::kReduceScatter,
                                Collective::kBroadcast, Collective::kReduce}) {
    for (int nranks : {2, 3, 7}) {
      std::vector<Ring> rings = testRings(nranks, 3);
      for (int rank = 0; rank < nranks; ++rank) {
        Program program = build(collective, 999, 1, nranks, rank, rings);
        ASSERT_EQ(program.lanes.size(), 3u);
        for (int channel = 0; channel < 3; ++channel) {
          const Lane& lane = program.lanes[channel];
          EXPECT_EQ(lane.channel, channel);
          const Ring& ring = rings[channel];
          size_t position = std::find(ring.begin(), ring.end(), rank) - ring.begin();
          for (const Step& step : lane.steps) {
            if (step.sendPeer >= 0) {
              EXPECT_EQ(step.sendPeer, ring[(position + 1) % nranks]);
            }
            if (step.recvPeer >= 0) {
              EXPECT_EQ(step.recvPeer, ring[(position + nranks - 1) % nranks]);
            }
          }
        }
      }
    }
  }
}

// --- Every collective, simulated over grids of shapes. ---
//
// The quick grids (run by default) draw one slot size and one interleaving per case and run the
// large count only with large slots (and, for per-rank counts, up to 8 ranks); the tests named
// Exhaustive* run every slot size with every count, and take minutes.

enum class Roots { kAll, kAllUpTo8, kSome };
enum class Counts { kFull, kSmall };

struct Grid {
  std::vector<Collective> collectives;
  std::vector<int> nranks;
  Roots roots = Roots::kAllUpTo8;
  Counts counts = Counts::kFull;
  bool exhaustive = false;
  bool inPlace = false;
  size_t slotCount = 0;
  bool pieceMajor = false;
  size_t granule = 1;  // OpShape::granule
};

constexpr size_t kLargeCount = 4099;
constexpr size_t kSlotSizes[] = {1, 7, 1024};

std::vector<size_t> countsFor(int nranks, Counts counts) {
  size_t n = static_cast<size_t>(nranks);
  if (counts == Counts::kSmall) return {0, 1, n - 1, n, n + 1, 100};
  return {0, 1, 2, n - 1, n, n + 1, 7, 100, kLargeCount};
}

// Rooted collectives take every root (up to 8 ranks for kAllUpTo8) or the first, second, middle
// and last; Send and Recv take the shifts between sender and receiver the same way (0 is a send
// to self).
std::vector<int> rootsFor(Collective collective, int nranks, Roots roots) {
  if (!isRooted(collective) && collective != Collective::kSend) return {0};
  std::vector<int> all(nranks);
  std::iota(all.begin(), all.end(), 0);
  if (roots == Roots::kAll || (roots == Roots::kAllUpTo8 && nranks <= 8)) return all;
  std::vector<int> some = {0, 1, nranks / 2, nranks - 1};
  some.erase(std::unique(some.begin(), some.end()), some.end());
  return some;
}

bool hasPerRankCount(Collective collective) {
  return collective == Collective::kAllGather || collective == Collective::kReduceScatter ||
         collective == Collective::kAllToAll;
}

void runGrid(const Grid& grid) {
  const Interleaving kInterleavings[] = {Interleaving::kRoundRobin, Interleaving::kRandom, Interleaving::kGreedy};
  std::mt19937 draw(12345);
  tests::ProgramSimulator simulator;
  int failures = 0;
  size_t cases = 0;
  for (Collective collective : grid.collectives) {
    for (int nranks : grid.nranks) {
      for (int root : rootsFor(collective, nranks, grid.roots)) {
        for (size_t count : countsFor(nranks, grid.counts)) {
          for (int nChannels : {1, 2, 3}) {
            std::vector<size_t> slots(std::begin(kSlotSizes), std::end(kSlotSizes));
            if (!grid.exhaustive) {
              if (count == kLargeCount && hasPerRankCount(collective) && nranks > 8) continue;
              slots = {count == kLargeCount ? size_t{1024} : kSlotSizes[draw() % 3]};
            }
            for (size_t slot : slots) {
              SimulatorOptions options;
              options.slotElements = slot;
              options.slotCount = grid.slotCount;
              options.pieceMajor = grid.pieceMajor;
              options.inPlace = grid.inPlace;
              const int interleaving = static_cast<int>(draw() % 3);
              options.interleaving = kInterleavings[interleaving];
              options.seed = draw();
              SimulationResult result =
                  simulateOp(simulator, collective, nranks, root, count, nChannels, options, grid.granule);
              ++cases;
              if (result.ok()) continue;
              ADD_FAILURE() << collectiveName(collective) << " nranks " << nranks << " root " << root << " count "
                            << count << " channels " << nChannels << " slot " << slot << " interleaving "
                            << interleaving << " granule " << grid.granule << (grid.inPlace ? " in place" : "")
                            << ": " << result.message;
              if (++failures == 5) return;
            }
          }
        }
      }
    }
  }
  EXPECT_GT(cases, 0u);
}

std::vector<int> upTo(int most) {
  std::vector<int> values(most);
  std::iota(values.begin(), values.end(), 1);
  return values;
}

Grid quick(Collective collective) { return {.collectives = {collective}, .nranks = upTo(16)}; }

TEST(RingScheduleSimulated, AllReduce) { runGrid(quick(Collective::kAllReduce)); }
TEST(RingScheduleSimulated, AllGather) { runGrid(quick(Collective::kAllGather)); }
TEST(RingScheduleSimulated, ReduceScatter) { runGrid(quick(Collective::kReduceScatter)); }
TEST(RingScheduleSimulated, Broadcast) { runGrid(quick(Collective::kBroadcast)); }
TEST(RingScheduleSimulated, Reduce) { runGrid(quick(Collective::kReduce)); }
TEST(RingScheduleSimulated, AllToAll) { runGrid(quick(Collective::kAllToAll)); }
TEST(RingScheduleSimulated, Gather) { runGrid(quick(Collective::kGather)); }
TEST(RingScheduleSimulated, Scatter) { runGrid(quick(Collective::kScatter)); }
TEST(RingScheduleSimulated, SendRecv) { runGrid(quick(Collective::kSend)); }

const std::vector<Collective> kRingCollectives = {Collective::kAllReduce, Collective::kAllGather,
                                                  Collective::kReduceScatter, Collective::kBroadcast,
                                                  Collective::kReduce};

TEST(RingScheduleSimulated, ManyRanks) {
  runGrid({.collectives = kRingCollectives, .nranks = {24, 32, 64}, .roots = Roots::kSome, .counts = Counts::kSmall});
}

// In place, the send buffer lies in the receive buffer (or the other way round): a lane must not
// overwrite data that it or another lane still has to read.
TEST(RingScheduleSimulated, InPlace) {
  runGrid({.collectives = {Collective::kAllReduce, Collective::kAllGather, Collective::kReduceScatter,
                           Collective::kBroadcast, Collective::kReduce, Collective::kGather, Collective::kScatter},
           .nranks = {1, 2, 3, 4, 5, 6, 7, 8, 9, 13, 16},
           .counts = Counts::kSmall,
           .inPlace = true});
}

// Data cut in units of several elements, as executors cut it (OpShape::granule), at the grid's
// counts: most leave a partial unit, and the small ones make less than a unit per rank.
TEST(RingScheduleSimulated, CutInUnitsOfSeveralElements) {
  for (size_t granule : {size_t{2}, size_t{16}, size_t{64}}) {
    Grid grid{.collectives = kRingCollectives, .nranks = upTo(9), .granule = granule};
    runGrid(grid);
    grid.inPlace = true;
    grid.slotCount = 2;
    grid.pieceMajor = true;
    runGrid(grid);
  }
}

// Connections of two slots, lanes run round by round as a pipelining executor runs them: the
// ring collectives need this once a step is larger than what a connection holds.
TEST(RingScheduleSimulated, PipelinedOverTwoSlots) {
  std::vector<Collective> all(std::begin(kAllCollectives), std::end(kAllCollectives) - 1);
  Grid grid{.collectives = all,
            .nranks = {1, 2, 3, 4, 5, 6, 7, 8, 9, 12, 16},
            .counts = Counts::kSmall,
            .slotCount = 2,
            .pieceMajor = true};
  runGrid(grid);
  grid.inPlace = true;
  runGrid(grid);
}

// Run step after step, a ring's first steps all send before any rank receives: they must fit in
// the connection, with one slot to spare for the steps that receive and send.
TEST(RingScheduleSimulated, StepByStepNeedsFirstStepsSmallerThanTheConnection) {
  tests::ProgramSimulator simulator;
  SimulatorOptions options;
  options.slotElements = 1;
  options.slotCount = 8;
  for (Collective collective : {Collective::kAllReduce, Collective::kReduceScatter, Collective::kAllGather}) {
    // AllReduce: 4 chunks of count/4; the others: blocks of count.
    size_t fits = collective == Collective::kAllReduce ? 28 : 7;
    size_t tooLarge = collective == Collective::kAllReduce ? 32 : 8;
    options.pieceMajor = false;
    EXPECT_TRUE(simulateOp(simulator, collective, 4, 0, fits, 1, options).ok()) << collectiveName(collective);
    SimulationResult result = simulateOp(simulator, collective, 4, 0, tooLarge, 1, options);
    EXPECT_EQ(result.failure, SimulationFailure::kDeadlock) << collectiveName(collective) << ": " << result.message;
    options.pieceMajor = true;
    EXPECT_TRUE(simulateOp(simulator, collective, 4, 0, 100 * tooLarge, 1, options).ok());
  }
}

// The pipelines and the direct collectives have no cycle of sends: they run step after step over
// connections of a single slot.
TEST(RingScheduleSimulated, ChainsOverOneSlot) {
  runGrid({.collectives = {Collective::kBroadcast, Collective::kReduce, Collective::kAllToAll, Collective::kGather,
                           Collective::kScatter, Collective::kSend},
           .nranks = upTo(9),
           .counts = Counts::kSmall,
           .slotCount = 1});
}

Grid exhaustive(std::vector<Collective> collectives, std::vector<int> nranks, Counts counts = Counts::kFull) {
  return {.collectives = collectives, .nranks = nranks, .roots = Roots::kAll, .counts = counts, .exhaustive = true};
}

TEST(ExhaustiveRingSchedule, AllReduce) { runGrid(exhaustive({Collective::kAllReduce}, upTo(16))); }
TEST(ExhaustiveRingSchedule, AllGather) { runGrid(exhaustive({Collective::kAllGather}, upTo(16))); }
TEST(ExhaustiveRingSchedule, ReduceScatter) { runGrid(exhaustive({Collective::kReduceScatter}, upTo(16))); }
TEST(ExhaustiveRingSchedule, Broadcast) { runGrid(exhaustive({Collective::kBroadcast}, upTo(16))); }
TEST(ExhaustiveRingSchedule, Reduce) { runGrid(exhaustive({Collective::kReduce}, upTo(16))); }
TEST(ExhaustiveRingSchedule, AllToAll) { runGrid(exhaustive({Collective::kAllToAll}, upTo(16))); }
TEST(ExhaustiveRingSchedule, Gather) { runGrid(exhaustive({Collective::kGather}, upTo(16))); }
TEST(ExhaustiveRingSchedule, Scatter) { runGrid(exhaustive({Collective::kScatter}, upTo(16))); }
TEST(ExhaustiveRingSchedule, SendRecv) { runGrid(exhaustive({Collective::kSend}, upTo(16))); }
TEST(ExhaustiveRingSchedule, ManyRanks) { runGrid(exhaustive(kRingCollectives, {24, 32, 64}, Counts::kSmall)); }
TEST(ExhaustiveRingSchedule, PipelinedOverTwoSlots) {
  Grid grid = exhaustive(std::vector<Collective>(std::begin(kAllCollectives), std::end(kAllCollectives) - 1), upTo(16));
  grid.slotCount = 2;
  grid.pieceMajor = true;
  runGrid(grid);
  grid.inPlace = true;
  runGrid(grid);
}
TEST(ExhaustiveRingSchedule, InPlace) {
  Grid grid = exhaustive({Collective::kAllReduce, Collective::kAllGather, Collective::kReduceScatter,
                          Collective::kBroadcast, Collective::kReduce, Collective::kGather, Collective::kScatter},
                         upTo(16));
  grid.inPlace = true;
  runGrid(grid);
}

}  // namespace
}  // namespace weft::algorithms
