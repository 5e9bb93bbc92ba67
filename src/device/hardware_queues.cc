#include "src/device/hardware_queues.h"

#include <cstdlib>

namespace weft::device {
namespace {

constexpr int kDefaultHardwareQueues = 8;

bool sharesItsGpuInItsProcess(const std::vector<PeerInfo>& peers, int rank) {
  const PeerInfo& self = peers[static_cast<size_t>(rank)];
  for (size_t other = 0; other < peers.size(); ++other) {
    if (static_cast<int>(other) != rank && self.cudaDevice >= 0 && peers[other].cudaDevice == self.cudaDevice &&
        peers[other].sameProcess(self)) {
      return true;
    }
  }
  return false;
}

}  // namespace

std::string hardwareQueueWarning(const std::vector<PeerInfo>& peers, int rank, const char* maxConnections) {
  if (!sharesItsGpuInItsProcess(peers, rank)) return "";
  const bool set = maxConnections != nullptr && *maxConnections != '\0';
  if ((set ? std::atoi(maxConnections) : kDefaultHardwareQueues) >= kMostHardwareQueues) return "";
  return "ranks of this process share a GPU with CUDA_DEVICE_MAX_CONNECTIONS=" +
         (set ? std::string(maxConnections) : std::to_string(kDefaultHardwareQueues) + " (unset)") +
         ": once the process has made more streams than that, a kernel waiting for a peer can hold up that "
         "peer's own work in a shared hardware queue, and the ranks deadlock; set CUDA_DEVICE_MAX_CONNECTIONS=" +
         std::to_string(kMostHardwareQueues) + " before the process first uses CUDA";
}

}  // namespace weft::device
