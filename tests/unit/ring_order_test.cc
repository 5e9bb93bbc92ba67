// The ring order of host ranks (src/core/ring_order.h): hosts contiguous, sockets contiguous.

#include "src/core/ring_order.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <string>
#include <vector>

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

}  // namespace
}  // namespace weft::core
