#pragma once
// One launch: a call outside a group, or the operations of a group, handed to the executors.

#include <span>

#include "src/base/status.h"
#include "src/core/op.h"
#include "src/core/stream_turns.h"

namespace weft::exec {

/// Runs the operations of one launch (any communicators, in call order): with WEFT_CHECK, the
/// ranks first compare their calls; then operations on GPU buffers are enqueued on their streams
/// (src/device/device_executor.h) in `turns` (taken for `ops` on the thread that made the launch:
/// src/core/stream_turns.h), passed once the kernels are enqueued; then operations on host buffers
/// run to completion on this thread (host_executor.h). Returns the first failure.
Status launchOps(std::span<const core::Op> ops, core::LaunchTurns turns);

}  // namespace weft::exec
