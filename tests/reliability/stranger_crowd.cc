#include "tests/reliability/stranger_crowd.h"

#include <arpa/inet.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <random>
#include <thread>

namespace weft::reliability {
namespace {

// From src/core/bootstrap_wire.h: every integer little-endian.
constexpr uint32_t kMagic = 0x54464557;  // "WEFT"
constexpr uint8_t kVersion = 2;
constexpr uint8_t kRootHelloType = 1;
constexpr uint8_t kPeerHelloType = 3;
constexpr size_t kRootHelloBytes = 72;
constexpr size_t kPeerHelloBytes = 48;
constexpr size_t kIdSecretOffset = 8;
constexpr size_t kIdRootOffset = 40;
constexpr uint16_t kWireIpv4 = 4;
constexpr uint16_t kWireIpv6 = 6;
// From transport/socket/wire.h: host byte order (little-endian here).
constexpr uint64_t kTransportMagic = 0x31544b4f53544657ull;  // "WFTSOKT1"
constexpr uint32_t kTransportVersion = 1;
constexpr size_t kTransportHandshakeBytes = 40;

constexpr auto kConnectRetry = std::chrono::milliseconds(10);
constexpr size_t kFloodBytes = size_t{1} << 20;

/// What one stranger does once connected. The crowd cycles through them in this order.
enum class Behaviour {
  kSilent,           // sends nothing
  kGarbage,          // random bytes, more than a hello
  kHttpProbe,        // what a web scanner sends
  kTruncatedHello,   // the first half of a plausible hello, then silence
  kOversizedCounts,  // a hello announcing rank 2^32-2 of 2^32-1 ranks
  kHugeFrame,        // a rank's hello with a made-up secret, then a frame header of 2^62 bytes
  kWrongSecret,      // a plausible hello whose secret differs in one bit
  kFlood,            // 1 MiB of random bytes
  kHangUp,           // a few bytes, then close
  kReset,            // a few bytes, then an abortive close (RST)
};

constexpr Behaviour kBehaviours[] = {Behaviour::kSilent,       Behaviour::kGarbage,         Behaviour::kHttpProbe,
                                     Behaviour::kTruncatedHello, Behaviour::kOversizedCounts, Behaviour::kHugeFrame,
                                     Behaviour::kWrongSecret,  Behaviour::kFlood,           Behaviour::kHangUp,
                                     Behaviour::kReset};

const char* nameOf(Behaviour behaviour) {
  switch (behaviour) {
    case Behaviour::kSilent: return "silent";
    case Behaviour::kGarbage: return "garbage";
    case Behaviour::kHttpProbe: return "http probe";
    case Behaviour::kTruncatedHello: return "truncated hello";
    case Behaviour::kOversizedCounts: return "oversized counts";
    case Behaviour::kHugeFrame: return "huge frame";
    case Behaviour::kWrongSecret: return "wrong secret";
    case Behaviour::kFlood: return "flood";
    case Behaviour::kHangUp: return "hang-up";
    case Behaviour::kReset: return "reset";
  }
  return "?";
}

void putLittleEndian(std::vector<uint8_t>* out, uint64_t value, int bytes) {
  for (int i = 0; i < bytes; ++i) out->push_back(static_cast<uint8_t>(value >> (8 * i)));
}

uint64_t getLittleEndian(const uint8_t* in, int bytes) {
  uint64_t value = 0;
  for (int i = 0; i < bytes; ++i) value |= uint64_t{in[i]} << (8 * i);
  return value;
}

/// A socket transport handshake: magic, version, sender rank, then a nonce and communicator hash
/// drawn from `secret` (a stranger cannot know the real ones), channel 0.
std::vector<uint8_t> forgedTransportHandshake(const Secret& secret, uint32_t rank) {
  std::vector<uint8_t> bytes;
  putLittleEndian(&bytes, kTransportMagic, 8);
  putLittleEndian(&bytes, kTransportVersion, 4);
  putLittleEndian(&bytes, rank, 4);
  bytes.insert(bytes.end(), secret.begin(), secret.begin() + 16);
  putLittleEndian(&bytes, 0, 8);
  return bytes;
}

/// A hello of the port's kind: header, secret, rank and nranks, and for the root a listen address
/// (the loopback, port 9: nobody will be told about it).
std::vector<uint8_t> forgedHello(PortKind port, const Secret& secret, uint32_t rank, uint32_t nranks) {
  if (port == PortKind::kTransport) return forgedTransportHandshake(secret, rank);
  std::vector<uint8_t> bytes;
  putLittleEndian(&bytes, kMagic, 4);
  bytes.push_back(kVersion);
  bytes.push_back(port == PortKind::kRoot ? kRootHelloType : kPeerHelloType);
  putLittleEndian(&bytes, 0, 2);
  bytes.insert(bytes.end(), secret.begin(), secret.end());
  putLittleEndian(&bytes, rank, 4);
  putLittleEndian(&bytes, nranks, 4);
  if (port == PortKind::kRoot) {
    putLittleEndian(&bytes, kWireIpv4, 2);
    putLittleEndian(&bytes, 9, 2);
    putLittleEndian(&bytes, 0, 4);
    const uint8_t loopback[16] = {127, 0, 0, 1};
    bytes.insert(bytes.end(), loopback, loopback + 16);
  }
  return bytes;
}

std::vector<uint8_t> randomBytes(std::mt19937_64* random, size_t size) {
  std::vector<uint8_t> bytes(size);
  for (uint8_t& byte : bytes) byte = static_cast<uint8_t>((*random)());
  return bytes;
}

Secret alteredSecret(const Secret& secret, size_t byte) {
  Secret altered = secret;
  altered[byte] ^= 1;
  return altered;
}

std::vector<uint8_t> bytesOf(Behaviour behaviour, PortKind port, int nranks, const Secret& secret,
                             std::mt19937_64* random) {
  const uint32_t n = static_cast<uint32_t>(nranks);
  switch (behaviour) {
    case Behaviour::kSilent:
      return {};
    case Behaviour::kGarbage:
      return randomBytes(random, 200);
    case Behaviour::kHttpProbe: {
      std::string probe = "GET / HTTP/1.0\r\n\r\n";
      return std::vector<uint8_t>(probe.begin(), probe.end());
    }
    case Behaviour::kTruncatedHello: {
      std::vector<uint8_t> hello = forgedHello(port, secret, 0, n);
      hello.resize(hello.size() / 2);
      return hello;
    }
    case Behaviour::kOversizedCounts:
      return forgedHello(port, alteredSecret(secret, 5), 0xfffffffeu, 0xffffffffu);
    case Behaviour::kHugeFrame: {
      Secret madeUp{};
      std::vector<uint8_t> noise = randomBytes(random, madeUp.size());
      std::copy(noise.begin(), noise.end(), madeUp.begin());
      std::vector<uint8_t> bytes = forgedHello(PortKind::kRank, madeUp, 1, n);
      putLittleEndian(&bytes, 7, 4);
      putLittleEndian(&bytes, uint64_t{1} << 62, 8);
      return bytes;
    }
    case Behaviour::kWrongSecret:
      return forgedHello(port, alteredSecret(secret, 0), 0, n);
    case Behaviour::kFlood:
      return randomBytes(random, kFloodBytes);
    case Behaviour::kHangUp:
    case Behaviour::kReset:
      return randomBytes(random, 10);
  }
  return {};
}

std::string localAddressOf(int fd) {
  sockaddr_storage address{};
  socklen_t length = sizeof(address);
  if (getsockname(fd, reinterpret_cast<sockaddr*>(&address), &length) != 0) return "?";
  return addressText(address);
}

/// A blocking connect, retried while refused until `deadline`. Returns the fd or -1 with *error set.
int connectWithRetry(const ListeningSocket& target, std::chrono::steady_clock::time_point deadline,
                     std::string* error) {
  while (true) {
    int fd = socket(target.address.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) {
      *error = std::string("socket: ") + std::strerror(errno);
      return -1;
    }
    if (connect(fd, reinterpret_cast<const sockaddr*>(&target.address), target.length) == 0) return fd;
    int err = errno;
    close(fd);
    if (err != ECONNREFUSED || std::chrono::steady_clock::now() >= deadline) {
      *error = "connect to " + addressText(target.address) + ": " + std::strerror(err);
      return -1;
    }
    std::this_thread::sleep_for(kConnectRetry);
  }
}

/// Sends what the kernel takes now; a stranger does not wait for the far end to read.
void sendWithoutWaiting(int fd, const std::vector<uint8_t>& bytes) {
  size_t offset = 0;
  while (offset < bytes.size()) {
    ssize_t sent = send(fd, bytes.data() + offset, bytes.size() - offset, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (sent > 0) {
      offset += static_cast<size_t>(sent);
    } else if (sent < 0 && errno == EINTR) {
      continue;
    } else {
      return;
    }
  }
}

bool closedByFarEnd(int fd) {
  char byte;
  while (true) {
    ssize_t got = recv(fd, &byte, 1, MSG_DONTWAIT);
    if (got == 0) return true;
    if (got > 0) return false;  // the far end talks to a stranger: not closed
    if (errno == EINTR) continue;
    return errno != EAGAIN && errno != EWOULDBLOCK;
  }
}

}  // namespace

bool decodeIdRoot(const ncclUniqueId& id, IdRoot* out, std::string* why) {
  const auto* bytes = reinterpret_cast<const uint8_t*>(id.internal);
  if (getLittleEndian(bytes, 4) != kMagic || bytes[4] != kVersion) {
    *why = "the unique id does not start with Weft's magic and version";
    return false;
  }
  std::memcpy(out->secret.data(), bytes + kIdSecretOffset, out->secret.size());
  const uint8_t* address = bytes + kIdRootOffset;
  uint16_t family = static_cast<uint16_t>(getLittleEndian(address, 2));
  uint16_t port = static_cast<uint16_t>(getLittleEndian(address + 2, 2));
  out->root = ListeningSocket{};
  out->root.port = port;
  if (family == kWireIpv4) {
    auto* v4 = reinterpret_cast<sockaddr_in*>(&out->root.address);
    v4->sin_family = AF_INET;
    v4->sin_port = htons(port);
    std::memcpy(&v4->sin_addr, address + 8, 4);
    out->root.length = sizeof(sockaddr_in);
  } else if (family == kWireIpv6) {
    auto* v6 = reinterpret_cast<sockaddr_in6*>(&out->root.address);
    v6->sin6_family = AF_INET6;
    v6->sin6_port = htons(port);
    v6->sin6_scope_id = static_cast<uint32_t>(getLittleEndian(address + 4, 4));
    std::memcpy(&v6->sin6_addr, address + 8, 16);
    out->root.length = sizeof(sockaddr_in6);
  } else {
    *why = "the unique id's root address has family " + std::to_string(family);
    return false;
  }
  return true;
}

StrangerCrowd::~StrangerCrowd() {
  for (Stranger& stranger : strangers_) {
    if (stranger.fd >= 0) close(stranger.fd);
  }
}

std::string StrangerCrowd::join(const ListeningSocket& target, PortKind port, int count, int nranks,
                                const Secret& secret, std::chrono::seconds connectLimit) {
  std::mt19937_64 random(static_cast<uint64_t>(target.port) * 7919 + strangers_.size());
  const size_t helloBytes = port == PortKind::kRoot   ? kRootHelloBytes
                            : port == PortKind::kRank ? kPeerHelloBytes
                                                      : kTransportHandshakeBytes;
  const auto deadline = std::chrono::steady_clock::now() + connectLimit;
  for (int i = 0; i < count; ++i) {
    const Behaviour behaviour = kBehaviours[strangers_.size() % std::size(kBehaviours)];
    std::string error;
    int fd = connectWithRetry(target, deadline, &error);
    if (fd < 0) return "stranger " + std::to_string(i) + " (" + nameOf(behaviour) + "): " + error;
    Stranger stranger;
    stranger.behaviour = nameOf(behaviour);
    stranger.connection = {localAddressOf(fd), target.port};
    std::vector<uint8_t> bytes = bytesOf(behaviour, port, nranks, secret, &random);
    stranger.complete = bytes.size() >= helloBytes;
    sendWithoutWaiting(fd, bytes);
    if (behaviour == Behaviour::kReset) {
      linger abortive{1, 0};
      setsockopt(fd, SOL_SOCKET, SO_LINGER, &abortive, sizeof(abortive));
    }
    if (behaviour == Behaviour::kHangUp || behaviour == Behaviour::kReset) {
      close(fd);
      fd = -1;
    }
    stranger.fd = fd;
    strangers_.push_back(stranger);
  }
  return "";
}

std::string StrangerCrowd::waitUntilDropped(bool completeOnly, std::chrono::seconds limit) {
  const auto deadline = std::chrono::steady_clock::now() + limit;
  while (true) {
    std::string open;
    for (Stranger& stranger : strangers_) {
      if (stranger.fd < 0 || (completeOnly && !stranger.complete)) continue;
      if (closedByFarEnd(stranger.fd)) continue;
      open += (open.empty() ? "" : ", ") + stranger.behaviour + " from " + stranger.connection.local;
    }
    if (open.empty()) return "";
    if (std::chrono::steady_clock::now() >= deadline) {
      return "still connected after " + std::to_string(limit.count()) + " s: " + open;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}

std::vector<StrangerCrowd::Connection> StrangerCrowd::openConnections(bool completeOnly) const {
  std::vector<Connection> connections;
  for (const Stranger& stranger : strangers_) {
    if (stranger.fd >= 0 && (!completeOnly || stranger.complete)) connections.push_back(stranger.connection);
  }
  return connections;
}

int StrangerCrowd::madeBy(const Connection& connection) const {
  int count = 0;
  for (const Stranger& stranger : strangers_) count += stranger.connection == connection;
  return count;
}

}  // namespace weft::reliability
