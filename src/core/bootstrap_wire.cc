#include "src/core/bootstrap_wire.h"

#include <sys/random.h>

#include <cerrno>
#include <cstring>

namespace weft::core::wire {
namespace {

constexpr uint16_t kWireIpv4 = 4;
constexpr uint16_t kWireIpv6 = 6;

/// Appends little-endian integers and raw bytes to a fixed buffer.
class Writer {
 public:
  explicit Writer(uint8_t* out) : out_(out) {}
  void u8(uint8_t value) { out_[at_++] = value; }
  void u16(uint16_t value) { integer(value, 2); }
  void u32(uint32_t value) { integer(value, 4); }
  void u64(uint64_t value) { integer(value, 8); }
  void bytes(const void* data, size_t size) {
    memcpy(out_ + at_, data, size);
    at_ += size;
  }
  void header(MessageType type) {
    u32(kMagic);
    u8(kVersion);
    u8(static_cast<uint8_t>(type));
    u16(0);
  }

 private:
  void integer(uint64_t value, int size) {
    for (int i = 0; i < size; ++i) out_[at_++] = static_cast<uint8_t>(value >> (8 * i));
  }
  uint8_t* out_;
  size_t at_ = 0;
};

/// Reads what Writer wrote. The caller has checked the total size first.
class Reader {
 public:
  explicit Reader(std::span<const uint8_t> in) : in_(in) {}
  uint8_t u8() { return in_[at_++]; }
  uint16_t u16() { return static_cast<uint16_t>(integer(2)); }
  uint32_t u32() { return static_cast<uint32_t>(integer(4)); }
  uint64_t u64() { return integer(8); }
  void bytes(void* data, size_t size) {
    memcpy(data, in_.data() + at_, size);
    at_ += size;
  }
  std::span<const uint8_t> next(size_t size) {
    std::span<const uint8_t> part = in_.subspan(at_, size);
    at_ += size;
    return part;
  }

 private:
  uint64_t integer(int size) {
    uint64_t value = 0;
    for (int i = 0; i < size; ++i) value |= uint64_t{in_[at_++]} << (8 * i);
    return value;
  }
  std::span<const uint8_t> in_;
  size_t at_ = 0;
};

Status checkSize(std::span<const uint8_t> bytes, size_t expected, const char* what) {
  if (bytes.size() != expected) {
    return invalidArgument("%s has %zu bytes, expected %zu", what, bytes.size(), expected);
  }
  return Status::ok();
}

Status checkHeader(Reader* reader, MessageType type, const char* what) {
  uint32_t magic = reader->u32();
  uint8_t version = reader->u8();
  uint8_t actualType = reader->u8();
  uint16_t reserved = reader->u16();
  if (magic != kMagic) return invalidArgument("%s has magic 0x%08x, not Weft's 0x%08x", what, magic, kMagic);
  if (version != kVersion) {
    return invalidArgument("%s has version %u, this library speaks %u: all ranks must use the same Weft build",
                           what, version, kVersion);
  }
  if (actualType != static_cast<uint8_t>(type) || reserved != 0) {
    return invalidArgument("%s has type %u, expected %u", what, actualType, static_cast<unsigned>(type));
  }
  return Status::ok();
}

Status checkRank(uint32_t rank, uint32_t nranks, const char* what) {
  if (nranks == 0 || nranks > kMaxRanks || rank >= nranks) {
    return invalidArgument("%s announces rank %u of %u ranks", what, rank, nranks);
  }
  return Status::ok();
}

uint64_t mix64(uint64_t value) {
  value += 0x9e3779b97f4a7c15ull;
  value = (value ^ (value >> 30)) * 0xbf58476d1ce4e5b9ull;
  value = (value ^ (value >> 27)) * 0x94d049bb133111ebull;
  return value ^ (value >> 31);
}

}  // namespace

void encodeAddress(const net::SocketAddress& address, uint8_t* out) {
  Writer writer(out);
  uint8_t raw[16] = {};
  uint32_t scope = 0;
  uint16_t family = 0;
  if (address.family() == AF_INET) {
    family = kWireIpv4;
    memcpy(raw, &reinterpret_cast<const sockaddr_in*>(&address.storage)->sin_addr, 4);
  } else if (address.family() == AF_INET6) {
    family = kWireIpv6;
    const auto* v6 = reinterpret_cast<const sockaddr_in6*>(&address.storage);
    memcpy(raw, &v6->sin6_addr, 16);
    scope = v6->sin6_scope_id;
  }
  writer.u16(family);
  writer.u16(address.port());
  writer.u32(scope);
  writer.bytes(raw, sizeof(raw));
}

Status parseAddress(std::span<const uint8_t> bytes, net::SocketAddress* out) {
  WEFT_RETURN_IF_ERROR(checkSize(bytes, kAddressBytes, "an address"));
  Reader reader(bytes);
  uint16_t family = reader.u16();
  uint16_t port = reader.u16();
  uint32_t scope = reader.u32();
  uint8_t raw[16];
  reader.bytes(raw, sizeof(raw));
  net::SocketAddress address;
  if (family == kWireIpv4) {
    static constexpr uint8_t kZeros[12] = {};
    if (scope != 0 || memcmp(raw + 4, kZeros, sizeof(kZeros)) != 0) {
      return invalidArgument("an IPv4 address has non-zero padding");
    }
    auto* v4 = reinterpret_cast<sockaddr_in*>(&address.storage);
    v4->sin_family = AF_INET;
    memcpy(&v4->sin_addr, raw, 4);
    address.length = sizeof(sockaddr_in);
  } else if (family == kWireIpv6) {
    auto* v6 = reinterpret_cast<sockaddr_in6*>(&address.storage);
    v6->sin6_family = AF_INET6;
    memcpy(&v6->sin6_addr, raw, 16);
    v6->sin6_scope_id = scope;
    address.length = sizeof(sockaddr_in6);
  } else {
    return invalidArgument("an address has unknown family %u", family);
  }
  address.setPort(port);
  *out = address;
  return Status::ok();
}

void encodeUniqueId(const IdContents& contents, UniqueId* id) {
  id->bytes.fill(0);
  Writer writer(id->bytes.data());
  writer.u32(kMagic);
  writer.u8(kVersion);
  writer.u8(static_cast<uint8_t>(contents.kind));
  writer.u16(0);
  writer.bytes(contents.secret.data(), kSecretBytes);
  encodeAddress(contents.root, id->bytes.data() + 8 + kSecretBytes);
}

Status parseUniqueId(const UniqueId& id, IdContents* out) {
  Reader reader(id.bytes);
  uint32_t magic = reader.u32();
  uint8_t version = reader.u8();
  uint8_t kind = reader.u8();
  uint16_t reserved = reader.u16();
  if (magic != kMagic || reserved != 0) {
    return invalidArgument("the unique id was not made by ncclGetUniqueId of Weft (magic 0x%08x): pass every rank "
                           "the id that one ncclGetUniqueId call returned", magic);
  }
  if (version != kVersion) {
    return invalidArgument("the unique id has version %u, this library speaks %u: all ranks must use the same Weft "
                           "build", version, kVersion);
  }
  if (kind != static_cast<uint8_t>(IdKind::kRootInProcess) && kind != static_cast<uint8_t>(IdKind::kCommId)) {
    return invalidArgument("the unique id has unknown kind %u", kind);
  }
  IdContents contents;
  contents.kind = static_cast<IdKind>(kind);
  reader.bytes(contents.secret.data(), kSecretBytes);
  WEFT_RETURN_IF_ERROR(parseAddress(reader.next(kAddressBytes), &contents.root).withContext("the unique id"));
  *out = contents;
  return Status::ok();
}

std::array<uint8_t, kRootHelloBytes> encodeRootHello(const RootHello& hello) {
  std::array<uint8_t, kRootHelloBytes> bytes{};
  Writer writer(bytes.data());
  writer.header(MessageType::kRootHello);
  writer.bytes(hello.secret.data(), kSecretBytes);
  writer.u32(hello.rank);
  writer.u32(hello.nranks);
  encodeAddress(hello.listenAddress, bytes.data() + kRootHelloBytes - kAddressBytes);
  return bytes;
}

Status parseRootHello(std::span<const uint8_t> bytes, RootHello* out) {
  WEFT_RETURN_IF_ERROR(checkSize(bytes, kRootHelloBytes, "a root hello"));
  Reader reader(bytes);
  WEFT_RETURN_IF_ERROR(checkHeader(&reader, MessageType::kRootHello, "a root hello"));
  RootHello hello;
  reader.bytes(hello.secret.data(), kSecretBytes);
  hello.rank = reader.u32();
  hello.nranks = reader.u32();
  WEFT_RETURN_IF_ERROR(checkRank(hello.rank, hello.nranks, "a root hello"));
  WEFT_RETURN_IF_ERROR(parseAddress(reader.next(kAddressBytes), &hello.listenAddress).withContext("a root hello"));
  if (hello.listenAddress.port() == 0) return invalidArgument("a root hello announces a listen address with port 0");
  *out = hello;
  return Status::ok();
}

std::array<uint8_t, kWelcomeBytes> encodeWelcome(uint32_t rank, uint32_t nranks) {
  std::array<uint8_t, kWelcomeBytes> bytes{};
  Writer writer(bytes.data());
  writer.header(MessageType::kWelcome);
  writer.u32(rank);
  writer.u32(nranks);
  return bytes;
}

Status parseWelcome(std::span<const uint8_t> bytes, uint32_t rank, uint32_t nranks) {
  WEFT_RETURN_IF_ERROR(checkSize(bytes, kWelcomeBytes, "a welcome"));
  Reader reader(bytes);
  WEFT_RETURN_IF_ERROR(checkHeader(&reader, MessageType::kWelcome, "a welcome"));
  const uint32_t welcomedRank = reader.u32();
  const uint32_t welcomedNranks = reader.u32();
  if (welcomedRank != rank || welcomedNranks != nranks) {
    return invalidArgument("the welcome is for rank %u of %u, this is rank %u of %u", welcomedRank, welcomedNranks,
                           rank, nranks);
  }
  return Status::ok();
}

std::array<uint8_t, kTableHeaderBytes> encodeTableHeader(uint32_t nranks) {
  std::array<uint8_t, kTableHeaderBytes> bytes{};
  Writer writer(bytes.data());
  writer.header(MessageType::kTable);
  writer.u32(nranks);
  return bytes;
}

Status parseTableHeader(std::span<const uint8_t> bytes, uint32_t expectedNranks) {
  WEFT_RETURN_IF_ERROR(checkSize(bytes, kTableHeaderBytes, "a rank table"));
  Reader reader(bytes);
  WEFT_RETURN_IF_ERROR(checkHeader(&reader, MessageType::kTable, "a rank table"));
  uint32_t nranks = reader.u32();
  if (nranks != expectedNranks) {
    return invalidArgument("the rank table is for %u ranks, this rank expects %u", nranks, expectedNranks);
  }
  return Status::ok();
}

std::array<uint8_t, kPeerHelloBytes> encodePeerHello(const PeerHello& hello) {
  std::array<uint8_t, kPeerHelloBytes> bytes{};
  Writer writer(bytes.data());
  writer.header(MessageType::kPeerHello);
  writer.bytes(hello.secret.data(), kSecretBytes);
  writer.u32(hello.rank);
  writer.u32(hello.nranks);
  return bytes;
}

Status parsePeerHello(std::span<const uint8_t> bytes, PeerHello* out) {
  WEFT_RETURN_IF_ERROR(checkSize(bytes, kPeerHelloBytes, "a peer hello"));
  Reader reader(bytes);
  WEFT_RETURN_IF_ERROR(checkHeader(&reader, MessageType::kPeerHello, "a peer hello"));
  PeerHello hello;
  reader.bytes(hello.secret.data(), kSecretBytes);
  hello.rank = reader.u32();
  hello.nranks = reader.u32();
  WEFT_RETURN_IF_ERROR(checkRank(hello.rank, hello.nranks, "a peer hello"));
  *out = hello;
  return Status::ok();
}

std::array<uint8_t, kFrameHeaderBytes> encodeFrameHeader(const FrameHeader& header) {
  std::array<uint8_t, kFrameHeaderBytes> bytes{};
  Writer writer(bytes.data());
  writer.u32(header.tag);
  writer.u64(header.size);
  return bytes;
}

Status parseFrameHeader(std::span<const uint8_t> bytes, FrameHeader* out) {
  WEFT_RETURN_IF_ERROR(checkSize(bytes, kFrameHeaderBytes, "a frame header"));
  Reader reader(bytes);
  FrameHeader header;
  header.tag = reader.u32();
  header.size = reader.u64();
  if (header.size > kMaxFrameBytes) {
    return invalidArgument("a frame announces %llu bytes, more than the limit of %llu",
                           static_cast<unsigned long long>(header.size),
                           static_cast<unsigned long long>(kMaxFrameBytes));
  }
  *out = header;
  return Status::ok();
}

bool secretsEqual(const Secret& a, const Secret& b) {
  uint8_t difference = 0;
  for (size_t i = 0; i < kSecretBytes; ++i) difference |= static_cast<uint8_t>(a[i] ^ b[i]);
  return difference == 0;
}

Status randomSecret(Secret* out) {
  size_t filled = 0;
  while (filled < kSecretBytes) {
    ssize_t got = getrandom(out->data() + filled, kSecretBytes - filled, 0);
    if (got < 0) {
      if (errno == EINTR) continue;
      return errnoStatus(errno, "cannot draw the bootstrap secret from the kernel (getrandom)");
    }
    filled += static_cast<size_t>(got);
  }
  return Status::ok();
}

Secret secretFromText(const std::string& text) {
  // FNV-1a over the text, then four rounds of a 64-bit finalizer, one per 8 output bytes.
  uint64_t hash = 0xcbf29ce484222325ull;
  for (unsigned char c : text) hash = (hash ^ c) * 0x100000001b3ull;
  hash ^= text.size();
  Secret secret{};
  for (size_t word = 0; word < kSecretBytes / 8; ++word) {
    hash = mix64(hash + word);
    for (int i = 0; i < 8; ++i) secret[word * 8 + i] = static_cast<uint8_t>(hash >> (8 * i));
  }
  return secret;
}

}  // namespace weft::core::wire
