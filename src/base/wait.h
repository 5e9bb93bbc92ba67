#pragma once
// The one wait helper. Every wait in Weft (a slot, a flag, a socket, a peer's message) polls a
// non-blocking condition and, when the poll made no progress, calls Waiter::idle(), which
//  - checks the caller's abort/liveness condition (WaitContext::check),
//  - enforces an optional no-progress deadline (WEFT_TIMEOUT, or one the caller sets),
//  - backs off: spins (at most WEFT_SPIN_COUNT polls and 50 us: a poll may be a system call),
//    then yields, then sleeps briefly, so that more ranks than cores progress.

#include <chrono>
#include <functional>
#include <string>

#include "src/base/status.h"

namespace weft {

struct WaitContext {
  /// Called while idle; a failure (abort requested, dead peer) ends the wait with that status.
  /// May be empty. Called from the waiting thread only.
  std::function<Status()> check;
  /// Seconds without progress before the wait fails with kRemoteError; 0 waits forever.
  double timeoutSeconds = 0;
  /// What is being waited for, for the timeout message ("recv from rank 3 on channel 0").
  std::string what;
  /// Idle polls spent spinning before yielding the CPU; -1: WEFT_SPIN_COUNT. A communicator with
  /// more ranks on its host than the host has CPUs spins briefly: the rank it waits for may need
  /// this CPU to make progress.
  int spinLimit = -1;
};

/// Drives the back-off of one waiting loop. Not thread-safe: one per waiting thread.
class Waiter {
 public:
  explicit Waiter(const WaitContext* context);

  /// Call after a poll that made progress: resets the back-off and the no-progress clock.
  void progressed();

  /// Call after a poll that made no progress. Returns a failure when the wait must end.
  Status idle();

 private:
  const WaitContext* context_;
  int idleCount_ = 0;
  int spinLimit_;
  // The first idle poll since the last progress (or since the start): where the wait without
  // progress began, within one poll. Progress itself reads no clock: on a busy path it happens
  // on every turn, and a clock read costs as much as a small operation's hand-off.
  std::chrono::steady_clock::time_point idleSince_;
};

/// Polls `ready` (a callable returning bool, or Status with out-param-free semantics) until it
/// returns true, waiting through a Waiter. Returns the Waiter's failure if it ends the wait.
template <class Ready>
Status waitUntil(const WaitContext& context, Ready&& ready) {
  Waiter waiter(&context);
  while (!ready()) WEFT_RETURN_IF_ERROR(waiter.idle());
  return Status::ok();
}

/// `context` without its timeout: for a wait on a GPU kernel, which may run long while it makes
/// progress that no poll sees (the kernel's own deadline: src/core/gpu_stall_watch.h).
WaitContext withoutTimeout(const WaitContext& context);

/// The default WaitContext timeout: WEFT_TIMEOUT seconds (0: none).
double defaultTimeoutSeconds();

}  // namespace weft
