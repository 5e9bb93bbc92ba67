// The trees over nodes (algorithms/node_tree.h): a chain inside each node, the double binary tree
// between the chains' first ranks; the trees a communicator picks (flat on one host, over hosts
// otherwise); and the AllReduce over them (buildTreeAllReduceOnTrees, one and two lanes per rank),
// simulated for every layout of up to 9 nodes of up to 8 ranks (64 ranks at most), which must give
// every rank the exact result and never deadlock; the same trees turned to a Broadcast's or a
// Reduce's root, simulated for ranks dealt to hosts at random and every root.

#include <gtest/gtest.h>

#include <algorithm>
#include <numeric>
#include <random>
#include <vector>

#include "algorithms/node_tree.h"
#include "algorithms/tuner.h"
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
        const TreeLanes lanes = draw() % 2 == 0 ? TreeLanes::kOne : TreeLanes::kTwo;
        std::vector<Participant> parts;
        for (int rank = 0; rank < nranks; ++rank) {
          std::vector<TreePlace> places;
          for (int c = 0; c < channels; ++c) places.push_back(nodeTreePlace(chains[c], c % 2, rank));
          OpShape shape{Collective::kAllReduce, count, 0, nranks, rank};
          Participant part{shape, {}};
          buildTreeAllReduceOnTrees(shape, places, lanes, &part.program);
          parts.push_back(part);
        }
        const SimulatorOptions options = tests::drawnPipelinedOptions(draw, false, channels);
        const SimulationResult result = simulator.run(parts, options);
        if (result.ok()) continue;
        ADD_FAILURE() << nodes << " nodes of " << perNode << " ranks, " << channels << " channels, count " << count
                      << ": " << result.message;
        if (++failures == 5) return;
      }
    }
  }
}

TEST(CommunicatorTrees, OneHostHasTheFlatTreesOverTheFirstRing) {
  const std::vector<Ring> rings = {{3, 1, 0, 2}, {0, 1, 2, 3}};
  for (int rank = 0; rank < 4; ++rank) {
    const std::vector<TreePlace> places = communicatorTreePlaces(rings, {}, rank);
    const std::vector<int> sameHost(4, 7);
    const std::vector<TreePlace> alsoOneHost = communicatorTreePlaces(rings, sameHost, rank);
    ASSERT_EQ(places.size(), 2u);
    const int position = static_cast<int>(std::find(rings[0].begin(), rings[0].end(), rank) - rings[0].begin());
    for (int t = 0; t < 2; ++t) {
      const TreePlace flat = placeOnRing(rings[0], topology::doubleBinaryTreeLinks(4, position)[t]);
      EXPECT_EQ(places[t].parent, flat.parent) << "rank " << rank << " tree " << t;
      EXPECT_EQ(places[t].children, flat.children) << "rank " << rank << " tree " << t;
      EXPECT_EQ(alsoOneHost[t].children, flat.children) << "rank " << rank << " tree " << t;
    }
  }
  EXPECT_EQ(communicatorTreeDepths(std::vector<int>(8, 0)).across, treeDepth(8));
  EXPECT_EQ(communicatorTreeDepths(std::vector<int>(8, 0)).local, 0);
}

TEST(CommunicatorTrees, SeveralHostsHaveAChainEachAndTreesBetweenThem) {
  // Ranks 0, 2, 4 on host 0 and 1, 3, 5 on host 1; the ring visits host 0's first.
  const std::vector<int> hostOfRank = {0, 1, 0, 1, 0, 1};
  const std::vector<Ring> rings = {{0, 2, 4, 1, 3, 5}};
  const TreePlace head = communicatorTreePlaces(rings, hostOfRank, 0)[0];
  EXPECT_EQ(head.parent, -1);
  EXPECT_EQ(head.children, (std::vector<int>{2, 1}));
  const TreePlace otherHead = communicatorTreePlaces(rings, hostOfRank, 1)[0];
  EXPECT_EQ(otherHead.parent, 0);
  EXPECT_EQ(otherHead.children, (std::vector<int>{3}));
  EXPECT_EQ(communicatorTreePlaces(rings, hostOfRank, 5)[0].parent, 3);
  const TreeDepths depths = communicatorTreeDepths(std::vector<int>{0, 0, 0, 1, 1, 2, 2, 2});
  EXPECT_EQ(depths.local, 2);
  EXPECT_EQ(depths.across, treeDepth(3));
  // The tuner's view: 8 ranks on 3 hosts, 5 ring hops within them; without shared memory every
  // hop counts as one between hosts.
  const std::vector<int> hosts = {0, 0, 0, 1, 1, 2, 2, 2};
  const HostLayout layout = hostLayoutOf(hosts, false);
  EXPECT_EQ(layout.localTreeDepth, 2);
  EXPECT_EQ(layout.hostTreeDepth, treeDepth(3));
  EXPECT_EQ(layout.localRingHops, 5);
  const HostLayout sockets = hostLayoutOf(hosts, true);
  EXPECT_EQ(sockets.localTreeDepth, 0);
  EXPECT_EQ(sockets.hostTreeDepth, treeDepth(3) + 2);
  EXPECT_EQ(sockets.localRingHops, 0);
  EXPECT_EQ(hostLayoutOf(std::vector<int>(4, 7), true).hostTreeDepth, 0);  // one host
}

// Ranks dealt to `hosts` hosts at random, each host getting one at least.
std::vector<int> dealtToHosts(int nranks, int hosts, std::mt19937& draw) {
  std::vector<int> hostOfRank(nranks);
  for (int rank = 0; rank < nranks; ++rank) hostOfRank[rank] = rank < hosts ? rank : static_cast<int>(draw() % hosts);
  return hostOfRank;
}

// Rings as a communicator builds them: each visits the hosts in order of their lowest rank, each
// host's ranks consecutive, in an order of its own.
std::vector<Ring> ringsOverHosts(const std::vector<int>& hostOfRank, int hosts, int channels, std::mt19937& draw) {
  std::vector<Ring> rings(channels);
  for (Ring& ring : rings) {
    for (int host = 0; host < hosts; ++host) {
      std::vector<int> members;
      for (int rank = 0; rank < static_cast<int>(hostOfRank.size()); ++rank) {
        if (hostOfRank[rank] == host) members.push_back(rank);
      }
      std::shuffle(members.begin(), members.end(), draw);
      ring.insert(ring.end(), members.begin(), members.end());
    }
  }
  return rings;
}

TEST(CommunicatorTreesSimulated, RanksSpreadOverHostsAreExact) {
  std::mt19937 draw(5);
  ProgramSimulator simulator;
  for (int nranks = 2; nranks <= 24; ++nranks) {
    for (int hosts : {2, 3, 5}) {
      if (hosts > nranks) continue;
      const std::vector<int> hostOfRank = dealtToHosts(nranks, hosts, draw);
      const std::vector<Ring> rings = ringsOverHosts(hostOfRank, hosts, 2, draw);
      std::vector<Participant> parts;
      for (int rank = 0; rank < nranks; ++rank) {
        OpShape shape{Collective::kAllReduce, 41, 0, nranks, rank};
        Participant part{shape, {}};
        buildTreeAllReduceOnTrees(shape, communicatorTreePlaces(rings, hostOfRank, rank),
                                  hosts == 3 ? TreeLanes::kOne : TreeLanes::kTwo, &part.program);
        parts.push_back(part);
      }
      SimulatorOptions options;
      options.slotElements = 7;
      options.slotCount = 2;
      options.pieceMajor = true;
      options.interleaving = Interleaving::kRandom;
      options.seed = draw();
      options.nChannels = 2;
      const SimulationResult result = simulator.run(parts, options);
      EXPECT_TRUE(result.ok()) << nranks << " ranks on " << hosts << " hosts: " << result.message;
    }
  }
}

TEST(RootedTrees, OverHostsTheRootLeadsItsChainAndTheTreeBetweenHosts) {
  // Ranks 0, 2, 4 on host 0 and 1, 3, 5 on host 1; the ring visits host 0's first. Root 3: its
  // chain becomes 3 5 1, and its host takes the place of tree 0's root node. A chain's first rank
  // serves the other host first.
  const std::vector<int> hostOfRank = {0, 1, 0, 1, 0, 1};
  const std::vector<Ring> rings = {{0, 2, 4, 1, 3, 5}, {0, 2, 4, 1, 3, 5}};
  auto place = [&](int rank, int tree) { return rootedTreePlaces(rings, hostOfRank, 3, rank)[tree]; };
  for (int tree : {0, 1}) {
    EXPECT_EQ(place(3, tree).parent, -1) << "tree " << tree;
    EXPECT_EQ(place(3, tree).children, (std::vector<int>{0, 5})) << "tree " << tree;
    EXPECT_EQ(place(5, tree).parent, 3);
    EXPECT_EQ(place(1, tree).parent, 5);
    EXPECT_TRUE(place(1, tree).children.empty());
    EXPECT_EQ(place(0, tree).parent, 3);
    EXPECT_EQ(place(0, tree).children, (std::vector<int>{2}));
    EXPECT_EQ(place(4, tree).parent, 2);
  }
}

TEST(RootedTrees, AboveItsChainTheRootLeavesTheNetworkToTheChainsFirstRank) {
  // Node 0's chain 0 2 4, node 1's 1 3 5. Root 3 leaves its chain to stand above it (3 -> 1 -> 5),
  // and its node takes the place of tree 0's root node, so 1, the chain's first rank, still talks
  // to node 0, and serves it before its chain.
  const std::vector<std::vector<int>> chains = {{0, 2, 4}, {1, 3, 5}};
  auto place = [&](int rank, int tree) { return rootedNodeTreePlace(chains, tree, 3, RootPlace::kAboveChain, rank); };
  for (int tree : {0, 1}) {
    EXPECT_EQ(place(3, tree).parent, -1) << "tree " << tree;
    EXPECT_EQ(place(3, tree).children, (std::vector<int>{1})) << "tree " << tree;
    EXPECT_EQ(place(1, tree).parent, 3);
    EXPECT_EQ(place(1, tree).children, (std::vector<int>{0, 5}));
    EXPECT_EQ(place(5, tree).parent, 1);
    EXPECT_TRUE(place(5, tree).children.empty());
    EXPECT_EQ(place(0, tree).parent, 1);
    EXPECT_EQ(place(0, tree).children, (std::vector<int>{2}));
    EXPECT_EQ(place(4, tree).parent, 2);
  }
  // A root that is its chain's first rank leads the chain either way: root 1 -> {0, 3}.
  for (RootPlace where : {RootPlace::kAboveChain, RootPlace::kLeadsChain}) {
    EXPECT_EQ(rootedNodeTreePlace(chains, 0, 1, where, 1).parent, -1);
    EXPECT_EQ(rootedNodeTreePlace(chains, 0, 1, where, 1).children, (std::vector<int>{0, 3}));
  }
}

TEST(RootedTrees, OneHostTurnsTheFlatTreesOverTheFirstRing) {
  // The 4-rank tree 0 -> 2 -> {1, 3} over ring 3 1 0 2 (positions), turned to start at rank 1
  // (position 1): positions 1 -> 3 -> {2, 0}, ranks 1 -> 2 -> {0, 3}.
  const std::vector<Ring> rings = {{3, 1, 0, 2}};
  EXPECT_EQ(rootedTreePlaces(rings, {}, 1, 1)[0].children, (std::vector<int>{2}));
  EXPECT_EQ(rootedTreePlaces(rings, {}, 1, 2)[0].children, (std::vector<int>{0, 3}));
  EXPECT_EQ(rootedTreePlaces(rings, std::vector<int>(4, 5), 1, 3)[0].parent, 2);
}

// rootedTreePlaces' trees (the root leading its chain), or the same trees with the root above its
// chain (as `weft sim` lays them).
std::vector<TreePlace> rootedPlaces(const std::vector<Ring>& rings, const std::vector<int>& hostOfRank, int root,
                                    RootPlace where, int rank) {
  if (where == RootPlace::kLeadsChain) return rootedTreePlaces(rings, hostOfRank, root, rank);
  std::vector<TreePlace> places;
  for (size_t t = 0; t < std::min<size_t>(2, rings.size()); ++t) {
    places.push_back(rootedNodeTreePlace(chainsAlong(rings[t], hostOfRank), static_cast<int>(t), root, where, rank));
  }
  return places;
}

TEST(RootedTreesSimulated, RanksSpreadOverHostsAreExactAtEveryRoot) {
  std::mt19937 draw(11);
  ProgramSimulator simulator;
  int failures = 0;
  for (int nranks = 2; nranks <= 20; ++nranks) {
    for (int hosts : {2, 3, 5}) {
      if (hosts > nranks) continue;
      const std::vector<int> hostOfRank = dealtToHosts(nranks, hosts, draw);
      const int channels = 1 + static_cast<int>(draw() % 3);
      const std::vector<Ring> rings = ringsOverHosts(hostOfRank, hosts, channels, draw);
      for (Collective collective : {Collective::kBroadcast, Collective::kReduce}) {
        for (int root = 0; root < nranks; ++root) {
          const RootPlace where = draw() % 2 == 0 ? RootPlace::kLeadsChain : RootPlace::kAboveChain;
          std::vector<Participant> parts;
          int crossings = 0;
          for (int rank = 0; rank < nranks; ++rank) {
            const std::vector<TreePlace> trees = rootedPlaces(rings, hostOfRank, root, where, rank);
            for (const TreePlace& tree : trees) crossings += tree.parent >= 0 && hostOfRank[tree.parent] != hostOfRank[rank];
            OpShape shape{collective, 23, root, nranks, rank};
            Participant part{shape, {}};
            if (collective == Collective::kBroadcast) {
              buildTreeBroadcast(shape, trees, &part.program);
            } else {
              buildTreeReduce(shape, trees, &part.program);
            }
            parts.push_back(part);
          }
          // Each tree crosses between hosts once per host but the root's.
          EXPECT_EQ(crossings, std::min(channels, 2) * (hosts - 1)) << nranks << " ranks, root " << root;
          const SimulatorOptions options = tests::drawnPipelinedOptions(draw, draw() % 2 == 0, channels);
          const SimulationResult result = simulator.run(parts, options);
          if (result.ok()) continue;
          ADD_FAILURE() << collectiveName(collective) << " over " << nranks << " ranks on " << hosts << " hosts, root "
                        << root << (where == RootPlace::kAboveChain ? " above its chain" : "") << ": "
                        << result.message;
          if (++failures == 5) return;
        }
      }
    }
  }
}

}  // namespace
}  // namespace weft::algorithms
