#pragma once
// Whether a communicator's ranks may exchange GPU buffers. Ranks of one host do so through CUDA IPC,
// so each such pair needs GPUs that NCCL_P2P_DISABLE and NCCL_P2P_LEVEL let talk peer to peer.
// (NCCL would stage the data through host memory where these settings forbid peer to peer; Weft
// does not yet.) Without either setting, any two GPUs of one host that can reach each other's
// memory may (cudaDeviceCanAccessPeer, asked where a rank makes its GPU resources: comm_device.cc),
// across PCIe switches and sockets too, if more slowly. Ranks of different hosts go through the
// network proxy (transport/proxy/), which these settings do not govern.

#include <vector>

#include "src/base/peer_info.h"
#include "src/base/status.h"

namespace weft::core {

/// Ok when every pair of `peers` (a communicator's ranks) may exchange GPU buffers; otherwise a
/// failure that names the first pair that may not, why (a rank without a GPU, the setting that
/// forbids it with the path between the GPUs, read from NCCL_TOPO_FILE, WEFT_HWLOC_XML or hwloc), and
/// what to change. Every rank reaches the same answer from the same PeerInfo and machine, so all
/// fail together and none waits for a peer that has given up.
Status checkGpuPeerAccess(const std::vector<PeerInfo>& peers);

}  // namespace weft::core
