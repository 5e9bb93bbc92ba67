#include "src/device/setup_at_init.h"

#include <algorithm>

namespace weft::device {

bool setsUpGpuAtInit(const std::vector<PeerInfo>& peers) {
  if (peers.size() < 2) return false;
  const PeerInfo& first = peers.front();
  return std::all_of(peers.begin(), peers.end(), [&first](const PeerInfo& peer) {
    return peer.sameProcess(first) && peer.cudaDevice >= 0 && peer.gpuInUse != 0;
  });
}

#if !WEFT_CUDA
Status setUpGpuAtInit(core::Communicator&) { return Status::ok(); }
#endif

}  // namespace weft::device
