#pragma once
// What the socket transport puts on the wire.
//
// Setup: the receiver's listen() publishes a ListenBlob (through the bootstrap); the sender
// connects to blob.address and first sends a Handshake (transport/handshake.h) that repeats the
// blob's nonce. The blob is a fixed-size struct in host byte order: it travels between processes
// of one build.
//
// Data: a stream of frames, one per posted slot:
//   [uint64 payload size, little-endian][payload: size bytes, 0 <= size <= slotBytes]

#include <endian.h>

#include <cstddef>
#include <cstdint>
#include <span>
#include <type_traits>
#include <vector>

#include "src/base/socket.h"
#include "src/base/status.h"
#include "transport/handshake.h"
#include "transport/transport.h"

namespace weft::transport::socket {

inline constexpr uint64_t kWireMagic = 0x31544b4f53544657ull;  // "WFTSOKT1" read little-endian
inline constexpr uint32_t kWireVersion = 1;
inline constexpr size_t kFrameHeaderBytes = sizeof(uint64_t);

/// Written by the receiving end's listen(), read by the sending end's connect().
struct ListenBlob {
  uint64_t magic = kWireMagic;
  uint32_t version = kWireVersion;
  int32_t receiverRank = -1;
  uint64_t nonce = 0;
  uint64_t commHash = 0;
  int32_t channel = 0;
  uint32_t reserved = 0;
  net::SocketAddress address;
};
static_assert(std::is_trivially_copyable_v<ListenBlob>);

/// Serializes `blob` into *bytes (replacing its contents).
void encodeBlob(const ListenBlob& blob, std::vector<uint8_t>* bytes);

/// Parses the blob the receiver (params.peer) published, and checks that it belongs to this
/// connection: same build, communicator, channel and receiver rank. Fails naming the peer.
Status decodeBlob(std::span<const uint8_t> bytes, const ConnectionParams& params, ListenBlob* blob);

/// The frame header for a payload of `size` bytes, in wire byte order.
inline uint64_t encodeFrameHeader(uint64_t size) { return htole64(size); }
/// The payload size a frame header (in wire byte order) announces.
inline uint64_t decodeFrameHeader(uint64_t header) { return le64toh(header); }

}  // namespace weft::transport::socket
