#pragma once
// The order in which one thread's launches reach a stream. A thread's calls on GPU buffers are
// enqueued on their streams in the order it made them, as NCCL's are: a later call on the same
// stream starts after an earlier one, whatever their communicators. A launch that involves a
// nonblocking communicator runs on a background thread of its own (group.h), so two such launches
// of one thread, of two communicators, could otherwise reach a shared stream in either order:
// results that depend on the order would change, and ranks whose kernels queue in different
// orders could each wait behind a kernel that waits for them.
//
// So each launch takes a turn on each of its streams when it is made, on the calling thread, and
// awaits it once it is ready to put its work there: then the thread's earlier launches have put
// theirs, and none of the thread's other launches is putting work there.
//
// Except those still setting up. Some launches first set up what waits for their peers: inits,
// WEFT_CHECK's comparison of the calls, a first call's GPU resources and connections. The peers
// may be driven by this same thread's later calls (one thread driving several ranks of a
// nonblocking communicator), so nothing waits for a launch that says it is setting up: a later
// launch goes ahead of it, as a call of NCCL's goes ahead of a nonblocking one still connecting
// in the background. A launch that is not setting up goes on to enqueue, where it may wait for
// the GPU: for a buffer for its tables, which an earlier kernel of its communicator holds, and for
// room in the GPU's queue. Those kernels end without the calling thread where the program keeps
// NCCL's rule that one thread driving several ranks of a communicator calls them in one group:
// every kernel they wait for is then enqueued already.
//
// Only a thread's own launches are ordered: launches of several threads on one stream have no
// order the program gave them. Turns go by stream handle, so they leave alone the order CUDA
// itself keeps between the legacy default stream and blocking streams.

#include <cstdint>
#include <span>
#include <vector>

#include "src/base/status.h"
#include "src/base/wait.h"
#include "src/core/op.h"

namespace weft::core {

/// The turns of one launch on the streams of its operations on GPU buffers. Movable, not copyable;
/// used by one thread at a time (the launch's). Destroying it passes every turn it holds, awaited
/// or not, so that a launch that fails holds up none of the thread's later ones.
class LaunchTurns {
 public:
  /// No turns: await() returns at once.
  LaunchTurns() = default;
  /// Takes the calling thread's next turn on each distinct stream of `ops`' operations on GPU
  /// buffers (onDevice). Operations on host buffers run where they are called and take none.
  static LaunchTurns take(std::span<const Op> ops);

  LaunchTurns(LaunchTurns&& other) noexcept;
  LaunchTurns& operator=(LaunchTurns&& other) noexcept;
  LaunchTurns(const LaunchTurns&) = delete;
  LaunchTurns& operator=(const LaunchTurns&) = delete;
  ~LaunchTurns();

  /// Says that the launch is about to wait for its peers (setting up): until it awaits its turns,
  /// the thread's later launches go ahead of it. Nothing once it has awaited them.
  void settingUp();

  /// Called once the launch is ready to enqueue: waits, through `context` (its check ends the
  /// wait: an abort, a dead peer; its timeout too), until no earlier launch of the same thread but
  /// those setting up still has to put its work on these streams, and no other launch of the
  /// thread is putting work there. Then the streams are this launch's until it passes its turns.
  Status await(const WaitContext& context);

  /// Passes every turn it holds: its launch has put on its streams all it will. Destroying it
  /// does the same.
  void pass();

  /// The number of streams it holds turns on: none without operations on GPU buffers, or passed.
  size_t size() const { return turns_.size(); }
  bool empty() const { return turns_.empty(); }

 private:
  struct Turn {
    uint64_t thread;     // the thread that made the launch, by a number of Weft's own
    const void* stream;  // a cudaStream_t
    uint64_t number;     // the launch's place among that thread's launches on that stream
  };

  std::vector<Turn> turns_;
};

}  // namespace weft::core
