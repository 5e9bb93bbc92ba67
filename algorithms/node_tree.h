#pragma once
// The trees of a job over several nodes, as NCCL lays them: inside each node a chain of its ranks,
// between nodes one of the two binary trees of the double binary tree over the nodes
// (topology/trees.h), which links the chains' first ranks.

#include <span>
#include <vector>

#include "algorithms/schedule.h"

namespace weft::algorithms {

/// `rank`'s place in one channel's tree over nodes. chains[node] lists that node's ranks in the
/// order the channel visits them (topology::NodeChannel's chain, as ranks); every rank appears in
/// exactly one chain. Inside a node each rank's parent is the rank before it on the chain and its
/// child the one after. The chain's first rank has as parent the first rank of its parent node in
/// binary tree `tree` (0 or 1) of topology::doubleBinaryTreeLinks over the nodes, and as children
/// its chain's second rank, then the first ranks of its child nodes. Pure.
TreePlace nodeTreePlace(std::span<const std::vector<int>> chains, int tree, int rank);

}  // namespace weft::algorithms
