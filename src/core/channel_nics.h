#pragma once
// Which network device each channel of a rank sends and receives through, chosen from the NICs
// of the topology layer (topology/system.h), as NCCL gives each channel its NIC: spread over the
// NICs that the network transport can use, rail-aligned (channel c on the same NIC index on
// every host alike) and, on host memory, on the rank's own NUMA node.

#include <vector>

#include "src/base/peer_info.h"
#include "topology/system.h"
#include "transport/transport.h"

namespace weft::core {

/// For each of `channels` channels, the index into `devices` (Transport::netDevices) of the device
/// that the rank `self` uses for it:
///  - the candidates are the NICs of `system` that carry a device of `devices` (on the NIC's PCI
///    function, or named as one of the NIC's ports: the device itself or its netdev), in the
///    system's order, each NIC with every device it carries, in the order of `devices`;
///  - a rank with a GPU (self.gpuBusId) takes, for channel c, candidate c mod their count: every
///    rank of the host uses the same NIC for a channel, and identical hosts the same rail;
///  - a rank on host memory the same, among the candidates on its NUMA node (self.numaNode) where
///    there are any.
/// Every entry is -1 when no NIC of `system` carries a device of `devices`. Pure.
std::vector<int> channelNetDevices(const topology::System& system, const std::vector<transport::NetDevice>& devices,
                                   const PeerInfo& self, int channels);

/// The NIC node of `system` carrying each channel's device of channelNetDevices (-1 where none).
std::vector<int> channelNics(const topology::System& system, const std::vector<transport::NetDevice>& devices,
                             const PeerInfo& self, int channels);

/// channelNetDevices on this machine (core/machine.h), logged under NCCL_DEBUG_SUBSYS=GRAPH
/// with the NIC each channel takes, or why the transport chooses (-1 for every channel): no
/// device, a machine that could not be read, no NIC of it carrying one of `devices`.
std::vector<int> channelNetDevicesHere(const std::vector<transport::NetDevice>& devices, const PeerInfo& self,
                                       int channels);

}  // namespace weft::core
