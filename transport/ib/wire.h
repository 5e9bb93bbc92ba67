#pragma once
// What the ib transport exchanges to set up one connection, and the offers that steer its writes
// (fixed-size structs in host byte order: they travel between processes of one build).
//
//   receiver --IbBlob (bootstrap)--> sender: its queue pairs' addresses (NCCL_IB_QPS_PER_CONNECTION
//       of them, the receiver's value) and a TCP port for the setup channel with the nonce that
//       admits the sender there.
//   sender --Handshake (transport/handshake.h), then SenderInfo (TCP)--> receiver: as many queue
//       pair addresses, and its offer table (address, rkey).
// Queue pair i of one end connects to queue pair i of the other. From then on the receiver tells
// the sender where each post goes, as NCCL's receivers do: for post n it RDMA-writes an Offer
// (one of its slots, or a place in a registered user buffer, with the rkey) into entry
// n % slotCount of the sender's OfferTable, then the count of posts offered; both over queue
// pair 0, in that order. The sender writes post n where offer n says, one contiguous share per
// queue pair with write-with-immediate (every immediate is the post's payload size).
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
inline constexpr uint32_t kIbWireVersion = 2;
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
  int32_t queuePairCount = 1;
  QueuePairAddress queuePairs[kMaxQueuePairs];
  net::SocketAddress setupAddress;
};
static_assert(std::is_trivially_copyable_v<IbBlob>);

struct SenderInfo {
  uint64_t magic = kIbWireMagic;
  QueuePairAddress queuePairs[kMaxQueuePairs];  // the blob's queuePairCount of them
  uint64_t offerTableAddress = 0;  // its OfferTable
  uint32_t offerTableKey = 0;
  uint32_t reserved = 0;
};
static_assert(std::is_trivially_copyable_v<SenderInfo>);

/// Where the sender writes one post.
struct Offer {
  uint64_t address = 0;
  uint32_t key = 0;     // rkey of the memory at `address`
  uint32_t bytes = 0;   // room there
  uint64_t post = 0;    // which post it is for (n)
  uint64_t reserved = 0;
};
static_assert(sizeof(Offer) == 32);

/// The sender's offer table, written by the receiver only: at offset 0 the count of posts offered so
/// far (a uint64_t); from kOfferEntriesOffset the offer for post n as entry n % slotCount.
inline constexpr size_t kOfferEntriesOffset = 64;
inline constexpr size_t offerTableBytes(int slotCount) {
  return kOfferEntriesOffset + sizeof(Offer) * static_cast<size_t>(slotCount);
}

/// Serializes `blob` into *bytes (replacing its contents).
void encodeBlob(const IbBlob& blob, std::vector<uint8_t>* bytes);

/// Parses the blob the receiver (params.peer) published and checks that it belongs to this
/// connection (build, communicator, channel, receiver, slot geometry). Fails naming the peer.
Status decodeBlob(std::span<const uint8_t> bytes, const ConnectionParams& params, IbBlob* blob);

}  // namespace weft::transport::ib
