#include "src/device/direct_plan.h"

#include <algorithm>

namespace weft::device {

bool sharesOneGpuInOneProcess(const std::vector<PeerInfo>& peers) {
  if (peers.empty() || peers.size() > static_cast<size_t>(kMaxDirectRanks)) return false;
  const PeerInfo& first = peers.front();
  if (first.cudaDevice < 0) return false;
  return std::all_of(peers.begin(), peers.end(), [&first](const PeerInfo& peer) {
    return peer.sameHost(first) && peer.sameProcess(first) && peer.cudaDevice == first.cudaDevice;
  });
}

bool directFits(int nranks, int multiprocessors) { return nranks >= 1 && 2 * nranks <= multiprocessors; }

int directBlocksPerRank(uint64_t count, size_t elementBytes, int nranks, int multiprocessors, int threadsPerBlock) {
  const uint64_t words = (count * elementBytes + 15) / 16;
  const uint64_t wordsPerBlock = static_cast<uint64_t>(nranks) * static_cast<uint64_t>(threadsPerBlock);
  const uint64_t wanted = std::max<uint64_t>(1, (words + wordsPerBlock - 1) / wordsPerBlock);
  const uint64_t most = std::max(1, multiprocessors / (2 * nranks));
  return static_cast<int>(std::min(wanted, most));
}

}  // namespace weft::device
