// The ring order of ranks (src/core/ring_order.h): hosts contiguous, sockets contiguous; and each
// rank's place on its host's GPU rings (src/core/host_ring_positions.h), read from real machines'
// files through NCCL_TOPO_FILE.

#include "src/core/ring_order.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

#include "src/core/host_ring_positions.h"
#include "tests/harness/scoped_env.h"
#include "topology/load.h"
#include "topology/search.h"

namespace weft::core {
namespace {

PeerInfo peerOn(const std::string& host, int numa) {
  PeerInfo peer;
  std::snprintf(peer.hostId, sizeof(peer.hostId), "%s", host.c_str());
  peer.hostHash = std::hash<std::string>{}(host);
  peer.numaNode = numa;
  return peer;
}

TEST(HostRingOrder, OneHostOneNumaNodeIsRankOrder) {
  std::vector<PeerInfo> peers(4, peerOn("a", 0));
  EXPECT_EQ(hostRingOrder(peers), (algorithms::Ring{0, 1, 2, 3}));
}

TEST(HostRingOrder, RanksOfOneSocketAreConsecutive) {
  // Ranks alternate between sockets (as mpirun --map-by socket places them): the ring crosses
  // between the sockets twice instead of four times.
  std::vector<PeerInfo> peers = {peerOn("a", 0), peerOn("a", 1), peerOn("a", 0), peerOn("a", 1)};
  EXPECT_EQ(hostRingOrder(peers), (algorithms::Ring{0, 2, 1, 3}));
}

TEST(HostRingOrder, RanksOfUnknownNumaNodeComeLastOnTheirHost) {
  std::vector<PeerInfo> peers = {peerOn("a", -1), peerOn("a", 1), peerOn("a", 0)};
  EXPECT_EQ(hostRingOrder(peers), (algorithms::Ring{2, 1, 0}));
}

TEST(HostRingOrder, RanksOfOneHostAreConsecutiveHostsInOrderOfTheirLowestRank) {
  std::vector<PeerInfo> peers = {peerOn("b", 0), peerOn("a", 0), peerOn("b", 0), peerOn("a", 0), peerOn("c", 0)};
  EXPECT_EQ(hostRingOrder(peers), (algorithms::Ring{0, 2, 1, 3, 4}));
}

TEST(HostRingOrder, HostsAndSocketsTogether) {
  std::vector<PeerInfo> peers = {peerOn("a", 1), peerOn("b", 1), peerOn("a", 0), peerOn("b", 0),
                                 peerOn("a", 1), peerOn("b", 0)};
  EXPECT_EQ(hostRingOrder(peers), (algorithms::Ring{2, 0, 4, 3, 5, 1}));
}

TEST(HostRingOrder, DescribesARingAsNcclPrintsIt) {
  EXPECT_EQ(describeRing({0, 2, 1, 3}), "   0   2   1   3");
  EXPECT_EQ(describeRing({7}), "   7");
  EXPECT_EQ(describeRing({1234, 5}), " 1234   5");
}

TEST(HostRingOrder, PositionsOrderEachHostAndHostsStayInOrderOfTheirLowestRank) {
  std::vector<PeerInfo> peers = {peerOn("a", 0), peerOn("b", 0), peerOn("a", 0), peerOn("b", 0), peerOn("a", 0)};
  // Host a: ranks 0 2 4 at positions 2 0 1; host b: ranks 1 3 at positions 5 5 (a tie: rank order).
  EXPECT_EQ(ringFromHostPositions(peers, {2, 5, 0, 5, 1}), (algorithms::Ring{2, 4, 0, 1, 3}));
}

// ---- places on GPU rings, from real machines' files ----

class GpuRingPositions : public ::testing::Test {
 protected:
  // Ranks on host "a" on the GPUs of `file` given by index (several ranks may share one).
  void placeRanks(const std::string& file, const std::vector<int>& gpuOfRank) {
    path_ = (std::filesystem::path(__FILE__).parent_path() / "../../../shared/topologies" / file).string();
    if (!std::filesystem::exists(path_)) {
      GTEST_SKIP() << path_ << " is absent: the real topology files live beside the project's clone "
                   << "(../shared/topologies), as in CI";
    }
    ASSERT_TRUE(topology::loadSystem(path_, &system_).isOk());
    const std::vector<int> gpus = system_.nodesOfType(topology::NodeType::kGpu);
    peers_.clear();
    for (size_t rank = 0; rank < gpuOfRank.size(); ++rank) {
      PeerInfo peer = peerOn("a", system_.node(gpus[gpuOfRank[rank]]).cpuNuma);
      peer.rank = static_cast<int>(rank);
      std::snprintf(peer.gpuBusId, sizeof(peer.gpuBusId), "%s", system_.node(gpus[gpuOfRank[rank]]).pci->busId.c_str());
      peers_.push_back(peer);
    }
  }
  // The ring of each channel, from every rank's positions, as the communicator assembles them.
  std::vector<algorithms::Ring> rings(int channels) {
    harness::ScopedEnv file("NCCL_TOPO_FILE", path_.c_str());
    std::vector<std::vector<int>> positionsOfRank;
    for (size_t rank = 0; rank < peers_.size(); ++rank) {
      std::vector<int> positions;
      EXPECT_TRUE(hostRingPositions(peers_, static_cast<int>(rank), channels, &positions).isOk());
      positionsOfRank.push_back(positions);
    }
    std::vector<algorithms::Ring> result;
    for (int channel = 0; channel < channels; ++channel) {
      std::vector<int> column;
      for (const std::vector<int>& positions : positionsOfRank) column.push_back(positions.at(channel));
      result.push_back(ringFromHostPositions(peers_, column));
    }
    return result;
  }
  // What the topology layer orders for these ranks: channel c takes GPU ring c mod the rings found.
  std::vector<algorithms::Ring> expectedRings(int channels) const {
    std::vector<std::string> busIds;
    for (const PeerInfo& peer : peers_) busIds.emplace_back(peer.gpuBusId);
    topology::RingSearchOptions options;
    options.maxRings = channels;
    const topology::RankRings found = topology::orderGpuRanks(system_, topology::Paths(system_), busIds, options);
    std::vector<algorithms::Ring> result;
    for (int channel = 0; channel < channels && !found.orders.empty(); ++channel) {
      result.push_back(found.orders[channel % found.orders.size()]);
    }
    return result;
  }
  // Hops of `ring` (closed) between ranks whose GPUs hang under different NUMA nodes.
  int numaCrossings(const algorithms::Ring& ring) const {
    int crossings = 0;
    for (size_t i = 0; i < ring.size(); ++i) {
      crossings += peers_[ring[i]].numaNode != peers_[ring[(i + 1) % ring.size()]].numaNode ? 1 : 0;
    }
    return crossings;
  }

  std::string path_;
  topology::System system_;
  std::vector<PeerInfo> peers_;
};

TEST_F(GpuRingPositions, RanksOnAPcieServerFollowItsGpuRing) {
  // Eight ranks on the eight T4s of a two-socket server, in an order that alternates sockets.
  placeRanks("hwloc-aws-g4dn-metal-t4x8.xml", {0, 5, 2, 7, 4, 1, 6, 3});
  if (IsSkipped()) return;
  ASSERT_NE(peers_[0].numaNode, peers_[1].numaNode);  // the order does alternate
  const std::vector<algorithms::Ring> found = rings(2);
  EXPECT_EQ(found, expectedRings(2));
  for (const algorithms::Ring& ring : found) {
    std::vector<int> sorted = ring;
    std::sort(sorted.begin(), sorted.end());
    EXPECT_EQ(sorted, (std::vector<int>{0, 1, 2, 3, 4, 5, 6, 7}));
    EXPECT_EQ(numaCrossings(ring), 2);
  }
}

TEST_F(GpuRingPositions, ChannelsTakeTheNvlinkRingsInTurn) {
  // Four ranks on four A100s behind NVSwitches: several NVLink rings, one per channel.
  placeRanks("oci-bm-gpu4.8-a100x8.xml", {3, 0, 2, 1});
  if (IsSkipped()) return;
  const std::vector<algorithms::Ring> found = rings(4);
  ASSERT_EQ(found.size(), 4u);
  EXPECT_EQ(found, expectedRings(4));
  for (const algorithms::Ring& ring : found) EXPECT_EQ(ring.front(), 0);  // the first rank's GPU first
}

TEST_F(GpuRingPositions, ARankWithoutAGpuLeavesTheHostInNumaOrder) {
  placeRanks("hwloc-aws-g4dn-metal-t4x8.xml", {0, 5, 2, 7});
  if (IsSkipped()) return;
  peers_[2].gpuBusId[0] = '\0';
  for (const algorithms::Ring& ring : rings(2)) EXPECT_EQ(ring, hostRingOrder(peers_));
}

TEST_F(GpuRingPositions, AcrossHostsEachChainEntersAndLeavesNearestTheNic) {
  // Eight ranks on the T4s of a two-socket server whose NICs hang under socket 1 (NUMA node 1),
  // and a ninth on another host: host a's chain must start and end on socket 1.
  placeRanks("hwloc-aws-g4dn-metal-t4x8.xml", {0, 1, 2, 3, 4, 5, 6, 7});
  if (IsSkipped()) return;
  const algorithms::Ring alone = rings(1).at(0);
  ASSERT_EQ(alone.front(), 0);  // one host: the ring as found, from GPU0 (socket 0)
  PeerInfo remote = peerOn("b", 0);
  remote.rank = 8;
  std::snprintf(remote.gpuBusId, sizeof(remote.gpuBusId), "%s", peers_[0].gpuBusId);
  peers_.push_back(remote);
  const algorithms::Ring ring = rings(2).at(0);
  ASSERT_EQ(ring.size(), 9u);
  EXPECT_EQ(ring.back(), 8);  // host b after host a
  const algorithms::Ring chain(ring.begin(), ring.end() - 1);
  EXPECT_EQ(peers_[chain.front()].numaNode, 1) << "the chain enters on socket 0, away from the NICs";
  EXPECT_EQ(peers_[chain.back()].numaNode, 1) << "the chain leaves from socket 0, away from the NICs";
  // Still the GPU ring, turned: each rank keeps its neighbours within the chain.
  const auto at = std::find(alone.begin(), alone.end(), chain.front()) - alone.begin();
  for (size_t i = 0; i < chain.size(); ++i) EXPECT_EQ(chain[i], alone[(at + i) % alone.size()]) << i;
}

TEST_F(GpuRingPositions, AnUnreadableTopologyFileIsAnErrorNamingIt) {
  placeRanks("hwloc-aws-g4dn-metal-t4x8.xml", {0, 1});
  if (IsSkipped()) return;
  harness::ScopedEnv file("NCCL_TOPO_FILE", "/nonexistent/weft-topology.xml");
  std::vector<int> positions;
  const Status status = hostRingPositions(peers_, 0, 1, &positions);
  EXPECT_FALSE(status.isOk());
  EXPECT_NE(status.message().find("/nonexistent/weft-topology.xml"), std::string::npos) << status.message();
  EXPECT_NE(status.message().find("NCCL_TOPO_FILE"), std::string::npos) << status.message();
}

}  // namespace
}  // namespace weft::core
