#pragma once
// The order of a communicator's ranks around its rings, from what every rank knows about every
// other (PeerInfo): each rank computes the same order, so no exchange is needed to agree.

#include <vector>

#include "algorithms/schedule.h"
#include "src/base/peer_info.h"

namespace weft::core {

/// The ring of ranks on host memory: the ranks of each host consecutive (one network hop in and
/// one out per host), hosts in the order of their lowest rank, and within a host the order that
/// topology::orderHostRanks gives their NUMA nodes (one socket's ranks consecutive, so the ring
/// crosses between sockets as few times as it can). Ranks of one host and NUMA node stay in rank
/// order. `peers[r]` describes rank r.
algorithms::Ring hostRingOrder(const std::vector<PeerInfo>& peers);

/// "   0   2   1   3": a ring's ranks in order, as NCCL's "Channel 00/02 :" INIT line lists them.
std::string describeRing(const algorithms::Ring& ring);

}  // namespace weft::core
