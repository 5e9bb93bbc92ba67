#pragma once
// When an allreduce on GPU buffers runs as the direct kernel rather than the ring, and with how
// many thread blocks. Every build has this (the GPU executor uses it; unit tests check it
// anywhere). The kernel itself is src/device/direct_allreduce.h.
//
// Ranks that are threads of one process on one GPU share an address space and a memory: each
// rank's kernel can read every peer's input and write every peer's output, so the allreduce reads
// each input once and writes each output once, where the ring moves every byte through slots
// 2(n-1)/n times over. The kernels of the n ranks meet twice on boards in device memory: to
// publish their buffers, and to wait until every output is written.

#include <cstddef>
#include <cstdint>
#include <vector>

#include "src/base/peer_info.h"

namespace weft::device {

/// The most ranks the direct kernel reduces at once (each block keeps every rank's buffers and
/// multiplier in shared memory).
inline constexpr int kMaxDirectRanks = 8;

/// Whether a communicator of `peers` runs its allreduces on GPU buffers directly: 1 to
/// kMaxDirectRanks ranks, all in one process on one host with one CUDA device. Every rank reaches
/// the same answer from the same PeerInfo.
bool sharesOneGpuInOneProcess(const std::vector<PeerInfo>& peers);

/// Whether the direct kernels of `nranks` ranks fit a GPU of `multiprocessors`: they wait for each
/// other, so every rank's blocks must be resident at once, and they take at most half the GPU's
/// multiprocessors (one block each) so that another communicator's kernels, which may wait for
/// ranks of their own, still find room beside them.
bool directFits(int nranks, int multiprocessors);

/// Thread blocks each rank's direct kernel runs for `count` elements of `elementBytes`: enough for
/// every thread of `threadsPerBlock` to have a 16-byte word of the rank's share, at least one, and
/// at most `multiprocessors / (2 nranks)` (see directFits). The same on every rank of the
/// communicator for the same count.
int directBlocksPerRank(uint64_t count, size_t elementBytes, int nranks, int multiprocessors, int threadsPerBlock);

}  // namespace weft::device
