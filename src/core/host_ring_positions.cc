#include "src/core/host_ring_positions.h"

#include <algorithm>
#include <string>

#include "src/base/log.h"
#include "src/core/machine.h"
#include "src/core/ring_order.h"
#include "topology/gdr.h"
#include "topology/node_channels.h"
#include "topology/search.h"

namespace weft::core {
namespace {

int positionOf(const std::vector<int>& order, int value) {
  return static_cast<int>(std::find(order.begin(), order.end(), value) - order.begin());
}

// GPU buffers reach other hosts through the network proxy, which stages every piece in host
// memory: no GPUDirect RDMA, whatever NCCL_NET_GDR_LEVEL allows.
const topology::NetGdrPolicy kStagedThroughHost{topology::PathType::kLoc};

// Where the chain of `order` (local ranks along a ring, their GPUs' bus ids in `busIds`) starts,
// so that it enters the host from the channel's NIC and leaves for the next host through it.
size_t chainStart(const Machine& machine, const std::vector<int>& order, const std::vector<std::string>& busIds,
                  int channel) {
  const std::vector<int> nics = machine.system.nodesOfType(topology::NodeType::kNic);
  if (nics.empty()) return 0;
  std::vector<int> ring;
  for (int local : order) ring.push_back(machine.system.findByBusId(busIds[local]));
  return topology::cutNearNic(machine.system, *machine.paths, ring, nics[channel % nics.size()], kStagedThroughHost);
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
    return machine.status.withContext("NCCL_TOPO_FILE: reading the machine to ring its GPUs");
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
  const size_t nicCount = machine.system.nodesOfType(topology::NodeType::kNic).size();
  if (severalHosts && nicCount > 0) {
    WEFT_INFO(log::kGraph, "rings on host %s: channel c's chain enters and leaves nearest NIC c mod %zu (GPU data "
              "staged through host memory)", peers[self].hostname, nicCount);
  }
  for (int channel = 0; channel < channels; ++channel) {
    const std::vector<int>& order = rings.orders[channel % rings.orders.size()];
    const size_t start = severalHosts ? chainStart(machine, order, busIds, channel) : 0;
    const size_t size = order.size();
    (*positions)[channel] = static_cast<int>((positionOf(order, local) + size - start) % size);
  }
  return Status::ok();
}

}  // namespace weft::core
