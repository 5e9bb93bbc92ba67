// Fuzzes what a rank reads from other ranks' bootstrap connections: the inbound side of
// SocketBootstrap (accept, hello, then frames) through real stream sockets of this process.
//
// The input:   recvs u8 | then (1 + recvs % kMaxRecvs) requests: peer u8 | tag u32 | size u16
//              | then up to kMaxConnections connections: flags u8 | length u16 | `length` bytes
// Every connection is made to rank 0 of kRanks and written before rank 0 reads anything. Its bytes
// follow a valid hello of rank (flags >> 1) % 4 made here, or with flags & 1 they are the whole
// stream (hello included); flags & 8 leaves the connection open, otherwise it is closed. Then rank
// 0 calls recv(peer % 4, tag, size) for each request. A wait with nothing left to read fails (the
// WaitContext's check), so every input ends.
//
// A model of the streams (which connections authenticate, which complete frames each carries) says
// what recv may return: a message must be the next frame of that peer under that tag, of the size
// asked; a size mismatch consumes that frame; and unless a stream is broken (a frame over the
// limit, a connection closed inside a frame: those fail every recv), recv returns a message exactly
// when the model has one of the size asked.
//
// The listener is a Unix-domain socket with an abstract name, not TCP: a Unix socket holds what was
// written before the write returns, so a run depends on the input alone (TCP loopback may deliver
// later), and millions of runs leave no ports in TIME_WAIT. What the bootstrap does with a connected
// stream socket is the same.
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstring>
#include <deque>
#include <string>
#include <utility>
#include <vector>

#include "src/core/bootstrap_socket.h"
#include "src/core/bootstrap_wire.h"
#include "tests/fuzz/fuzz_input.h"
#include "tests/fuzz/fuzz_target.h"

namespace weft::core {
namespace {

using fuzz::FuzzInput;
using fuzz::requireProperty;

constexpr int kRanks = 3;
constexpr size_t kMaxRecvs = 4;
constexpr size_t kMaxConnections = 4;
/// Frames that announce more are legal (up to wire::kMaxFrameBytes) but make the receiver allocate
/// that much before any payload comes: inputs with one are skipped, not run.
constexpr uint64_t kLargestFrame = 1 << 16;

const wire::Secret& secret() {
  static const wire::Secret kSecret = wire::secretFromText("weft bootstrap inbound fuzz");
  return kSecret;
}

struct Request {
  int peer;
  uint32_t tag;
  size_t size;
};

struct Connection {
  std::vector<uint8_t> stream;
  bool leaveOpen;
};

struct Frame {
  uint32_t tag;
  std::vector<uint8_t> payload;
};

/// What the bootstrap should make of the connections.
class StreamModel {
 public:
  /// False when a stream announces a frame larger than kLargestFrame.
  bool build(const std::vector<Connection>& connections) {
    std::vector<bool> connected(kRanks, false);
    for (const Connection& connection : connections) {
      const std::vector<uint8_t>& stream = connection.stream;
      if (stream.size() < wire::kPeerHelloBytes) continue;  // dropped, or waiting for the rest
      wire::PeerHello hello;
      if (!wire::parsePeerHello(std::span(stream).first(wire::kPeerHelloBytes), &hello).isOk()) continue;
      if (!wire::secretsEqual(hello.secret, secret()) || hello.nranks != kRanks || hello.rank == 0 ||
          connected[hello.rank]) {
        continue;
      }
      connected[hello.rank] = true;
      if (!readFrames(stream, wire::kPeerHelloBytes, connection.leaveOpen, &frames_[hello.rank])) return false;
    }
    return true;
  }

  /// The frame recv(peer, tag) must return next, or null when there is none.
  const Frame* next(const Request& request) const {
    if (request.peer >= kRanks || request.tag >= Bootstrap::kFirstReservedTag) return nullptr;
    const std::deque<Frame>& frames = frames_[request.peer];
    auto found = std::find_if(frames.begin(), frames.end(), [&](const Frame& f) { return f.tag == request.tag; });
    return found == frames.end() ? nullptr : &*found;
  }

  void consume(const Request& request) {
    std::deque<Frame>& frames = frames_[request.peer];
    frames.erase(std::find_if(frames.begin(), frames.end(), [&](const Frame& f) { return f.tag == request.tag; }));
  }

  bool broken() const { return broken_; }

 private:
  bool readFrames(const std::vector<uint8_t>& stream, size_t at, bool leftOpen, std::deque<Frame>* out) {
    while (at < stream.size()) {
      const size_t left = stream.size() - at;
      if (left < wire::kFrameHeaderBytes) {
        broken_ |= !leftOpen;
        return true;
      }
      wire::FrameHeader header;
      if (!wire::parseFrameHeader(std::span(stream).subspan(at, wire::kFrameHeaderBytes), &header).isOk()) {
        broken_ = true;
        return true;
      }
      if (header.size > kLargestFrame) return false;
      if (left - wire::kFrameHeaderBytes < header.size) {
        broken_ |= !leftOpen;
        return true;
      }
      const auto payload = stream.begin() + static_cast<ptrdiff_t>(at + wire::kFrameHeaderBytes);
      out->push_back({header.tag, std::vector<uint8_t>(payload, payload + static_cast<ptrdiff_t>(header.size))});
      at += wire::kFrameHeaderBytes + header.size;
    }
    return true;
  }

  std::deque<Frame> frames_[kRanks];
  bool broken_ = false;
};

/// An owned file descriptor.
class Fd {
 public:
  explicit Fd(int fd) : fd_(fd) {}
  Fd(Fd&& other) noexcept : fd_(std::exchange(other.fd_, -1)) {}
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  ~Fd() {
    if (fd_ >= 0) close(fd_);
  }
  int get() const { return fd_; }
  int release() { return std::exchange(fd_, -1); }

 private:
  int fd_;
};

/// A Unix-domain address in the abstract namespace, unique to this process.
sockaddr_un listenAddress(socklen_t* length) {
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  const std::string name = "weft-fuzz-bootstrap-inbound-" + std::to_string(getpid());
  memcpy(address.sun_path + 1, name.data(), name.size());  // sun_path[0] = 0: abstract
  *length = static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + 1 + name.size());
  return address;
}

Fd listenHere() {
  Fd listener(socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
  socklen_t length = 0;
  const sockaddr_un address = listenAddress(&length);
  const bool listening = listener.get() >= 0 &&
                         bind(listener.get(), reinterpret_cast<const sockaddr*>(&address), length) == 0 &&
                         listen(listener.get(), SOMAXCONN) == 0;
  requireProperty(listening, "the harness can listen on a Unix socket");
  return listener;
}

/// Connects and writes the whole stream; false when it does not fit in the socket's buffer.
bool connectAndWrite(const Connection& connection, std::vector<Fd>* open) {
  Fd fd(socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
  socklen_t length = 0;
  const sockaddr_un address = listenAddress(&length);
  requireProperty(fd.get() >= 0 && connect(fd.get(), reinterpret_cast<const sockaddr*>(&address), length) == 0,
                  "the harness can connect to its Unix socket");
  size_t written = 0;
  while (written < connection.stream.size()) {
    ssize_t sent = send(fd.get(), connection.stream.data() + written, connection.stream.size() - written,
                        MSG_DONTWAIT | MSG_NOSIGNAL);
    if (sent <= 0) return false;
    written += static_cast<size_t>(sent);
  }
  if (connection.leaveOpen) open->push_back(std::move(fd));
  return true;
}

std::vector<Request> readRequests(FuzzInput* input) {
  std::vector<Request> requests(1 + input->u8() % kMaxRecvs);
  for (Request& request : requests) {
    request.peer = input->u8() % 4;
    request.tag = input->u32();
    request.size = input->u16();
  }
  return requests;
}

std::vector<Connection> readConnections(FuzzInput* input) {
  std::vector<Connection> connections;
  while (input->remaining() > 0 && connections.size() < kMaxConnections) {
    const uint8_t flags = input->u8();
    std::span<const uint8_t> bytes = input->take(input->u16());
    std::array<uint8_t, wire::kPeerHelloBytes> hello{};
    const size_t helloBytes = (flags & 1) == 0 ? hello.size() : 0;
    if (helloBytes > 0) {
      const uint32_t rank = (flags >> 1) % 4;
      hello = wire::encodePeerHello({secret(), rank, static_cast<uint32_t>(kRanks)});
    }
    Connection connection{std::vector<uint8_t>(helloBytes + bytes.size()), (flags & 8) != 0};
    std::copy_n(hello.begin(), helloBytes, connection.stream.begin());
    std::copy(bytes.begin(), bytes.end(), connection.stream.begin() + static_cast<ptrdiff_t>(helloBytes));
    connections.push_back(std::move(connection));
  }
  return connections;
}

std::vector<net::SocketAddress> peerAddresses() {
  std::vector<net::SocketAddress> addresses(kRanks);
  for (int rank = 0; rank < kRanks; ++rank) {
    // Only printed in messages: rank 0 never connects out when it only receives.
    requireProperty(net::SocketAddress::parse("127.0.0.1:" + std::to_string(29500 + rank), &addresses[rank]).isOk(),
                    "a numeric address parses");
  }
  return addresses;
}

void checkRecv(const Request& request, const Status& status, const std::vector<uint8_t>& received,
               StreamModel* model) {
  const Frame* next = model->next(request);
  const bool sizeMatches = next != nullptr && next->payload.size() == request.size;
  if (status.isOk()) {
    requireProperty(sizeMatches, "recv returns only a message the peer sent under that tag, of that size");
    requireProperty(std::equal(received.begin(), received.end(), next->payload.begin()),
                    "recv returns the next message of that peer and tag, byte for byte");
    model->consume(request);
  } else if (status.code() == StatusCode::kInternalError) {
    requireProperty(next != nullptr && !sizeMatches, "a size mismatch is reported only for a message of another size");
    model->consume(request);
  } else {
    requireProperty(model->broken() || !sizeMatches, "recv fails only when no message is there, or a stream is broken");
  }
}

}  // namespace
}  // namespace weft::core

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace weft::core;
  weft::fuzz::FuzzInput input(data, size);
  const std::vector<Request> requests = readRequests(&input);
  const std::vector<Connection> connections = readConnections(&input);
  StreamModel model;
  if (!model.build(connections)) return -1;

  Fd listener = listenHere();
  std::vector<Fd> open;
  for (const Connection& connection : connections) {
    if (!connectAndWrite(connection, &open)) return -1;
  }
  static const std::vector<weft::net::SocketAddress> kPeers = peerAddresses();
  const weft::WaitContext context{
      [] { return weft::remoteError("nothing more will arrive: the fuzz input is used up"); }, 0, "fuzz input"};
  SocketBootstrap bootstrap(0, kRanks, &context, secret(), weft::net::Socket(listener.release()), kPeers);
  for (const Request& request : requests) {
    std::vector<uint8_t> received(request.size);
    const weft::Status status = bootstrap.recv(request.peer, request.tag, received.data(), received.size());
    checkRecv(request, status, received, &model);
  }
  return 0;
}
