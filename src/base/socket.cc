// Socket: an owned, non-blocking TCP socket whose waits go through the wait helper.
#include "src/base/socket.h"

#include <fcntl.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <utility>

#include "src/base/knobs.h"
#include "src/base/log.h"

namespace weft::net {
namespace {

using Clock = std::chrono::steady_clock;

constexpr auto kFirstConnectBackoff = std::chrono::milliseconds(1);
constexpr auto kMaxConnectBackoff = std::chrono::milliseconds(100);

/// Errors of a connect attempt that a later attempt may not meet (the peer is not listening yet,
/// its backlog is full, a route is still coming up).
bool isRetryableConnectError(int err) {
  switch (err) {
    case ECONNREFUSED:
    case ETIMEDOUT:
    case EHOSTUNREACH:
    case ENETUNREACH:
    case ECONNRESET:
    case ECONNABORTED:
    case EAGAIN:
    case EADDRNOTAVAIL:
      return true;
    default:
      return false;
  }
}

bool isPeerFailure(int err) {
  return err == ECONNRESET || err == EPIPE || err == ETIMEDOUT || err == EHOSTUNREACH || err == ENETUNREACH ||
         err == ECONNABORTED;
}

Status newSocket(int family, Socket* out) {
  int fd = ::socket(family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) {
    return errnoStatus(errno, "cannot create a TCP socket (family %d); if the limit of open files is reached, "
                       "raise it (ulimit -n)", family);
  }
  *out = Socket(fd);
  return Status::ok();
}

/// What a failed connection's errno says about the peer, for messages.
std::string lostBecause(int err) {
  if (isUnreachable(err)) {
    return std::string("the host is unreachable (") + strerror(err) +
           "): the network gave no acknowledgement for too long, so a link is down or the host stopped; its "
           "process may still run. Check the network path (WEFT_SOCKET_TIMEOUT sets how long)";
  }
  return std::string(strerror(err)) + ": the peer process may have exited or aborted; check its log";
}

/// Every connected socket: no Nagle delay, and liveness measured by the kernel (which answers for
/// a live peer however busy its process is): keepalive probes after 5 s of silence, and
/// WEFT_SOCKET_TIMEOUT seconds without acknowledgement of sent data or probes end the connection.
void configureConnected(int fd) {
  int one = 1;
  if (setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one)) != 0) {
    WEFT_INFO(log::kNet, "cannot set TCP_NODELAY on socket %d: errno %d", fd, errno);
  }
  int idle = 5, interval = 2, count = 3;
  setsockopt(fd, SOL_SOCKET, SO_KEEPALIVE, &one, sizeof(one));
  setsockopt(fd, IPPROTO_TCP, TCP_KEEPIDLE, &idle, sizeof(idle));
  setsockopt(fd, IPPROTO_TCP, TCP_KEEPINTVL, &interval, sizeof(interval));
  setsockopt(fd, IPPROTO_TCP, TCP_KEEPCNT, &count, sizeof(count));
  static const unsigned timeoutMs =
      static_cast<unsigned>(std::max<int64_t>(0, knobs::getInt(knobs::KnobId::kSocketTimeout)) * 1000);
  if (timeoutMs > 0) setsockopt(fd, IPPROTO_TCP, TCP_USER_TIMEOUT, &timeoutMs, sizeof(timeoutMs));
}

/// Waits (through `waiter`) until a non-blocking connect on `fd` completes or `deadline` passes;
/// returns the connect's outcome as an errno value (0: connected).
Status awaitConnect(int fd, Clock::time_point deadline, Waiter* waiter, int* outcome) {
  while (true) {
    pollfd entry{fd, POLLOUT, 0};
    int ready = ::poll(&entry, 1, 0);
    if (ready > 0) break;
    if (ready < 0 && errno != EINTR) return errnoStatus(errno, "poll on a connecting socket failed");
    if (Clock::now() >= deadline) {
      *outcome = ETIMEDOUT;
      return Status::ok();
    }
    WEFT_RETURN_IF_ERROR(waiter->idle());
  }
  int err = 0;
  socklen_t length = sizeof(err);
  if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &length) != 0) err = errno;
  *outcome = err;
  return Status::ok();
}

}  // namespace

bool isUnreachable(int err) { return err == ETIMEDOUT || err == EHOSTUNREACH || err == ENETUNREACH; }

Socket::Socket(Socket&& other) noexcept
    : fd_(std::exchange(other.fd_, -1)), lastError_(other.lastError_), peer_(other.peer_) {}

Socket& Socket::operator=(Socket&& other) noexcept {
  if (this != &other) {
    close();
    fd_ = std::exchange(other.fd_, -1);
    lastError_ = other.lastError_;
    peer_ = other.peer_;
  }
  return *this;
}

Socket::~Socket() { close(); }

void Socket::close() {
  if (fd_ >= 0) ::close(fd_);  // not retried on EINTR: Linux has released the descriptor already
  fd_ = -1;
  peer_ = SocketAddress();
}

namespace {

/// A new socket with SO_REUSEADDR, bound to `address`; `purpose` ("listen on", "reserve") words
/// the errors.
Status bindReusable(const SocketAddress& address, const char* purpose, Socket* out) {
  Socket socket;
  WEFT_RETURN_IF_ERROR(newSocket(address.family(), &socket));
  int one = 1;
  if (setsockopt(socket.fd(), SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) != 0) {
    return errnoStatus(errno, "cannot set SO_REUSEADDR to %s %s", purpose, address.toString().c_str());
  }
  if (::bind(socket.fd(), reinterpret_cast<const sockaddr*>(&address.storage), address.length) != 0) {
    int err = errno;
    if (err == EADDRINUSE) {
      return errnoStatus(err, "cannot %s %s: the port is in use by another socket; stop the process that "
                         "holds it or choose another port (NCCL_COMM_ID)", purpose, address.toString().c_str());
    }
    return errnoStatus(err, "cannot %s %s: check that the address belongs to this host "
                       "(NCCL_SOCKET_IFNAME, NCCL_COMM_ID)", purpose, address.toString().c_str());
  }
  *out = std::move(socket);
  return Status::ok();
}

}  // namespace

Status Socket::listen(const SocketAddress& address, Socket* out) {
  Socket socket;
  WEFT_RETURN_IF_ERROR(bindReusable(address, "listen on", &socket));
  if (::listen(socket.fd_, SOMAXCONN) != 0) {
    return errnoStatus(errno, "listen() on %s failed", address.toString().c_str());
  }
  *out = std::move(socket);
  return Status::ok();
}

Status Socket::reservePort(const SocketAddress& address, Socket* out) {
  return bindReusable(address, "reserve", out);
}

Status Socket::connect(const SocketAddress& address, const WaitContext& context, Socket* out) {
  const int64_t timeoutSeconds = knobs::getInt(knobs::KnobId::kSocketConnectTimeout);
  const Clock::time_point start = Clock::now();
  const Clock::time_point deadline = start + std::chrono::seconds(std::max<int64_t>(timeoutSeconds, 0));
  Waiter waiter(&context);
  auto backoff = std::chrono::duration_cast<Clock::duration>(kFirstConnectBackoff);
  int attempts = 0;
  while (true) {
    ++attempts;
    Socket socket;
    WEFT_RETURN_IF_ERROR(newSocket(address.family(), &socket));
    int err = 0;
    if (::connect(socket.fd_, reinterpret_cast<const sockaddr*>(&address.storage), address.length) != 0) {
      err = errno;
      // EINTR leaves the connect running in the background, like EINPROGRESS.
      if (err == EINPROGRESS || err == EINTR) WEFT_RETURN_IF_ERROR(awaitConnect(socket.fd_, deadline, &waiter, &err));
    }
    if (err == 0) {
      configureConnected(socket.fd_);
      socket.peer_ = address;
      *out = std::move(socket);
      return Status::ok();
    }
    if (!isRetryableConnectError(err)) {
      return errnoStatus(err, "cannot connect to %s; check the address (NCCL_COMM_ID, NCCL_SOCKET_IFNAME) and that "
                         "this host can reach it", address.toString().c_str());
    }
    if (Clock::now() >= deadline) {
      double waited = std::chrono::duration<double>(Clock::now() - start).count();
      return remoteError("cannot connect to %s: %s after %d attempts in %.1f s (WEFT_SOCKET_CONNECT_TIMEOUT=%lld); "
                         "check that the peer process is running and reachable from this host (firewall, "
                         "NCCL_SOCKET_IFNAME), or raise WEFT_SOCKET_CONNECT_TIMEOUT",
                         address.toString().c_str(), strerror(err), attempts, waited,
                         static_cast<long long>(timeoutSeconds));
    }
    WEFT_TRACE(log::kNet, "connect to %s: %s, retrying", address.toString().c_str(), strerror(err));
    const Clock::time_point retryAt = std::min(Clock::now() + backoff, deadline);
    backoff = std::min<Clock::duration>(backoff * 2, kMaxConnectBackoff);
    while (Clock::now() < retryAt) WEFT_RETURN_IF_ERROR(waiter.idle());
  }
}

Status Socket::tryAccept(Socket* accepted) {
  accepted->close();
  if (fd_ < 0) return invalidUsage("accept on a closed socket");
  while (true) {
    SocketAddress peer;
    peer.length = sizeof(peer.storage);
    int fd = ::accept4(fd_, reinterpret_cast<sockaddr*>(&peer.storage), &peer.length, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd >= 0) {
      configureConnected(fd);
      *accepted = Socket(fd);
      accepted->peer_ = peer;
      return Status::ok();
    }
    int err = errno;
    if (err == EINTR) continue;
    // Linux reports errors of the pending connection through accept: that one is gone, not us.
    if (err == EAGAIN || err == EWOULDBLOCK || err == ECONNABORTED || err == EPROTO || err == ENETDOWN ||
        err == ENOPROTOOPT || err == EHOSTDOWN || err == ENONET || err == EHOSTUNREACH || err == EOPNOTSUPP ||
        err == ENETUNREACH) {
      return Status::ok();
    }
    if (err == EMFILE || err == ENFILE) {
      return errnoStatus(err, "cannot accept a connection on %s: too many open files; raise the limit (ulimit -n)",
                         localAddress().toString().c_str());
    }
    return errnoStatus(err, "accept on %s failed", localAddress().toString().c_str());
  }
}

Status Socket::trySend(const void* data, size_t size, size_t* offset) {
  if (fd_ < 0) return invalidUsage("send on a closed socket");
  const char* bytes = static_cast<const char*>(data);
  while (*offset < size) {
    ssize_t sent = ::send(fd_, bytes + *offset, size - *offset, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (sent > 0) {
      *offset += static_cast<size_t>(sent);
      continue;
    }
    int err = errno;
    if (sent < 0 && err == EINTR) continue;
    if (sent < 0 && (err == EAGAIN || err == EWOULDBLOCK)) return Status::ok();
    if (isPeerFailure(err)) {
      lastError_ = err;
      return remoteError("connection to %s lost while sending, after %zu of %zu bytes: %s",
                         peerAddress().toString().c_str(), *offset, size, lostBecause(err).c_str());
    }
    return errnoStatus(err, "send to %s failed", peerAddress().toString().c_str());
  }
  return Status::ok();
}

Status Socket::tryRecv(void* data, size_t size, size_t* offset) {
  if (fd_ < 0) return invalidUsage("recv on a closed socket");
  char* bytes = static_cast<char*>(data);
  while (*offset < size) {
    ssize_t received = ::recv(fd_, bytes + *offset, size - *offset, MSG_DONTWAIT);
    if (received > 0) {
      *offset += static_cast<size_t>(received);
      continue;
    }
    if (received == 0) {
      return remoteError("connection closed by %s after %zu of %zu bytes: the peer process may have exited or "
                         "aborted; check its log", peerAddress().toString().c_str(), *offset, size);
    }
    int err = errno;
    if (err == EINTR) continue;
    if (err == EAGAIN || err == EWOULDBLOCK) return Status::ok();
    if (isPeerFailure(err)) {
      lastError_ = err;
      return remoteError("connection to %s lost while receiving, after %zu of %zu bytes: %s",
                         peerAddress().toString().c_str(), *offset, size, lostBecause(err).c_str());
    }
    return errnoStatus(err, "recv from %s failed", peerAddress().toString().c_str());
  }
  return Status::ok();
}

Status Socket::sendAll(const void* data, size_t size, const WaitContext& context) {
  Waiter waiter(&context);
  size_t offset = 0;
  while (offset < size) {
    size_t before = offset;
    WEFT_RETURN_IF_ERROR(trySend(data, size, &offset));
    if (offset > before) {
      waiter.progressed();
    } else if (offset < size) {
      WEFT_RETURN_IF_ERROR(waiter.idle());
    }
  }
  return Status::ok();
}

Status Socket::recvAll(void* data, size_t size, const WaitContext& context) {
  Waiter waiter(&context);
  size_t offset = 0;
  while (offset < size) {
    size_t before = offset;
    WEFT_RETURN_IF_ERROR(tryRecv(data, size, &offset));
    if (offset > before) {
      waiter.progressed();
    } else if (offset < size) {
      WEFT_RETURN_IF_ERROR(waiter.idle());
    }
  }
  return Status::ok();
}

SocketAddress Socket::localAddress() const {
  SocketAddress address;
  address.length = sizeof(address.storage);
  if (fd_ < 0 || getsockname(fd_, reinterpret_cast<sockaddr*>(&address.storage), &address.length) != 0) {
    return SocketAddress();
  }
  return address;
}

SocketAddress Socket::peerAddress() const {
  if (peer_.length != 0) return peer_;
  SocketAddress address;
  address.length = sizeof(address.storage);
  if (fd_ < 0 || getpeername(fd_, reinterpret_cast<sockaddr*>(&address.storage), &address.length) != 0) {
    return SocketAddress();
  }
  return address;
}

}  // namespace weft::net
