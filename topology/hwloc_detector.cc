#include "topology/hwloc_detector.h"

#include <pugixml.hpp>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <iterator>
#include <vector>

#include "topology/hwloc_conversion.h"
#include "topology/hwloc_host_nics.h"
#include "topology/hwloc_nvlinks.h"
#include "topology/hwloc_nvml.h"
#include "topology/hwloc_sysfs.h"
#include "topology/hwloc_topology.h"
#include "topology/nccl_xml_attributes.h"

namespace weft::topology {

namespace {

/// When `*text` starts with `start`, moves it past the next `end` (to empty when there is none:
/// the head was cut short) and returns true.
bool skipConstruct(std::string_view* text, std::string_view start, std::string_view end) {
  if (!text->starts_with(start)) return false;
  const size_t close = text->find(end, start.size());
  *text = close == std::string_view::npos ? std::string_view() : text->substr(close + end.size());
  return true;
}

/// `text` from its root element's "<" on: past a byte order mark, blanks, the XML declaration,
/// comments and a DOCTYPE (with or without an internal subset).
std::string_view fromRootElement(std::string_view text) {
  if (text.starts_with("\xEF\xBB\xBF")) text.remove_prefix(3);
  while (true) {
    const size_t content = text.find_first_not_of(" \t\r\n");
    if (content == std::string_view::npos) return {};
    text.remove_prefix(content);
    if (skipConstruct(&text, "<?", "?>") || skipConstruct(&text, "<!--", "-->")) continue;
    if (text.starts_with("<!DOCTYPE")) {
      size_t end = text.find_first_of("[>");
      if (end != std::string_view::npos && text[end] == '[') end = text.find(']', end);  // internal subset
      if (end != std::string_view::npos) end = text.find('>', end);
      if (end == std::string_view::npos) return {};
      text.remove_prefix(end + 1);
      continue;
    }
    return text;
  }
}

bool rootElementIs(std::string_view head, std::string_view name) {
  const std::string_view root = fromRootElement(head);
  if (!root.starts_with("<") || root.substr(1, name.size()) != name) return false;
  if (root.size() == name.size() + 1) return true;  // the head ends right after the name
  const char next = root[name.size() + 1];
  return next == ' ' || next == '\t' || next == '\r' || next == '\n' || next == '>' || next == '/';
}

/// What hwloc's XML parser would only report as a failure, or skip in silence, said with the
/// line: XML that is not well-formed, and a PCI object whose bus id is no bus id.
Status checkHwlocXmlText(const std::string& text, const std::string& path) {
  const XmlText where(text, "hwloc XML file " + path);
  pugi::xml_document document;
  WEFT_RETURN_IF_ERROR(where.parse(&document));
  for (const pugi::xpath_node& found : document.select_nodes("//object[@pci_busid]")) {
    XmlAttributes attributes(where, found.node());
    std::string busId;
    attributes.busId("pci_busid", &busId);
    WEFT_RETURN_IF_ERROR(attributes.status());
  }
  return Status::ok();
}

/// Whether `system` has a CPU node: hwloc found at least one NUMA node with CPUs.
bool hasCpu(const System& system) { return !system.nodesOfType(NodeType::kCpu).empty(); }

}  // namespace

bool looksLikeHwlocXml(std::string_view head) { return rootElementIs(head, "topology"); }

Status detectSystem(System* out) {
  HwlocTopology topology;
  WEFT_RETURN_IF_ERROR(topology.loadThisMachine());
  // hwloc may describe another machine (HWLOC_XMLFILE): then sysfs and NVML have nothing to add.
  const bool thisMachine = hwloc_topology_is_thissystem(topology.get()) != 0;
  const Sysfs sysfs;
  System system;
  addHwlocCpus(topology.get(), &system);
  if (!hasCpu(system)) return systemError("hwloc found no NUMA node with CPUs on this machine");
  addHwlocPciTree(topology.get(), thisMachine ? &sysfs : nullptr, &system);
  if (thisMachine) addHostNetInterfaces(sysfs, &system);
  std::vector<NvmlGpu> nvmlGpus;
  const bool nvmlPresent = thisMachine && readNvmlGpus(&nvmlGpus);
  if (nvmlPresent) addNvmlNvlinks(nvmlGpus, &sysfs, &system);
  system.setNvlinkDescribed(nvmlPresent || (!thisMachine && addNvlinkBandwidthMatrix(topology.get(), &system)));
  system.setSource(thisMachine ? "hwloc detection" : "hwloc detection of another machine (HWLOC_XMLFILE)");
  *out = std::move(system);
  return Status::ok();
}

Status readHwlocXmlFile(const std::string& path, System* out) {
  std::ifstream file(path, std::ios::binary);
  if (!file) return invalidArgument("hwloc XML file %s cannot be read: %s", path.c_str(), std::strerror(errno));
  const std::string text{std::istreambuf_iterator<char>(file), std::istreambuf_iterator<char>()};
  if (file.bad()) return invalidArgument("hwloc XML file %s cannot be read: %s", path.c_str(), std::strerror(errno));
  if (!looksLikeHwlocXml(text)) {
    return invalidArgument("%s is not an hwloc XML file: its root element is not <topology>%s", path.c_str(),
                           rootElementIs(text, "system") ? " (it looks like an NCCL topology file)" : "");
  }
  WEFT_RETURN_IF_ERROR(checkHwlocXmlText(text, path));
  HwlocTopology topology;
  WEFT_RETURN_IF_ERROR(topology.loadXml(text, path));
  System system;
  addHwlocCpus(topology.get(), &system);
  if (!hasCpu(system)) return invalidArgument("hwloc XML file %s describes no NUMA node with CPUs", path.c_str());
  addHwlocPciTree(topology.get(), nullptr, &system);
  system.setNvlinkDescribed(addNvlinkBandwidthMatrix(topology.get(), &system));
  system.setSource("hwloc XML file " + path);
  *out = std::move(system);
  return Status::ok();
}

}  // namespace weft::topology
