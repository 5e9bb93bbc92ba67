#pragma once
// TCP sockets: addresses, the choice of network interface (NCCL_SOCKET_IFNAME, NCCL_SOCKET_FAMILY),
// and non-blocking I/O whose waits go through the wait helper.

#include <netinet/in.h>
#include <sys/socket.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "src/base/status.h"
#include "src/base/wait.h"

namespace weft::net {

/// An IPv4 or IPv6 address with a port. Trivially copyable, so it can travel inside an id or blob.
struct SocketAddress {
  sockaddr_storage storage{};
  socklen_t length = 0;

  int family() const { return storage.ss_family; }
  uint16_t port() const;
  void setPort(uint16_t port);
  /// "1.2.3.4:5678" or "[::1]:5678".
  std::string toString() const;
  /// Parses "host:port", "[v6]:port" or "v6addr:port"; host may be a name (resolved).
  static Status parse(const std::string& hostPort, SocketAddress* out);
};

/// A network interface and its address (port 0).
struct NetInterface {
  std::string name;
  SocketAddress address;
};

/// The interfaces to use, best first, as NCCL chooses them: NCCL_SOCKET_IFNAME (prefix list,
/// '^' excludes, '=' exact names), NCCL_SOCKET_FAMILY (AF_INET/AF_INET6); by default any
/// interface that is up except lo and docker*, falling back to lo when nothing else is up.
/// When nothing matches, the error lists the interfaces that exist.
Status findInterfaces(std::vector<NetInterface>* out);

/// The interface whose subnet contains `remote` (for NCCL_COMM_ID), else the first of
/// findInterfaces.
Status findInterfaceFor(const SocketAddress& remote, NetInterface* out);

/// An owned, non-blocking TCP socket (listening or connected). Move-only; closes on destruction.
/// Used by one thread at a time. SIGPIPE is never raised (MSG_NOSIGNAL).
/// True for a connection error that says the path to the peer is gone (a timeout, no route),
/// not necessarily the peer's process.
bool isUnreachable(int err);

class Socket {
 public:
  Socket() = default;
  explicit Socket(int fd) : fd_(fd) {}
  Socket(Socket&& other) noexcept;
  Socket& operator=(Socket&& other) noexcept;
  Socket(const Socket&) = delete;
  Socket& operator=(const Socket&) = delete;
  ~Socket();

  /// Listens on `address` (port 0 picks a free port). SO_REUSEADDR is set.
  static Status listen(const SocketAddress& address, Socket* out);
  /// Binds `address` (port 0 picks a free port) with SO_REUSEADDR and does not listen. While *out
  /// lives, no bind to port 0 and no outgoing connection elsewhere gets the port (one that binds
  /// that very port with SO_REUSEADDR still can), but a listen() on it with SO_REUSEADDR, here or
  /// in another process, succeeds: a launcher holds NCCL_COMM_ID's port so until rank 0 hosts the
  /// root there, and after.
  static Status reservePort(const SocketAddress& address, Socket* out);
  /// Connects to `address`, retrying refused or unreachable attempts with back-off until
  /// WEFT_SOCKET_CONNECT_TIMEOUT seconds pass or `context` fails. Connected sockets (here and from
  /// tryAccept) have TCP_NODELAY, keepalive probes after 5 s of silence, and TCP_USER_TIMEOUT of
  /// WEFT_SOCKET_TIMEOUT seconds: a peer whose host stops acknowledging ends the connection.
  static Status connect(const SocketAddress& address, const WaitContext& context, Socket* out);

  /// Non-blocking accept. Leaves *accepted invalid when no connection is pending.
  Status tryAccept(Socket* accepted);
  /// Non-blocking partial I/O on [data, data+size): advances *offset by what moved (possibly 0).
  /// End of file or a reset is a kRemoteError naming the peer's address; a timeout or an
  /// unreachable host says so (the peer's process may still run).
  Status trySend(const void* data, size_t size, size_t* offset);
  Status tryRecv(void* data, size_t size, size_t* offset);
  /// Moves all `size` bytes, waiting through `context`.
  Status sendAll(const void* data, size_t size, const WaitContext& context);
  Status recvAll(void* data, size_t size, const WaitContext& context);

  SocketAddress localAddress() const;
  /// The connected peer's address; known even after the peer reset the connection when this
  /// socket came from connect() or tryAccept().
  SocketAddress peerAddress() const;
  int fd() const { return fd_; }
  bool valid() const { return fd_ >= 0; }
  void close();
  /// The errno of the last failure of trySend/tryRecv that lost the connection; 0 for none or an
  /// orderly close by the peer.
  int lastError() const { return lastError_; }

 private:
  int fd_ = -1;
  int lastError_ = 0;
  SocketAddress peer_;  // cached by connect()/tryAccept(): getpeername fails after a reset
};

}  // namespace weft::net
