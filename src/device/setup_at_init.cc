#include "src/device/setup_at_init.h"

#include <algorithm>

namespace weft::device {
namespace {

// Whether two of `peers` are threads of one process.
bool someRanksShareAProcess(const std::vector<PeerInfo>& peers) {
  for (size_t a = 0; a < peers.size(); ++a) {
    for (size_t b = a + 1; b < peers.size(); ++b) {
      if (peers[a].sameProcess(peers[b])) return true;
    }
  }
  return false;
}

}  // namespace

bool setsUpGpuAtInit(const std::vector<PeerInfo>& peers) {
  if (peers.size() < 2) return false;
  const PeerInfo& first = peers.front();
  const bool gpusInUseOnOneHost = std::all_of(peers.begin(), peers.end(), [&first](const PeerInfo& peer) {
    return peer.sameHost(first) && peer.cudaDevice >= 0 && peer.gpuInUse != 0;
  });
  return gpusInUseOnOneHost && someRanksShareAProcess(peers);
}

#if !WEFT_CUDA
Status setUpGpuAtInit(core::Communicator&) { return Status::ok(); }
#endif

}  // namespace weft::device
