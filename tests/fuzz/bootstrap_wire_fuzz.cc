// Fuzzes the bootstrap's wire format (src/core/bootstrap_wire.h), the bytes a stranger can send to
// a root or a rank. Every input goes
//  - to every parser, whole and cut to the parser's size: none may crash, and whatever a parser
//    accepts must encode back to exactly the bytes it read (the format has one spelling per value);
//  - into one value of every message, read from the input: encoding it and parsing the bytes must
//    succeed exactly when the value is valid, and give the value back.
#include <arpa/inet.h>

#include <cstring>
#include <span>
#include <string>

#include "src/core/bootstrap_wire.h"
#include "tests/fuzz/fuzz_input.h"
#include "tests/fuzz/fuzz_target.h"

namespace weft::core::wire {
namespace {

using fuzz::FuzzInput;
using fuzz::requireProperty;
using Bytes = std::span<const uint8_t>;

/// The rank count a table header and a welcome are checked against, and the welcome's rank.
constexpr uint32_t kTableRanks = 4;
constexpr uint32_t kWelcomeRank = 1;

bool sameBytes(Bytes a, Bytes b) { return a.size() == b.size() && memcmp(a.data(), b.data(), a.size()) == 0; }

// Parsed and hand-made addresses start from zeroed storage, so equal addresses are equal bytes.
bool sameAddress(const net::SocketAddress& a, const net::SocketAddress& b) {
  return a.length == b.length && memcmp(&a.storage, &b.storage, sizeof(a.storage)) == 0;
}

bool sameSecret(const Secret& a, const Secret& b) {
  const bool equal = memcmp(a.data(), b.data(), a.size()) == 0;
  requireProperty(secretsEqual(a, b) == equal, "secretsEqual agrees with memcmp");
  return equal;
}

net::SocketAddress readAddress(FuzzInput* input) {
  net::SocketAddress address;
  if (input->u8() % 2 == 0) {
    auto* v4 = reinterpret_cast<sockaddr_in*>(&address.storage);
    v4->sin_family = AF_INET;
    input->bytes(&v4->sin_addr, 4);
    address.length = sizeof(sockaddr_in);
  } else {
    auto* v6 = reinterpret_cast<sockaddr_in6*>(&address.storage);
    v6->sin6_family = AF_INET6;
    input->bytes(&v6->sin6_addr, 16);
    v6->sin6_scope_id = input->u32();
    address.length = sizeof(sockaddr_in6);
  }
  address.setPort(input->u16());
  return address;
}

Secret readSecret(FuzzInput* input) {
  Secret secret;
  input->bytes(secret.data(), secret.size());
  return secret;
}

bool validRank(uint32_t rank, uint32_t nranks) { return nranks > 0 && nranks <= kMaxRanks && rank < nranks; }

// Parsers on arbitrary bytes.

void parseAddressBytes(Bytes bytes) {
  net::SocketAddress address;
  if (!parseAddress(bytes, &address).isOk()) return;
  uint8_t encoded[kAddressBytes];
  encodeAddress(address, encoded);
  requireProperty(sameBytes(encoded, bytes), "an accepted address encodes back to its bytes");
}

void parseUniqueIdBytes(Bytes bytes) {
  UniqueId id;
  memcpy(id.bytes.data(), bytes.data(), std::min(bytes.size(), id.bytes.size()));
  IdContents contents;
  if (!parseUniqueId(id, &contents).isOk()) return;
  UniqueId encoded;
  encodeUniqueId(contents, &encoded);
  // The bytes after the root address are not read.
  constexpr size_t kUsedBytes = 8 + kSecretBytes + kAddressBytes;
  requireProperty(sameBytes(Bytes(encoded.bytes).first(kUsedBytes), Bytes(id.bytes).first(kUsedBytes)),
                  "an accepted unique id encodes back to its bytes");
}

void parseRootHelloBytes(Bytes bytes) {
  RootHello hello;
  if (!parseRootHello(bytes, &hello).isOk()) return;
  requireProperty(validRank(hello.rank, hello.nranks), "an accepted root hello has rank < nranks <= kMaxRanks");
  requireProperty(hello.listenAddress.port() != 0, "an accepted root hello has a listen port");
  requireProperty(sameBytes(encodeRootHello(hello), bytes), "an accepted root hello encodes back to its bytes");
}

void parseTableHeaderBytes(Bytes bytes) {
  if (!parseTableHeader(bytes, kTableRanks).isOk()) return;
  requireProperty(sameBytes(encodeTableHeader(kTableRanks), bytes), "an accepted table header is the encoded one");
}

void parseWelcomeBytes(Bytes bytes) {
  if (!parseWelcome(bytes, kWelcomeRank, kTableRanks).isOk()) return;
  requireProperty(sameBytes(encodeWelcome(kWelcomeRank, kTableRanks), bytes), "an accepted welcome is the encoded one");
}

void parsePeerHelloBytes(Bytes bytes) {
  PeerHello hello;
  if (!parsePeerHello(bytes, &hello).isOk()) return;
  requireProperty(validRank(hello.rank, hello.nranks), "an accepted peer hello has rank < nranks <= kMaxRanks");
  requireProperty(sameBytes(encodePeerHello(hello), bytes), "an accepted peer hello encodes back to its bytes");
}

void parseFrameHeaderBytes(Bytes bytes) {
  FrameHeader header;
  if (!parseFrameHeader(bytes, &header).isOk()) return;
  requireProperty(header.size <= kMaxFrameBytes, "an accepted frame is within kMaxFrameBytes");
  requireProperty(sameBytes(encodeFrameHeader(header), bytes), "an accepted frame header encodes back to its bytes");
}

/// Every parser on the whole input (mostly the wrong size) and on its first bytes.
void parseEverything(Bytes bytes) {
  auto prefix = [&](size_t size) { return bytes.first(std::min(size, bytes.size())); };
  parseAddressBytes(bytes);
  parseAddressBytes(prefix(kAddressBytes));
  parseUniqueIdBytes(bytes);
  parseRootHelloBytes(bytes);
  parseRootHelloBytes(prefix(kRootHelloBytes));
  parseTableHeaderBytes(bytes);
  parseTableHeaderBytes(prefix(kTableHeaderBytes));
  parseWelcomeBytes(bytes);
  parseWelcomeBytes(prefix(kWelcomeBytes));
  parsePeerHelloBytes(bytes);
  parsePeerHelloBytes(prefix(kPeerHelloBytes));
  parseFrameHeaderBytes(bytes);
  parseFrameHeaderBytes(prefix(kFrameHeaderBytes));
}

// Values read from the input, encoded, then parsed.

void roundTripAddress(FuzzInput* input) {
  const net::SocketAddress address = readAddress(input);
  uint8_t encoded[kAddressBytes];
  encodeAddress(address, encoded);
  net::SocketAddress back;
  requireProperty(parseAddress(encoded, &back).isOk(), "an encoded address parses");
  requireProperty(sameAddress(back, address), "an address survives encode then parse");
}

void roundTripUniqueId(FuzzInput* input) {
  IdContents contents;
  const uint8_t kind = input->u8();
  contents.kind = static_cast<IdKind>(kind);
  contents.secret = readSecret(input);
  contents.root = readAddress(input);
  UniqueId id;
  encodeUniqueId(contents, &id);
  IdContents back;
  const bool parsed = parseUniqueId(id, &back).isOk();
  const bool knownKind = kind == static_cast<uint8_t>(IdKind::kRootInProcess) ||
                         kind == static_cast<uint8_t>(IdKind::kCommId);
  requireProperty(parsed == knownKind, "an encoded unique id parses exactly when its kind is known");
  if (!parsed) return;
  requireProperty(back.kind == contents.kind && sameSecret(back.secret, contents.secret) &&
                      sameAddress(back.root, contents.root),
                  "a unique id survives encode then parse");
}

void roundTripRootHello(FuzzInput* input) {
  RootHello hello;
  hello.secret = readSecret(input);
  hello.rank = input->u32();
  hello.nranks = input->u32();
  hello.listenAddress = readAddress(input);
  RootHello back;
  const bool parsed = parseRootHello(encodeRootHello(hello), &back).isOk();
  requireProperty(parsed == (validRank(hello.rank, hello.nranks) && hello.listenAddress.port() != 0),
                  "an encoded root hello parses exactly when its rank and port are valid");
  if (!parsed) return;
  requireProperty(sameSecret(back.secret, hello.secret) && back.rank == hello.rank && back.nranks == hello.nranks &&
                      sameAddress(back.listenAddress, hello.listenAddress),
                  "a root hello survives encode then parse");
}

void roundTripTableHeader(FuzzInput* input) {
  const uint32_t nranks = input->u32();
  const uint32_t expected = input->u8() % 2 == 0 ? nranks : input->u32();
  const bool parsed = parseTableHeader(encodeTableHeader(nranks), expected).isOk();
  requireProperty(parsed == (nranks == expected), "an encoded table header parses exactly for its rank count");
}

void roundTripWelcome(FuzzInput* input) {
  const uint32_t rank = input->u32();
  const uint32_t nranks = input->u32();
  const bool same = input->u8() % 2 == 0;
  const uint32_t expectedRank = same ? rank : input->u32();
  const uint32_t expectedNranks = same ? nranks : input->u32();
  const bool parsed = parseWelcome(encodeWelcome(rank, nranks), expectedRank, expectedNranks).isOk();
  requireProperty(parsed == (rank == expectedRank && nranks == expectedNranks),
                  "an encoded welcome parses exactly for its rank and rank count");
}

void roundTripPeerHello(FuzzInput* input) {
  PeerHello hello;
  hello.secret = readSecret(input);
  hello.rank = input->u32();
  hello.nranks = input->u32();
  PeerHello back;
  const bool parsed = parsePeerHello(encodePeerHello(hello), &back).isOk();
  requireProperty(parsed == validRank(hello.rank, hello.nranks),
                  "an encoded peer hello parses exactly when its rank is valid");
  if (!parsed) return;
  requireProperty(sameSecret(back.secret, hello.secret) && back.rank == hello.rank && back.nranks == hello.nranks,
                  "a peer hello survives encode then parse");
}

void roundTripFrameHeader(FuzzInput* input) {
  FrameHeader header;
  header.tag = input->u32();
  // Half of the sizes near the limit, where an off-by-one would hide.
  const uint64_t raw = input->u64();
  header.size = input->u8() % 2 == 0 ? raw : kMaxFrameBytes - 2 + raw % 4;
  FrameHeader back;
  const bool parsed = parseFrameHeader(encodeFrameHeader(header), &back).isOk();
  requireProperty(parsed == (header.size <= kMaxFrameBytes), "an encoded frame header parses exactly within the limit");
  if (!parsed) return;
  requireProperty(back.tag == header.tag && back.size == header.size, "a frame header survives encode then parse");
}

void deriveSecret(FuzzInput* input) {
  Bytes text = input->take(input->u8());
  const std::string asString(text.begin(), text.end());
  requireProperty(sameSecret(secretFromText(asString), secretFromText(asString)),
                  "secretFromText is a function of its text");
}

}  // namespace
}  // namespace weft::core::wire

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace weft::core::wire;
  parseEverything(Bytes(data, size));
  weft::fuzz::FuzzInput input(data, size);
  roundTripAddress(&input);
  roundTripUniqueId(&input);
  roundTripRootHello(&input);
  roundTripTableHeader(&input);
  roundTripWelcome(&input);
  roundTripPeerHello(&input);
  roundTripFrameHeader(&input);
  deriveSecret(&input);
  return 0;
}
