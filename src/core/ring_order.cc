#include "src/core/ring_order.h"

#include <cstdio>
#include <string>

#include "topology/search.h"

namespace weft::core {

algorithms::Ring hostRingOrder(const std::vector<PeerInfo>& peers) {
  const int nranks = static_cast<int>(peers.size());
  algorithms::Ring ring;
  ring.reserve(peers.size());
  std::vector<bool> placed(peers.size(), false);
  for (int first = 0; first < nranks; ++first) {
    if (placed[first]) continue;
    // `first` is the lowest rank of a host not yet placed: place that host's ranks.
    std::vector<int> ranksOfHost;
    std::vector<int> numaOfRank;
    for (int r = first; r < nranks; ++r) {
      if (placed[r] || !peers[r].sameHost(peers[first])) continue;
      placed[r] = true;
      ranksOfHost.push_back(r);
      numaOfRank.push_back(peers[r].numaNode);
    }
    for (int local : topology::orderHostRanks(numaOfRank)) ring.push_back(ranksOfHost[local]);
  }
  return ring;
}

std::string describeRing(const algorithms::Ring& ring) {
  std::string text;
  char field[16];
  for (int rank : ring) {
    std::snprintf(field, sizeof(field), " %3d", rank);
    text += field;
  }
  return text;
}

}  // namespace weft::core
