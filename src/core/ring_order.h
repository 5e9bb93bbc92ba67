#pragma once
// The order of a communicator's ranks around its rings. Ranks of one host are always consecutive
// (one network hop into each host and one out), hosts in the order of their lowest rank; within a
// host, ranks follow a position that each rank knows or was told (PeerInfo, host_ring_positions.h),
// so that every rank builds the same rings.

#include <string>
#include <vector>

#include "algorithms/schedule.h"
#include "src/base/peer_info.h"

namespace weft::core {

/// The ring of ranks on host memory: within a host, the order that topology::orderHostRanks gives
/// their NUMA nodes (one socket's ranks consecutive, so the ring crosses between sockets as few
/// times as it can); ranks of one host and NUMA node in rank order. `peers[r]` describes rank r.
algorithms::Ring hostRingOrder(const std::vector<PeerInfo>& peers);

/// The ring whose hosts' ranks are ordered by `positionOfRank` (ascending; ties in rank order).
/// Positions are compared only between ranks of one host.
algorithms::Ring ringFromHostPositions(const std::vector<PeerInfo>& peers, const std::vector<int>& positionOfRank);

/// "   0   2   1   3": a ring's ranks in order, as NCCL's "Channel 00/02 :" INIT line lists them.
std::string describeRing(const algorithms::Ring& ring);

}  // namespace weft::core
