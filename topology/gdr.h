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
/// A GPU with a chip-to-chip link to its CPU may also reach a NIC on that CPU (P2C), as NCCL allows
/// by default (NCCL_NET_GDR_C2C=1).
constexpr PathType kDefaultNetGdrLevel = PathType::kPxb;

struct NetPath {
  /// GPUDirect RDMA: the NIC reaches the GPU's memory itself.
  bool gdr = false;
  /// The path type the choice was made on: the GPU's own path to the NIC, or, where that relays
  /// through another GPU over NVLink (PXN), the relaying GPU's path to the NIC.
  PathType distance = PathType::kDis;
  /// The way the data takes from the GPU to the NIC and from the NIC to the GPU: their paths with
  /// GPUDirect RDMA; otherwise through the CPU nearest the GPU (its host memory), typed by the
  /// worse of the two legs (at least PHB) and limited by the slower.
  Path toNic;
  Path fromNic;
};

/// How GPU node `gpu` and NIC node `nic` of `system` exchange the network's data. GPUDirect RDMA
/// when their distance is within `level` (NCCL_NET_GDR_LEVEL as parseLevel reads it; LOC: never),
/// or, with no level given, within kDefaultNetGdrLevel or P2C. A NIC the GPU cannot reach at all
/// gives DIS paths.
NetPath netPath(const System& system, const Paths& paths, int gpu, int nic, std::optional<PathType> level);

/// NCCL_NET_GDR_LEVEL: a level (parseLevel), or nothing when unset (NCCL's default applies). A
/// value that is no level is an error that says which are.
Status netGdrLevelFromKnob(std::optional<PathType>* level);

}  // namespace weft::topology
