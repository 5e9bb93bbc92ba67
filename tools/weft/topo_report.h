#pragma once
// What `weft topo` prints: the system's GPUs and NICs, the path type between every pair (as
// `nvidia-smi topo -m` lays it out), their NUMA affinity and the rings the search found, as text or
// as JSON.

#include <nlohmann/json.hpp>
#include <string>

#include "topology/gdr.h"
#include "topology/p2p.h"
#include "topology/paths.h"
#include "topology/search.h"
#include "topology/system.h"

namespace weft::tools {

/// What the knobs allow, as weft topo shows it.
struct TopoPolicies {
  topology::NetGdrPolicy gdr;  // NCCL_NET_GDR_LEVEL, NCCL_NET_GDR_C2C
  topology::P2pPolicy p2p;     // NCCL_P2P_LEVEL, NCCL_P2P_DISABLE
  bool nvlsEnabled = true;     // NCCL_NVLS_ENABLE
};

/// The matrix of path types between GPUs and NICs, the CPU and NUMA affinity of each, the NICs'
/// names and ports, the NICs each GPU reaches with GPUDirect RDMA and the GPUs it may reach peer to
/// peer under `policies`, whether NVLS could serve the GPUs (and why not), each ring of `rings`
/// ("Ring 0: GPU0 GPU1 ... (NVL, 20.6 GB/s)"), then
/// `nodesSection` (the plan across nodes, when there is one) and a legend; says so when the source
/// did not describe NVLink (the rings then assume the paths it describes), and when NVLink joins
/// the GPUs in several groups with none between them.
std::string topoText(const topology::System& system, const topology::Paths& paths, const topology::RingSet& rings,
                     const TopoPolicies& policies, const std::string& nodesSection);

/// {"source", "nvlink_described", "cpus": [{numa, affinity}], "gpus": [{dev, busid, numa, sm}],
///  "nics": [{name, busid, numa, ports: [{name, port, speed_mbps}]}],
///  "paths": {"gpu_gpu": [[type]], "gpu_nic": [[type]], "gpu_gpu_bandwidth": [[GB/s]],
///            "gpu_nic_bandwidth": [[GB/s]], "gpu_nic_gdr": [[bool]], "gpu_gpu_p2p": [[bool]]},
///  "net_gdr_level": type or "default", "p2p_level": type or "default", "channels": [[gpu indices]],
///  "ring_bandwidth": GB/s, "ring_worst_hop": type, "nvls": {"possible": bool, "reason": string}}.
/// Path types are NCCL's names ("NVL", "PIX", ...); `channels` lists the rings, each as indices into
/// "gpus"; `ring_bandwidth` is what each ring moves and `ring_worst_hop` the worst path type between
/// consecutive GPUs ("DIS" when there is no ring); `gpu_nic_gdr` says which NIC reaches which GPU's
/// memory itself (GPUDirect RDMA), and `gpu_gpu_p2p` which GPUs may talk peer to peer, under
/// `policies` (false from a GPU to itself).
nlohmann::json topoJson(const topology::System& system, const topology::Paths& paths, const topology::RingSet& rings,
                        const TopoPolicies& policies);

}  // namespace weft::tools
