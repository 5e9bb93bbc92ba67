#pragma once
// GPU resources made when a communicator is made rather than at its first call on GPU buffers,
// where its ranks are threads of one process.
//
// Such ranks share the process's CUDA driver: a thread that allocates GPU or pinned memory can wait,
// inside the driver, for another thread that waits for the GPU, whose kernel waits for the first
// thread's rank. And CUDA's programming guide ("Implicit Synchronization") lists a page-locked host
// allocation, a device allocation and a memset among the operations that keep commands of
// different streams issued before and after them from running at once: a peer's kernel enqueued
// after such a call may wait for one enqueued before it, which waits for the peer. Made at init,
// before the barrier that ends it, no rank's first kernel runs while a peer of its process still
// allocates for its own. So it is wherever two ranks of one host are threads of one process, the
// others being threads or processes of that host (ranks across hosts, whose connections include
// network proxies, and ranks each in a process of its own keep NCCL's default: resources and
// connections are made at the first call that needs them).

#include <vector>

#include "src/base/peer_info.h"
#include "src/base/status.h"

namespace weft::core {
class Communicator;
}

namespace weft::device {

/// Whether a communicator with `peers` (the same on every rank, so every rank agrees) makes its GPU
/// resources at init: every rank on one host, two or more of them threads of one process, each
/// with a CUDA device that its process already used when the communicator was made (init makes no
/// CUDA context that a host-memory program would not have made).
bool setsUpGpuAtInit(const std::vector<PeerInfo>& peers);

/// Makes `comm`'s GPU resources (comm_device.h: the abort flag, the tables' pinned buffers) and
/// every GPU connection a call may need, while every other rank of the communicator does the same:
/// its GPU rings', and to and from each peer those of all-to-all, gather, scatter and Send/Recv
/// (core::directPairRequests: at most 2n - 1 receiving ends beyond the rings').
/// Makes nothing where NCCL_P2P_DISABLE or NCCL_P2P_LEVEL forbid its GPUs to talk, or two of its
/// GPUs cannot reach each other's memory, or this build has no code for one, as any rank sees it
/// (the ranks agree first, in one allgather): its calls on GPU buffers fail, saying why, as they
/// would otherwise. Where CUDA IPC between processes fails (a sandbox that forbids it), so does
/// init. Fails (and so does the communicator's init, as NCCL's does) where an allocation
/// fails. Without CUDA: nothing.
Status setUpGpuAtInit(core::Communicator& comm);

}  // namespace weft::device
