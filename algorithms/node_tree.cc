#include "algorithms/node_tree.h"

#include <algorithm>
#include <cassert>

#include "topology/trees.h"

namespace weft::algorithms {

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

}  // namespace weft::algorithms
