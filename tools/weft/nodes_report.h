#pragma once
// What `weft topo --nodes N` adds: how a job over N nodes like this one would cross them, per
// channel (its NIC and the chain of GPUs each node runs) and through the double binary tree over
// the nodes.

#include <nlohmann/json.hpp>
#include <array>
#include <string>
#include <vector>

#include "topology/gdr.h"
#include "topology/node_channels.h"
#include "topology/system.h"
#include "topology/trees.h"

namespace weft::tools {

struct NodesPlan {
  int nodes = 1;
  std::vector<topology::NodeChannel> channels;
  /// Per channel, the GB/s it can move between nodes: the least of its ring's bandwidth inside the
  /// node, its share of its NIC and the ways between the NIC and the chain's ends.
  std::vector<double> channelBandwidth;
  /// Per node, its links in tree 0 and tree 1.
  std::vector<std::array<topology::TreeLinks, 2>> trees;
  /// Milliseconds that paths, rings, channels and trees took.
  double searchMs = 0;
};

/// Builds the channels and trees for `nodes` nodes like `system` from its `rings`, with
/// GPUDirect RDMA policy `gdr`.
NodesPlan planNodes(const topology::System& system, const topology::Paths& paths, const topology::RingSet& rings,
                    int nodes, const topology::NetGdrPolicy& gdr);

/// "Channel 0: NIC0 (mlx5_0) -> GPU0 ... GPU7 -> NIC0 (enters PXB, leaves PXN; 12.5 GB/s)" per channel, then
/// the trees: each node's parent and children up to 16 nodes, else their depths and roots.
std::string nodesText(const topology::System& system, const NodesPlan& plan);

/// {"nodes", "node_channels": [{nic, chain, entry, exit, bandwidth (GB/s)}], "trees": [{root, depth, parent: [..],
///  children: [[a, b], ..]}] x 2, "search_ms"}; -1 marks a missing parent or child.
nlohmann::json nodesJson(const NodesPlan& plan);

}  // namespace weft::tools
