#pragma once
// What the ib transport exchanges to set up one connection (fixed-size structs in host byte
// order: they travel between processes of one build).
//
//   receiver --IbBlob (bootstrap)--> sender: its queue pairs' addresses (NCCL_IB_QPS_PER_CONNECTION
//       of them, the receiver's value), its slots (address, rkey), and a TCP port for the setup
//       channel with the nonce that admits the sender there.
//   sender --Handshake (transport/handshake.h), then SenderInfo (TCP)--> receiver: as many queue
//       pair addresses, and its credit word (address, rkey).
// Queue pair i of one end connects to queue pair i of the other. The receiver then connects its
// queue pairs and RDMA-writes its released count (0) to the credit word over queue pair 0: from
// then on the sender writes each slot with write-with-immediate, one contiguous share of it per
// queue pair (every immediate is the slot's payload size), and the receiver returns slots by
// writing the count again.

#include <infiniband/verbs.h>

#include <cstdint>
#include <span>
#include <type_traits>
#include <vector>

#include "src/base/socket.h"
#include "src/base/status.h"
#include "transport/transport.h"

namespace weft::transport::ib {

inline constexpr uint64_t kIbWireMagic = 0x3142494254464557ull;  // "WEFTBIB1" read little-endian
inline constexpr uint32_t kIbWireVersion = 1;
/// Queue pairs per connection, at most (NCCL_IB_QPS_PER_CONNECTION).
inline constexpr int kMaxQueuePairs = 8;

/// One end's queue pair, as its peer needs it to connect.
struct QueuePairAddress {
  uint32_t qpNumber = 0;
  uint32_t psn = 0;        // first packet sequence number, 24 bits
  uint16_t lid = 0;
  uint8_t linkLayer = 0;   // IBV_LINK_LAYER_*
  uint8_t mtu = 0;         // ibv_mtu: the port's active MTU
  uint8_t gid[16] = {};
};

struct IbBlob {
  uint64_t magic = kIbWireMagic;
  uint32_t version = kIbWireVersion;
  int32_t receiverRank = -1;
  uint64_t nonce = 0;
  uint64_t commHash = 0;
  int32_t channel = 0;
  int32_t slotCount = 0;
  uint64_t slotBytes = 0;
  uint64_t slotsAddress = 0;
  uint32_t slotsKey = 0;    // rkey of the slots
  int32_t queuePairCount = 1;
  QueuePairAddress queuePairs[kMaxQueuePairs];
  net::SocketAddress setupAddress;
};
static_assert(std::is_trivially_copyable_v<IbBlob>);

struct SenderInfo {
  uint64_t magic = kIbWireMagic;
  QueuePairAddress queuePairs[kMaxQueuePairs];  // the blob's queuePairCount of them
  uint64_t creditAddress = 0;
  uint32_t creditKey = 0;
  uint32_t reserved = 0;
};
static_assert(std::is_trivially_copyable_v<SenderInfo>);

/// Serializes `blob` into *bytes (replacing its contents).
void encodeBlob(const IbBlob& blob, std::vector<uint8_t>* bytes);

/// Parses the blob the receiver (params.peer) published and checks that it belongs to this
/// connection (build, communicator, channel, receiver, slot geometry). Fails naming the peer.
Status decodeBlob(std::span<const uint8_t> bytes, const ConnectionParams& params, IbBlob* blob);

}  // namespace weft::transport::ib
