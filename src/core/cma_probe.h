#pragma once
// Whether the ranks of a clique can read and write each other's memory directly with Linux's
// cross-memory attach (process_vm_readv / process_vm_writev): every rank on one host, the same
// user, no ptrace restriction (Yama) and no seccomp filter (containers) in the way.

#include <vector>

#include "src/base/peer_info.h"
#include "src/base/status.h"
#include "src/core/bootstrap.h"

namespace weft::core {

/// Every rank of the clique calls it (after the PeerInfo allgather) and every rank gets the same
/// answer in *usable: true when each rank could read a value from each other rank's memory. Ranks
/// on several hosts answer false at once; otherwise two allgathers over `bootstrap`.
Status probeCrossMemoryAttach(Bootstrap& bootstrap, const std::vector<PeerInfo>& peers, int rank, bool* usable);

}  // namespace weft::core
