#pragma once
// What `weft topo` prints: the system's GPUs and NICs, the path type between every pair (as
// `nvidia-smi topo -m` lays it out) and their NUMA affinity, as text or as JSON.

#include <nlohmann/json.hpp>
#include <string>

#include "topology/paths.h"
#include "topology/system.h"

namespace weft::tools {

/// The matrix of path types between GPUs and NICs, the CPU and NUMA affinity of each, the NICs'
/// names and ports, and a legend; says so when the source did not describe NVLink.
std::string topoText(const topology::System& system, const topology::Paths& paths);

/// {"source", "nvlink_described", "cpus": [{numa, affinity}], "gpus": [{dev, busid, numa, sm}],
///  "nics": [{name, busid, numa, ports: [{name, port, speed_mbps}]}],
///  "paths": {"gpu_gpu": [[type]], "gpu_nic": [[type]], "gpu_gpu_bandwidth": [[GB/s]],
///            "gpu_nic_bandwidth": [[GB/s]]}, "channels": [[gpu indices]]}.
/// Path types are NCCL's names ("NVL", "PIX", ...); `channels` lists the rings (empty until the
/// search exists).
nlohmann::json topoJson(const topology::System& system, const topology::Paths& paths);

}  // namespace weft::tools
