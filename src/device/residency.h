#pragma once
// How many thread blocks one rank's kernel may run, so that the kernels of every rank fit their
// GPUs at once. Ranks' kernels wait for each other: if the blocks of some ranks hold every
// multiprocessor while they wait for a block that found none free (a peer's, on this GPU or
// behind the blocks of a launch larger than its GPU), no block ever leaves. A step-kernel block
// takes a whole multiprocessor (512 threads, __launch_bounds__(512, 1), up to 128 registers a
// thread), so a GPU of m multiprocessors holds m of them. A launch that has more lanes than this
// folds them into fewer blocks (src/device/block_plan.h). Every build has this; unit tests check
// it anywhere.

#include <vector>

#include "src/base/peer_info.h"

namespace weft::device {

/// Multiprocessors of a shared GPU left for other work beside a communicator's kernels: a memset
/// or a copy of connection setup, a small kernel of the application.
inline constexpr int kSpareMultiprocessors = 4;

/// The most step-kernel blocks each rank of `peers` may run at once: for every GPU that ranks use
/// on one machine (same machineHash and gpuBusId), its multiprocessors (PeerInfo.gpuMultiprocessors)
/// less kSpareMultiprocessors, halved, divided among the ranks on it; the least of these, and at
/// least 1. Ranks of different processes count too: under MPS their kernels run side by side.
/// `unlimited` where no rank reports a GPU's multiprocessors (host memory, no CUDA). The same on
/// every rank.
///
/// Half, because another communicator may run kernels on the same GPU at once (a parent and its
/// split, each rank driven by a thread of its own, or a communicator of the same processes), and
/// the two must fit together: else the kernels of one could hold the multiprocessors that a kernel
/// of the other waits for, on this GPU or through a peer on another. Any two communicators' kernels
/// fit; three at once can need more blocks than the GPU holds, unless the application bounds them
/// (ncclConfig_t.maxCTAs, NCCL_MAX_CTAS). Ring kernels take at most 32 blocks (kMaxChannels) and
/// NVLS ones at most 32, so a rank alone on an H200 loses nothing there; launches of more lanes
/// than the limit (an all-to-all of many ranks) fold them into fewer blocks (block_plan.h).
int blocksPerRankLimit(const std::vector<PeerInfo>& peers, int unlimited);

}  // namespace weft::device
