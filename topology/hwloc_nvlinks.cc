#include "topology/hwloc_nvlinks.h"

#include <hwloc/distances.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <map>
#include <utility>

#include "topology/hwloc_conversion.h"

namespace weft::topology {

namespace {

constexpr uint16_t kNvidiaVendor = 0x10de;
constexpr uint16_t kIbmVendor = 0x1014;
constexpr uint32_t kOtherBridgeClass = 0x0680;

/// Finds or adds the node at the far end of a GPU's NVLink (see addNvmlNvlinks).
class NvlinkPeerResolver {
 public:
  NvlinkPeerResolver(const Sysfs* sysfs, System* out) : sysfs_(sysfs), out_(out) {}

  int resolve(const std::string& peerBusId, int gpuNode) {
    const int known = out_->findByBusId(peerBusId);
    if (known >= 0 && (out_->node(known).type == NodeType::kGpu || out_->node(known).type == NodeType::kNvSwitch)) {
      return known;
    }
    const SysfsPciFunction peer = sysfs_ != nullptr ? sysfs_->pciFunction(peerBusId) : SysfsPciFunction{};
    if (peer.vendor == kIbmVendor) return cpuNodeOfNuma(*out_, out_->node(gpuNode).cpuNuma);
    if (peer.vendor == kNvidiaVendor && (peer.classCode >> 8) == kOtherBridgeClass) {
      Node nvSwitch;
      nvSwitch.type = NodeType::kNvSwitch;
      nvSwitch.pci = PciAttributes{};
      nvSwitch.pci->busId = peerBusId;
      nvSwitch.pci->classCode = peer.classCode;
      nvSwitch.pci->vendor = peer.vendor;
      nvSwitch.cpuNuma = peer.numaNode;
      return out_->addNode(std::move(nvSwitch));
    }
    if (hiddenNvSwitch_ < 0) {
      Node nvSwitch;
      nvSwitch.type = NodeType::kNvSwitch;
      hiddenNvSwitch_ = out_->addNode(std::move(nvSwitch));
    }
    return hiddenNvSwitch_;
  }

 private:
  const Sysfs* sysfs_;
  System* out_;
  int hiddenNvSwitch_ = -1;
};

/// The node an object of a distances matrix stands for: a PCI device's (an OS device stands for
/// the PCI device above it), or the CPU near a CPU-side object; -1 when it has none.
int nodeOfMatrixObject(hwloc_topology_t topology, hwloc_obj_t obj, const System& system) {
  if (obj->type == HWLOC_OBJ_OS_DEVICE) obj = obj->parent;
  if (obj == nullptr) return -1;
  if (obj->type == HWLOC_OBJ_PCI_DEVICE) return system.findByBusId(hwlocBusId(obj));
  if (obj->cpuset != nullptr) return cpuNodeNear(topology, obj, system);
  return -1;
}

}  // namespace

void addNvmlNvlinks(const std::vector<NvmlGpu>& gpus, const Sysfs* sysfs, System* out) {
  NvlinkPeerResolver peers(sysfs, out);
  std::map<std::pair<int, int>, int> linkCounts;  // (GPU node, peer node) -> NVLinks
  for (const NvmlGpu& gpu : gpus) {
    const int gpuNode = out->findByBusId(gpu.busId);
    if (gpuNode < 0 || out->node(gpuNode).type != NodeType::kGpu) continue;
    out->mutableNode(gpuNode).gpu.dev = gpu.index;
    out->mutableNode(gpuNode).gpu.sm = gpu.sm;
    for (const std::string& peerBusId : gpu.nvlinkPeers) ++linkCounts[{gpuNode, peers.resolve(peerBusId, gpuNode)}];
  }
  for (const auto& [ends, count] : linkCounts) {
    const auto [gpuNode, peerNode] = ends;
    const double bandwidth = count * nvlinkBandwidth(out->node(gpuNode).gpu.sm);
    if (out->node(peerNode).type == NodeType::kGpu) {
      out->addDirectedLink(gpuNode, peerNode, LinkType::kNvLink, bandwidth, count);
    } else {
      out->addLink(gpuNode, peerNode, LinkType::kNvLink, bandwidth, count);
    }
  }
}

bool addNvlinkBandwidthMatrix(hwloc_topology_t topology, System* out) {
  unsigned found = 1;
  hwloc_distances_s* matrix = nullptr;
  if (hwloc_distances_get_by_name(topology, "NVLinkBandwidth", &found, &matrix, 0) != 0 || found == 0 ||
      matrix == nullptr) {
    return false;
  }
  const unsigned size = matrix->nbobjs;
  std::vector<int> nodes(size);
  for (unsigned i = 0; i < size; ++i) nodes[i] = nodeOfMatrixObject(topology, matrix->objs[i], *out);
  uint64_t oneLink = 0;
  for (unsigned i = 0; i < size * size; ++i) {
    const uint64_t value = matrix->values[i];
    if (value > 0 && (oneLink == 0 || value < oneLink)) oneLink = value;
  }
  for (unsigned from = 0; from < size; ++from) {
    for (unsigned to = 0; to < size; ++to) {
      const uint64_t megabytesPerSecond = matrix->values[from * size + to];
      if (megabytesPerSecond == 0 || nodes[from] < 0 || nodes[to] < 0 || nodes[from] == nodes[to]) continue;
      const int count = std::max(1, static_cast<int>(std::llround(static_cast<double>(megabytesPerSecond) / oneLink)));
      out->addDirectedLink(nodes[from], nodes[to], LinkType::kNvLink, megabytesPerSecond / 1000.0, count);
    }
  }
  hwloc_distances_release(topology, matrix);
  return true;
}

}  // namespace weft::topology
