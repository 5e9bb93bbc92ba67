#include "topology/gdr.h"

#include <algorithm>
#include <string>
#include <tuple>

#include "src/base/knobs.h"

namespace weft::topology {
namespace {

// The relaying GPU of a PXN path: the last GPU before the NIC; -1 when none relays.
int relayingGpu(const System& system, const Path& path) {
  for (size_t i = path.nodes.size() - 1; i-- > 1;) {
    if (system.node(path.nodes[i]).type == NodeType::kGpu) return path.nodes[i];
  }
  return -1;
}

// The CPU node with the best path from `gpu` (type, then bandwidth, then hops); -1 when none.
int nearestCpu(const System& system, const Paths& paths, int gpu) {
  int best = -1;
  auto key = [&](int cpu) {
    const Path& path = paths.between(gpu, cpu);
    return std::make_tuple(path.type, -path.bandwidth, path.nodes.size());
  };
  for (int cpu : system.nodesOfType(NodeType::kCpu)) {
    if (paths.between(gpu, cpu).type == PathType::kDis) continue;
    if (best < 0 || key(cpu) < key(best)) best = cpu;
  }
  return best;
}

// The two legs joined at the CPU, where host memory is: the type at least PHB; DIS when a leg is.
Path throughCpu(const Path& first, const Path& second) {
  Path joined;
  if (first.type == PathType::kDis || second.type == PathType::kDis) return joined;
  joined.type = std::max({first.type, second.type, PathType::kPhb});
  joined.bandwidth = std::min(first.bandwidth, second.bandwidth);
  joined.nodes = first.nodes;
  joined.nodes.insert(joined.nodes.end(), second.nodes.begin() + 1, second.nodes.end());
  return joined;
}

// False where the source says that the GPU, or every port of the NIC, cannot do GPUDirect RDMA
// (NCCL's gdr="0"); a source that does not say leaves it to the distance.
bool gdrCapable(const System& system, int gpu, int nic) {
  if (!system.node(gpu).gpu.gdr.value_or(true)) return false;
  const std::vector<NetPort>& ports = system.node(nic).nic.ports;
  return ports.empty() ||
         std::any_of(ports.begin(), ports.end(), [](const NetPort& port) { return port.gdr.value_or(true); });
}

}  // namespace

NetPath netPath(const System& system, const Paths& paths, int gpu, int nic, const NetGdrPolicy& policy) {
  NetPath result;
  const Path& direct = paths.between(gpu, nic);
  result.distance = direct.type;
  if (direct.type == PathType::kPxn) {
    const int relay = relayingGpu(system, direct);
    if (relay >= 0) result.distance = paths.between(relay, nic).type;
  }
  if (direct.type == PathType::kDis) return result;
  const PathType judged = policy.c2c && result.distance == PathType::kP2c ? PathType::kC2c : result.distance;
  result.capable = gdrCapable(system, gpu, nic);
  result.gdr = result.capable && withinLevel(judged, policy.level.value_or(kDefaultNetGdrLevel));
  if (result.gdr) {
    result.toNic = direct;
    result.fromNic = paths.between(nic, gpu);
    return result;
  }
  const int cpu = nearestCpu(system, paths, gpu);
  if (cpu < 0) return result;
  result.toNic = throughCpu(paths.between(gpu, cpu), paths.between(cpu, nic));
  result.fromNic = throughCpu(paths.between(nic, cpu), paths.between(cpu, gpu));
  return result;
}

Status netGdrPolicyFromKnobs(NetGdrPolicy* policy) {
  policy->c2c = knobs::getBool(knobs::KnobId::kNetGdrC2c);
  policy->level.reset();
  const std::string text = knobs::getString(knobs::KnobId::kNetGdrLevel);
  if (text.empty()) return Status::ok();
  PathType parsed;
  if (!parseLevel(text, &parsed)) {
    return invalidArgument("NCCL_NET_GDR_LEVEL=%s is not a level: use LOC, PIX, PXB, PHB or SYS (or 0-4), or unset it "
                           "for NCCL's default (PXB)", text.c_str());
  }
  policy->level = parsed;
  return Status::ok();
}

}  // namespace weft::topology
