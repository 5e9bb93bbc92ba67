#pragma once
// The trees of a job over several nodes, as NCCL lays them: inside each node a chain of its ranks,
// between nodes one of the two binary trees of the double binary tree over the nodes
// (topology/trees.h), which links the chains' first ranks.

#include <span>
#include <vector>

#include "algorithms/schedule.h"
#include "topology/trees.h"

namespace weft::algorithms {

/// A rank's place in a tree laid over the positions of `ring`: `links` (in positions) as ranks.
TreePlace placeOnRing(const Ring& ring, const topology::TreeLinks& links);

/// `rank`'s place in one channel's tree over nodes. chains[node] lists that node's ranks in the
/// order the channel visits them (topology::NodeChannel's chain, as ranks); every rank appears in
/// exactly one chain. Inside a node each rank's parent is the rank before it on the chain and its
/// child the one after. The chain's first rank has as parent the first rank of its parent node in
/// binary tree `tree` (0 or 1) of topology::doubleBinaryTreeLinks over the nodes, and as children
/// its chain's second rank, then the first ranks of its child nodes. Pure.
TreePlace nodeTreePlace(std::span<const std::vector<int>> chains, int tree, int rank);

/// `ring` cut into its hosts' chains (hostOfRank[r]: rank r's host), in the order the ring visits
/// the hosts; every ring of a communicator holds each host's ranks consecutively. Pure.
std::vector<std::vector<int>> chainsAlong(const Ring& ring, std::span<const int> hostOfRank);

/// Where a rooted tree puts its root on the root's own node.
enum class RootPlace {
  /// The root's chain starts at the root (the ranks before it move to its end), so the root itself
  /// talks to the other nodes: the shortest way where every rank reaches the network alike (the
  /// host transports).
  kLeadsChain,
  /// The root leaves its chain to become the parent of the chain's first rank, which keeps talking
  /// to the other nodes: where a channel's chains start at the rank nearest its NIC, so that the
  /// channels' network traffic does not all cross the root's PCIe link (`weft sim`).
  kAboveChain,
};

/// nodeTreePlace's tree `tree` over `chains`, with `root` as its root: the nodes are renumbered so
/// that the root's node takes the place of tree `tree`'s root node, and the root goes where
/// `place` says. Only the chains' first ranks talk to other nodes, and they serve their child
/// nodes before the rest of their chain (theirs is the longer way). Pure.
TreePlace rootedNodeTreePlace(std::span<const std::vector<int>> chains, int tree, int root, RootPlace place, int rank);

/// The trees a communicator runs its tree AllReduce on, as `rank`'s place in each: one per
/// channel, at most two. hostOfRank[r] numbers rank r's host (empty: every rank on one host). On
/// one host, the double binary tree over the positions of rings[0] (topology::doubleBinaryTreeLinks,
/// tree t on channel t). Over several hosts, NCCL's trees over nodes: tree t is nodeTreePlace's
/// tree t with each host's chain being its ranks in the order rings[t] visits them (every ring
/// holds each host's ranks consecutively), so each rank but a chain's first talks over shared
/// memory and only the chains' first ranks over the network.
std::vector<TreePlace> communicatorTreePlaces(std::span<const Ring> rings, std::span<const int> hostOfRank, int rank);

/// The trees of a rooted collective (Broadcast, Reduce) as `rank`'s place in each: the same trees
/// as communicatorTreePlaces, each turned so that `root` is its root and its shape is kept. On one
/// host, position p of rings[0] takes the place of p - p(root) + p(tree t's root), modulo n. Over
/// several hosts, rootedNodeTreePlace over the hosts' chains along rings[t], the root leading its
/// chain. Pure.
std::vector<TreePlace> rootedTreePlaces(std::span<const Ring> rings, std::span<const int> hostOfRank, int root,
                                        int rank);

/// The hops on the longest way between the root and a rank of communicatorTreePlaces' trees:
/// `local` ones between ranks of one host (over several hosts: along the longest chain) and
/// `across` the others (between hosts; on one host, every hop of the flat trees).
struct TreeDepths {
  int local = 0;
  int across = 0;
};
TreeDepths communicatorTreeDepths(std::span<const int> hostOfRank);

/// What the tuner needs to know of how ranks spread over hosts (algorithms::TuneShape's fields of
/// the same names): all 0 on one host. With `shmDisabled` every hop goes over the network, so the
/// trees' local hops count as hops between hosts and no ring hop is local.
struct HostLayout {
  int localTreeDepth = 0;  // the trees: hops along a host's chain
  int hostTreeDepth = 0;   //   and between hosts
  int localRingHops = 0;   // ring hops within a host: nranks - hosts
};
HostLayout hostLayoutOf(std::span<const int> hostOfRank, bool shmDisabled);

}  // namespace weft::algorithms
