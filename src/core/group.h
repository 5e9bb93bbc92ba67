#pragma once
// Group semantics, as NCCL's: ncclGroupStart/End nest; between the outermost pair, the calling
// thread's operations and communicator inits are collected and launched together at the end.
// Without a group, each call is a group of its own.
//
// A launch that involves a nonblocking communicator (config.blocking = 0) runs on a background
// thread and returns kInProgress at once; ncclCommGetAsyncError tells when it has ended. A new
// launch on a communicator that is still busy waits for the earlier one first.

#include <functional>
#include <vector>

#include "src/base/status.h"
#include "src/core/op.h"

namespace weft::core {

class Communicator;

/// The calling thread's group. Not shared between threads.
class Group {
 public:
  /// The calling thread's group state.
  static Group& current();

  void start() { ++depth_; }
  /// Closes one level; the outermost end launches the collected work: init jobs first, each on its
  /// own thread (they wait on each other's ranks), then all operations together on this thread.
  /// Returns the first failure, including one recorded by recordError.
  Status end();
  /// ncclGroupSimulateEnd: closes one level like end(); the outermost one runs the group's
  /// communicator inits but not its operations, and sets *estimatedMicroseconds to the tuner's
  /// prediction for them: per communicator the sum over its operations, the largest over
  /// communicators (0 for none). The operations are dropped.
  Status simulateEnd(double* estimatedMicroseconds);
  bool active() const { return depth_ > 0; }
  int depth() const { return depth_; }

  /// Runs `op` now (no group) or at the outermost end.
  Status submit(const Op& op);
  /// A communicator init, split or shrink: `run` creates it; `cancel` records, instead, why it
  /// never ran (an invalid call earlier in the group).
  struct InitJob {
    std::function<Status()> run;
    std::function<void(const Status&)> cancel;
    /// Jobs with the same non-null key (the parent of a split or shrink, whose bootstrap they
    /// use) run one after the other, in call order; the others each run on a thread of their own.
    const void* serialKey = nullptr;
    /// An existing communicator the job works on (a window registration's), or null: the launch
    /// first waits for its earlier launches in the background and, if the launch itself runs in
    /// the background, marks it busy until the launch ends.
    Communicator* uses = nullptr;
  };
  /// Runs `job` now, or at the outermost end on a thread of its own. `blocking` is the new
  /// communicator's config.blocking.
  Status submitInit(InitJob job, bool blocking);
  /// Records a failed call inside the group: the outermost end returns it and drops the group's work.
  void recordError(const Status& status);

 private:
  Status launch();

  int depth_ = 0;
  std::vector<Op> ops_;
  std::vector<InitJob> inits_;
  bool nonblocking_ = false;  // the launch involves a nonblocking communicator
  Status error_;
};

}  // namespace weft::core
