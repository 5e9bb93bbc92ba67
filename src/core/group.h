#pragma once
// Group semantics, as NCCL's: ncclGroupStart/End nest; between the outermost pair, the calling
// thread's operations and communicator inits are collected and launched together at the end.
// Without a group, each call is a group of its own.

#include <functional>
#include <vector>

#include "src/base/status.h"
#include "src/core/op.h"

namespace weft::core {

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
  bool active() const { return depth_ > 0; }
  int depth() const { return depth_; }

  /// Runs `op` now (no group) or at the outermost end.
  Status submit(const Op& op);
  /// Runs `job` (a communicator init or split) now, or at the outermost end on a thread of its own.
  Status submitInit(std::function<Status()> job);
  /// Records a failed call inside the group: the outermost end returns it and drops the group's work.
  void recordError(const Status& status);

 private:
  Status launch();

  int depth_ = 0;
  std::vector<Op> ops_;
  std::vector<std::function<Status()>> inits_;
  Status error_;
};

}  // namespace weft::core
