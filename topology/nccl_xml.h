#pragma once
// NCCL's topology XML (the format of NCCL_TOPO_FILE and NCCL_TOPO_DUMP_FILE), read into a System
// and written back out.
//
// The format: <system version="1"> holds one <cpu> per NUMA node; below it nest <pci> elements as
// the PCI tree nests (bridges hold the devices behind them). A <pci> holding a <gpu> is a GPU (its
// <nvlink> and <c2c> children are its links); one holding <nic> elements is a NIC (each <net> a
// port); a <nic> directly under a <cpu> is a NIC without a PCI function of its own. "Flattened"
// files carry the PCI tree only: GPUs and NICs are then known by their class codes.

#include <string>
#include <string_view>

#include "src/base/status.h"
#include "topology/system.h"

namespace weft::topology {

/// Reads the NCCL topology file at `path` into `*out` (replaced on success, untouched on failure).
/// Blocks on the file read only. Fails with kInvalidArgument when the file cannot be read, is not
/// XML, is not an NCCL topology (root other than <system>), or holds a value that cannot be
/// understood; the message names the file, the line, the element and the attribute.
Status readNcclTopologyFile(const std::string& path, System* out);

/// As readNcclTopologyFile, from `xml` in memory; `name` stands for the file in messages and in
/// System::source() ("NCCL topology file <name>").
///
/// What the System gets:
/// - a kCpu node per <cpu>, kSys links between every pair of CPUs;
/// - per <pci>: a kGpu node (it holds a <gpu>, or its class is a GPU's), a kNic node (it holds
///   <nic>, or its class is a network controller's), else a kPciSwitch node (bridges and any other
///   PCI function, as NCCL does), linked to the node above with kPci at the bandwidth of its own
///   link_speed and link_width (pciBandwidth);
/// - all <nic> elements directly under one <cpu> become one kNic node without PCI attributes;
/// - NVLinks: to a GPU of the file, or to one shared kNvSwitch node (all NVSwitches, as NCCL
///   models them), or to the GPU's CPU (tclass 0x068001, POWER9); links to the same peer are
///   summed into one link of `count` NVLinks at nvlinkBandwidth(sm) each. A peer without tclass
///   that is no GPU of the file is an NVSwitch the file hides; a GPU peer the file does not list
///   is skipped, as NCCL skips it;
/// - <c2c bw count>: a kC2C link between the GPU and its CPU, bw (MB/s per link) x count;
/// - GPUs without `dev` take, in bus-id order, the numbers no other GPU has; GPU nodes come
///   in `dev` order (after the other PCI nodes), so that nodesOfType(kGpu) lists them by device;
/// - nvlinkDescribed() is true when the file has any <gpu> element (an NCCL dump, which lists
///   every NVLink inside the <gpu> it starts from), false for flattened files.
/// Missing or empty attributes leave the value unknown; unknown elements and attributes are
/// ignored; XML comments are allowed anywhere.
Status parseNcclTopology(std::string_view xml, const std::string& name, System* out);

/// `system` in NCCL's format, indented by two spaces, nested as the nodes' parent links say, so
/// that parseNcclTopology reads it back to an equal System: the same nodes, attributes and links
/// (bandwidths recomputed from the attributes, as the reader computes them), in the reader's
/// order (depth first, GPUs last by dev, then the NVSwitch). Unknown values are left out. When
/// the system does not describe NVLinks, GPUs are written flattened (no <gpu> element, whose
/// presence would claim that NVLinks are listed) unless their class code alone would not make
/// them GPUs. What the format cannot carry: a NIC port's latency (not modelled); NVSwitches' bus
/// ids (all read back as NCCL's one NVSwitch); several CPU-attached NICs of one CPU (read back as
/// one, as NCCL merges them); a node outside every CPU's tree (other than an NVSwitch), or a PCI
/// node without bus id (its devices are written in its place).
std::string writeNcclTopology(const System& system);

}  // namespace weft::topology
