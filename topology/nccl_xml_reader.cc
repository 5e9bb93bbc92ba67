// Reads NCCL's topology XML into a System: first the elements into nodes (in document order),
// then the nodes into the System in their final order, then the links.

#include <pugixml.hpp>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <charconv>
#include <cstdio>
#include <map>
#include <memory>
#include <set>
#include <system_error>
#include <tuple>
#include <utility>
#include <vector>

#include "topology/nccl_xml.h"
#include "topology/nccl_xml_attributes.h"
#include "topology/nccl_xml_format.h"

namespace weft::topology {
namespace {

using nccl_xml::kCpuLocalBandwidth;
using nccl_xml::kNvLinkCpuClass;

/// A node as read, before its place in the System is known: `node.parent` and `children` are
/// indices into the reader's list.
struct ReadNode {
  Node node;
  std::vector<int> children;
  pugi::xml_node gpuElement;  // the <gpu> of a GPU from a full dump: its <nvlink> and <c2c>
};

/// One link of the System, summed over the elements that describe it.
struct LinkSum {
  int from;
  int to;
  LinkType type;
  double bandwidth;
  int count;
};

/// "16.0 GT/s PCIe", "8 GT/s" -> 16, 8; text without a leading number (sysfs says "Unknown")
/// leaves the speed unknown.
double linkSpeedOf(const std::string& text) {
  double speed = 0;
  const auto result = std::from_chars(text.data(), text.data() + text.size(), speed);  // not locale's
  return result.ec == std::errc() && speed > 0 ? speed : 0;
}

/// An <nvlink target> NCCL writes: hexadecimal digits, ':' and '.' (hidden NVSwitches are written
/// "fffffff:ff:ff.0", which is no canonical bus id).
bool looksLikeBusId(const std::string& text) {
  return !text.empty() && std::all_of(text.begin(), text.end(), [](char c) {
           return std::isxdigit(static_cast<unsigned char>(c)) || c == ':' || c == '.';
         });
}

class NcclTopologyReader {
 public:
  explicit NcclTopologyReader(const XmlText& text) : text_(text) {}

  Status read(const pugi::xml_node& root, System* out);

 private:
  Status readCpu(pugi::xml_node element);
  Status readPci(pugi::xml_node element, int parent, int numa);
  Status readPorts(pugi::xml_node nicElement, std::vector<NetPort>* ports);
  int addReadNode(Node node, int parent);
  void numberUnnumberedGpus();
  std::vector<int> insertionOrder() const;
  void appendSubtree(int index, std::vector<int>* order, std::vector<int>* deferredGpus) const;

  void placeNodes();
  void addTreeLinks();
  void addCpuLinks();

  Status addNvLinks(int gpu, pugi::xml_node gpuElement);
  Status addC2CLinks(int gpu, pugi::xml_node gpuElement);
  void sumLink(int from, int to, LinkType type, double bandwidth, int count);
  int nvSwitch();
  int cpuAbove(int index) const;

  const XmlText& text_;
  std::vector<ReadNode> read_;
  std::vector<int> roots_;                // the CPUs, in document order
  std::map<std::string, pugi::xml_node> pciByBusId_;  // to refuse repeated bus ids
  bool describesGpus_ = false;
  System system_;
  std::vector<int> order_;   // read_ indices in the System's order
  std::vector<int> placed_;  // read_ index -> System index
  int nvSwitch_ = -1;
  std::vector<LinkSum> links_;
};

Status NcclTopologyReader::read(const pugi::xml_node& root, System* out) {
  for (pugi::xml_node child : root.children()) {
    const std::string name = child.name();
    if (name == "cpu") {
      WEFT_RETURN_IF_ERROR(readCpu(child));
    } else if (name == "pci") {
      return XmlAttributes(text_, child).elementError(
          "is outside every <cpu>: NCCL topology files nest PCI devices in the <cpu> of their "
          "NUMA node");
    }
  }
  if (roots_.empty()) {
    return XmlAttributes(text_, root).elementError("holds no <cpu> element: there is no machine to read");
  }
  numberUnnumberedGpus();
  placeNodes();
  addTreeLinks();
  for (int index : order_) {  // in the System's order, so that the links keep it too
    const pugi::xml_node gpuElement = read_[index].gpuElement;
    if (!gpuElement) continue;
    WEFT_RETURN_IF_ERROR(addNvLinks(placed_[index], gpuElement));
    WEFT_RETURN_IF_ERROR(addC2CLinks(placed_[index], gpuElement));
  }
  for (const LinkSum& link : links_) {
    system_.addDirectedLink(link.from, link.to, link.type, link.bandwidth, link.count);
  }
  addCpuLinks();
  system_.setNvlinkDescribed(describesGpus_);
  *out = std::move(system_);
  return Status::ok();
}

void NcclTopologyReader::placeNodes() {
  order_ = insertionOrder();
  placed_.assign(read_.size(), -1);
  for (int index : order_) placed_[index] = system_.addNode(read_[index].node);
  // The parents' indices are known once all are placed.
  for (int index : order_) {
    Node& node = system_.mutableNode(placed_[index]);
    if (node.parent >= 0) node.parent = placed_[node.parent];
  }
}

void NcclTopologyReader::addTreeLinks() {
  for (const Node& node : system_.nodes()) {
    if (node.parent < 0) continue;
    const double bandwidth = node.pci.has_value() ? pciBandwidth(node.pci->linkSpeedGts, node.pci->linkWidth)
                                                  : kCpuLocalBandwidth;
    system_.addLink(node.index, node.parent, LinkType::kPci, bandwidth);
  }
}

void NcclTopologyReader::addCpuLinks() {
  // NCCL's model: every CPU reaches every other over the inter-socket fabric.
  const std::vector<int> cpus = system_.nodesOfType(NodeType::kCpu);
  for (int from : cpus) {
    for (int to : cpus) {
      if (from != to) {
        system_.addDirectedLink(from, to, LinkType::kSys, cpuInterconnectBandwidth(system_.node(from).cpu));
      }
    }
  }
}

int NcclTopologyReader::addReadNode(Node node, int parent) {
  node.parent = parent;
  read_.push_back(ReadNode{std::move(node), {}, {}});
  const int index = static_cast<int>(read_.size()) - 1;
  if (parent >= 0) {
    read_[parent].children.push_back(index);
  } else {
    roots_.push_back(index);
  }
  return index;
}

Status NcclTopologyReader::readCpu(pugi::xml_node element) {
  XmlAttributes attributes(text_, element);
  Node node;
  node.type = NodeType::kCpu;
  CpuAttributes& cpu = node.cpu;
  attributes.integer("numaid", &cpu.numaId);
  cpu.affinity = attributes.text("affinity");
  cpu.arch = attributes.text("arch");
  cpu.vendor = attributes.text("vendor");
  attributes.integer("familyid", &cpu.familyId);
  attributes.integer("modelid", &cpu.modelId);
  WEFT_RETURN_IF_ERROR(attributes.status());
  node.cpuNuma = cpu.numaId;
  const int index = addReadNode(std::move(node), -1);

  // All NICs directly under one CPU are one node, as NCCL merges them.
  int localNic = -1;
  for (pugi::xml_node child : element.children()) {
    const std::string name = child.name();
    if (name == "pci") {
      WEFT_RETURN_IF_ERROR(readPci(child, index, read_[index].node.cpu.numaId));
    } else if (name == "nic") {
      if (localNic < 0) {
        Node nic;
        nic.type = NodeType::kNic;
        nic.cpuNuma = read_[index].node.cpu.numaId;
        localNic = addReadNode(std::move(nic), index);
      }
      WEFT_RETURN_IF_ERROR(readPorts(child, &read_[localNic].node.nic.ports));
    } else if (name == "gpu") {
      return XmlAttributes(text_, child).elementError(
          "is directly under <cpu>: a GPU belongs inside the <pci> element of its PCI function");
    }
  }
  return Status::ok();
}

Status NcclTopologyReader::readPci(pugi::xml_node element, int parent, int numa) {
  XmlAttributes attributes(text_, element);
  PciAttributes pci;
  if (!attributes.has("busid")) return attributes.elementError("has no busid attribute");
  attributes.busId("busid", &pci.busId);
  attributes.hex("class", &pci.classCode);
  const std::pair<const char*, uint16_t PciAttributes::*> identifiers[] = {
      {"vendor", &PciAttributes::vendor},
      {"device", &PciAttributes::device},
      {"subsystem_vendor", &PciAttributes::subsystemVendor},
      {"subsystem_device", &PciAttributes::subsystemDevice},
  };
  for (const auto& [name, field] : identifiers) attributes.hex(name, &(pci.*field));
  pci.linkSpeedGts = linkSpeedOf(attributes.text("link_speed"));
  attributes.integer("link_width", &pci.linkWidth);
  WEFT_RETURN_IF_ERROR(attributes.status());
  if (pci.linkWidth < 0) return attributes.invalid("link_width", "a lane count");

  const auto [seen, isNew] = pciByBusId_.emplace(pci.busId, element);
  if (!isNew) {
    return attributes.elementError("repeats bus id " + pci.busId + " of line " +
                                   std::to_string(text_.lineAt(seen->second.offset_debug())) +
                                   ": each PCI function appears once");
  }

  const pugi::xml_node gpuElement = element.child("gpu");
  const pugi::xml_node nicElement = element.child("nic");
  Node node;
  if (gpuElement && nicElement) return attributes.elementError("holds both a <gpu> and a <nic>");
  if (gpuElement) {
    node.type = NodeType::kGpu;
    XmlAttributes gpu(text_, gpuElement);
    gpu.integer("dev", &node.gpu.dev);
    gpu.integer("sm", &node.gpu.sm);
    gpu.integer("rank", &node.gpu.rank);
    gpu.flag("gdr", &node.gpu.gdr);
    WEFT_RETURN_IF_ERROR(gpu.status());
    describesGpus_ = true;
  } else if (nicElement) {
    node.type = NodeType::kNic;
    for (pugi::xml_node nic : element.children("nic")) {
      WEFT_RETURN_IF_ERROR(readPorts(nic, &node.nic.ports));
    }
  } else if (isGpuClass(pci.classCode, pci.vendor)) {
    node.type = NodeType::kGpu;
  } else if (isNicClass(pci.classCode)) {
    node.type = NodeType::kNic;
  } else {
    node.type = NodeType::kPciSwitch;  // bridges, and any other function, as NCCL's PCI nodes
  }
  node.pci = std::move(pci);
  node.cpuNuma = numa;
  const int index = addReadNode(std::move(node), parent);
  read_[index].gpuElement = gpuElement;

  for (pugi::xml_node child : element.children("pci")) {
    WEFT_RETURN_IF_ERROR(readPci(child, index, numa));
  }
  return Status::ok();
}

Status NcclTopologyReader::readPorts(pugi::xml_node nicElement, std::vector<NetPort>* ports) {
  for (pugi::xml_node net : nicElement.children("net")) {
    XmlAttributes attributes(text_, net);
    NetPort port;
    port.name = attributes.text("name");
    attributes.integer("dev", &port.dev);
    attributes.integer("port", &port.port);
    attributes.number("speed", &port.speedMbps);
    attributes.hex("guid", &port.guid);
    attributes.integer("maxconn", &port.maxConn);
    attributes.flag("gdr", &port.gdr);
    WEFT_RETURN_IF_ERROR(attributes.status());
    ports->push_back(std::move(port));
  }
  return Status::ok();
}

void NcclTopologyReader::numberUnnumberedGpus() {
  std::set<int> used;
  std::vector<ReadNode*> unnumbered;
  for (ReadNode& read : read_) {
    if (read.node.type != NodeType::kGpu) continue;
    if (read.node.gpu.dev >= 0) {
      used.insert(read.node.gpu.dev);
    } else {
      unnumbered.push_back(&read);
    }
  }
  // Canonical bus ids have fixed widths: text order is bus order.
  std::stable_sort(unnumbered.begin(), unnumbered.end(),
                   [](const ReadNode* a, const ReadNode* b) { return a->node.pci->busId < b->node.pci->busId; });
  int next = 0;
  for (ReadNode* read : unnumbered) {
    while (used.count(next) != 0) ++next;
    read->node.gpu.dev = next++;
  }
}

std::vector<int> NcclTopologyReader::insertionOrder() const {
  // Depth first in document order, parents before children; GPU subtrees wait and then come in
  // device order. Writing a System nests children in index order, so reading it back gives the
  // same order again.
  std::vector<int> order;
  std::vector<int> gpus;
  for (int root : roots_) appendSubtree(root, &order, &gpus);
  std::stable_sort(gpus.begin(), gpus.end(), [this](int a, int b) {
    const Node& left = read_[a].node;
    const Node& right = read_[b].node;
    return std::tie(left.gpu.dev, left.pci->busId) < std::tie(right.gpu.dev, right.pci->busId);
  });
  for (int gpu : gpus) appendSubtree(gpu, &order, nullptr);
  return order;
}

void NcclTopologyReader::appendSubtree(int index, std::vector<int>* order, std::vector<int>* deferredGpus) const {
  if (deferredGpus != nullptr && read_[index].node.type == NodeType::kGpu) {
    deferredGpus->push_back(index);
    return;
  }
  order->push_back(index);
  for (int child : read_[index].children) appendSubtree(child, order, deferredGpus);
}

int NcclTopologyReader::nvSwitch() {
  if (nvSwitch_ < 0) {
    Node node;
    node.type = NodeType::kNvSwitch;
    nvSwitch_ = system_.addNode(std::move(node));
  }
  return nvSwitch_;
}

int NcclTopologyReader::cpuAbove(int index) const {
  while (index >= 0 && system_.node(index).type != NodeType::kCpu) index = system_.node(index).parent;
  return index;
}

void NcclTopologyReader::sumLink(int from, int to, LinkType type, double bandwidth, int count) {
  for (LinkSum& link : links_) {
    if (link.from == from && link.to == to && link.type == type) {
      link.bandwidth += bandwidth;
      link.count += count;
      return;
    }
  }
  links_.push_back(LinkSum{from, to, type, bandwidth, count});
}

Status NcclTopologyReader::addNvLinks(int gpu, pugi::xml_node gpuElement) {
  for (pugi::xml_node element : gpuElement.children("nvlink")) {
    XmlAttributes attributes(text_, element);
    const std::string target = attributes.text("target");
    if (!looksLikeBusId(target)) return attributes.invalid("target", "a PCI bus id (such as 0000:3b:00.0)");
    int count = 1;
    attributes.integer("count", &count);
    uint32_t targetClass = 0;
    attributes.hex("tclass", &targetClass);
    WEFT_RETURN_IF_ERROR(attributes.status());
    if (count < 1) return attributes.invalid("count", "a number of links (1 or more)");
    const bool classKnown = attributes.has("tclass");

    int peer = -1;
    if (classKnown && targetClass == kNvLinkCpuClass) {
      peer = cpuAbove(gpu);
    } else if (classKnown && (targetClass >> 8) == (nccl_xml::kNvSwitchClass >> 8)) {
      peer = nvSwitch();
    } else {
      const int found = system_.findByBusId(target);
      if (found == gpu) return attributes.elementError("links GPU " + target + " to itself");
      if (found >= 0 && system_.node(found).type == NodeType::kGpu) {
        peer = found;
      } else if (!classKnown) {
        // No class and no GPU of this file at that bus id: an NVSwitch hidden from the file, the
        // only NVLink peer that dumps leave out.
        peer = nvSwitch();
      } else {
        // A GPU this file does not list (one the dumping process could not see): NCCL skips it.
        continue;
      }
    }
    if (peer < 0) continue;
    const double bandwidth = nvlinkBandwidth(system_.node(gpu).gpu.sm) * count;
    sumLink(gpu, peer, LinkType::kNvLink, bandwidth, count);
    // A GPU peer writes its own end; switches and CPUs are written only from the GPU side.
    if (system_.node(peer).type != NodeType::kGpu) sumLink(peer, gpu, LinkType::kNvLink, bandwidth, count);
  }
  return Status::ok();
}

Status NcclTopologyReader::addC2CLinks(int gpu, pugi::xml_node gpuElement) {
  for (pugi::xml_node element : gpuElement.children("c2c")) {
    XmlAttributes attributes(text_, element);
    double megabytesPerLink = 0;
    attributes.number("bw", &megabytesPerLink);
    int count = 1;
    attributes.integer("count", &count);
    WEFT_RETURN_IF_ERROR(attributes.status());
    if (megabytesPerLink <= 0) return attributes.invalid("bw", "a bandwidth in MB/s per link");
    if (count < 1) return attributes.invalid("count", "a number of links (1 or more)");
    const int cpu = cpuAbove(gpu);
    const double bandwidth = megabytesPerLink * count / 1000.0;
    sumLink(gpu, cpu, LinkType::kC2C, bandwidth, count);
    sumLink(cpu, gpu, LinkType::kC2C, bandwidth, count);
  }
  return Status::ok();
}

}  // namespace

Status parseNcclTopology(std::string_view xml, const std::string& name, System* out) {
  const XmlText text(xml, "NCCL topology file " + name);
  pugi::xml_document document;
  WEFT_RETURN_IF_ERROR(text.parse(&document));
  const pugi::xml_node root = document.document_element();
  if (std::string(root.name()) != "system") {
    const bool hwloc = std::string(root.name()) == "topology";
    return invalidArgument("%s: the root element is <%s>, not <system>: this is not an NCCL topology file%s",
                           text.name().c_str(), root.name(), hwloc ? " (it looks like hwloc XML)" : "");
  }
  System system;
  WEFT_RETURN_IF_ERROR(NcclTopologyReader(text).read(root, &system));
  system.setSource("NCCL topology file " + name);
  *out = std::move(system);
  return Status::ok();
}

Status readNcclTopologyFile(const std::string& path, System* out) {
  struct FileCloser {
    void operator()(std::FILE* file) const { std::fclose(file); }
  };
  std::unique_ptr<std::FILE, FileCloser> file(std::fopen(path.c_str(), "rb"));
  if (!file) {
    const int error = errno;
    return invalidArgument("cannot open NCCL topology file %s: %s", path.c_str(),
                           std::generic_category().message(error).c_str());
  }
  std::string contents;
  char buffer[1 << 16];
  size_t got = 0;
  while ((got = std::fread(buffer, 1, sizeof(buffer), file.get())) > 0) contents.append(buffer, got);
  if (std::ferror(file.get())) {
    const int error = errno;
    return invalidArgument("cannot read NCCL topology file %s: %s", path.c_str(),
                           std::generic_category().message(error).c_str());
  }
  return parseNcclTopology(contents, path, out);
}

}  // namespace weft::topology
