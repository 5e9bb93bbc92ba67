#include "src/core/gpu_peer_access.h"

#include <string>
#include <utility>
#include <vector>

#include "src/core/machine.h"
#include "topology/p2p.h"
#include "transport/registry.h"

namespace weft::core {
namespace {

constexpr const char* kNoStaging =
    "Weft has no transport that stages GPU buffers through host memory yet: use host buffers between these ranks";

// NCCL_P2P_LEVEL's verdict on one pair of GPUs of this host.
Status checkLevel(const PeerInfo& a, const PeerInfo& b, const topology::P2pPolicy& policy) {
  const Machine& machine = localMachine();
  if (!machine.status.isOk()) {
    return machine.status.withContext(policy.setting + " needs the path between rank " + std::to_string(a.rank) +
                                      "'s and rank " + std::to_string(b.rank) +
                                      "'s GPUs, but the machine could not be read");
  }
  const int from = machine.system.findByBusId(a.gpuBusId);
  const int to = machine.system.findByBusId(b.gpuBusId);
  if (from < 0 || to < 0) {
    return invalidUsage("%s needs the path between GPUs %s and %s (ranks %d and %d), but %s does not "
                        "list GPU %s; fix NCCL_TOPO_FILE (or WEFT_HWLOC_XML) or unset NCCL_P2P_LEVEL",
                        policy.setting.c_str(), a.gpuBusId, b.gpuBusId, a.rank, b.rank, machine.system.source().c_str(),
                        from < 0 ? a.gpuBusId : b.gpuBusId);
  }
  if (topology::p2pAllowed(*machine.paths, from, to, policy)) return Status::ok();
  const topology::PathType path = machine.paths->between(from, to).type;
  return invalidUsage("%s forbids CUDA IPC between rank %d (GPU %s) and rank %d (GPU %s), whose path "
                      "is %s; %s, or set NCCL_P2P_LEVEL=%s",
                      policy.setting.c_str(), a.rank, a.gpuBusId, b.rank, b.gpuBusId, topology::pathTypeName(path),
                      kNoStaging, topology::pathTypeName(path));
}

}  // namespace

Status checkGpuPeerAccess(const std::vector<PeerInfo>& peers) {
  // The pairs of one host: the P2P settings govern their CUDA IPC.
  std::vector<std::pair<const PeerInfo*, const PeerInfo*>> sameHost;
  for (size_t i = 0; i < peers.size(); ++i) {
    for (size_t j = i + 1; j < peers.size(); ++j) {
      transport::Transport* transport = nullptr;
      WEFT_RETURN_IF_ERROR(transport::pickDeviceTransport(peers[i], peers[j], &transport));
      if (peers[i].sameHost(peers[j])) sameHost.emplace_back(&peers[i], &peers[j]);
    }
  }
  if (sameHost.empty()) return Status::ok();
  topology::P2pPolicy policy;
  WEFT_RETURN_IF_ERROR(topology::p2pPolicyFromKnobs(&policy));
  if (!policy.level.has_value()) return Status::ok();
  if (*policy.level == topology::PathType::kLoc) {  // never: no path to look up
    const auto [a, b] = sameHost.front();
    return invalidUsage("%s forbids CUDA IPC between the GPUs of this communicator's ranks on one host (rank %d: "
                        "GPU %s, rank %d: GPU %s); %s, or unset it",
                        policy.setting.c_str(), a->rank, a->gpuBusId, b->rank, b->gpuBusId, kNoStaging);
  }
  for (const auto& [a, b] : sameHost) WEFT_RETURN_IF_ERROR(checkLevel(*a, *b, policy));
  return Status::ok();
}

}  // namespace weft::core
