#include "src/core/bootstrap_root.h"

#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "src/base/knobs.h"
#include "src/base/log.h"
#include "src/base/wait.h"

namespace weft::core {
namespace {

using Clock = std::chrono::steady_clock;

/// Connections the root reads hellos from at once; more wait in the kernel's backlog.
constexpr size_t kMaxPendingConnections = 256;
/// The longest single sleep in poll(), so that new deadlines are noticed.
constexpr auto kMaxPollSleep = std::chrono::milliseconds(100);
/// How long accepting pauses when the process is out of file descriptors.
constexpr auto kAcceptPause = std::chrono::milliseconds(100);
/// How long the root waits for the next rank when WEFT_TIMEOUT is 0: long enough for a slow launch
/// (ranks that start many minutes apart), finite so that an id made and never used, or a rank that
/// never comes, does not hold a thread and a port for the rest of a long job.
constexpr auto kDefaultPatience = std::chrono::hours(1);
/// The longest that process exit waits for running roots to stop (each notices within one poll
/// sleep).
constexpr auto kExitWait = std::chrono::seconds(1);
/// Missing ranks named in the give-up WARN; the rest are counted.
constexpr size_t kMissingRanksListed = 8;

/// The roots whose thread runs, so that process exit can stop them before the library's statics
/// are destroyed, and a forked child can close its copies of their listening sockets (the thread
/// that owns them runs in the parent only). Process-wide by nature, like the threads it tracks;
/// never destroyed, since exit handlers and the last roots use it while the process ends.
class RootRegistry {
 public:
  static RootRegistry& instance() {
    static RootRegistry* registry = new RootRegistry();
    return *registry;
  }

  /// Called before the root's thread starts; returns the root's key for the other calls.
  /// `listenerFd` is closed in forked children.
  uint64_t enroll(int listenerFd) {
    std::call_once(hooksInstalled_, [] {
      pthread_atfork(lockForFork, unlockInParent, forgetInChild);
      std::atexit(stopAllAtExit);
    });
    std::lock_guard<std::mutex> lock(mutex_);
    running_.push_back({++lastKey_, listenerFd});
    return lastKey_;
  }

  /// Called by the root's thread just before it closes its listening socket, so that a fork never
  /// closes a descriptor number that was reused meanwhile.
  void listenerClosing(uint64_t key) {
    std::lock_guard<std::mutex> lock(mutex_);
    for (Entry& entry : running_) {
      if (entry.key == key) entry.listenerFd = -1;
    }
  }

  /// Called by the root's thread last, once it has released everything.
  void retire(uint64_t key) {
    std::lock_guard<std::mutex> lock(mutex_);
    std::erase_if(running_, [key](const Entry& entry) { return entry.key == key; });
    if (running_.empty()) allRetired_.notify_all();
  }

  /// True once the process is exiting: roots leave at once, quietly.
  bool stopping() const { return stopping_.load(std::memory_order_relaxed); }

 private:
  struct Entry {
    uint64_t key;
    int listenerFd;
  };

  static void stopAllAtExit() {
    RootRegistry& registry = instance();
    registry.stopping_.store(true, std::memory_order_relaxed);
    std::unique_lock<std::mutex> lock(registry.mutex_);
    registry.allRetired_.wait_for(lock, kExitWait, [&registry] { return registry.running_.empty(); });
  }

  static void lockForFork() { instance().mutex_.lock(); }
  static void unlockInParent() { instance().mutex_.unlock(); }
  static void forgetInChild() {
    RootRegistry& registry = instance();
    for (const Entry& entry : registry.running_) {
      if (entry.listenerFd >= 0) ::close(entry.listenerFd);
    }
    registry.running_.clear();
    registry.mutex_.unlock();
  }

  std::once_flag hooksInstalled_;
  std::mutex mutex_;
  std::condition_variable allRetired_;
  std::vector<Entry> running_;
  uint64_t lastKey_ = 0;
  std::atomic<bool> stopping_{false};
};

/// How long the root waits for the next rank, and how to say so.
struct Patience {
  std::chrono::seconds limit;
  std::string text;
};

Patience patience() {
  double seconds = defaultTimeoutSeconds();
  if (seconds <= 0) {
    return {kDefaultPatience, std::to_string(kDefaultPatience.count()) + " s (the default when WEFT_TIMEOUT is 0)"};
  }
  auto limit = std::chrono::seconds(std::max<int64_t>(1, static_cast<int64_t>(seconds)));
  return {limit, std::to_string(limit.count()) + " s (WEFT_TIMEOUT)"};
}

class BootstrapRoot {
 public:
  BootstrapRoot(net::Socket listener, const wire::Secret& secret)
      : listener_(std::move(listener)),
        secret_(secret),
        where_(listener_.localAddress().toString()),
        handshakeTimeout_(std::chrono::seconds(
            std::max<int64_t>(1, knobs::getInt(knobs::KnobId::kBootstrapHandshakeTimeout)))),
        tableTimeout_(std::chrono::seconds(
            std::max<int64_t>(1, knobs::getInt(knobs::KnobId::kSocketConnectTimeout)))),
        patience_(patience()),
        giveUpAt_(Clock::now() + patience_.limit),
        registryKey_(RootRegistry::instance().enroll(listener_.fd())) {}

  /// Closes every socket, then leaves the registry: after that it touches no shared state.
  ~BootstrapRoot() {
    closeListener();
    pending_.clear();
    ranks_.clear();
    RootRegistry::instance().retire(registryKey_);
  }

  BootstrapRoot(const BootstrapRoot&) = delete;
  BootstrapRoot& operator=(const BootstrapRoot&) = delete;

  /// Serves hellos until every rank has joined, then sends the table. Returns early (closing
  /// everything as the object is destroyed) when it gives up or the process exits.
  void run() {
    WEFT_INFO(log::kBootstrap, "bootstrap root listening on %s", where_.c_str());
    while (nranks_ == 0 || joined_ < nranks_) {
      if (RootRegistry::instance().stopping()) return;
      if (Clock::now() >= giveUpAt_) return giveUp();
      waitForActivity();
      acceptPending();
      servePending();
    }
    for (const Pending& pending : pending_) {
      drop(pending, "every rank had joined while it had sent " + std::to_string(pending.got) + " of " +
                        std::to_string(wire::kRootHelloBytes) + " bytes of a hello");
    }
    pending_.clear();
    closeListener();
    sendTables();
    WEFT_INFO(log::kBootstrap, "bootstrap root %s: all %u ranks joined, table sent", where_.c_str(), nranks_);
  }

 private:
  /// A connection that has not sent its whole hello yet.
  struct Pending {
    net::Socket socket;
    std::string peer;
    std::array<uint8_t, wire::kRootHelloBytes> bytes{};
    size_t got = 0;
    Clock::time_point deadline;
  };

  void closeListener() {
    RootRegistry::instance().listenerClosing(registryKey_);
    listener_.close();
  }

  void giveUp() {
    closeListener();
    const char* waited = patience_.text.c_str();
    if (joined_ == 0) {
      WEFT_INFO(log::kBootstrap, "bootstrap root %s: no rank joined within %s; closing it, the unique id is no longer "
                "usable", where_.c_str(), waited);
      return;
    }
    std::string missing;
    size_t listed = 0;
    for (uint32_t rank = 0; rank < nranks_; ++rank) {
      if (ranks_[rank].valid()) continue;
      if (listed++ < kMissingRanksListed) missing += (missing.empty() ? "" : ", ") + std::to_string(rank);
    }
    if (listed > kMissingRanksListed) missing += " and " + std::to_string(listed - kMissingRanksListed) + " more";
    WEFT_WARN("bootstrap root %s: gave up after %s without a new rank: %u of %u ranks joined, missing rank(s) %s. "
              "The ranks that joined fail their init. Start every rank with the same unique id and nranks, or "
              "raise WEFT_TIMEOUT if ranks start this far apart",
              where_.c_str(), waited, joined_, nranks_, missing.c_str());
  }

  bool accepting() const { return pending_.size() < kMaxPendingConnections && Clock::now() >= acceptPausedUntil_; }

  // The root sleeps in poll() rather than spinning through a Waiter: it is a background thread
  // that may wait for a long time (a rank that never comes) and must cost no CPU meanwhile.
  void waitForActivity() {
    std::vector<pollfd> fds;
    if (accepting()) fds.push_back({listener_.fd(), POLLIN, 0});
    Clock::time_point wakeUp = Clock::now() + kMaxPollSleep;
    for (const Pending& pending : pending_) {
      fds.push_back({pending.socket.fd(), POLLIN, 0});
      wakeUp = std::min(wakeUp, pending.deadline);
    }
    if (!accepting()) wakeUp = std::min(wakeUp, acceptPausedUntil_);
    auto sleep = std::chrono::ceil<std::chrono::milliseconds>(wakeUp - Clock::now());
    int timeoutMs = static_cast<int>(std::max<int64_t>(0, sleep.count()));
    ::poll(fds.data(), fds.size(), timeoutMs);  // EINTR or an error: the callers re-check everything
  }

  void acceptPending() {
    while (accepting()) {
      net::Socket socket;
      Status status = listener_.tryAccept(&socket);
      if (!status.isOk()) {
        WEFT_WARN("bootstrap root %s: %s; retrying shortly", where_.c_str(), status.message().c_str());
        acceptPausedUntil_ = Clock::now() + kAcceptPause;
        return;
      }
      if (!socket.valid()) return;
      Pending pending;
      pending.peer = socket.peerAddress().toString();
      pending.socket = std::move(socket);
      pending.deadline = Clock::now() + handshakeTimeout_;
      pending_.push_back(std::move(pending));
    }
  }

  void servePending() {
    const Clock::time_point now = Clock::now();
    std::erase_if(pending_, [&](Pending& pending) {
      Status status = pending.socket.tryRecv(pending.bytes.data(), pending.bytes.size(), &pending.got);
      if (!status.isOk()) {
        drop(pending, status.message());
        return true;
      }
      if (pending.got == pending.bytes.size()) {
        admit(&pending);
        return true;
      }
      if (now >= pending.deadline) {
        drop(pending, "no complete hello within " + std::to_string(handshakeTimeout_.count()) +
                          " s (WEFT_BOOTSTRAP_HANDSHAKE_TIMEOUT), " + std::to_string(pending.got) + " of " +
                          std::to_string(wire::kRootHelloBytes) + " bytes came");
        return true;
      }
      return false;
    });
  }

  void drop(const Pending& pending, const std::string& why) {
    WEFT_WARN("bootstrap root %s: closed the connection from %s: %s. Only the ranks of this communicator "
              "should connect here; check that every rank got the same unique id",
              where_.c_str(), pending.peer.c_str(), why.c_str());
  }

  void admit(Pending* pending) {
    wire::RootHello hello;
    Status status = wire::parseRootHello(pending->bytes, &hello);
    if (!status.isOk()) return drop(*pending, "not a Weft bootstrap hello: " + status.message());
    if (!wire::secretsEqual(hello.secret, secret_)) {
      return drop(*pending, "rank " + std::to_string(hello.rank) +
                                " presented a wrong secret (it was started with another unique id, or another "
                                "WEFT_COMM_SECRET)");
    }
    if (nranks_ == 0) {
      nranks_ = hello.nranks;
      ranks_.resize(nranks_);
      addresses_.resize(nranks_);
    } else if (hello.nranks != nranks_) {
      return drop(*pending, "rank " + std::to_string(hello.rank) + " announces nranks=" +
                                std::to_string(hello.nranks) + " but other ranks joined with nranks=" +
                                std::to_string(nranks_) + "; every rank must pass the same nranks");
    }
    if (ranks_[hello.rank].valid()) {
      return drop(*pending, "rank " + std::to_string(hello.rank) + " joined already from " +
                                ranks_[hello.rank].peerAddress().toString() +
                                "; every rank must pass a distinct rank");
    }
    // The welcome tells the rank that a root, not a stranger on the port, has its hello. Nothing
    // was sent on this connection before, so its 16 bytes fit the socket's buffer at once.
    const auto welcome = wire::encodeWelcome(hello.rank, nranks_);
    size_t sent = 0;
    status = pending->socket.trySend(welcome.data(), welcome.size(), &sent);
    if (!status.isOk() || sent != welcome.size()) {
      return drop(*pending, "rank " + std::to_string(hello.rank) + " could not be welcomed: " +
                                (status.isOk() ? "the connection took " + std::to_string(sent) + " of " +
                                                     std::to_string(welcome.size()) + " bytes"
                                               : status.message()));
    }
    WEFT_INFO(log::kBootstrap, "bootstrap root %s: rank %u joined from %s, listening on %s (%u of %u)", where_.c_str(),
              hello.rank, pending->peer.c_str(), hello.listenAddress.toString().c_str(), joined_ + 1, nranks_);
    ranks_[hello.rank] = std::move(pending->socket);
    addresses_[hello.rank] = hello.listenAddress;
    ++joined_;
    giveUpAt_ = Clock::now() + patience_.limit;
  }

  void sendTables() {
    std::vector<uint8_t> table(wire::kTableHeaderBytes + size_t{nranks_} * wire::kAddressBytes);
    auto header = wire::encodeTableHeader(nranks_);
    std::copy(header.begin(), header.end(), table.begin());
    for (uint32_t rank = 0; rank < nranks_; ++rank) {
      wire::encodeAddress(addresses_[rank], table.data() + wire::kTableHeaderBytes + rank * wire::kAddressBytes);
    }
    std::vector<size_t> sent(nranks_, 0);
    const Clock::time_point deadline = Clock::now() + tableTimeout_;
    uint32_t done = 0;
    while (done < nranks_ && !RootRegistry::instance().stopping()) {
      std::vector<pollfd> fds;
      for (uint32_t rank = 0; rank < nranks_; ++rank) {
        if (!ranks_[rank].valid()) continue;
        Status status = ranks_[rank].trySend(table.data(), table.size(), &sent[rank]);
        if (!status.isOk()) {
          WEFT_WARN("bootstrap root %s: cannot send the rank table to rank %u: %s", where_.c_str(), rank,
                    status.message().c_str());
        }
        if (!status.isOk() || sent[rank] == table.size()) {
          ranks_[rank].close();
          ++done;
          continue;
        }
        fds.push_back({ranks_[rank].fd(), POLLOUT, 0});
      }
      if (done == nranks_) break;
      if (Clock::now() >= deadline) {
        WEFT_WARN("bootstrap root %s: %u ranks did not take the rank table within %lld s "
                  "(WEFT_SOCKET_CONNECT_TIMEOUT); giving up on them",
                  where_.c_str(), nranks_ - done, static_cast<long long>(tableTimeout_.count()));
        break;
      }
      ::poll(fds.data(), fds.size(), static_cast<int>(kMaxPollSleep.count()));
    }
  }

  net::Socket listener_;
  wire::Secret secret_;
  std::string where_;
  std::chrono::seconds handshakeTimeout_;
  std::chrono::seconds tableTimeout_;
  Patience patience_;
  Clock::time_point giveUpAt_;  // patience_.limit after the start or after the last rank that joined
  uint64_t registryKey_;
  std::vector<Pending> pending_;
  Clock::time_point acceptPausedUntil_{};
  uint32_t nranks_ = 0;  // 0 until the first valid hello
  uint32_t joined_ = 0;
  std::vector<net::Socket> ranks_;
  std::vector<net::SocketAddress> addresses_;
};

void* runRoot(void* argument) {
  std::unique_ptr<BootstrapRoot> root(static_cast<BootstrapRoot*>(argument));
  // Signals are for the application's threads.
  sigset_t all;
  sigfillset(&all);
  pthread_sigmask(SIG_BLOCK, &all, nullptr);
  root->run();
  return nullptr;
}

}  // namespace

Status startBootstrapRoot(net::Socket listener, const wire::Secret& secret) {
  auto root = std::make_unique<BootstrapRoot>(std::move(listener), secret);
  pthread_attr_t attributes;
  pthread_attr_init(&attributes);
  pthread_attr_setdetachstate(&attributes, PTHREAD_CREATE_DETACHED);
  pthread_t thread;
  int rc = pthread_create(&thread, &attributes, runRoot, root.get());
  pthread_attr_destroy(&attributes);
  if (rc != 0) return errnoStatus(rc, "cannot start the bootstrap root thread");
  root.release();  // now owned by the thread
  return Status::ok();
}

}  // namespace weft::core
