#include "src/core/host_ring_positions.h"

#include <algorithm>
#include <string>

#include "src/base/log.h"
#include "src/core/channel_nics.h"
#include "src/core/machine.h"
#include "src/core/ring_order.h"
#include "topology/gdr.h"
#include "topology/load.h"
#include "topology/node_channels.h"
#include "topology/search.h"
#include "transport/registry.h"

namespace weft::core {
namespace {

int positionOf(const std::vector<int>& order, int value) {
  return static_cast<int>(std::find(order.begin(), order.end(), value) - order.begin());
}

// GPU buffers reach other hosts through the network proxy, which stages every piece in host
// memory: no GPUDirect RDMA, whatever NCCL_NET_GDR_LEVEL allows.
const topology::NetGdrPolicy kStagedThroughHost{topology::PathType::kLoc};

// The NIC node each channel enters and leaves this host through: the one carrying the channel's
// device of the network that reaches the first rank of another host (channel_nics.h), as the
// connections will take it; NIC c mod the machine's NICs where the network's devices sit on none
// of them (-1 for every channel without NICs).
std::vector<int> channelNicsAcross(const Machine& machine, const std::vector<PeerInfo>& peers, int self,
                                   int channels) {
  const std::vector<int> nics = machine.system.nodesOfType(topology::NodeType::kNic);
  std::vector<int> chosen(channels, -1);
  if (nics.empty()) return chosen;
  for (int channel = 0; channel < channels; ++channel) chosen[channel] = nics[channel % nics.size()];
  for (const PeerInfo& peer : peers) {
    if (peer.sameHost(peers[self])) continue;
    transport::Transport* network = nullptr;
    if (!transport::pickTransport(peers[self], peer, &network).isOk()) break;
    const std::vector<int> carried = channelNics(machine.system, network->netDevices(), peers[self], channels);
    if (!carried.empty() && carried.front() >= 0) chosen = carried;
    break;
  }
  return chosen;
}

// Where the chain of `order` (local ranks along a ring, their GPUs' bus ids in `busIds`) starts,
// so that it enters the host from NIC node `nic` and leaves for the next host through it.
size_t chainStart(const Machine& machine, const std::vector<int>& order, const std::vector<std::string>& busIds,
                  int nic) {
  if (nic < 0) return 0;
  std::vector<int> ring;
  for (int local : order) ring.push_back(machine.system.findByBusId(busIds[local]));
  return topology::cutNearNic(machine.system, *machine.paths, ring, nic, kStagedThroughHost);
}

}  // namespace

Status hostRingPositions(const std::vector<PeerInfo>& peers, int self, int channels, std::vector<int>* positions) {
  positions->assign(channels, positionOf(hostRingOrder(peers), self));
  std::vector<int> ranksHere;
  std::vector<std::string> busIds;
  for (const PeerInfo& peer : peers) {
    if (!peer.sameHost(peers[self])) continue;
    if (peer.gpuBusId[0] == '\0') {
      WEFT_INFO(log::kGraph, "rings on host %s: rank %d has no GPU; ranks in NUMA order", peers[self].hostname,
                peer.rank);
      return Status::ok();
    }
    ranksHere.push_back(peer.rank);
    busIds.emplace_back(peer.gpuBusId);
  }
  const Machine& machine = localMachine();
  if (!machine.status.isOk() && !machine.file.empty()) {
    return machine.status.withContext(topology::configuredTopologyKnob() + ": reading the machine to ring its GPUs");
  }
  if (!machine.status.isOk()) {
    WEFT_WARN("rings on host %s: the machine could not be read (%s); ranks in NUMA order", peers[self].hostname,
              machine.status.message().c_str());
    return Status::ok();
  }
  topology::RingSearchOptions options;
  options.maxRings = channels;
  const topology::RankRings rings = topology::orderGpuRanks(machine.system, *machine.paths, busIds, options);
  if (rings.orders.empty()) {
    WEFT_INFO(log::kGraph, "rings on host %s: %s; ranks in NUMA order", peers[self].hostname, rings.why.c_str());
    return Status::ok();
  }
  WEFT_INFO(log::kGraph, "rings on host %s: %zu over %zu ranks' GPUs from %s, worst hop %s, %.1f GB/s each",
            peers[self].hostname, rings.orders.size(), ranksHere.size(), machine.system.source().c_str(),
            topology::pathTypeName(rings.worstHop), rings.bandwidthPerRing);
  const int local = positionOf(ranksHere, self);
  const bool severalHosts =
      std::any_of(peers.begin(), peers.end(), [&](const PeerInfo& peer) { return !peer.sameHost(peers[self]); });
  const std::vector<int> nics =
      severalHosts ? channelNicsAcross(machine, peers, self, channels) : std::vector<int>(channels, -1);
  if (!nics.empty() && nics.front() >= 0) {
    WEFT_INFO(log::kGraph, "rings on host %s: each channel's chain enters and leaves nearest its NIC (GPU data "
              "staged through host memory)", peers[self].hostname);
  }
  for (int channel = 0; channel < channels; ++channel) {
    const std::vector<int>& order = rings.orders[channel % rings.orders.size()];
    const size_t start = chainStart(machine, order, busIds, nics[channel]);
    const size_t size = order.size();
    (*positions)[channel] = static_cast<int>((positionOf(order, local) + size - start) % size);
  }
  return Status::ok();
}

}  // namespace weft::core
