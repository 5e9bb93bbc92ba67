#pragma once
// The network interfaces that hwloc does not place under a PCI device (virtio devices, bridges,
// bonds, tunnels and other virtual interfaces): the system must still show every way out of the
// host.

#include "topology/hwloc_sysfs.h"
#include "topology/system.h"

namespace weft::topology {

/// NCCL's LOC_BW: the bandwidth of the link between a CPU and a NIC with no PCI function of its
/// own (part of the CPU, never the bottleneck), in GB/s, as the NCCL XML reader gives it too.
constexpr double kCpuAttachedNicBandwidth = 5000.0;

/// Adds every interface of `sysfs`'s /class/net but loopback that is not a NetPort of a NIC node
/// yet: as a port of the NIC node whose PCI function is on the interface's device path, or else
/// as a kNic node of its own below the CPU of its NUMA node (the first CPU when sysfs does not
/// say), linked to it with kPci at kCpuAttachedNicBandwidth. Port speeds come from sysfs (0 when
/// unknown). `out` must have a CPU node.
void addHostNetInterfaces(const Sysfs& sysfs, System* out);

}  // namespace weft::topology
