// CPUs: hwloc's NUMA nodes (with their packages' identity) as kCpu nodes.

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

#include "topology/hwloc_conversion.h"

namespace weft::topology {

namespace {

/// NCCL's name for the architecture hwloc reports (uname's machine): "x86_64", "arm64", "ppc64".
std::string ncclArchName(const char* architecture) {
  if (architecture == nullptr) return "";
  const std::string_view name(architecture);
  if (name == "x86_64" || name == "amd64" || name == "i686" || name == "i386") return "x86_64";
  if (name.starts_with("aarch64") || name.starts_with("arm")) return "arm64";
  if (name.starts_with("ppc")) return "ppc64";
  return std::string(name);
}

/// `cpuset` as NCCL writes an affinity: `words` 32-bit words in hexadecimal, the most significant
/// first, separated by commas ("00000000,00ffffff").
std::string ncclAffinity(hwloc_const_cpuset_t cpuset, int words) {
  constexpr int kWordsPerUlong = static_cast<int>(sizeof(unsigned long) / sizeof(uint32_t));
  std::string text;
  for (int word = words - 1; word >= 0; --word) {
    const unsigned long bits = hwloc_bitmap_to_ith_ulong(cpuset, static_cast<unsigned>(word / kWordsPerUlong));
    const auto value = static_cast<uint32_t>(bits >> (32 * (word % kWordsPerUlong)));
    char hex[9];
    std::snprintf(hex, sizeof(hex), "%08x", value);
    if (!text.empty()) text += ',';
    text += hex;
  }
  return text;
}

/// The package holding NUMA node `numa`: its ancestor, or (when NUMA nodes sit above packages)
/// the first package that shares CPUs with it; null when hwloc shows no package.
hwloc_obj_t packageOf(hwloc_topology_t topology, hwloc_obj_t numa) {
  for (hwloc_obj_t ancestor = numa->parent; ancestor != nullptr; ancestor = ancestor->parent) {
    if (ancestor->type == HWLOC_OBJ_PACKAGE) return ancestor;
  }
  for (hwloc_obj_t package = nullptr;
       (package = hwloc_get_next_obj_by_type(topology, HWLOC_OBJ_PACKAGE, package)) != nullptr;) {
    if (hwloc_bitmap_intersects(package->cpuset, numa->cpuset)) return package;
  }
  return nullptr;
}

/// The info `name` of `obj` as a decimal number; -1 when absent.
int infoNumber(hwloc_obj_t obj, const char* name) {
  const char* value = obj != nullptr ? hwloc_obj_get_info_by_name(obj, name) : nullptr;
  return value != nullptr ? std::atoi(value) : -1;
}

}  // namespace

void addHwlocCpus(hwloc_topology_t topology, System* out) {
  const std::string arch = ncclArchName(hwloc_obj_get_info_by_name(hwloc_get_root_obj(topology), "Architecture"));
  // As many words as the machine's highest CPU needs, so that all CPUs' affinities align.
  const int lastCpu = hwloc_bitmap_last(hwloc_topology_get_complete_cpuset(topology));
  const int words = lastCpu < 0 ? 1 : lastCpu / 32 + 1;

  std::vector<int> cpus;
  for (hwloc_obj_t numa = hwloc_get_next_obj_by_type(topology, HWLOC_OBJ_NUMANODE, nullptr); numa != nullptr;
       numa = hwloc_get_next_obj_by_type(topology, HWLOC_OBJ_NUMANODE, numa)) {
    if (numa->cpuset == nullptr || hwloc_bitmap_iszero(numa->cpuset)) continue;
    const hwloc_obj_t package = packageOf(topology, numa);
    Node node;
    node.type = NodeType::kCpu;
    node.cpu.numaId = numa->os_index == HWLOC_UNKNOWN_INDEX ? -1 : static_cast<int>(numa->os_index);
    node.cpu.affinity = ncclAffinity(numa->cpuset, words);
    node.cpu.arch = arch;
    const char* vendor = package != nullptr ? hwloc_obj_get_info_by_name(package, "CPUVendor") : nullptr;
    if (vendor != nullptr) node.cpu.vendor = vendor;
    node.cpu.familyId = infoNumber(package, "CPUFamilyNumber");
    node.cpu.modelId = infoNumber(package, "CPUModelNumber");
    node.cpuNuma = node.cpu.numaId;
    cpus.push_back(out->addNode(std::move(node)));
  }
  for (size_t a = 0; a < cpus.size(); ++a) {
    for (size_t b = a + 1; b < cpus.size(); ++b) {
      out->addLink(cpus[a], cpus[b], LinkType::kSys, cpuInterconnectBandwidth(out->node(cpus[a]).cpu));
    }
  }
}

int cpuNodeOfNuma(const System& system, int numaId) {
  int first = -1;
  for (const Node& node : system.nodes()) {
    if (node.type != NodeType::kCpu) continue;
    if (numaId >= 0 && node.cpu.numaId == numaId) return node.index;
    if (first < 0) first = node.index;
  }
  return first;
}

int cpuNodeNear(hwloc_topology_t topology, hwloc_obj_t obj, const System& system) {
  const hwloc_obj_t local = hwloc_get_non_io_ancestor_obj(topology, obj);
  if (local != nullptr && local->nodeset != nullptr) {
    for (int numa = hwloc_bitmap_first(local->nodeset); numa >= 0; numa = hwloc_bitmap_next(local->nodeset, numa)) {
      for (const Node& node : system.nodes()) {
        if (node.type == NodeType::kCpu && node.cpu.numaId == numa) return node.index;
      }
    }
  }
  return cpuNodeOfNuma(system, -1);
}

}  // namespace weft::topology
