#include "topology/system.h"

#include <cctype>
#include <cstdio>

namespace weft::topology {

const char* nodeTypeName(NodeType type) {
  switch (type) {
    case NodeType::kCpu: return "CPU";
    case NodeType::kPciSwitch: return "PCI";
    case NodeType::kGpu: return "GPU";
    case NodeType::kNic: return "NIC";
    case NodeType::kNvSwitch: return "NVS";
  }
  return "?";
}

const char* linkTypeName(LinkType type) {
  switch (type) {
    case LinkType::kNvLink: return "NVL";
    case LinkType::kC2C: return "C2C";
    case LinkType::kPci: return "PCI";
    case LinkType::kSys: return "SYS";
    case LinkType::kNet: return "NET";
  }
  return "?";
}

int System::addNode(Node node) {
  node.index = static_cast<int>(nodes_.size());
  nodes_.push_back(std::move(node));
  adjacency_.emplace_back();
  return nodes_.back().index;
}

void System::addDirectedLink(int from, int to, LinkType type, double bandwidth, int count) {
  adjacency_[from].push_back(static_cast<int>(links_.size()));
  links_.push_back(Link{from, to, type, bandwidth, count});
}

void System::addLink(int a, int b, LinkType type, double bandwidth, int count) {
  addDirectedLink(a, b, type, bandwidth, count);
  addDirectedLink(b, a, type, bandwidth, count);
}

std::vector<int> System::nodesOfType(NodeType type) const {
  std::vector<int> found;
  for (const Node& node : nodes_) {
    if (node.type == type) found.push_back(node.index);
  }
  return found;
}

int System::findByBusId(const std::string& busId) const {
  const std::string wanted = canonicalBusId(busId);
  if (wanted.empty()) return -1;
  for (const Node& node : nodes_) {
    if (node.pci.has_value() && node.pci->busId == wanted) return node.index;
  }
  return -1;
}

std::string canonicalBusId(const std::string& text) {
  // [domain:]bus:device.function, hexadecimal; the domain may be written with up to 8 digits.
  unsigned long domain = 0;
  unsigned bus = 0;
  unsigned device = 0;
  unsigned function = 0;
  int consumed = 0;
  if (std::sscanf(text.c_str(), "%lx:%x:%x.%x%n", &domain, &bus, &device, &function, &consumed) == 4 &&
      static_cast<size_t>(consumed) == text.size()) {
  } else if (std::sscanf(text.c_str(), "%x:%x.%x%n", &bus, &device, &function, &consumed) == 3 &&
             static_cast<size_t>(consumed) == text.size()) {
    domain = 0;
  } else {
    return "";
  }
  if (domain > 0xffff || bus > 0xff || device > 0x1f || function > 0x7) return "";
  char canonical[16];
  std::snprintf(canonical, sizeof(canonical), "%04lx:%02x:%02x.%x", domain, bus, device, function);
  return canonical;
}

double pciBandwidth(double linkSpeedGts, int linkWidth) {
  // Usable bytes per lane per direction, after line encoding (8b/10b up to Gen2, 128b/130b after).
  double perLane = 0;
  if (linkSpeedGts >= 63) perLane = 6.0;
  else if (linkSpeedGts >= 31) perLane = 3.0;
  else if (linkSpeedGts >= 15) perLane = 1.5;
  else if (linkSpeedGts >= 7.9) perLane = 0.75;
  else if (linkSpeedGts >= 4.9) perLane = 0.5;
  else if (linkSpeedGts >= 2.4) perLane = 0.25;
  if (perLane == 0 || linkWidth <= 0) return 12.0;  // unknown: Gen3 x16, as NCCL assumes
  return perLane * linkWidth;
}

double nvlinkBandwidth(int sm) {
  if (sm >= 100) return 40.1;
  if (sm >= 90) return 20.6;
  if (sm >= 70) return 20.0;
  if (sm >= 60) return 18.0;
  return 20.0;
}

double cpuInterconnectBandwidth(const CpuAttributes& cpu) {
  if (cpu.arch == "ppc64") return 32.0;   // POWER9 X-Bus
  if (cpu.arch == "arm64") return 6.0;
  if (cpu.vendor == "AuthenticAMD") return 16.0;  // Infinity Fabric
  if (cpu.vendor == "GenuineIntel" && cpu.familyId == 6) {
    if (cpu.modelId >= 0xcf) return 40.0;  // Emerald Rapids' UPI
    if (cpu.modelId >= 0x8f) return 22.0;  // Sapphire Rapids' UPI
    if (cpu.modelId >= 0x55) return 10.0;  // Skylake's UPI
  }
  return 6.0;  // Broadwell's QPI, and the rest
}

double netBandwidth(const NetPort& port) { return port.speedMbps > 0 ? port.speedMbps / 8000.0 : 12.5; }

double nicBandwidth(const Node& nic) {
  if (nic.nic.ports.empty()) return netBandwidth(NetPort{});
  double total = 0;
  for (const NetPort& port : nic.nic.ports) total += netBandwidth(port);
  return total;
}

bool isGpuClass(uint32_t classCode, uint16_t vendor) {
  if ((classCode >> 8) == 0x0302) return true;
  return (classCode >> 8) == 0x0300 && (vendor == 0x10de || vendor == 0x1002);
}
bool isNicClass(uint32_t classCode) { return (classCode >> 8) == 0x0200 || (classCode >> 8) == 0x0207; }
bool isBridgeClass(uint32_t classCode) { return (classCode >> 8) == 0x0604; }

}  // namespace weft::topology
