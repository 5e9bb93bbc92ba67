#pragma once
// The bootstrap between ranks once the root's table is known: one TCP connection per ordered pair
// of ranks, opened lazily by the sender and authenticated with the id's secret.

#include <chrono>
#include <deque>
#include <string>
#include <vector>

#include "src/base/socket.h"
#include "src/core/bootstrap.h"
#include "src/core/bootstrap_wire.h"

namespace weft::core {

/// A Bootstrap over TCP. Used by one thread at a time; objects of one process share nothing, so
/// several ranks may run in several threads, or in one thread interleaving them (send never waits
/// for the peer to call recv; while the kernel's buffer is full it keeps draining what arrives).
class SocketBootstrap final : public Bootstrap {
 public:
  /// `listener` accepts the connections of the other ranks; `peers[r]` is rank r's listener.
  SocketBootstrap(int rank, int nranks, const WaitContext* context, const wire::Secret& secret,
                  net::Socket listener, std::vector<net::SocketAddress> peers);

  int rank() const override { return rank_; }
  int nranks() const override { return nranks_; }
  net::SocketAddress listenAddress() const override { return listener_.localAddress(); }
  Status send(int peer, uint32_t tag, const void* data, size_t size) override;
  Status recv(int peer, uint32_t tag, void* data, size_t size) override;
  Status allGather(void* data, size_t bytesPerRank) override;
  Status barrier() override;

 private:
  using Clock = std::chrono::steady_clock;

  struct Message {
    int peer;
    uint32_t tag;
    std::vector<uint8_t> data;
  };

  /// An accepted connection: first its hello (until then `peer` is -1), then framed messages.
  struct Inbound {
    net::Socket socket;
    std::string address;
    int peer = -1;
    Clock::time_point deadline;
    std::array<uint8_t, wire::kPeerHelloBytes> hello{};
    size_t helloGot = 0;
    std::array<uint8_t, wire::kFrameHeaderBytes> header{};
    size_t headerGot = 0;
    bool inPayload = false;
    uint32_t tag = 0;
    std::vector<uint8_t> payload;
    size_t payloadGot = 0;
  };

  Status checkPeer(int peer, uint32_t tag, const char* what) const;
  Status sendTagged(int peer, uint32_t tag, const void* data, size_t size);
  Status recvTagged(int peer, uint32_t tag, void* data, size_t size);
  Status allGatherTagged(void* data, size_t bytesPerRank, uint32_t tag);
  Status connectTo(int peer);
  /// Writes all of [data, data+size) to `peer`, draining incoming messages while the kernel's
  /// buffer is full.
  Status writeAll(int peer, const void* data, size_t size);
  /// Accepts new connections and reads whatever has arrived, without waiting.
  Status pumpInbound(bool* progressed);
  /// Reads the hello of an unauthenticated connection. Sets *keep to false to drop it.
  void readHello(Inbound* in, Clock::time_point now, bool* progressed, bool* keep);
  /// Reads complete frames into queued_. Sets *keep to false when the peer closed at a boundary.
  Status readFrames(Inbound* in, bool* progressed, bool* keep);
  /// Moves the first queued message of (peer, tag) into data. False if there is none.
  bool takeQueued(int peer, uint32_t tag, void* data, size_t size, Status* status);
  std::string describe(int peer) const;

  int rank_;
  int nranks_;
  const WaitContext* context_;
  wire::Secret secret_;
  net::Socket listener_;
  std::vector<net::SocketAddress> peers_;
  std::chrono::seconds handshakeTimeout_;
  std::vector<net::Socket> outbound_;  // per peer; invalid until the first send
  std::vector<Inbound> inbound_;
  std::vector<bool> peerConnected_;  // an authenticated connection from the peer exists
  std::vector<bool> peerClosed_;     // the peer closed its connection after its last message
  std::deque<Message> queued_;
};

}  // namespace weft::core
