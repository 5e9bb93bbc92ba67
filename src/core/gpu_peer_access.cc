#include "src/core/gpu_peer_access.h"

#include <string>
#include <utility>
#include <vector>

#include "src/base/knobs.h"
#include "src/core/machine.h"
#include "topology/paths.h"
#include "transport/registry.h"

namespace weft::core {
namespace {

constexpr const char* kNoStaging =
    "Weft has no transport that stages GPU buffers through host memory yet: use host buffers between these ranks";

// The P2P settings' verdict on one pair of GPUs of this host.
Status checkLevel(const PeerInfo& a, const PeerInfo& b, const std::string& levelText, topology::PathType level) {
  const Machine& machine = localMachine();
  if (!machine.status.isOk()) {
    return machine.status.withContext("NCCL_P2P_LEVEL needs the path between rank " + std::to_string(a.rank) +
                                      "'s and rank " + std::to_string(b.rank) +
                                      "'s GPUs, but the machine could not be read");
  }
  const int from = machine.system.findByBusId(a.gpuBusId);
  const int to = machine.system.findByBusId(b.gpuBusId);
  if (from < 0 || to < 0) {
    return invalidUsage("NCCL_P2P_LEVEL=%s needs the path between GPUs %s and %s (ranks %d and %d), but %s does not "
                        "list GPU %s; fix NCCL_TOPO_FILE or unset NCCL_P2P_LEVEL",
                        levelText.c_str(), a.gpuBusId, b.gpuBusId, a.rank, b.rank, machine.system.source().c_str(),
                        from < 0 ? a.gpuBusId : b.gpuBusId);
  }
  const topology::PathType path = machine.paths->between(from, to).type;
  if (topology::withinLevel(path, level)) return Status::ok();
  return invalidUsage("NCCL_P2P_LEVEL=%s forbids CUDA IPC between rank %d (GPU %s) and rank %d (GPU %s), whose path "
                      "is %s; %s, or set NCCL_P2P_LEVEL=%s",
                      levelText.c_str(), a.rank, a.gpuBusId, b.rank, b.gpuBusId, topology::pathTypeName(path),
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
  if (knobs::getBool(knobs::KnobId::kP2pDisable)) {
    const auto [a, b] = sameHost.front();
    return invalidUsage("NCCL_P2P_DISABLE=1 forbids CUDA IPC between the GPUs of this communicator's ranks on one "
                        "host (rank %d: GPU %s, rank %d: GPU %s); %s, or unset NCCL_P2P_DISABLE",
                        a->rank, a->gpuBusId, b->rank, b->gpuBusId, kNoStaging);
  }
  const std::string levelText = knobs::getString(knobs::KnobId::kP2pLevel);
  if (levelText.empty()) return Status::ok();
  topology::PathType level;
  if (!topology::parseLevel(levelText, &level)) {
    return invalidArgument("NCCL_P2P_LEVEL=%s is not a level: use LOC, NVL, PIX, PXB, PHB or SYS (or 0-4)",
                           levelText.c_str());
  }
  for (const auto& [a, b] : sameHost) WEFT_RETURN_IF_ERROR(checkLevel(*a, *b, levelText, level));
  return Status::ok();
}

}  // namespace weft::core
