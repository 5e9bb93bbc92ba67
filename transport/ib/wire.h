#pragma once
// What the ib transport exchanges to set up one connection (fixed-size structs in host byte
// order: they travel between processes of one build).
//
//   receiver --IbBlob (bootstrap)--> sender: its queue pair's address, its slots (address, rkey),
//       and a TCP port for the setup channel with the nonce that admits the sender there.
//   sender --Handshake (transport/handshake.h), then SenderInfo (TCP)--> receiver: its queue
//       pair's address and its credit word (address, rkey).
// The receiver then connects its queue pair, posts its receives and RDMA-writes its released
// count (0) to the credit word: from then on the sender writes slots with write-with-immediate
// (the immediate is the payload size) and the receiver returns them by writing the count again.

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
  uint32_t reserved = 0;
  QueuePairAddress queuePair;
  net::SocketAddress setupAddress;
};
static_assert(std::is_trivially_copyable_v<IbBlob>);

struct SenderInfo {
  uint64_t magic = kIbWireMagic;
  QueuePairAddress queuePair;
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
