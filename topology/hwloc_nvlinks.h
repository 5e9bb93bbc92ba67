#pragma once
// NVLinks, from the two places hwloc-based descriptions have them: NVML on a live machine, and the
// "NVLinkBandwidth" distances matrix that hwloc's NVML backend writes into XML files.

#include <hwloc.h>

#include <vector>

#include "topology/hwloc_nvml.h"
#include "topology/hwloc_sysfs.h"
#include "topology/system.h"

namespace weft::topology {

/// Applies NVML's facts to the GPU nodes of `out` (matched by bus id; GPUs hwloc did not show are
/// left out): `dev` becomes NVML's index, `sm` its compute capability. Each GPU's active NVLinks
/// become one kNvLink link per peer, `count` links at nvlinkBandwidth(sm) each:
/// - to another GPU: this direction only (the peer reports the other);
/// - to an NVSwitch (a node of `out`, or a PCI function `sysfs` shows as NVIDIA's class 0x0680,
///   then added): both directions;
/// - to an IBM NPU (vendor 0x1014, POWER9's NVLink to its CPU): the GPU's CPU, both directions;
/// - to anything else (NVSwitches a virtual machine hides): one shared kNvSwitch node without PCI
///   attributes, both directions.
/// `sysfs` may be null: peers outside `out` are then NVSwitches that cannot be seen.
void addNvmlNvlinks(const std::vector<NvmlGpu>& gpus, const Sysfs* sysfs, System* out);

/// Adds the topology's "NVLinkBandwidth" distances matrix as kNvLink links, one per non-zero entry
/// and direction, at the entry's bandwidth (hwloc writes MB/s; the link gets GB/s). Entries name
/// GPUs by their CUDA or NVML OS devices or PCI devices, NVSwitches by PCI devices; entries for
/// objects that are not nodes of `out` are left out. A link's `count` is its entry in multiples of
/// the matrix's smallest non-zero entry (one NVLink, as in every NVIDIA system so far). Returns
/// whether the topology has such a matrix, that is whether NVLinks are described.
bool addNvlinkBandwidthMatrix(hwloc_topology_t topology, System* out);

}  // namespace weft::topology
