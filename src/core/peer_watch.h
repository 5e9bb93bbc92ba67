#pragma once
// Dead-peer detection for one communicator, through the kernel rather than from timing.
//
// Each rank holds one TCP connection to each of its neighbours in rank order (rank - 1 and
// rank + 1), and, for a neighbour on the same host in another process, a pidfd. A background
// thread sleeps in poll() on them. When a neighbour's process dies, the kernel closes its sockets
// (and signals its pidfd), so the thread sees end-of-file; a neighbour that leaves through
// ncclCommDestroy says goodbye first and is not reported. The thread that sees a death tells its
// other neighbour, which passes the notice on, so every rank learns of it in at most nranks / 2
// hops, even ranks that never talk to the dead one. A live but overloaded peer never looks dead:
// nothing here depends on how fast it runs. Between hosts, TCP keepalive turns a host that
// vanished without closing its sockets into an error too.
//
// The watch costs one sleeping thread, two sockets and up to two pidfds per communicator, and
// nothing on the call path except one relaxed atomic load when a wait is idle.

#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "src/base/peer_info.h"
#include "src/base/socket.h"
#include "src/base/status.h"
#include "src/base/wait.h"
#include "src/core/bootstrap.h"

namespace weft::core {

class PeerWatch {
 public:
  /// How long after it learns of a death a rank still waits for data: what the dead rank sent
  /// before dying may still be on its way through live ranks.
  static constexpr std::chrono::milliseconds kDeathGrace{1000};

  /// Called on the watch thread with the failure, once, kDeathGrace after the first dead peer is
  /// known (unless the watch is destroyed first).
  using DeathHandler = std::function<void(const Status& failure)>;

  /// Connects this rank to its neighbours' watches and starts the watch thread. Collective: every
  /// rank of the bootstrap calls it after the peers' descriptions were exchanged. `commHash`
  /// authenticates the connections (it is derived from the id, secret included). Waits through
  /// `context`. `onDeath` (may be empty) must stay callable until the watch is destroyed.
  static Status start(Bootstrap& bootstrap, const std::vector<PeerInfo>& peers, uint64_t commHash,
                      const WaitContext& context, DeathHandler onDeath, std::unique_ptr<PeerWatch>* out);

  /// Stops the thread and closes the connections. Unless sayGoodbye() was called first, the
  /// neighbours report this rank as gone (as after ncclCommAbort or a crash).
  ~PeerWatch();

  /// Tells the neighbours that this rank leaves cleanly (ncclCommDestroy). Any thread.
  void sayGoodbye();

  /// True once a peer is known to be dead. Any thread; one relaxed load.
  bool peerFailed() const { return failed_.load(std::memory_order_relaxed); }
  /// True once `rank` is known dead. Any thread.
  bool isDead(int rank) const { return knownDead_[rank].load(std::memory_order_relaxed); }
  /// The kRemoteError naming the first dead peer, and when this rank learned of it. Only
  /// meaningful once peerFailed().
  Status failure(std::chrono::steady_clock::time_point* learnedAt) const;

 private:
  struct Neighbour;

  PeerWatch(const std::vector<PeerInfo>& peers, int rank);
  void run();
  /// Reads what a neighbour sent; handles its goodbye, notices, or end of file.
  void readFrom(Neighbour& neighbour);
  /// Records the loss of `deadRank` for `cause` (a LossCause; `source` says who reported it, if
  /// not this rank) once, and passes the notice on to the live neighbours.
  void reportDeath(int deadRank, uint32_t cause, const std::string& source);

  std::vector<PeerInfo> peers_;
  int rank_;
  int stopFd_ = -1;  // eventfd that ends the thread
  std::vector<Neighbour> neighbours_;
  std::unique_ptr<std::atomic<bool>[]> knownDead_;  // written by the watch thread only
  DeathHandler onDeath_;
  bool deathHandlerPending_ = false;  // the watch thread's: onDeath_ is due at deathHandlerDue_
  std::chrono::steady_clock::time_point deathHandlerDue_;
  std::thread thread_;

  std::atomic<bool> failed_{false};
  mutable std::mutex failureMutex_;
  Status failure_;
  std::chrono::steady_clock::time_point learnedAt_;
};

}  // namespace weft::core
