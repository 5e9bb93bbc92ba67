#include "src/core/cma_probe.h"

#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <memory>

namespace weft::core {
namespace {

struct Probe {
  uint64_t address;  // of a value in the rank's memory
  uint64_t value;    // what it holds
};

// True if `value` can be read at `address` in process `pid`.
bool canRead(int pid, const Probe& probe) {
  uint64_t read = 0;
  iovec local{&read, sizeof(read)};
  iovec remote{reinterpret_cast<void*>(probe.address), sizeof(read)};
  return process_vm_readv(pid, &local, 1, &remote, 1, 0) == static_cast<ssize_t>(sizeof(read)) && read == probe.value;
}

}  // namespace

Status probeCrossMemoryAttach(Bootstrap& bootstrap, const std::vector<PeerInfo>& peers, int rank, bool* usable) {
  *usable = false;
  const PeerInfo& self = peers[rank];
  const bool oneHost =
      std::all_of(peers.begin(), peers.end(), [&self](const PeerInfo& peer) { return peer.sameHost(self); });
  if (!oneHost || peers.size() < 2) return Status::ok();
  // The value lives until the second allgather has shown that every peer is done reading it.
  auto token = std::make_unique<uint64_t>(0x574546544d454d00ull ^ (static_cast<uint64_t>(rank) << 8) ^
                                          static_cast<uint64_t>(getpid()));
  std::vector<Probe> probes(peers.size());
  probes[rank] = Probe{reinterpret_cast<uint64_t>(token.get()), *token};
  WEFT_RETURN_IF_ERROR(bootstrap.allGather(probes.data(), sizeof(Probe)));
  std::vector<uint8_t> readable(peers.size(), 1);
  uint8_t mine = 1;
  for (size_t peer = 0; peer < peers.size(); ++peer) {
    if (static_cast<int>(peer) != rank && !canRead(peers[peer].pid, probes[peer])) mine = 0;
  }
  readable[rank] = mine;
  WEFT_RETURN_IF_ERROR(bootstrap.allGather(readable.data(), sizeof(uint8_t)));
  *usable = std::all_of(readable.begin(), readable.end(), [](uint8_t ok) { return ok == 1; });
  return Status::ok();
}

}  // namespace weft::core
