// The trees over nodes (algorithms/node_tree.h): a chain inside each node, the double binary tree
// between the chains' first ranks; and the AllReduce over them (buildTreeAllReduceOnTrees),
// simulated for every layout of up to 9 nodes of up to 8 ranks (64 ranks at most), which must give every rank the exact
// result and never deadlock.

#include <gtest/gtest.h>

#include <numeric>
#include <random>
#include <vector>

#include "algorithms/node_tree.h"
#include "tests/unit/schedule_test_support.h"

namespace weft::algorithms {
namespace {

using tests::Interleaving;
using tests::Participant;
using tests::ProgramSimulator;
using tests::SimulationResult;
using tests::SimulatorOptions;

TEST(NodeTree, ChainsInsideNodesAndTheBinaryTreeBetweenTheirFirstRanks) {
  // Two nodes of three ranks, visited 0 1 2 and 5 3 4.
  const std::vector<std::vector<int>> chains = {{0, 1, 2}, {5, 3, 4}};
  // Tree 0: node 0 is the root, node 1 its child.
  TreePlace head = nodeTreePlace(chains, 0, 0);
  EXPECT_EQ(head.parent, -1);
  EXPECT_EQ(head.children, (std::vector<int>{1, 5}));
  TreePlace otherHead = nodeTreePlace(chains, 0, 5);
  EXPECT_EQ(otherHead.parent, 0);
  EXPECT_EQ(otherHead.children, (std::vector<int>{3}));
  TreePlace middle = nodeTreePlace(chains, 0, 3);
  EXPECT_EQ(middle.parent, 5);
  EXPECT_EQ(middle.children, (std::vector<int>{4}));
  TreePlace last = nodeTreePlace(chains, 0, 2);
  EXPECT_EQ(last.parent, 1);
  EXPECT_TRUE(last.children.empty());
  // Tree 1 mirrors the nodes: node 1 is the root.
  EXPECT_EQ(nodeTreePlace(chains, 1, 5).parent, -1);
  EXPECT_EQ(nodeTreePlace(chains, 1, 5).children, (std::vector<int>{3, 0}));
  EXPECT_EQ(nodeTreePlace(chains, 1, 0).parent, 5);
}

TEST(NodeTree, OneNodeIsOneChain) {
  const std::vector<std::vector<int>> chains = {{2, 0, 1}};
  EXPECT_EQ(nodeTreePlace(chains, 1, 2).parent, -1);
  EXPECT_EQ(nodeTreePlace(chains, 1, 2).children, (std::vector<int>{0}));
  EXPECT_EQ(nodeTreePlace(chains, 0, 1).parent, 0);
}

// Channel c's chains: node n holds ranks n*perNode .. (n+1)*perNode-1, each channel in its own
// shuffled order, so a schedule confusing ranks with chain positions fails.
std::vector<std::vector<std::vector<int>>> channelChains(int nodes, int perNode, int channels, std::mt19937& random) {
  std::vector<std::vector<std::vector<int>>> all(channels);
  for (auto& chains : all) {
    for (int node = 0; node < nodes; ++node) {
      std::vector<int> chain(perNode);
      std::iota(chain.begin(), chain.end(), node * perNode);
      std::shuffle(chain.begin(), chain.end(), random);
      chains.push_back(chain);
    }
  }
  return all;
}

TEST(NodeTreeSimulated, EveryLayoutUpTo64RanksIsExact) {
  const Interleaving kInterleavings[] = {Interleaving::kRoundRobin, Interleaving::kRandom, Interleaving::kGreedy};
  std::mt19937 draw(77);
  ProgramSimulator simulator;
  int failures = 0;
  for (int nodes = 1; nodes <= 9; ++nodes) {
    for (int perNode = 1; perNode <= 8; ++perNode) {
      for (int channels : {1, 2, 3}) {
        const int nranks = nodes * perNode;
        if (nranks > 64) continue;  // the symbolic data tracks up to 64 ranks
        const auto chains = channelChains(nodes, perNode, channels, draw);
        const size_t count = std::vector<size_t>{1, 5, 97}[draw() % 3];
        std::vector<Participant> parts;
        for (int rank = 0; rank < nranks; ++rank) {
          std::vector<TreePlace> places;
          for (int c = 0; c < channels; ++c) places.push_back(nodeTreePlace(chains[c], c % 2, rank));
          OpShape shape{Collective::kAllReduce, count, 0, nranks, rank};
          Participant part{shape, {}};
          buildTreeAllReduceOnTrees(shape, places, &part.program);
          parts.push_back(part);
        }
        SimulatorOptions options;
        options.slotElements = std::vector<size_t>{1, 7, 64}[draw() % 3];
        options.slotCount = 2;
        options.pieceMajor = true;
        options.interleaving = kInterleavings[draw() % 3];
        options.seed = draw();
        options.nChannels = channels;
        const SimulationResult result = simulator.run(parts, options);
        if (result.ok()) continue;
        ADD_FAILURE() << nodes << " nodes of " << perNode << " ranks, " << channels << " channels, count " << count
                      << ": " << result.message;
        if (++failures == 5) return;
      }
    }
  }
}

}  // namespace
}  // namespace weft::algorithms
