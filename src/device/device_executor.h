#pragma once
// The GPU executor: enqueues operations on GPU buffers on their CUDA streams and returns.
//
// Each operation becomes the same step program as on the host path (algorithms/schedule.h), over
// the communicator's GPU channels; the step kernel (step_kernel.h) runs it with one thread block
// per group of lanes that share a connection end, moving the slots of cuda_ipc connections.

#include <span>

#include "src/base/status.h"
#include "src/core/op.h"
#include "src/core/stream_turns.h"

namespace weft::device {

/// Enqueues `ops` (each on GPU buffers; any communicators; in call order) and returns without
/// waiting for them. Per communicator: one kernel for the launch's Send/Recv (so that a group of
/// sends and receives cannot deadlock), then one kernel per collective in call order; a
/// communicator's kernels run in call order whatever streams they are given, and a launch whose
/// operations name several streams joins them. Connections not set up yet are made first, which
/// waits for the peers to do their half (as on the host path); then it awaits `turns` (taken for
/// `ops` on the thread that made the launch: core/stream_turns.h) before it puts anything on its
/// streams. Fails with kInvalidUsage, before anything is enqueued, when two ranks of one
/// communicator use the same stream in this launch.
Status enqueueOnStreams(std::span<const core::Op> ops, core::LaunchTurns& turns);

}  // namespace weft::device
