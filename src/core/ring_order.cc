#include "src/core/ring_order.h"

#include <algorithm>
#include <cstdio>
#include <string>

#include "topology/search.h"

namespace weft::core {
namespace {

// The ranks of each host, ascending; hosts in the order of their lowest rank.
std::vector<std::vector<int>> ranksByHost(const std::vector<PeerInfo>& peers) {
  const int nranks = static_cast<int>(peers.size());
  std::vector<std::vector<int>> hosts;
  std::vector<bool> placed(peers.size(), false);
  for (int first = 0; first < nranks; ++first) {
    if (placed[first]) continue;
    std::vector<int>& ranks = hosts.emplace_back();
    for (int r = first; r < nranks; ++r) {
      if (placed[r] || !peers[r].sameHost(peers[first])) continue;
      placed[r] = true;
      ranks.push_back(r);
    }
  }
  return hosts;
}

}  // namespace

algorithms::Ring hostRingOrder(const std::vector<PeerInfo>& peers) {
  algorithms::Ring ring;
  ring.reserve(peers.size());
  for (const std::vector<int>& ranks : ranksByHost(peers)) {
    std::vector<int> numaOfRank;
    for (int r : ranks) numaOfRank.push_back(peers[r].numaNode);
    for (int local : topology::orderHostRanks(numaOfRank)) ring.push_back(ranks[local]);
  }
  return ring;
}

algorithms::Ring ringFromHostPositions(const std::vector<PeerInfo>& peers, const std::vector<int>& positionOfRank) {
  algorithms::Ring ring;
  ring.reserve(peers.size());
  for (std::vector<int>& ranks : ranksByHost(peers)) {
    std::stable_sort(ranks.begin(), ranks.end(), [&](int a, int b) { return positionOfRank[a] < positionOfRank[b]; });
    ring.insert(ring.end(), ranks.begin(), ranks.end());
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
