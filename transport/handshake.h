#pragma once
// The first bytes a sending end writes on a new TCP connection to its receiver's listening port
// (the socket transport's data stream, the ib transport's setup channel). It repeats the nonce
// the receiver published in its blob, so the receiver can tell its sender from any other process
// that reaches the port (transport/acceptor.h). A fixed-size struct in host byte order: it
// travels between processes of one build.

#include <cstdint>
#include <type_traits>

#include "transport/transport.h"

namespace weft::transport {

inline constexpr uint64_t kHandshakeMagic = 0x31544b4f53544657ull;  // "WFTSOKT1" read little-endian
inline constexpr uint32_t kHandshakeVersion = 1;

struct Handshake {
  uint64_t magic = kHandshakeMagic;
  uint32_t version = kHandshakeVersion;
  int32_t senderRank = -1;
  uint64_t nonce = 0;
  uint64_t commHash = 0;
  int32_t channel = 0;
  uint32_t reserved = 0;
};
static_assert(std::is_trivially_copyable_v<Handshake>);
static_assert(sizeof(Handshake) == 40);

/// The handshake of the connection `params` describes, sent by rank `senderRank` with the nonce of
/// the receiver's blob: what the sender presents and what the receiver expects.
inline Handshake makeHandshake(int senderRank, uint64_t nonce, const ConnectionParams& params) {
  Handshake handshake;
  handshake.senderRank = senderRank;
  handshake.nonce = nonce;
  handshake.commHash = params.commHash;
  handshake.channel = params.channel;
  return handshake;
}

/// True if `received` is exactly `expected` (every field, reserved included).
inline bool handshakeMatches(const Handshake& received, const Handshake& expected) {
  return received.magic == expected.magic && received.version == expected.version &&
         received.senderRank == expected.senderRank && received.nonce == expected.nonce &&
         received.commHash == expected.commHash && received.channel == expected.channel &&
         received.reserved == expected.reserved;
}

}  // namespace weft::transport
