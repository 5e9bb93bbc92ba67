#include "topology/hwloc_host_nics.h"

#include <set>
#include <string>

#include "topology/hwloc_conversion.h"

namespace weft::topology {

namespace {

/// The names of every NetPort of every NIC node.
std::set<std::string> portNames(const System& system) {
  std::set<std::string> names;
  for (const Node& node : system.nodes()) {
    if (node.type != NodeType::kNic) continue;
    for (const NetPort& port : node.nic.ports) names.insert(port.name);
  }
  return names;
}

}  // namespace

void addHostNetInterfaces(const Sysfs& sysfs, System* out) {
  const std::set<std::string> placed = portNames(*out);
  for (const SysfsNetInterface& netInterface : sysfs.netInterfaces()) {
    if (placed.count(netInterface.name) != 0) continue;
    NetPort port;
    port.name = netInterface.name;
    port.speedMbps = sysfs.netSpeedMbps(netInterface.name);

    const int pciNic = netInterface.busId.empty() ? -1 : out->findByBusId(netInterface.busId);
    if (pciNic >= 0 && out->node(pciNic).type == NodeType::kNic) {
      out->mutableNode(pciNic).nic.ports.push_back(std::move(port));
      continue;
    }
    const int cpu = cpuNodeOfNuma(*out, netInterface.numaNode);
    Node nic;
    nic.type = NodeType::kNic;
    nic.parent = cpu;
    nic.cpuNuma = out->node(cpu).cpu.numaId;
    nic.nic.ports.push_back(std::move(port));
    const int index = out->addNode(std::move(nic));
    out->addLink(index, cpu, LinkType::kPci, kCpuAttachedNicBandwidth);
  }
}

}  // namespace weft::topology
