// Writes a System as NCCL's topology XML, nested as the nodes' parent links say.

#include <pugixml.hpp>

#include <cassert>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <vector>

#include "topology/nccl_xml.h"
#include "topology/nccl_xml_format.h"

namespace weft::topology {
namespace {

std::string hexText(uint64_t value, int digits) {
  char buffer[32];
  std::snprintf(buffer, sizeof(buffer), "0x%0*llx", digits, static_cast<unsigned long long>(value));
  return buffer;
}

/// `value` without exponent ("400000", "0.75"): NCCL reads integers with strtol, which would stop
/// at the "e" of "4e+05". With `decimals`, exactly that many digits after the point; otherwise the
/// shortest text that reads back to the same double.
std::string numberText(double value, int decimals = -1) {
  char buffer[512];  // the largest double in fixed notation has 309 digits: it always fits
  const auto result = decimals < 0
                          ? std::to_chars(buffer, buffer + sizeof(buffer), value, std::chars_format::fixed)
                          : std::to_chars(buffer, buffer + sizeof(buffer), value, std::chars_format::fixed, decimals);
  assert(result.ec == std::errc());
  return std::string(buffer, result.ptr);
}

/// "16.0 GT/s PCIe", as NCCL copies it from sysfs (whatever the process's locale).
std::string linkSpeedText(double gts) {
  const bool tenths = std::round(gts * 10) == gts * 10;
  return numberText(gts, tenths ? 1 : -1) + " GT/s PCIe";
}

void setAttribute(pugi::xml_node element, const char* name, const std::string& value) {
  element.append_attribute(name).set_value(value.c_str());
}

class StringSink : public pugi::xml_writer {
 public:
  void write(const void* data, size_t size) override { text.append(static_cast<const char*>(data), size); }
  std::string text;
};

class NcclTopologyWriter {
 public:
  explicit NcclTopologyWriter(const System& system) : system_(system), children_(system.nodes().size()) {
    for (const Node& node : system.nodes()) {
      if (node.parent >= 0) children_[node.parent].push_back(node.index);
    }
  }

  std::string write() const {
    pugi::xml_document document;
    pugi::xml_node root = document.append_child("system");
    setAttribute(root, "version", nccl_xml::kSystemVersion);
    for (int cpu : system_.nodesOfType(NodeType::kCpu)) writeCpu(system_.node(cpu), root);
    StringSink sink;
    document.save(sink, "  ", pugi::format_indent | pugi::format_no_declaration);
    return sink.text;
  }

 private:
  void writeCpu(const Node& cpu, pugi::xml_node parent) const {
    pugi::xml_node element = parent.append_child("cpu");
    const CpuAttributes& attributes = cpu.cpu;
    if (attributes.numaId >= 0) setAttribute(element, "numaid", std::to_string(attributes.numaId));
    if (!attributes.affinity.empty()) setAttribute(element, "affinity", attributes.affinity);
    if (!attributes.arch.empty()) setAttribute(element, "arch", attributes.arch);
    if (!attributes.vendor.empty()) setAttribute(element, "vendor", attributes.vendor);
    if (attributes.familyId >= 0) setAttribute(element, "familyid", std::to_string(attributes.familyId));
    if (attributes.modelId >= 0) setAttribute(element, "modelid", std::to_string(attributes.modelId));
    writeChildren(cpu, element);
  }

  void writeChildren(const Node& node, pugi::xml_node element) const {
    for (int index : children_[node.index]) {
      const Node& child = system_.node(index);
      if (child.pci.has_value()) {
        writePci(child, element);
      } else if (child.type == NodeType::kNic) {
        writePorts(child, element.append_child("nic"));  // a NIC of the CPU itself
      } else {
        writeChildren(child, element);  // a node without bus id: its devices stay in place
      }
    }
  }

  void writePci(const Node& node, pugi::xml_node parent) const {
    pugi::xml_node element = parent.append_child("pci");
    const PciAttributes& pci = *node.pci;
    setAttribute(element, "busid", pci.busId);
    if (pci.classCode != 0) setAttribute(element, "class", hexText(pci.classCode, 6));
    if (pci.vendor != 0) setAttribute(element, "vendor", hexText(pci.vendor, 4));
    if (pci.device != 0) setAttribute(element, "device", hexText(pci.device, 4));
    if (pci.subsystemVendor != 0) setAttribute(element, "subsystem_vendor", hexText(pci.subsystemVendor, 4));
    if (pci.subsystemDevice != 0) setAttribute(element, "subsystem_device", hexText(pci.subsystemDevice, 4));
    if (pci.linkSpeedGts > 0) setAttribute(element, "link_speed", linkSpeedText(pci.linkSpeedGts));
    if (pci.linkWidth > 0) setAttribute(element, "link_width", std::to_string(pci.linkWidth));

    // Flattened files say "GPU" and "NIC" by class alone; a <gpu> would claim NVLinks are listed.
    if (node.type == NodeType::kGpu && (system_.nvlinkDescribed() || !isGpuClass(pci.classCode, pci.vendor))) {
      writeGpu(node, element);
    }
    if (node.type == NodeType::kNic && (!node.nic.ports.empty() || !isNicClass(pci.classCode))) {
      writePorts(node, element.append_child("nic"));
    }
    writeChildren(node, element);
  }

  void writeGpu(const Node& gpu, pugi::xml_node parent) const {
    pugi::xml_node element = parent.append_child("gpu");
    if (gpu.gpu.dev >= 0) setAttribute(element, "dev", std::to_string(gpu.gpu.dev));
    if (gpu.gpu.sm > 0) setAttribute(element, "sm", std::to_string(gpu.gpu.sm));
    if (gpu.gpu.rank >= 0) setAttribute(element, "rank", std::to_string(gpu.gpu.rank));
    if (gpu.gpu.gdr.has_value()) setAttribute(element, "gdr", *gpu.gpu.gdr ? "1" : "0");
    for (int index : system_.linksFrom(gpu.index)) {
      const Link& link = system_.links()[index];
      if (link.type == LinkType::kNvLink) writeNvLink(link, element);
      if (link.type == LinkType::kC2C) {
        pugi::xml_node c2c = element.append_child("c2c");
        setAttribute(c2c, "bw", numberText(link.bandwidth * 1000.0 / link.count));  // MB/s per link
        setAttribute(c2c, "count", std::to_string(link.count));
      }
    }
  }

  void writeNvLink(const Link& link, pugi::xml_node gpu) const {
    const Node& peer = system_.node(link.to);
    std::string target = nccl_xml::kHiddenTarget;
    uint32_t targetClass = 0;
    switch (peer.type) {
      case NodeType::kGpu:
        if (!peer.pci.has_value()) return;
        target = peer.pci->busId;
        targetClass = peer.pci->classCode != 0 ? peer.pci->classCode : nccl_xml::kGpuClass;
        break;
      case NodeType::kNvSwitch:
        if (peer.pci.has_value()) target = peer.pci->busId;
        targetClass = nccl_xml::kNvSwitchClass;
        break;
      case NodeType::kCpu:
        targetClass = nccl_xml::kNvLinkCpuClass;
        break;
      default:
        return;
    }
    pugi::xml_node element = gpu.append_child("nvlink");
    setAttribute(element, "target", target);
    setAttribute(element, "count", std::to_string(link.count));
    setAttribute(element, "tclass", hexText(targetClass, 6));
  }

  void writePorts(const Node& nic, pugi::xml_node element) const {
    for (const NetPort& port : nic.nic.ports) {
      pugi::xml_node net = element.append_child("net");
      if (!port.name.empty()) setAttribute(net, "name", port.name);
      if (port.dev >= 0) setAttribute(net, "dev", std::to_string(port.dev));
      if (port.speedMbps > 0) setAttribute(net, "speed", numberText(port.speedMbps));
      setAttribute(net, "port", std::to_string(port.port));
      if (port.guid != 0) setAttribute(net, "guid", hexText(port.guid, 1));
      if (port.maxConn > 0) setAttribute(net, "maxconn", std::to_string(port.maxConn));
      if (port.gdr.has_value()) setAttribute(net, "gdr", *port.gdr ? "1" : "0");
    }
  }

  const System& system_;
  std::vector<std::vector<int>> children_;
};

}  // namespace

std::string writeNcclTopology(const System& system) { return NcclTopologyWriter(system).write(); }

}  // namespace weft::topology
