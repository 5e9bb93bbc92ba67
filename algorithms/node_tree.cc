#include "algorithms/node_tree.h"

#include <algorithm>
#include <array>
#include <cassert>

#include "algorithms/tuner.h"
#include "topology/trees.h"

namespace weft::algorithms {

TreePlace placeOnRing(const Ring& ring, const topology::TreeLinks& links) {
  TreePlace place;
  if (links.parent >= 0) place.parent = ring[links.parent];
  for (int child : links.children) {
    if (child >= 0) place.children.push_back(ring[child]);
  }
  return place;
}

TreePlace nodeTreePlace(std::span<const std::vector<int>> chains, int tree, int rank) {
  assert(tree == 0 || tree == 1);
  const int nodes = static_cast<int>(chains.size());
  for (int node = 0; node < nodes; ++node) {
    const std::vector<int>& chain = chains[node];
    const auto found = std::find(chain.begin(), chain.end(), rank);
    if (found == chain.end()) continue;
    const size_t position = static_cast<size_t>(found - chain.begin());
    TreePlace place;
    if (position + 1 < chain.size()) place.children.push_back(chain[position + 1]);
    if (position > 0) {
      place.parent = chain[position - 1];
      return place;
    }
    const topology::TreeLinks links = topology::doubleBinaryTreeLinks(nodes, node)[tree];
    if (links.parent >= 0) place.parent = chains[links.parent].front();
    for (int child : links.children) {
      if (child >= 0) place.children.push_back(chains[child].front());
    }
    return place;
  }
  assert(false && "rank is on no chain");
  return {};
}

namespace {

int positionOf(const Ring& ring, int rank) {
  const auto found = std::find(ring.begin(), ring.end(), rank);
  assert(found != ring.end());
  return static_cast<int>(found - ring.begin());
}

bool oneHost(std::span<const int> hostOfRank) {
  return std::all_of(hostOfRank.begin(), hostOfRank.end(), [&](int host) { return host == hostOfRank.front(); });
}

// The node that is the root of tree `tree` of topology::doubleBinaryTreeLinks over `count` nodes.
int treeRootOf(int count, int tree) {
  int root = 0;
  while (topology::doubleBinaryTreeLinks(count, root)[tree].parent >= 0) ++root;
  return root;
}

// `turn` moves node v to (v + turn) modulo count.
int turned(int v, int turn, int count) { return ((v + turn) % count + count) % count; }

// On one host: tree `tree` over the positions of `ring`, turned so that `root` is its root.
TreePlace turnedRingTreePlace(const Ring& ring, int tree, int root, int rank) {
  const int n = static_cast<int>(ring.size());
  const int turn = treeRootOf(n, tree) - positionOf(ring, root);
  topology::TreeLinks links = topology::doubleBinaryTreeLinks(n, turned(positionOf(ring, rank), turn, n))[tree];
  if (links.parent >= 0) links.parent = turned(links.parent, -turn, n);
  for (int& child : links.children) {
    if (child >= 0) child = turned(child, -turn, n);
  }
  return placeOnRing(ring, links);
}

}  // namespace

std::vector<std::vector<int>> chainsAlong(const Ring& ring, std::span<const int> hostOfRank) {
  std::vector<std::vector<int>> chains;
  for (size_t i = 0; i < ring.size(); ++i) {
    if (i == 0 || hostOfRank[ring[i]] != hostOfRank[ring[i - 1]]) chains.emplace_back();
    chains.back().push_back(ring[i]);
  }
  return chains;
}

TreePlace rootedNodeTreePlace(std::span<const std::vector<int>> chains, int tree, int root, RootPlace place,
                              int rank) {
  const int nodes = static_cast<int>(chains.size());
  int rootNode = 0;
  while (std::find(chains[rootNode].begin(), chains[rootNode].end(), root) == chains[rootNode].end()) ++rootNode;
  const int turn = treeRootOf(nodes, tree) - rootNode;
  std::vector<std::vector<int>> turnedChains(nodes);
  for (int node = 0; node < nodes; ++node) turnedChains[turned(node, turn, nodes)] = chains[node];
  std::vector<int>& rootChain = turnedChains[treeRootOf(nodes, tree)];
  const auto rootAt = std::find(rootChain.begin(), rootChain.end(), root);
  const int head = rootChain.front();
  const bool above = place == RootPlace::kAboveChain && head != root;
  if (above) {
    rootChain.erase(rootAt);
    if (rank == root) return TreePlace{-1, {head}};
  } else {
    std::rotate(rootChain.begin(), rootAt, rootChain.end());
  }
  TreePlace result = nodeTreePlace(turnedChains, tree, rank);
  if (above && rank == head) result.parent = root;
  // Only a chain's first rank has several children, its chain's second first where the chain has
  // one (nodeTreePlace); it serves the other nodes first, whose way is the longer.
  std::vector<int>& children = result.children;
  if (children.size() > 1) {
    const auto chain = std::find_if(turnedChains.begin(), turnedChains.end(),
                                    [&](const std::vector<int>& ranks) { return ranks.front() == rank; });
    if (chain->size() > 1) std::rotate(children.begin(), children.begin() + 1, children.end());
  }
  return result;
}

std::vector<TreePlace> communicatorTreePlaces(std::span<const Ring> rings, std::span<const int> hostOfRank, int rank) {
  assert(!rings.empty());
  const size_t trees = std::min<size_t>(2, rings.size());
  std::vector<TreePlace> places;
  if (oneHost(hostOfRank)) {
    const Ring& ring = rings[0];
    const std::array<topology::TreeLinks, 2> links =
        topology::doubleBinaryTreeLinks(static_cast<int>(ring.size()), positionOf(ring, rank));
    for (size_t t = 0; t < trees; ++t) places.push_back(placeOnRing(ring, links[t]));
    return places;
  }
  for (size_t t = 0; t < trees; ++t) {
    places.push_back(nodeTreePlace(chainsAlong(rings[t], hostOfRank), static_cast<int>(t), rank));
  }
  return places;
}

std::vector<TreePlace> rootedTreePlaces(std::span<const Ring> rings, std::span<const int> hostOfRank, int root,
                                        int rank) {
  assert(!rings.empty());
  const size_t trees = std::min<size_t>(2, rings.size());
  std::vector<TreePlace> places;
  for (size_t t = 0; t < trees; ++t) {
    const int tree = static_cast<int>(t);
    places.push_back(oneHost(hostOfRank) ? turnedRingTreePlace(rings[0], tree, root, rank)
                                         : rootedNodeTreePlace(chainsAlong(rings[t], hostOfRank), tree, root,
                                                               RootPlace::kLeadsChain, rank));
  }
  return places;
}

TreeDepths communicatorTreeDepths(std::span<const int> hostOfRank) {
  const int nranks = static_cast<int>(hostOfRank.size());
  if (oneHost(hostOfRank)) return {0, treeDepth(std::max(nranks, 1))};
  std::vector<int> hosts(hostOfRank.begin(), hostOfRank.end());
  std::sort(hosts.begin(), hosts.end());
  int longestChain = 0;
  int distinct = 0;
  for (size_t i = 0; i < hosts.size();) {
    size_t j = i;
    while (j < hosts.size() && hosts[j] == hosts[i]) ++j;
    longestChain = std::max(longestChain, static_cast<int>(j - i));
    ++distinct;
    i = j;
  }
  return {longestChain - 1, treeDepth(distinct)};
}

HostLayout hostLayoutOf(std::span<const int> hostOfRank, bool shmDisabled) {
  HostLayout layout;
  if (oneHost(hostOfRank)) return layout;
  const TreeDepths depths = communicatorTreeDepths(hostOfRank);
  std::vector<int> hosts(hostOfRank.begin(), hostOfRank.end());
  std::sort(hosts.begin(), hosts.end());
  const int hostCount = static_cast<int>(std::unique(hosts.begin(), hosts.end()) - hosts.begin());
  layout.localTreeDepth = shmDisabled ? 0 : depths.local;
  layout.hostTreeDepth = depths.across + (shmDisabled ? depths.local : 0);
  layout.localRingHops = shmDisabled ? 0 : static_cast<int>(hostOfRank.size()) - hostCount;
  return layout;
}

}  // namespace weft::algorithms
