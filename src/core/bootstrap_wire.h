#pragma once
// The bytes of the bootstrap: the unique id, the messages between a rank and the root, and the
// messages between two ranks. Every integer is little-endian; every message a stranger can send
// has a fixed size, so no size read from the wire decides what is read or allocated before the
// sender is authenticated. The parsers are pure functions (no I/O), callable from a fuzzer.
//
//   address  (24 B)  family u16 (4 or 6) | port u16 | IPv6 scope id u32 | address 16 B (IPv4: first 4)
//   unique id (128 B) magic u32 | version u8 | kind u8 | 0 u16 | secret 32 B | root address 24 B | 0...
//   root hello (72 B, rank -> root)  magic u32 | version u8 | type 1 u8 | 0 u16 | secret 32 B |
//                                    rank u32 | nranks u32 | the rank's listen address 24 B
//   welcome   (16 B, root -> rank, once the root has admitted the rank's hello)  magic u32 |
//                                    version u8 | type 4 u8 | 0 u16 | rank u32 | nranks u32
//   table     (12 B + nranks * 24 B, root -> rank)  magic u32 | version u8 | type 2 u8 | 0 u16 |
//                                    nranks u32 | then each rank's listen address, in rank order
//   peer hello (48 B, first bytes of a rank -> rank connection)  magic u32 | version u8 |
//                                    type 3 u8 | 0 u16 | secret 32 B | rank u32 | nranks u32
//   frame     (12 B + size, every later message on that connection)  tag u32 | size u64 | payload

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>

#include "src/base/socket.h"
#include "src/base/status.h"
#include "src/core/bootstrap.h"

namespace weft::core::wire {

inline constexpr uint32_t kMagic = 0x54464557;  // "WEFT" in little-endian bytes
inline constexpr uint8_t kVersion = 2;  // 2: the root welcomes each rank it admits
inline constexpr size_t kSecretBytes = 32;
inline constexpr size_t kAddressBytes = 24;
inline constexpr size_t kRootHelloBytes = 72;
inline constexpr size_t kWelcomeBytes = 16;
inline constexpr size_t kTableHeaderBytes = 12;
inline constexpr size_t kPeerHelloBytes = 48;
inline constexpr size_t kFrameHeaderBytes = 12;
/// The largest rank count a hello may announce (bounds what the root allocates).
inline constexpr uint32_t kMaxRanks = 1u << 20;
/// The largest payload of one frame from an authenticated peer.
inline constexpr uint64_t kMaxFrameBytes = uint64_t{1} << 32;

using Secret = std::array<uint8_t, kSecretBytes>;

enum class IdKind : uint8_t {
  kRootInProcess = 1,  ///< the process that made the id runs the root
  kCommId = 2,         ///< NCCL_COMM_ID: rank 0 hosts the root at the id's address
};

enum class MessageType : uint8_t { kRootHello = 1, kTable = 2, kPeerHello = 3, kWelcome = 4 };

struct IdContents {
  IdKind kind = IdKind::kRootInProcess;
  Secret secret{};
  net::SocketAddress root;
};

struct RootHello {
  Secret secret{};
  uint32_t rank = 0;
  uint32_t nranks = 0;
  net::SocketAddress listenAddress;
};

struct PeerHello {
  Secret secret{};
  uint32_t rank = 0;
  uint32_t nranks = 0;
};

struct FrameHeader {
  uint32_t tag = 0;
  uint64_t size = 0;
};

/// Writes an IPv4/IPv6 address into kAddressBytes bytes.
void encodeAddress(const net::SocketAddress& address, uint8_t* out);
/// Reads kAddressBytes bytes; fails on an unknown family or non-zero padding.
Status parseAddress(std::span<const uint8_t> bytes, net::SocketAddress* out);

void encodeUniqueId(const IdContents& contents, UniqueId* id);
/// Fails when the id was not made by createUniqueId of this version.
Status parseUniqueId(const UniqueId& id, IdContents* out);

std::array<uint8_t, kRootHelloBytes> encodeRootHello(const RootHello& hello);
/// Checks the size, magic, version, type, rank < nranks <= kMaxRanks and the address; the
/// secret is left to the caller.
Status parseRootHello(std::span<const uint8_t> bytes, RootHello* out);

std::array<uint8_t, kWelcomeBytes> encodeWelcome(uint32_t rank, uint32_t nranks);
/// Checks the size, magic, version, type, and that the welcome is for `rank` of `nranks`.
Status parseWelcome(std::span<const uint8_t> bytes, uint32_t rank, uint32_t nranks);

std::array<uint8_t, kTableHeaderBytes> encodeTableHeader(uint32_t nranks);
/// Checks the size, magic, version, type, and that the table is for `expectedNranks` ranks.
Status parseTableHeader(std::span<const uint8_t> bytes, uint32_t expectedNranks);

std::array<uint8_t, kPeerHelloBytes> encodePeerHello(const PeerHello& hello);
/// Checks the size, magic, version, type and rank < nranks <= kMaxRanks; not the secret.
Status parsePeerHello(std::span<const uint8_t> bytes, PeerHello* out);

std::array<uint8_t, kFrameHeaderBytes> encodeFrameHeader(const FrameHeader& header);
/// Checks the size and that the payload is at most kMaxFrameBytes.
Status parseFrameHeader(std::span<const uint8_t> bytes, FrameHeader* out);

/// Compares in time independent of where the secrets differ.
bool secretsEqual(const Secret& a, const Secret& b);
/// 32 bytes from the kernel's random source (getrandom).
Status randomSecret(Secret* out);
/// Stretches a text (WEFT_COMM_SECRET, or a fixed text when unset) to 32 bytes. A simple,
/// non-cryptographic mix: it keeps strangers and other jobs out, not an informed attacker.
Secret secretFromText(const std::string& text);

}  // namespace weft::core::wire
