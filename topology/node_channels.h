#pragma once
// How the rings of one node carry a job that spans several identical nodes: each channel cuts its
// ring open into a chain of the node's GPUs, enters the node from the previous one at the chain's
// first GPU and leaves for the next at its last, both through the channel's NIC. The same chains,
// entered at the first GPU, are what each node runs below the trees (trees.h) that link the nodes.

#include <vector>

#include "topology/gdr.h"
#include "topology/paths.h"
#include "topology/search.h"
#include "topology/system.h"

namespace weft::topology {

struct NodeChannel {
  /// The node's GPUs in the order the channel visits them (indices into
  /// system.nodesOfType(NodeType::kGpu)); the first receives from the network, the last sends.
  std::vector<int> chain;
  /// The channel's NIC, as an index into system.nodesOfType(NodeType::kNic).
  int nic = -1;
  /// The way the network's data takes from the NIC to the chain's first GPU, and from its last GPU
  /// to the NIC (gdr.h: through the GPU's CPU where GPUDirect RDMA is off).
  PathType entry = PathType::kDis;
  PathType exit = PathType::kDis;
};

/// The channels of a job over several nodes like `system`, from the rings `rings` found on it:
/// max(rings, NICs) channels, so that every NIC carries at least one (channel c follows ring
/// c mod the ring count and uses NIC c mod the NIC count, as NCCL spreads channels over rails).
/// Each chain is its ring cut open where both ends are nearest the channel's NIC: the cut whose
/// worse end (by the type of netPath's way, from the NIC to the first GPU and from the last GPU to
/// the NIC, under GPUDirect RDMA policy `gdr`) is best, then whose better end is, then whose
/// slower end is fastest, then the earliest on the ring. Empty when the system has no NIC or
/// `rings` has no ring. Pure and deterministic.
std::vector<NodeChannel> channelsAcrossNodes(const System& system, const Paths& paths, const RingSet& rings,
                                             const NetGdrPolicy& gdr = {});

/// Where to cut the ring `ring` of GPU nodes of `system` (node ids, in ring order; a GPU may
/// appear several times in a row, for ranks that share it) into a chain that enters and leaves
/// through NIC node `nic`: the position of the chain's first GPU, by channelsAcrossNodes' rule.
size_t cutNearNic(const System& system, const Paths& paths, const std::vector<int>& ring, int nic,
                  const NetGdrPolicy& gdr);

}  // namespace weft::topology
