#pragma once
// GPUDirect RDMA between a GPU and a NIC, as NCCL decides it (NCCL_NET_GDR_LEVEL): whether the
// NIC reads and writes the GPU's memory itself, and otherwise the way the network's data takes
// between them, through host memory at the GPU's CPU.

#include <optional>

#include "src/base/status.h"
#include "topology/paths.h"
#include "topology/system.h"

namespace weft::topology {

/// NCCL's default NCCL_NET_GDR_LEVEL: PXB, PCIe switches between the GPU and the NIC but no CPU.
constexpr PathType kDefaultNetGdrLevel = PathType::kPxb;

/// When GPUDirect RDMA is allowed, as NCCL's knobs say.
struct NetGdrPolicy {
  /// NCCL_NET_GDR_LEVEL: the worst distance allowed (LOC: never); none: kDefaultNetGdrLevel.
  std::optional<PathType> level;
  /// NCCL_NET_GDR_C2C (default 1): a NIC on the CPU of a GPU's chip-to-chip link (P2C) counts as
  /// that link (C2C), so it is allowed under any level but LOC.
  bool c2c = true;
};

struct NetPath {
  /// GPUDirect RDMA: the NIC reaches the GPU's memory itself.
  bool gdr = false;
  /// False where the source says the GPU, or every port of the NIC, cannot (gdr="0").
  bool capable = true;
  /// The path type the choice was made on: the GPU's own path to the NIC, or, where that relays
  /// through another GPU over NVLink (PXN), the relaying GPU's path to the NIC (P2C before the
  /// policy's c2c rule).
  PathType distance = PathType::kDis;
  /// The way the data takes from the GPU to the NIC and from the NIC to the GPU: their paths with
  /// GPUDirect RDMA; otherwise through the CPU nearest the GPU (its host memory), typed by the
  /// worse of the two legs (at least PHB) and limited by the slower.
  Path toNic;
  Path fromNic;
};

/// How GPU node `gpu` and NIC node `nic` of `system` exchange the network's data: GPUDirect RDMA
/// when their distance is within the policy's level and the source does not rule it out (gdr="0"
/// on the GPU, or on every port of the NIC), as NCCL decides it. A NIC the GPU cannot reach at all
/// gives DIS paths.
NetPath netPath(const System& system, const Paths& paths, int gpu, int nic, const NetGdrPolicy& policy);

/// The policy NCCL_NET_GDR_LEVEL (parseLevel; unset: NCCL's default) and NCCL_NET_GDR_C2C set. A
/// level that is no level is an error that says which are.
Status netGdrPolicyFromKnobs(NetGdrPolicy* policy);

}  // namespace weft::topology
