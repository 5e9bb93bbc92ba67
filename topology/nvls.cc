#include "topology/nvls.h"

#include "src/base/knobs.h"

namespace weft::topology {
namespace {

bool reachesNvSwitch(const System& system, int gpu) {
  for (int index : system.linksFrom(gpu)) {
    const Link& link = system.links()[index];
    if (link.type == LinkType::kNvLink && system.node(link.to).type == NodeType::kNvSwitch) return true;
  }
  return false;
}

// "GPU<dev>", as weft topo names it (its position where the source gives no dev).
std::string gpuLabel(const System& system, const std::vector<int>& gpus, size_t g) {
  const int dev = system.node(gpus[g]).gpu.dev;
  return "GPU" + std::to_string(dev >= 0 ? dev : static_cast<int>(g));
}

}  // namespace

NvlsSupport nvlsSupport(const System& system, bool enabled) {
  NvlsSupport support;
  if (!enabled) {
    support.reason = "NCCL_NVLS_ENABLE=0";
    return support;
  }
  const std::vector<int> gpus = system.nodesOfType(NodeType::kGpu);
  if (gpus.size() < 2) {
    support.reason = "it needs two GPUs or more, and the source shows " + std::to_string(gpus.size());
    return support;
  }
  for (size_t g = 0; g < gpus.size(); ++g) {
    const int sm = system.node(gpus[g]).gpu.sm;
    const std::string label = gpuLabel(system, gpus, g);
    if (sm == 0) {
      support.reason = "the source does not give " + label + "'s compute capability (NVLS needs sm_90 or later)";
      return support;
    }
    if (sm < 90) {
      support.reason = label + " is sm_" + std::to_string(sm) + ": NVLS needs Hopper (sm_90) or later";
      return support;
    }
  }
  if (!system.nvlinkDescribed()) {
    support.reason = "the source does not describe NVLink, so no NVSwitch is known";
    return support;
  }
  for (size_t g = 0; g < gpus.size(); ++g) {
    const std::string label = gpuLabel(system, gpus, g);
    if (!reachesNvSwitch(system, gpus[g])) {
      support.reason = label + " has no NVLink to an NVSwitch (NVLS multicasts through NVSwitches)";
      return support;
    }
  }
  support.possible = true;
  support.reason = "every GPU is sm_90 or later on NVSwitches; the driver must also report multicast "
                   "(CU_DEVICE_ATTRIBUTE_MULTICAST_SUPPORTED, which needs the fabric manager)";
  return support;
}

bool nvlsEnabledByKnob() { return knobs::getInt(knobs::KnobId::kNvlsEnable) != 0; }

}  // namespace weft::topology
