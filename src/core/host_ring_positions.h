#pragma once
// Where a rank sits on its host's part of each channel's ring, when the communicator's ranks have
// GPUs: along the rings that the topology layer finds over the host's GPUs. Each rank computes
// its own position from its own machine; the communicator exchanges them (ring_order.h).

#include <vector>

#include "src/base/peer_info.h"
#include "src/base/status.h"

namespace weft::core {

/// For each of `channels` channels, rank `self`'s position among the ranks of its host
/// (peers[r].sameHost(peers[self])):
///  - when every one of those ranks has a GPU (PeerInfo::gpuBusId): its place along the GPU rings
///    of this machine (topology::orderGpuRanks over NCCL_TOPO_FILE or WEFT_HWLOC_XML, or over what
///    hwloc detects; read once per process), channel c on ring c mod the rings found. When the communicator spans
///    several hosts, each ring is cut into the chain that enters and leaves the host nearest the
///    channel's NIC (the one carrying the channel's device of the network between the hosts,
///    channel_nics.h; else NIC c mod the machine's NICs; topology::cutNearNic, with the data
///    staged through host memory as the network proxy does), and the chain's first rank is
///    position 0;
///  - otherwise, or when hwloc cannot read the machine or its GPUs cannot be ringed (said under
///    NCCL_DEBUG_SUBSYS=GRAPH): its place in hostRingOrder (NUMA order), the same for every channel.
/// The ranks of one host compute consistent positions from the same machine. Fails, naming the
/// file and the problem, only when NCCL_TOPO_FILE or WEFT_HWLOC_XML names a file that cannot be read.
Status hostRingPositions(const std::vector<PeerInfo>& peers, int self, int channels, std::vector<int>* positions);

}  // namespace weft::core
