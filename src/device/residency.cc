#include "src/device/residency.h"

#include <algorithm>
#include <cstring>

namespace weft::device {

int blocksPerRankLimit(const std::vector<PeerInfo>& peers, int unlimited) {
  int limit = unlimited;
  for (const PeerInfo& peer : peers) {
    if (peer.gpuBusId[0] == '\0' || peer.gpuMultiprocessors == 0) continue;
    const auto sharesGpu = [&peer](const PeerInfo& other) {
      return other.sameMachine(peer) && std::strcmp(other.gpuBusId, peer.gpuBusId) == 0;
    };
    const int ranksOnGpu = static_cast<int>(std::count_if(peers.begin(), peers.end(), sharesGpu));
    const int usable = (static_cast<int>(peer.gpuMultiprocessors) - kSpareMultiprocessors) / 2;
    limit = std::min(limit, std::max(1, usable / ranksOnGpu));
  }
  return limit;
}

}  // namespace weft::device
