// The PCI tree: hwloc's bridges, PCI devices and their OS devices as GPU, NIC, NVSwitch and PCI
// switch nodes.

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

#include "topology/hwloc_conversion.h"
#include "topology/hwloc_pci_link.h"

namespace weft::topology {

namespace {

// In C++ hwloc's attribute structures are nested in its attribute union.
using HwlocPciAttributes = hwloc_obj_attr_u::hwloc_pcidev_attr_s;
using HwlocBridgeAttributes = hwloc_obj_attr_u::hwloc_bridge_attr_s;

constexpr uint16_t kNvidiaVendor = 0x10de;
constexpr uint16_t kAmdVendor = 0x1002;
constexpr uint16_t kVgaClass = 0x0300;
constexpr uint16_t kOtherBridgeClass = 0x0680;  // NVIDIA's NVSwitches

enum class DeviceKind { kGpu, kNic, kNvSwitch, kOther };

/// OS devices that exist only where a compute stack drives a GPU (hwloc's CUDA, NVML, ROCm SMI,
/// OpenCL and Level Zero backends). DRM's "card0" does not count: a board's VGA has one too.
bool isComputeOsDevice(hwloc_obj_t osDevice) {
  const std::string_view name = osDevice->name != nullptr ? osDevice->name : "";
  for (const char* prefix : {"cuda", "nvml", "rsmi", "opencl", "ze"}) {
    if (name.starts_with(prefix)) return true;
  }
  return false;
}

bool isNetworkOsDevice(hwloc_obj_t osDevice) {
  const hwloc_obj_osdev_type_t type = osDevice->attr->osdev.type;
  return type == HWLOC_OBJ_OSDEV_NETWORK || type == HWLOC_OBJ_OSDEV_OPENFABRICS;
}

/// Whether an OS device below PCI device `device` satisfies `predicate`.
bool hasOsDevice(hwloc_obj_t device, bool (*predicate)(hwloc_obj_t)) {
  for (hwloc_obj_t child = device->io_first_child; child != nullptr; child = child->next_sibling) {
    if (child->type == HWLOC_OBJ_OS_DEVICE && predicate(child)) return true;
  }
  return false;
}

/// The number after `prefix` in an OS device's name ("cuda3" -> 3); -1 when it does not match.
int numberAfter(const char* name, const char* prefix) {
  const size_t length = std::strlen(prefix);
  if (name == nullptr || std::strncmp(name, prefix, length) != 0) return -1;
  char* end = nullptr;
  const long number = std::strtol(name + length, &end, 10);
  return end != name + length && *end == '\0' && number >= 0 ? static_cast<int>(number) : -1;
}

/// "ec0d:9a03:0067:fdd4" (hwloc's NodeGUID and SysImageGUID infos) as a number; 0 when absent.
uint64_t parseGuid(const char* text) {
  if (text == nullptr) return 0;
  std::string digits;
  for (const char* c = text; *c != '\0'; ++c) {
    if (*c != ':') digits += *c;
  }
  return std::strtoull(digits.c_str(), nullptr, 16);
}

/// The port numbers an OpenFabrics OS device's infos name ("Port1State", "Port2State", ...).
std::vector<int> portsInInfos(hwloc_obj_t osDevice) {
  std::vector<int> ports;
  for (unsigned i = 0; i < osDevice->infos_count; ++i) {
    const char* name = osDevice->infos[i].name;
    if (std::strncmp(name, "Port", 4) != 0) continue;
    char* end = nullptr;
    const long port = std::strtol(name + 4, &end, 10);
    if (end != name + 4 && port > 0 && std::strcmp(end, "State") == 0) ports.push_back(static_cast<int>(port));
  }
  return ports;
}

/// "dddd:bb:dd.f" for hwloc's PCI attributes.
std::string busIdOf(const HwlocPciAttributes& pci) {
  char busId[16];
  std::snprintf(busId, sizeof(busId), "%04x:%02x:%02x.%x", static_cast<unsigned>(pci.domain), pci.bus, pci.dev,
                pci.func);
  return busId;
}

/// Builds the PCI part of one System from one hwloc topology.
class PciTreeBuilder {
 public:
  PciTreeBuilder(hwloc_topology_t topology, const Sysfs* sysfs, System* out)
      : topology_(topology), sysfs_(sysfs), out_(out) {}

  void build() {
    walkNormal(hwloc_get_root_obj(topology_));
    placeGpus();
  }

 private:
  /// A GPU waits until the walk ends, so that GPU nodes can be added in `dev` order.
  struct PendingGpu {
    Node node;
    int devFromOsDevice = -1;
  };

  /// Visits the I/O subtrees that hang from `obj` and from every object below it.
  void walkNormal(hwloc_obj_t obj) {
    for (hwloc_obj_t child = obj->io_first_child; child != nullptr; child = child->next_sibling) {
      const int cpu = cpuNodeNear(topology_, obj, *out_);
      walkIo(child, cpu, out_->node(cpu).cpu.numaId);
    }
    for (hwloc_obj_t child = obj->first_child; child != nullptr; child = child->next_sibling) walkNormal(child);
  }

  /// Converts I/O object `obj`, which hangs below node `above` (a CPU or a PCI switch).
  void walkIo(hwloc_obj_t obj, int above, int numa) {
    if (obj->type == HWLOC_OBJ_PCI_DEVICE) {
      addDevice(obj, above, numa);
      return;
    }
    if (obj->type != HWLOC_OBJ_BRIDGE) return;  // OS devices outside PCI devices, Misc
    int below = above;
    if (isSwitchUpstreamPort(obj) && leadsToGpuOrNic(obj)) {
      Node node;
      node.type = NodeType::kPciSwitch;
      node.parent = above;
      node.pci = attributes(obj->attr->bridge.upstream.pci);
      node.cpuNuma = numa;
      below = out_->addNode(std::move(node));
      addPciLink(below);
    }
    for (hwloc_obj_t child = obj->io_first_child; child != nullptr; child = child->next_sibling) {
      walkIo(child, below, numa);
    }
  }

  /// NCCL counts a PCIe switch once, as its upstream port: the bridges at even depths below the
  /// host bridge (2, 4, ...). Root ports (depth 1) and a switch's downstream ports (odd depths)
  /// fold into the node above; the host bridge (depth 0) is the CPU.
  static bool isSwitchUpstreamPort(hwloc_obj_t bridge) {
    const HwlocBridgeAttributes& attributes = bridge->attr->bridge;
    return attributes.upstream_type == HWLOC_OBJ_BRIDGE_PCI && attributes.depth >= 2 && attributes.depth % 2 == 0;
  }

  bool leadsToGpuOrNic(hwloc_obj_t bridge) const {
    for (hwloc_obj_t child = bridge->io_first_child; child != nullptr; child = child->next_sibling) {
      if (child->type == HWLOC_OBJ_BRIDGE && leadsToGpuOrNic(child)) return true;
      if (child->type == HWLOC_OBJ_PCI_DEVICE) {
        const DeviceKind kind = classify(child);
        if (kind == DeviceKind::kGpu || kind == DeviceKind::kNic) return true;
      }
    }
    return false;
  }

  DeviceKind classify(hwloc_obj_t device) const {
    const HwlocPciAttributes& pci = device->attr->pcidev;
    // One of the DGX-2's NVSwitches reads class 0 in its file; hwloc's subtype still names it.
    const bool namedNvSwitch = device->subtype != nullptr && std::strcmp(device->subtype, "NVSwitch") == 0;
    if (namedNvSwitch || (pci.vendor_id == kNvidiaVendor && pci.class_id == kOtherBridgeClass)) {
      return DeviceKind::kNvSwitch;
    }
    if (isGpuClass(static_cast<uint32_t>(pci.class_id) << 8, pci.vendor_id) && !isBoardVga(device)) {
      return DeviceKind::kGpu;
    }
    // ConnectX-2/3 InfiniBand adapters have the serial-bus class 0x0c06: their ports tell.
    if (isNicClass(static_cast<uint32_t>(pci.class_id) << 8) || hasOsDevice(device, isNetworkOsDevice)) {
      return DeviceKind::kNic;
    }
    return DeviceKind::kOther;
  }

  /// An AMD VGA function that no compute stack drives is a server board's display (the ATI ES1000
  /// of HP ProLiants), not a GPU, although its class and vendor are a Radeon's.
  bool isBoardVga(hwloc_obj_t device) const {
    const HwlocPciAttributes& pci = device->attr->pcidev;
    if (pci.class_id != kVgaClass || pci.vendor_id != kAmdVendor) return false;
    if (hasOsDevice(device, isComputeOsDevice)) return false;
    return sysfs_ == nullptr || sysfs_->pciFunction(hwlocBusId(device)).driver != "amdgpu";
  }

  void addDevice(hwloc_obj_t device, int above, int numa) {
    const DeviceKind kind = classify(device);
    if (kind == DeviceKind::kOther) return;
    Node node;
    node.pci = attributes(device->attr->pcidev);
    node.cpuNuma = numa;
    switch (kind) {
      case DeviceKind::kNvSwitch:
        // Outside the PCI tree, as NCCL models it: its PCIe link carries management only, and a
        // path must never enter the NVLink fabric through it.
        node.type = NodeType::kNvSwitch;
        out_->addNode(std::move(node));
        return;
      case DeviceKind::kNic:
        node.type = NodeType::kNic;
        node.parent = above;
        node.nic.ports = ports(device);
        addPciLink(out_->addNode(std::move(node)));
        return;
      case DeviceKind::kGpu:
        node.type = NodeType::kGpu;
        node.parent = above;
        gpus_.push_back(PendingGpu{std::move(node), devFromOsDevices(device)});
        return;
      case DeviceKind::kOther:
        return;
    }
  }

  /// The CUDA index of a GPU, from hwloc's CUDA OS device ("cuda2"), else its NVML one ("nvml2").
  static int devFromOsDevices(hwloc_obj_t device) {
    for (const char* prefix : {"cuda", "nvml"}) {
      for (hwloc_obj_t child = device->io_first_child; child != nullptr; child = child->next_sibling) {
        if (child->type != HWLOC_OBJ_OS_DEVICE) continue;
        const int dev = numberAfter(child->name, prefix);
        if (dev >= 0) return dev;
      }
    }
    return -1;
  }

  /// A NetPort per network interface and per port of each InfiniBand/RoCE device below `device`.
  std::vector<NetPort> ports(hwloc_obj_t device) const {
    std::vector<NetPort> found;
    for (hwloc_obj_t child = device->io_first_child; child != nullptr; child = child->next_sibling) {
      if (child->type != HWLOC_OBJ_OS_DEVICE || child->name == nullptr) continue;
      if (child->attr->osdev.type == HWLOC_OBJ_OSDEV_NETWORK) {
        NetPort port;
        port.name = child->name;
        const char* ibPort = hwloc_obj_get_info_by_name(child, "Port");  // IPoIB: the IB port below it
        if (ibPort != nullptr && std::atoi(ibPort) > 0) port.port = std::atoi(ibPort);
        if (sysfs_ != nullptr) port.speedMbps = sysfs_->netSpeedMbps(port.name);
        found.push_back(std::move(port));
      } else if (child->attr->osdev.type == HWLOC_OBJ_OSDEV_OPENFABRICS) {
        appendOpenFabricsPorts(child, &found);
      }
    }
    return found;
  }

  void appendOpenFabricsPorts(hwloc_obj_t osDevice, std::vector<NetPort>* found) const {
    // NCCL identifies a NIC by its system image GUID (the ports of one adapter share it).
    const char* guid = hwloc_obj_get_info_by_name(osDevice, "SysImageGUID");
    if (guid == nullptr) guid = hwloc_obj_get_info_by_name(osDevice, "NodeGUID");
    std::vector<SysfsInfinibandPort> live;
    if (sysfs_ != nullptr) live = sysfs_->infinibandPorts(osDevice->name);
    if (live.empty()) {
      for (int number : portsInInfos(osDevice)) live.push_back(SysfsInfinibandPort{number, 0});
    }
    if (live.empty()) live.push_back(SysfsInfinibandPort{1, 0});
    for (const SysfsInfinibandPort& livePort : live) {
      NetPort port;
      port.name = osDevice->name;
      port.port = livePort.port;
      port.speedMbps = livePort.rateMbps;
      port.guid = parseGuid(guid);
      found->push_back(std::move(port));
    }
  }

  /// The attributes of a PCI function: hwloc's, with sysfs's exact class code and current link
  /// where the machine is this one.
  PciAttributes attributes(const HwlocPciAttributes& pci) const {
    PciAttributes attributes;
    attributes.busId = busIdOf(pci);
    attributes.classCode = static_cast<uint32_t>(pci.class_id) << 8;
    attributes.vendor = pci.vendor_id;
    attributes.device = pci.device_id;
    attributes.subsystemVendor = pci.subvendor_id;
    attributes.subsystemDevice = pci.subdevice_id;
    PciLink link = pciLinkFromHwlocSpeed(pci.linkspeed);
    if (sysfs_ != nullptr) {
      const SysfsPciFunction function = sysfs_->pciFunction(attributes.busId);
      if ((function.classCode >> 8) == pci.class_id) attributes.classCode = function.classCode;
      if (function.linkSpeedGts > 0 && function.linkWidth > 0) {
        link = PciLink{function.linkSpeedGts, function.linkWidth};
      }
    }
    attributes.linkSpeedGts = link.speedGts;
    attributes.linkWidth = link.width;
    return attributes;
  }

  /// The kPci link between node `index` and its parent, at the rate of its own link.
  void addPciLink(int index) {
    const Node& node = out_->node(index);
    out_->addLink(index, node.parent, LinkType::kPci, pciBandwidth(node.pci->linkSpeedGts, node.pci->linkWidth));
  }

  /// Adds the GPUs in `dev` order. GPUs whose OS devices give no index are numbered in bus-id
  /// order (CUDA's PCI_BUS_ID order) after those that have one.
  void placeGpus() {
    int nextDev = 0;
    for (const PendingGpu& gpu : gpus_) nextDev = std::max(nextDev, gpu.devFromOsDevice + 1);
    std::vector<PendingGpu*> unnumbered;
    for (PendingGpu& gpu : gpus_) {
      gpu.node.gpu.dev = gpu.devFromOsDevice;
      if (gpu.devFromOsDevice < 0) unnumbered.push_back(&gpu);
    }
    std::sort(unnumbered.begin(), unnumbered.end(),
              [](const PendingGpu* a, const PendingGpu* b) { return a->node.pci->busId < b->node.pci->busId; });
    for (PendingGpu* gpu : unnumbered) gpu->node.gpu.dev = nextDev++;
    std::stable_sort(gpus_.begin(), gpus_.end(),
                     [](const PendingGpu& a, const PendingGpu& b) { return a.node.gpu.dev < b.node.gpu.dev; });
    for (PendingGpu& gpu : gpus_) addPciLink(out_->addNode(std::move(gpu.node)));
    gpus_.clear();
  }

  hwloc_topology_t topology_;
  const Sysfs* sysfs_;
  System* out_;
  std::vector<PendingGpu> gpus_;
};

}  // namespace

void addHwlocPciTree(hwloc_topology_t topology, const Sysfs* sysfs, System* out) {
  PciTreeBuilder(topology, sysfs, out).build();
}

std::string hwlocBusId(hwloc_obj_t pciObject) {
  if (pciObject->type == HWLOC_OBJ_PCI_DEVICE) return busIdOf(pciObject->attr->pcidev);
  if (pciObject->type == HWLOC_OBJ_BRIDGE && pciObject->attr->bridge.upstream_type == HWLOC_OBJ_BRIDGE_PCI) {
    return busIdOf(pciObject->attr->bridge.upstream.pci);
  }
  return "";
}

}  // namespace weft::topology
