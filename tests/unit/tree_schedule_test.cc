// The tree AllReduce, Broadcast and Reduce (algorithms/tree_schedule.cc): their programs on small
// trees, and simulated runs at every rank count up to 64 (Broadcast and Reduce: every root up to
// 16 ranks), one to
// three channels, in and out of place, pipelined over two slots, in every interleaving, that must
// give every rank the exact result and never deadlock.

#include <gtest/gtest.h>

#include <algorithm>
#include <numeric>
#include <random>
#include <vector>

#include "algorithms/node_tree.h"
#include "algorithms/schedule.h"
#include "tests/unit/schedule_test_support.h"

namespace weft::algorithms {
namespace {

using tests::describe;
using tests::Participant;
using tests::ProgramSimulator;
using tests::SimulationResult;
using tests::SimulatorOptions;

// Rings whose first (the one the trees follow) is shuffled, so that a schedule confusing ranks
// with ring positions fails.
std::vector<Ring> shuffledRings(int nranks, int nChannels) {
  std::vector<Ring> rings;
  std::mt19937 random(static_cast<uint32_t>(nranks) * 7 + 1);
  for (int channel = 0; channel < nChannels; ++channel) {
    Ring ring(nranks);
    std::iota(ring.begin(), ring.end(), 0);
    std::shuffle(ring.begin(), ring.end(), random);
    rings.push_back(ring);
  }
  return rings;
}

std::vector<Participant> treeParticipants(int nranks, size_t count, const std::vector<Ring>& rings,
                                          TreeLanes lanes = TreeLanes::kTwo, size_t granule = 1) {
  std::vector<Participant> parts;
  for (int rank = 0; rank < nranks; ++rank) {
    OpShape shape{Collective::kAllReduce, count, 0, nranks, rank, granule};
    Participant part{shape, {}};
    buildTreeAllReduce(shape, rings, lanes, &part.program);
    parts.push_back(part);
  }
  return parts;
}

Program treeProgram(int nranks, int rank, size_t count, int nChannels, TreeLanes lanes = TreeLanes::kTwo) {
  std::vector<Ring> rings;
  for (int channel = 0; channel < nChannels; ++channel) {
    Ring ring(nranks);
    std::iota(ring.begin(), ring.end(), 0);
    rings.push_back(ring);
  }
  Program program;
  buildTreeAllReduce({Collective::kAllReduce, count, 0, nranks, rank}, rings, lanes, &program);
  return program;
}

TEST(TreeSchedule, FourRanksReduceUpAndBroadcastDown) {
  // One tree over 0..3: 0 is the root with child 2; 2 has children 1 and 3.
  EXPECT_EQ(describe(treeProgram(4, 0, 6, 1)), "c0: <2 s@0+ ! =>r@0 #6 | r@0 >2 #6\n");
  // Rank 2 combines its children in scratch (x@) on its way up, a lane apart from its way down.
  EXPECT_EQ(describe(treeProgram(4, 2, 6, 1)),
            "c0: <1 s@0+ =>x@0 #6 | <3 x@0+ >0 #6\nc0: <0 =>r@0 >1 #6 | r@0 >3 #6\n");
  // A leaf sends up and receives down in two lanes of its channel, so that pieces stream both ways.
  EXPECT_EQ(describe(treeProgram(4, 1, 6, 1)), "c0: s@0+ >2 #6\nc0: <2 =>r@0 #6\n");
  // With one lane per rank, each piece makes its round trip before the next.
  EXPECT_EQ(describe(treeProgram(4, 2, 6, 1, TreeLanes::kOne)),
            "c0: <1 s@0+ =>x@0 #6 | <3 x@0+ >0 #6 | <0 =>r@0 >1 #6 | r@0 >3 #6\n");
  EXPECT_EQ(describe(treeProgram(4, 1, 6, 1, TreeLanes::kOne)), "c0: s@0+ >2 #6 | <2 =>r@0 #6\n");
}

TEST(TreeSchedule, TwoChannelsCarryTwoTreesWithHalfTheDataEach) {
  const Program program = treeProgram(4, 1, 7, 2);
  // Rank 1 is a leaf of tree 0 and combines two children in tree 1 (the mirror: it takes rank 2's
  // place); not a root in either, so each tree is two lanes, up and down.
  ASSERT_EQ(program.lanes.size(), 4u);
  EXPECT_EQ(program.lanes[0].channel, 0);
  EXPECT_EQ(program.lanes[1].channel, 0);
  EXPECT_EQ(program.lanes[2].channel, 1);
  EXPECT_EQ(program.lanes[3].channel, 1);
  EXPECT_EQ(program.lanes[0].steps.front().count, 4u);
  EXPECT_EQ(program.lanes[2].steps.front().count, 3u);
  EXPECT_EQ(program.lanes[2].steps.front().src.offset, 4u);
  EXPECT_EQ(program.lanes[0].steps.size() + program.lanes[1].steps.size(), 2u);
  EXPECT_EQ(program.lanes[2].steps.size() + program.lanes[3].steps.size(), 4u);
  // Three channels still make two trees.
  EXPECT_EQ(treeProgram(4, 1, 7, 3).lanes.back().channel, 1);
}

TEST(TreeSchedule, OneRankFinalizesItsOwnInputAndNothingGivesNoLane) {
  EXPECT_EQ(describe(treeProgram(1, 0, 5, 1)), "c0: s@0+ ! =>r@0 #5\n");
  EXPECT_TRUE(treeProgram(8, 3, 0, 2).lanes.empty());
  // One element: tree 1 gets nothing (rank 3 is a leaf of tree 0: its two lanes on channel 0).
  for (const Lane& lane : treeProgram(8, 3, 1, 2).lanes) EXPECT_EQ(lane.channel, 0);
}

TEST(TreeScheduleSimulated, EveryRankCountUpTo64IsExact) {
  std::mt19937 draw(2024);
  ProgramSimulator simulator;
  int failures = 0;
  for (int nranks = 1; nranks <= 64; ++nranks) {
    const size_t n = static_cast<size_t>(nranks);
    for (size_t count : {size_t{1}, size_t{2}, n + 1, size_t{100}, size_t{1031}}) {
      for (int nChannels : {1, 2, 3}) {
        for (bool inPlace : {false, true}) {
          const SimulatorOptions options = tests::drawnPipelinedOptions(draw, inPlace, nChannels);
          const TreeLanes lanes = draw() % 2 == 0 ? TreeLanes::kOne : TreeLanes::kTwo;
          const SimulationResult result =
              simulator.run(treeParticipants(nranks, count, shuffledRings(nranks, nChannels), lanes), options);
          if (result.ok()) continue;
          ADD_FAILURE() << "nranks " << nranks << " count " << count << " channels " << nChannels << " slot "
                        << options.slotElements << (inPlace ? " in place" : "")
                        << (lanes == TreeLanes::kOne ? " one lane" : " two lanes") << ": " << result.message;
          if (++failures == 5) return;
        }
      }
    }
  }
}

TEST(TreeScheduleSimulated, StepAfterStepWithUnboundedSlotsIsExactToo) {
  ProgramSimulator simulator;
  for (int nranks : {2, 3, 5, 8, 13, 33}) {
    SimulatorOptions options;
    options.slotElements = 7;
    options.nChannels = 2;
    for (TreeLanes lanes : {TreeLanes::kOne, TreeLanes::kTwo}) {
      const SimulationResult result =
          simulator.run(treeParticipants(nranks, 500, shuffledRings(nranks, 2), lanes), options);
      EXPECT_TRUE(result.ok()) << "nranks " << nranks << ": " << result.message;
    }
  }
}

// Broadcast or Reduce over the trees turned to start at the root.
void buildRootedTreeProgram(const OpShape& shape, const std::vector<Ring>& rings, Program* program) {
  const std::vector<TreePlace> trees = rootedTreePlaces(rings, {}, shape.root, shape.rank);
  if (shape.collective == Collective::kBroadcast) {
    buildTreeBroadcast(shape, trees, program);
  } else {
    buildTreeReduce(shape, trees, program);
  }
}

std::vector<Participant> rootedParticipants(Collective collective, int nranks, int root, size_t count,
                                            const std::vector<Ring>& rings, size_t granule = 1) {
  std::vector<Participant> parts;
  for (int rank = 0; rank < nranks; ++rank) {
    OpShape shape{collective, count, root, nranks, rank, granule};
    Participant part{shape, {}};
    buildRootedTreeProgram(shape, rings, &part.program);
    parts.push_back(part);
  }
  return parts;
}

Program rootedProgram(Collective collective, int nranks, int rank, int root, size_t count) {
  Ring ring(nranks);
  std::iota(ring.begin(), ring.end(), 0);
  const std::vector<Ring> rings = {ring};
  Program program;
  buildRootedTreeProgram({collective, count, root, nranks, rank}, rings, &program);
  return program;
}

Program broadcastProgram(int nranks, int rank, int root, size_t count) {
  return rootedProgram(Collective::kBroadcast, nranks, rank, root, count);
}

TEST(TreeBroadcast, TheTreeIsTurnedToStartAtTheRoot) {
  // The 4-rank tree 0 -> 2 -> {1, 3} turned so that it starts at rank 1: 1 -> 3 -> {2, 0}.
  EXPECT_EQ(describe(broadcastProgram(4, 1, 1, 6)), "c0: s@0 >3 #6 | s@0 =>r@0 #6\n");
  EXPECT_EQ(describe(broadcastProgram(4, 3, 1, 6)), "c0: <1 =>r@0 >2 #6 | r@0 >0 #6\n");
  EXPECT_EQ(describe(broadcastProgram(4, 0, 1, 6)), "c0: <3 =>r@0 #6\n");
  EXPECT_EQ(describe(broadcastProgram(1, 0, 0, 5)), "c0: s@0 =>r@0 #5\n");
  EXPECT_TRUE(broadcastProgram(4, 2, 1, 0).lanes.empty());
}

TEST(TreeReduce, TheTreeIsTurnedToEndAtTheRoot) {
  // Up the broadcast's turned tree 1 -> 3 -> {2, 0}: rank 3 adds its children's data into scratch
  // and sends the sum to the root, which finalizes it.
  EXPECT_EQ(describe(rootedProgram(Collective::kReduce, 4, 3, 1, 6)), "c0: <2 s@0+ =>x@0 #6 | <0 x@0+ >1 #6\n");
  EXPECT_EQ(describe(rootedProgram(Collective::kReduce, 4, 1, 1, 6)), "c0: <3 s@0+ ! =>r@0 #6\n");
  EXPECT_EQ(describe(rootedProgram(Collective::kReduce, 4, 0, 1, 6)), "c0: s@0+ >3 #6\n");
  EXPECT_EQ(describe(rootedProgram(Collective::kReduce, 1, 0, 0, 5)), "c0: s@0+ ! =>r@0 #5\n");
  EXPECT_TRUE(rootedProgram(Collective::kReduce, 4, 2, 1, 0).lanes.empty());
}

TEST(TreeRootedSimulated, EveryRankCountAndRootIsExact) {
  std::mt19937 draw(7);
  ProgramSimulator simulator;
  int failures = 0;
  for (Collective collective : {Collective::kBroadcast, Collective::kReduce}) {
    for (int nranks = 1; nranks <= 64; ++nranks) {
      std::vector<int> roots = {0, nranks / 2, nranks - 1};
      if (nranks <= 16) {
        roots.resize(nranks);
        std::iota(roots.begin(), roots.end(), 0);
      }
      for (int root : roots) {
        for (size_t count : {size_t{1}, static_cast<size_t>(nranks) + 1, size_t{1031}}) {
          for (int nChannels : {1, 2}) {
            const bool inPlace = draw() % 2 == 0;
            const SimulatorOptions options = tests::drawnPipelinedOptions(draw, inPlace, nChannels);
            const SimulationResult result = simulator.run(
                rootedParticipants(collective, nranks, root, count, shuffledRings(nranks, nChannels)), options);
            if (result.ok()) continue;
            ADD_FAILURE() << collectiveName(collective) << " nranks " << nranks << " root " << root << " count "
                          << count << " channels " << nChannels << (options.inPlace ? " in place" : "") << ": "
                          << result.message;
            if (++failures == 5) return;
          }
        }
      }
    }
  }
}

// Data cut in units of 16 elements, as executors cut a float's (OpShape::granule): counts below a
// unit, of whole units and with a partial one, over one to three trees.
TEST(TreeScheduleSimulated, CutInUnitsOfSeveralElementsIsExact) {
  std::mt19937 draw(16);
  ProgramSimulator simulator;
  int failures = 0;
  for (int nranks : {1, 2, 3, 4, 5, 8, 9, 16}) {
    for (size_t count : {size_t{1}, size_t{15}, size_t{16}, size_t{17}, size_t{100}, size_t{1031}}) {
      for (int nChannels : {1, 2, 3}) {
        const bool inPlace = draw() % 2 == 0;
        const SimulatorOptions options = tests::drawnPipelinedOptions(draw, inPlace, nChannels);
        const std::vector<Ring> rings = shuffledRings(nranks, nChannels);
        const int root = static_cast<int>(draw() % static_cast<uint32_t>(nranks));
        const SimulationResult results[] = {
            simulator.run(treeParticipants(nranks, count, rings, TreeLanes::kTwo, 16), options),
            simulator.run(rootedParticipants(Collective::kBroadcast, nranks, root, count, rings, 16), options),
            simulator.run(rootedParticipants(Collective::kReduce, nranks, root, count, rings, 16), options),
        };
        for (const SimulationResult& result : results) {
          if (result.ok()) continue;
          ADD_FAILURE() << "nranks " << nranks << " root " << root << " count " << count << " channels "
                        << nChannels << (inPlace ? " in place" : "") << ": " << result.message;
          if (++failures == 5) return;
        }
      }
    }
  }
}

}  // namespace
}  // namespace weft::algorithms
