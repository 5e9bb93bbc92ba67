#pragma once
// A communicator's multicast team for NVLS (src/device/nvls_plan.h): each rank's staging memory on
// its own GPU, bound to one multicast object that every rank maps. Made at init, by every rank
// together, where nvlsTeamVerdict allows it; every build has this header (without CUDA, create
// reports that the build has no GPU path).
//
// Setup, in stages that every rank finishes before any starts the next (each stage ends in an
// allgather of every rank's success, so that all ranks give up together, each saying why):
//   1. rank 0 creates the multicast object (every rank's share, rounded up to the driver's
//      granularity) and exports it as a file descriptor; every other rank opens a descriptor
//      mailbox (src/base/fd_mailbox.h);
//   2. rank 0 sends the descriptor to every mailbox, with the communicator's random tag;
//   3. each rank imports it and adds its GPU to the object (the driver binds nothing until every
//      GPU has been added);
//   4. each rank creates its memory, maps it, zeroes the barrier counters, binds it to the object
//      and maps the object.

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "src/base/peer_info.h"
#include "src/base/status.h"

namespace weft::core {
class Bootstrap;
}

namespace weft::device {

/// The driver's handles and mappings behind a team (CUDA builds; src/device/nvls_team.cc).
struct NvlsResources;

class NvlsTeam {
 public:
  /// Makes the team of `peers` (nvlsTeamVerdict must allow it) as rank `rank`, with room for
  /// `blocks` NVLS blocks; `tag` is the communicator's random clique id. Every rank calls this with
  /// the same arguments. Sets *out to null where some rank could not do its part (every rank
  /// then logs why and the communicator uses the ring); an error where the bootstrap fails, or where
  /// the build has no CUDA (nvlsTeamVerdict never allows a team there).
  static Status create(core::Bootstrap& bootstrap, const std::vector<PeerInfo>& peers, int rank, uint64_t tag,
                       int blocks, std::unique_ptr<NvlsTeam>* out);
  /// Unbinds and frees everything. No kernel of this rank may still run. After ncclCommAbort a
  /// peer's kernel may still be reaching this rank's memory through the object, which NCCL's abort
  /// allows as well: what a multicast access to memory just unbound does is not documented.
  ~NvlsTeam();
  NvlsTeam(const NvlsTeam&) = delete;
  NvlsTeam& operator=(const NvlsTeam&) = delete;

  /// This rank's bound memory, at its own GPU's address.
  char* unicast() const { return unicast_; }
  /// The same offsets of every rank's memory at once: loads reduce across them, stores reach all.
  char* multicast() const { return multicast_; }
  /// The NVLS blocks the memory has room for.
  int blocks() const { return blocks_; }
  int nranks() const { return nranks_; }

 private:
  NvlsTeam() = default;

  char* unicast_ = nullptr;
  char* multicast_ = nullptr;
  int blocks_ = 0;
  int nranks_ = 0;
  std::unique_ptr<NvlsResources> resources_;
};

}  // namespace weft::device
