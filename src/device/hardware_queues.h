#pragma once
// The hardware queues CUDA gives a process: CUDA_DEVICE_MAX_CONNECTIONS of them per GPU (8 unless
// set, 32 at most), onto which its streams are mapped in turn. Work of one queue starts in order,
// so work that waits (a stream's next command after a kernel that has not ended) holds up the
// queue's later work from every stream mapped there. Where ranks that are threads of one process
// share a GPU, a kernel waiting for a peer can so hold up the very work of that peer that it
// waits for, and the ranks deadlock. The more queues, the fewer streams share one: with 32, none
// do until the process has made more than 32 streams.

#include <string>
#include <vector>

#include "src/base/peer_info.h"

namespace weft::device {

/// The most queues CUDA allows, and the setting Weft asks for where ranks of a process share a GPU.
inline constexpr int kMostHardwareQueues = 32;

/// A warning where another of `peers` is a thread of the same process as `peers[rank]` on the same
/// GPU and `maxConnections` (CUDA_DEVICE_MAX_CONNECTIONS as set, or null) gives fewer than
/// kMostHardwareQueues queues; empty otherwise.
std::string hardwareQueueWarning(const std::vector<PeerInfo>& peers, int rank, const char* maxConnections);

}  // namespace weft::device
