#pragma once

namespace weft {

/// The NUMA node that holds the calling thread's CPU affinity (the node of its first allowed CPU,
/// from /sys/devices/system/node), or -1 when the system does not describe NUMA nodes.
int numaNodeOfAffinity();

}  // namespace weft
