#pragma once
// The thread block that the step kernel's loops run in (src/device/lane_loop.h,
// src/device/direct_allreduce.h, src/device/nvls_allreduce.h). They are written once for two
// kinds of block: the GPU's (src/device/device_block.cuh), and host threads standing in for a
// block's threads, on which unit tests run them with no GPU (tests/unit/host_block.h). A block type `Block` provides, each
// callable where the loops run:
//
// - `uint32_t thread() const`, `uint32_t threads() const`: the calling thread's index in the block
//   and the block's thread count;
// - `void sync()`: returns once every thread of the block has called it (`__syncthreads`);
//   `bool syncOr(bool)`: the same, and returns on every thread whether any passed true
//   (`__syncthreads_or`);
// - `template <class T> T& shared()`: the block's shared memory (kBlockSharedBytes, one for all
//   its threads) as a T, an aggregate of plain fields that fits it;
// - `unsigned long long loadAcquire(const unsigned long long*)` and `void storeRelease(unsigned
//   long long*, unsigned long long)` at system scope (a peer GPU, a proxy reading pinned memory),
//   `loadAcquireGpu` and `storeReleaseGpu` at GPU scope (ranks sharing one GPU), and `unsigned
//   long long loadOwn(const unsigned long long*)` for a counter that no other thread writes while
//   the loop reads it;
// - `unsigned fetchAdd(unsigned*, unsigned)`: an atomic add that returns the old value, ordered
//   with nothing (fenceSystem orders around it);
// - `void fenceSystem()`: the thread's earlier accesses are seen, by any reader, before its later
//   ones;
// - `void loadLine(const char*, uint32_t words[4])` and `void storeLine(char*, const uint32_t
//   words[4])`: a 16-byte LL line {data low, flag, data high, flag}; the loops rely only on each
//   8-byte half (data and its flag) being seen whole, as NCCL's LL does;
// - `bool aborted(const volatile int*) const`: the abort flag is set;
// - `Block::Wait`, made from the block: `note(core::BlockActivity, peer, channel, core::WaitSite,
//   seen, wanted)` while a wait goes on, `end()` when it is over (the hang reports' records).

#include <cstddef>

namespace weft::device {

/// The shared memory every block of the step kernel has for its loop's state.
inline constexpr size_t kBlockSharedBytes = 12 * 1024;

}  // namespace weft::device
