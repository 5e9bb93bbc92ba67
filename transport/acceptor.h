#pragma once
// The receiving end's listening socket, until the one sender it waits for arrives: the data
// stream of the socket transport, the setup channel of the ib transport.
//
// Anything may reach a listening port (a port scanner, a stale process of an earlier job), so an
// accepted connection only becomes the data connection once it presents the expected handshake.
// Several connections are heard at once: a silent stranger never delays the real sender.

#include <chrono>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "src/base/socket.h"
#include "src/base/status.h"
#include "transport/handshake.h"
#include "transport/transport.h"

namespace weft::transport {

class Acceptor {
 public:
  /// The receiving end of `params` opens its port: listens on `on` (a free port) and draws the
  /// nonce its sender must present, which it publishes in its blob with *address. Handshakes time
  /// out after WEFT_BOOTSTRAP_HANDSHAKE_TIMEOUT. `transportName` ("socket", "ib") names it in messages.
  static Status open(const char* transportName, const ConnectionParams& params, const net::NetInterface& on,
                     std::unique_ptr<Acceptor>* acceptor, net::SocketAddress* address, uint64_t* nonce);

  /// Takes the listening socket. `transportName` ("socket", "ib") and `peerRank`/`peerHost` name
  /// the listener and the expected sender in messages.
  Acceptor(const char* transportName, net::Socket listener, const Handshake& expected,
           double handshakeTimeoutSeconds, int peerRank, std::string peerHost);

  /// Non-blocking; called by the thread that drives the receiving end. Accepts pending
  /// connections and reads what they present. When one presents the expected handshake, moves it
  /// to *sender and closes the listener and every other pending connection (one WARN counts them);
  /// otherwise leaves *sender invalid. A connection that presents anything else, closes, or stays
  /// silent for longer than the handshake timeout is closed with a WARN, and listening goes on. At
  /// most 64 connections wait to present a handshake: a newer one closes the oldest (WARN), so
  /// that silent strangers cannot shut out the sender, which presents its handshake at once.
  /// Fails only when the listening socket itself fails.
  Status tryAccept(net::Socket* sender);

  const net::SocketAddress& address() const { return address_; }

 private:
  struct Pending {
    net::Socket socket;
    Handshake received;
    size_t receivedBytes = 0;
    std::chrono::steady_clock::time_point deadline;
  };

  enum class Heard { kNotYet, kSender, kStranger };

  // Moves the sender's socket to *sender; closes the listener and every other pending connection.
  Status admit(Pending* pending, net::Socket* sender);

  // Reads what `pending` presented so far. A stranger is logged (WARN) and left for the caller to
  // close.
  Heard hear(Pending* pending, std::chrono::steady_clock::time_point now);

  const char* transportName_;
  net::Socket listener_;
  net::SocketAddress address_;
  Handshake expected_;
  std::chrono::steady_clock::duration handshakeTimeout_;
  int peerRank_;
  std::string peerHost_;
  std::vector<Pending> pending_;
};

/// The interface a receiving end of `params` listens on: of those NCCL_SOCKET_IFNAME and
/// NCCL_SOCKET_FAMILY allow (net::findInterfaces), the one at `choice` modulo their count.
Status listeningInterface(const char* transportName, const ConnectionParams& params, int choice,
                          net::NetInterface* out);

/// The sending end of `params` reaches its receiver: connects to `address` (retrying up to
/// WEFT_SOCKET_CONNECT_TIMEOUT) and writes the handshake for `nonce`, then `payload`. Both are small
/// enough for a fresh connection's kernel buffer, so this never waits for the receiver to act.
Status connectToReceiver(const char* transportName, const ConnectionParams& params, const net::SocketAddress& address,
                         uint64_t nonce, std::span<const uint8_t> payload, net::Socket* socket);

}  // namespace weft::transport
