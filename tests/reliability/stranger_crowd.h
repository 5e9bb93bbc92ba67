#pragma once
// Strangers at a bootstrap port: connections that a port scanner, a confused program or another
// job could make, each sending something that is not a valid handshake of this communicator
// (garbage, a probe, a truncated or oversized hello, a hello with the wrong secret, a flood) or
// nothing at all. The layouts of the messages they imitate are documented in
// src/core/bootstrap_wire.h and transport/socket/wire.h; the suite writes them by hand, through no
// internal header, as a stranger would.

#include <array>
#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include "nccl.h"
#include "tests/reliability/listening_ports.h"

namespace weft::reliability {

using Secret = std::array<uint8_t, 32>;

/// What an ncclUniqueId of Weft says about its bootstrap root.
struct IdRoot {
  ListeningSocket root;
  Secret secret{};
};

/// Decodes the root's address and secret from `id`; on failure returns false and says why.
bool decodeIdRoot(const ncclUniqueId& id, IdRoot* out, std::string* why);

/// Which handshake the port expects: a rank's hello to the root (72 bytes), a rank's hello to
/// another rank (48 bytes), or a socket transport sender's handshake (40 bytes).
enum class PortKind { kRoot, kRank, kTransport };

class StrangerCrowd {
 public:
  StrangerCrowd() = default;
  ~StrangerCrowd();
  StrangerCrowd(const StrangerCrowd&) = delete;
  StrangerCrowd& operator=(const StrangerCrowd&) = delete;

  /// Opens `count` connections to `target`, cycling through every kind of stranger, and sends each
  /// its bytes at once (what the kernel takes without blocking). Refused connects are retried for
  /// up to `connectLimit` (a root that is about to listen). `nranks` makes the forged hellos look
  /// plausible; `secret` is the real one, which the wrong-secret stranger alters. Returns an empty
  /// string, or what failed.
  std::string join(const ListeningSocket& target, PortKind kind, int count, int nranks, const Secret& secret,
                   std::chrono::seconds connectLimit = std::chrono::seconds(10));

  /// Waits until the far end has closed every stranger that sent a whole handshake's worth of
  /// bytes (`complete`), or every stranger still open on this side (`all`). Returns an empty
  /// string, or the strangers still open after `limit`.
  std::string waitUntilDropped(bool completeOnly, std::chrono::seconds limit);

  /// A stranger's connection as the far end's WARN lines name it: this side's address
  /// ("127.0.0.1:41234") and the port it connected to.
  struct Connection {
    std::string local;
    uint16_t targetPort = 0;
    bool operator==(const Connection&) const = default;
  };

  /// The connections of the strangers that stay connected; `completeOnly` as above.
  std::vector<Connection> openConnections(bool completeOnly) const;

  /// How many of the strangers, open or closed, made `connection`: more than one where the kernel
  /// gave a later stranger the local port of one that reset its connection (a reset leaves no
  /// TIME_WAIT to keep the port).
  int madeBy(const Connection& connection) const;

  int size() const { return static_cast<int>(strangers_.size()); }

 private:
  struct Stranger {
    int fd = -1;            // -1 once this side closed it (the hang-up kinds close at once)
    std::string behaviour;  // for messages
    Connection connection;  // as the far end logs it
    bool complete = false;  // sent at least a whole handshake
  };

  std::vector<Stranger> strangers_;
};

}  // namespace weft::reliability
