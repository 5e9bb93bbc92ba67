#pragma once
// Peer to peer between two GPUs of one host (CUDA IPC), as NCCL_P2P_LEVEL and NCCL_P2P_DISABLE
// allow it. Where they forbid it NCCL stages the data through host memory; Weft refuses GPU
// buffers between such ranks (src/core/gpu_peer_access.h).

#include <optional>
#include <string>

#include "src/base/status.h"
#include "topology/paths.h"

namespace weft::topology {

/// When two GPUs of one host may talk peer to peer.
struct P2pPolicy {
  /// The worst path allowed (LOC: never); none: any path on the host, Weft's
  /// default (CUDA IPC works across PCIe switches and sockets, if more slowly).
  std::optional<PathType> level;
  /// The setting that set `level`, for messages: "NCCL_P2P_DISABLE=1", "NCCL_P2P_LEVEL=PIX"; empty
  /// when neither is set.
  std::string setting;
};

/// Whether GPU nodes `a` and `b` may talk peer to peer under `policy`.
bool p2pAllowed(const Paths& paths, int a, int b, const P2pPolicy& policy);

/// The policy NCCL_P2P_DISABLE (1: LOC) and NCCL_P2P_LEVEL (parseLevel) set; NCCL_P2P_DISABLE
/// wins. A level that is no level is an error that says which are.
Status p2pPolicyFromKnobs(P2pPolicy* policy);

}  // namespace weft::topology
