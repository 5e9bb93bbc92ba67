#pragma once
// The steps that turn a loaded hwloc topology into a System, shared by detection and the XML
// reader (topology/hwloc_detector.cc runs them in order).

#include <hwloc.h>

#include <string>

#include "topology/hwloc_sysfs.h"
#include "topology/system.h"

namespace weft::topology {

/// Adds a kCpu node per NUMA node that has CPUs (memory-only nodes are left out), in NUMA order,
/// and a kSys link between every two of them.
void addHwlocCpus(hwloc_topology_t topology, System* out);

/// Adds the GPUs, NICs (with their ports) and NVSwitches of the PCI tree, and the PCI switches on
/// the way from a GPU or NIC up to its CPU, with kPci links; addHwlocCpus must have run. GPU nodes
/// come last, in `dev` order. `sysfs` is the live machine's (exact class codes, current links,
/// drivers, port speeds), or null for a file, where those come from hwloc's attributes or stay
/// unknown.
void addHwlocPciTree(hwloc_topology_t topology, const Sysfs* sysfs, System* out);

/// The CPU node of NUMA node `numaId`, or the first CPU node when no CPU has that NUMA node (or
/// `numaId` is -1); -1 when `system` has no CPU.
int cpuNodeOfNuma(const System& system, int numaId);

/// The CPU node nearest to `obj` (any object: the first NUMA node of its locality that has a CPU
/// node), or the first CPU node when hwloc does not place it.
int cpuNodeNear(hwloc_topology_t topology, hwloc_obj_t obj, const System& system);

/// The canonical bus id of a PCI device or bridge object ("0000:3b:00.0").
std::string hwlocBusId(hwloc_obj_t pciObject);

}  // namespace weft::topology
