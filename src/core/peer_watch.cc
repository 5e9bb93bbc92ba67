#include "src/core/peer_watch.h"

#include <netinet/tcp.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "src/base/knobs.h"
#include "src/base/log.h"

namespace weft::core {
namespace {

constexpr uint32_t kHelloMagic = 0x54464557;  // "WEFT" in little-endian memory
constexpr uint32_t kGoodbye = 1;              // the sender leaves cleanly
constexpr uint32_t kDeathNotice = 2;          // `rank` died

struct Hello {
  uint32_t magic;
  uint32_t rank;
  uint64_t commHash;
};

/// Why a rank is lost, as a death notice passes it on.
enum class LossCause : uint32_t { kProcessEnded = 0, kPidExited = 1, kUnreachable = 2 };

struct Frame {
  uint32_t kind;
  uint32_t rank;
  uint32_t cause = 0;  // a LossCause, for kDeathNotice
  uint32_t reserved = 0;
};

/// The message's reason for `cause`; `pid` for kPidExited.
std::string describeLoss(LossCause cause, int pid) {
  switch (cause) {
    case LossCause::kPidExited: return "its process (pid " + std::to_string(pid) + ") exited";
    case LossCause::kUnreachable:
      return "its host became unreachable (the network stopped acknowledging for WEFT_SOCKET_TIMEOUT seconds or "
             "keepalive probes): a link is down or the host stopped; the process may still run there";
    case LossCause::kProcessEnded: break;
  }
  return "it closed its connections without ncclCommDestroy: its process ended, or it called ncclCommAbort";
}

/// Connections still to say hello, at most; a newer one closes the oldest.
constexpr size_t kMaxPendingHellos = 64;

/// A connection the watch listener accepted, until it presents a valid hello or is dropped.
struct PendingHello {
  net::Socket socket;
  std::string address;
  Hello hello{};
  size_t got = 0;
  std::chrono::steady_clock::time_point deadline;
};

/// A pidfd for `pid`, or -1 where the kernel has none (before Linux 5.3) or the pid is not
/// visible (another pid namespace): the socket alone then tells the death.
int openPidfd(int pid) {
#ifdef SYS_pidfd_open
  return static_cast<int>(syscall(SYS_pidfd_open, pid, 0));
#else
  return -1;
#endif
}

/// Accepts connections on `listener` until one presents the hello of rank `from`; strangers,
/// garbage and silence are dropped (each after at most the handshake timeout, or when 64 newer
/// ones wait) without delaying the others: each connection is heard as soon as it is accepted.
Status acceptNeighbour(net::Socket& listener, int rank, int from, uint64_t commHash, const WaitContext& context,
                       net::Socket* out) {
  const auto handshake = std::chrono::seconds(knobs::getInt(knobs::KnobId::kBootstrapHandshakeTimeout));
  std::vector<PendingHello> pending;
  Waiter waiter(&context);
  while (true) {
    bool progressed = false;
    net::Socket accepted;
    WEFT_RETURN_IF_ERROR(listener.tryAccept(&accepted));
    if (accepted.valid()) {
      if (pending.size() >= kMaxPendingHellos) {
        // Each holds a descriptor: the one silent longest goes (the neighbour says hello at once).
        WEFT_WARN("rank %d dropped a connection from %s to its peer-watch port: %zu connections are still to say "
                  "hello; check what else connects to this host",
                  rank, pending.front().address.c_str(), pending.size());
        pending.erase(pending.begin());
      }
      PendingHello next;
      next.address = accepted.peerAddress().toString();
      next.socket = std::move(accepted);
      next.deadline = std::chrono::steady_clock::now() + handshake;
      pending.push_back(std::move(next));
      progressed = true;
    }
    const auto now = std::chrono::steady_clock::now();
    for (size_t i = 0; i < pending.size();) {
      PendingHello& candidate = pending[i];
      size_t before = candidate.got;
      Status status = candidate.socket.tryRecv(&candidate.hello, sizeof(Hello), &candidate.got);
      progressed |= candidate.got != before;
      const char* problem = nullptr;
      if (!status.isOk()) problem = "it closed the connection before its hello";
      else if (candidate.got == sizeof(Hello) &&
               (candidate.hello.magic != kHelloMagic || candidate.hello.commHash != commHash ||
                candidate.hello.rank != static_cast<uint32_t>(from))) {
        problem = "its hello is not that of this communicator's rank";
      } else if (candidate.got < sizeof(Hello) && now > candidate.deadline) {
        problem = "it sent no hello within WEFT_BOOTSTRAP_HANDSHAKE_TIMEOUT";
      }
      if (problem != nullptr) {
        WEFT_WARN("rank %d dropped a connection from %s to its peer-watch port: %s", rank, candidate.address.c_str(),
                  problem);
        pending.erase(pending.begin() + static_cast<std::ptrdiff_t>(i));
        continue;
      }
      if (candidate.got == sizeof(Hello)) {
        *out = std::move(candidate.socket);
        return Status::ok();
      }
      ++i;
    }
    if (progressed) waiter.progressed();
    else WEFT_RETURN_IF_ERROR(waiter.idle());
  }
}

}  // namespace

struct PeerWatch::Neighbour {
  int rank = -1;
  net::Socket socket;
  int pidfd = -1;         // the neighbour's process, when on this host in another process
  bool departed = false;  // said goodbye, or is known dead: no longer watched
  Frame frame{};
  size_t got = 0;
};

PeerWatch::PeerWatch(const std::vector<PeerInfo>& peers, int rank)
    : peers_(peers), rank_(rank), knownDead_(new std::atomic<bool>[peers.size()]()) {}

Status PeerWatch::start(Bootstrap& bootstrap, const std::vector<PeerInfo>& peers, uint64_t commHash,
                        const WaitContext& context, DeathHandler onDeath, std::unique_ptr<PeerWatch>* out) {
  const int rank = bootstrap.rank();
  const int nranks = bootstrap.nranks();
  std::unique_ptr<PeerWatch> watch(new PeerWatch(peers, rank));
  watch->onDeath_ = std::move(onDeath);
  if (nranks == 1) {
    *out = std::move(watch);
    return Status::ok();
  }
  net::SocketAddress address = bootstrap.listenAddress();
  address.setPort(0);
  net::Socket listener;
  WEFT_RETURN_IF_ERROR(net::Socket::listen(address, &listener).withContext("opening the peer-watch port"));
  std::vector<net::SocketAddress> addresses(nranks);
  addresses[rank] = listener.localAddress();
  WEFT_RETURN_IF_ERROR(bootstrap.allGather(addresses.data(), sizeof(net::SocketAddress)));

  const int next = (rank + 1) % nranks;
  const int prev = (rank + nranks - 1) % nranks;
  Neighbour toNext;
  toNext.rank = next;
  WEFT_RETURN_IF_ERROR(net::Socket::connect(addresses[next], context, &toNext.socket)
                           .withContext("connecting to the peer watch of rank " + std::to_string(next)));
  Hello hello{kHelloMagic, static_cast<uint32_t>(rank), commHash};
  WEFT_RETURN_IF_ERROR(toNext.socket.sendAll(&hello, sizeof(hello), context));
  Neighbour fromPrev;
  fromPrev.rank = prev;
  WEFT_RETURN_IF_ERROR(acceptNeighbour(listener, rank, prev, commHash, context, &fromPrev.socket)
                           .withContext("waiting for the peer watch of rank " + std::to_string(prev)));
  watch->neighbours_.push_back(std::move(toNext));
  watch->neighbours_.push_back(std::move(fromPrev));

  const PeerInfo& self = peers[rank];
  for (Neighbour& neighbour : watch->neighbours_) {
    const PeerInfo& peer = peers[neighbour.rank];
    bool alreadyWatched = &neighbour != &watch->neighbours_[0] && watch->neighbours_[0].rank == neighbour.rank;
    if (peer.sameHost(self) && peer.pid != self.pid && !alreadyWatched) neighbour.pidfd = openPidfd(peer.pid);
  }
  watch->stopFd_ = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  if (watch->stopFd_ < 0) return errnoStatus(errno, "eventfd for the peer watch");
  watch->thread_ = std::thread([w = watch.get()] { w->run(); });
  *out = std::move(watch);
  return Status::ok();
}

PeerWatch::~PeerWatch() {
  if (thread_.joinable()) {
    uint64_t one = 1;
    ssize_t written = write(stopFd_, &one, sizeof(one));
    (void)written;  // an eventfd write of 1 cannot fail short of overflow
    thread_.join();
  }
  for (Neighbour& neighbour : neighbours_) {
    if (neighbour.pidfd >= 0) close(neighbour.pidfd);
  }
  if (stopFd_ >= 0) close(stopFd_);
}

void PeerWatch::sayGoodbye() {
  Frame goodbye{kGoodbye, static_cast<uint32_t>(rank_)};
  for (Neighbour& neighbour : neighbours_) {
    // Sixteen bytes always fit in an idle connection's send buffer; a failure means the neighbour
    // is gone already, which its own neighbours report.
    ssize_t sent = send(neighbour.socket.fd(), &goodbye, sizeof(goodbye), MSG_NOSIGNAL | MSG_DONTWAIT);
    (void)sent;
  }
}

Status PeerWatch::failure(std::chrono::steady_clock::time_point* learnedAt) const {
  std::lock_guard<std::mutex> lock(failureMutex_);
  if (learnedAt != nullptr) *learnedAt = learnedAt_;
  return failure_;
}

void PeerWatch::run() {
  std::vector<pollfd> fds;
  while (true) {
    // Sockets come before pidfds, so that a goodbye sent just before a clean exit is read before
    // the exit is noticed.
    fds.clear();
    fds.push_back({stopFd_, POLLIN, 0});
    for (Neighbour& neighbour : neighbours_) {
      if (!neighbour.departed) fds.push_back({neighbour.socket.fd(), POLLIN, 0});
    }
    for (Neighbour& neighbour : neighbours_) {
      if (!neighbour.departed && neighbour.pidfd >= 0) fds.push_back({neighbour.pidfd, POLLIN, 0});
    }
    int timeoutMs = -1;
    if (deathHandlerPending_) {
      const auto left = deathHandlerDue_ - std::chrono::steady_clock::now();
      timeoutMs = static_cast<int>(std::max<int64_t>(0, std::chrono::ceil<std::chrono::milliseconds>(left).count()));
    }
    if (poll(fds.data(), fds.size(), timeoutMs) < 0) {
      if (errno == EINTR) continue;
      WEFT_WARN("rank %d: the peer watch stopped: poll failed: %s", rank_, strerror(errno));
      return;
    }
    if (fds[0].revents != 0) return;
    if (deathHandlerPending_ && std::chrono::steady_clock::now() >= deathHandlerDue_) {
      deathHandlerPending_ = false;
      onDeath_(failure(nullptr));
    }
    for (size_t i = 1; i < fds.size(); ++i) {
      if (fds[i].revents == 0) continue;
      for (Neighbour& neighbour : neighbours_) {
        if (neighbour.departed) continue;
        if (fds[i].fd == neighbour.socket.fd()) readFrom(neighbour);
        else if (fds[i].fd == neighbour.pidfd) {
          reportDeath(neighbour.rank, static_cast<uint32_t>(LossCause::kPidExited), "");
        }
      }
    }
  }
}

void PeerWatch::readFrom(Neighbour& neighbour) {
  while (!neighbour.departed) {
    Status status = neighbour.socket.tryRecv(&neighbour.frame, sizeof(Frame), &neighbour.got);
    if (!status.isOk()) {
      // Keepalive and TCP_USER_TIMEOUT (src/base/socket.h): a host that vanished without closing
      // its sockets ends the connection with ETIMEDOUT, measured by the kernel.
      const bool unreachable = net::isUnreachable(neighbour.socket.lastError());
      reportDeath(neighbour.rank,
                  static_cast<uint32_t>(unreachable ? LossCause::kUnreachable : LossCause::kProcessEnded), "");
      return;
    }
    if (neighbour.got < sizeof(Frame)) return;
    neighbour.got = 0;
    const Frame& frame = neighbour.frame;
    if (frame.kind == kGoodbye) {
      WEFT_INFO(log::kInit, "rank %d: rank %d destroyed its communicator", rank_, neighbour.rank);
      for (Neighbour& same : neighbours_) {
        if (same.rank == neighbour.rank) same.departed = true;
      }
    } else if (frame.kind == kDeathNotice && frame.rank < peers_.size()) {
      reportDeath(static_cast<int>(frame.rank), frame.cause, " (as rank " + std::to_string(neighbour.rank) + " reports)");
    } else {
      WEFT_WARN("rank %d: rank %d sent an unknown peer-watch frame (%u, %u); ignored", rank_, neighbour.rank,
                frame.kind, frame.rank);
    }
  }
}

void PeerWatch::reportDeath(int deadRank, uint32_t cause, const std::string& source) {
  if (deadRank == rank_) return;  // a stale notice about this rank cannot be true while it runs
  for (Neighbour& neighbour : neighbours_) {
    if (neighbour.rank == deadRank) neighbour.departed = true;
  }
  if (knownDead_[deadRank].load(std::memory_order_relaxed)) return;
  knownDead_[deadRank].store(true, std::memory_order_relaxed);
  const PeerInfo& dead = peers_[deadRank];
  const std::string how = describeLoss(static_cast<LossCause>(cause), dead.pid) + source;
  Status status = remoteError("rank %d (host %s, pid %d) of this communicator is gone: %s. The communicator "
                              "cannot complete collectives any more: abort it with ncclCommAbort",
                              deadRank, dead.hostname, dead.pid, how.c_str());
  WEFT_WARN("rank %d: %s", rank_, status.message().c_str());
  bool first = false;
  {
    std::lock_guard<std::mutex> lock(failureMutex_);
    if (failure_.isOk()) {
      failure_ = status;
      learnedAt_ = std::chrono::steady_clock::now();
      first = true;
    }
  }
  failed_.store(true, std::memory_order_relaxed);
  Frame notice{kDeathNotice, static_cast<uint32_t>(deadRank), cause};
  for (Neighbour& neighbour : neighbours_) {
    if (neighbour.departed) continue;
    ssize_t sent = send(neighbour.socket.fd(), &notice, sizeof(notice), MSG_NOSIGNAL | MSG_DONTWAIT);
    (void)sent;  // a neighbour that cannot take it is gone, and reported by its own neighbours
  }
  if (first && onDeath_) {
    deathHandlerPending_ = true;
    deathHandlerDue_ = std::chrono::steady_clock::now() + kDeathGrace;
  }
}

}  // namespace weft::core
