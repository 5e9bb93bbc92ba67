#pragma once
// The connections of one communicator: for each channel and peer, at most one sending and one
// receiving end. Connections are set up in two phases so that one thread can set up many
// communicators at once (ncclCommInitAll, groups): beginConnect creates every receiving end this
// rank needs and sends its blob to the peer over the bootstrap; finishConnect receives the blobs
// for this rank's sending ends and connects them. Between the two, no wait on a peer happens.

#include <map>
#include <memory>
#include <vector>

#include "src/base/peer_info.h"
#include "src/base/status.h"
#include "src/core/bootstrap.h"
#include "transport/transport.h"

namespace weft::core {

enum class Direction { kSend, kRecv };

/// Which buffers a table's connections serve: host memory (shm, socket) or GPU memory (cuda_ipc).
enum class ConnectionKind { kHost, kDevice };

struct ConnectionRequest {
  int channel = 0;
  int peer = 0;
  Direction direction = Direction::kSend;
};

/// What `rank` connects on rings (channel c is `rings[c]`, an order of every rank): on each, a
/// sending end to the next rank and a receiving end from the previous one.
std::vector<ConnectionRequest> ringNeighbourRequests(const std::vector<std::vector<int>>& rings, int rank);
/// What `rank` of `nranks` connects for the direct schedules (algorithms/direct_schedule.h) over
/// `nChannels` rings: towards each other rank a sending end and from it a receiving end on the
/// channel the collectives' lanes use (all-to-all, gather, scatter), and towards every rank, itself
/// included, both ends on the point-to-point channel Send and Recv use.
std::vector<ConnectionRequest> directPairRequests(int rank, int nranks, int nChannels);

class ConnectionTable {
 public:
  /// `peers` and `bootstrap` must outlive the table. `llSlotBytes`: each LL slot (0: no LL ring).
  /// `gpuSetupStream`: for a kDevice table, the stream its GPU transports prepare new ends on
  /// (transport::ConnectionParams); it must outlive the making of every connection.
  ConnectionTable(const std::vector<PeerInfo>* peers, int rank, Bootstrap* bootstrap, uint64_t commHash,
                  int nChannels, size_t slotBytes, int slotCount, size_t llSlotBytes,
                  ConnectionKind kind = ConnectionKind::kHost, void* gpuSetupStream = nullptr);
  ~ConnectionTable();

  /// The connected ends, or nullptr. Lock-free reads; used by the executor.
  transport::SendConnection* send(int channel, int peer) const { return sends_[index(channel, peer)].get(); }
  transport::RecvConnection* recv(int channel, int peer) const { return recvs_[index(channel, peer)].get(); }

  /// Phase 1: for each request not connected yet, receiving ends are created, then their blobs
  /// sent (a peer holding them knows this rank's allocations of the phase are over); sending ends
  /// are remembered for phase 2. Does not wait on peers.
  Status beginConnect(const std::vector<ConnectionRequest>& requests);
  /// Phase 2: receives the blobs for the sending ends of phase 1 and connects them. Blocks (through
  /// the bootstrap's wait context) until each peer's phase 1 has run.
  Status finishConnect();

  /// Ring channels; point-to-point channels follow them (channel nChannels() + c).
  int nChannels() const { return nChannels_; }
  size_t slotBytes() const { return slotBytes_; }
  /// Slots per connection: how many pieces a sender may post before its receiver takes one.
  int slotCount() const { return slotCount_; }
  /// Payload bytes of one piece of `kind` (an LL piece fits every transport's slots).
  size_t pieceBytes(transport::SlotKind kind) const {
    return kind == transport::SlotKind::kLowLatency && llSlotBytes_ > 0 ? transport::lowLatencyPayloadBytes(llSlotBytes_)
                                                                         : slotBytes_;
  }

 private:
  size_t index(int channel, int peer) const { return static_cast<size_t>(channel) * peers_->size() + peer; }

  const std::vector<PeerInfo>* peers_;
  int rank_;
  Bootstrap* bootstrap_;
  uint64_t commHash_;
  int nChannels_;
  size_t slotBytes_;
  int slotCount_;
  size_t llSlotBytes_;
  ConnectionKind kind_;
  void* gpuSetupStream_;
  std::vector<std::unique_ptr<transport::SendConnection>> sends_;
  std::vector<std::unique_ptr<transport::RecvConnection>> recvs_;
  std::vector<ConnectionRequest> pendingSends_;
  // For each transport that has network devices, the device of each ring channel
  // (channel_nics.h), found at its first connection; point-to-point channel nChannels + c uses
  // ring channel c's.
  std::map<const transport::Transport*, std::vector<int>> channelNetDevices_;

  transport::ConnectionParams paramsFor(transport::Transport* transport, int channel, int peer);
};

}  // namespace weft::core
