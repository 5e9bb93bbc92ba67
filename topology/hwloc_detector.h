#pragma once
// The system graph from hwloc: the local machine, discovered through hwloc's Linux backend (plus
// sysfs for what hwloc leaves out and NVML, when the driver is there, for NVLinks), or a machine
// described by an hwloc XML file.
//
// How hwloc's objects become nodes (topology/README.md, "hwloc", has the whole picture):
// - every NUMA node with CPUs is a kCpu node; its package gives vendor, family and model;
// - PCI switches are kPciSwitch nodes, as NCCL counts them: a switch's upstream port stands for
//   the switch, its downstream ports and the root ports are folded into the node above, and host
//   bridges are the CPU itself;
// - GPUs, NICs (with a NetPort per network interface and per InfiniBand/RoCE port) and NVSwitches
//   are found by PCI class; only the PCI switches on the way to a GPU or a NIC are kept.

#include <string>
#include <string_view>

#include "src/base/status.h"
#include "topology/system.h"

namespace weft::topology {

/// Describes this machine into `*out` (replaced on success, untouched on failure). Blocks while
/// hwloc reads sysfs and, where libnvidia-ml.so.1 loads, while NVML starts (up to a second or two
/// on a GPU machine). Any thread may call it, several at once; libnvidia-ml.so.1 stays loaded
/// once opened. hwloc's own environment variables (HWLOC_XMLFILE, HWLOC_COMPONENTS, ...) apply.
///
/// Besides hwloc's view (whose PCI NICs keep their interfaces whatever their state) it adds every
/// network interface of /sys/class/net that is up and that hwloc does not show (never loopback):
/// as a port of the NIC whose PCI function is on its device path, or else (bridges, bonds,
/// tunnels) as a NIC of its own below its NUMA node's CPU, or the first CPU. NVLinks come from NVML only: without it, nvlinkDescribed() is false.
/// source() is "hwloc detection". Where hwloc describes another machine (HWLOC_XMLFILE) nothing
/// of this one is added, NVLinks come as in readHwlocXmlFile, and source() says so.
/// Fails with kSystemError when hwloc cannot discover the machine.
Status detectSystem(System* out);

/// Reads the hwloc XML file at `path` (hwloc 1.x or 2.x format, as lstopo writes it) into `*out`
/// (replaced on success, untouched on failure), with hwloc's own XML backend. Blocks on the file
/// read only. NVLinks come from the file's "NVLinkBandwidth" distances matrix (MB/s between GPUs,
/// NVSwitches and CPUs): nvlinkDescribed() is true when the file has one. Port speeds and GPU
/// compute capabilities are not in hwloc files and stay unknown. source() is
/// "hwloc XML file <path>". Fails with kInvalidArgument when the file cannot be read, is not hwloc
/// XML, is not well-formed or has a PCI object whose pci_busid is no bus id (these two with the
/// line), or hwloc rejects it; the message names the file and says why.
Status readHwlocXmlFile(const std::string& path, System* out);

/// Whether `head` (the first bytes of a file; a few hundred are enough) is hwloc XML: its root
/// element, after any XML declaration, comments and DOCTYPE, is <topology>.
bool looksLikeHwlocXml(std::string_view head);

}  // namespace weft::topology
