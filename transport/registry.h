#pragma once
// The ordered list of transports. For each pair of ranks the first transport that can connect them
// wins (shm, then the network), unless the environment excludes it: NCCL_SHM_DISABLE=1 removes shm;
// Between them, ib when both ranks have a usable verbs port, else socket; NCCL_NET (IB or
// Socket) forces one, and a forced IB that cannot connect a pair fails, saying why.

#include <span>

#include "src/base/peer_info.h"
#include "src/base/status.h"
#include "transport/transport.h"

namespace weft::transport {

/// Every transport this build has, in priority order, whatever the environment says.
std::span<Transport* const> allTransports();

/// Fills what this process's transports tell the other ranks (PeerInfo::ibPorts). The first
/// call logs (INFO, NET) whether ib is on, and why not.
void describeTransports(PeerInfo* self);

/// The transport to connect `self` (receiving end) and `peer`, honouring the environment.
/// Fails with a message naming the pair when none can connect them or NCCL_NET names a network
/// this build lacks.
Status pickTransport(const PeerInfo& self, const PeerInfo& peer, Transport** transport);

/// The transport to connect `self` (receiving end) and `peer` when both ends' buffers are in GPU
/// memory: cuda_ipc on one host; between hosts, the network pickTransport chooses, behind the
/// network proxy ("proxy/socket", "proxy/ib"). Fails with a message naming the pair otherwise (a
/// rank without a CUDA device, or a build without CUDA).
Status pickDeviceTransport(const PeerInfo& self, const PeerInfo& peer, Transport** transport);

/// The transport whose name() is `name`, or nullptr.
Transport* findTransport(const char* name);

}  // namespace weft::transport
