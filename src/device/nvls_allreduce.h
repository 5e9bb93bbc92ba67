#pragma once
// The NVLS allreduce (src/device/nvls_plan.h) as each rank's kernel runs it, in the step kernel
// of the launch's type and op (src/device/step_kernel.cu), for the types and ops the switches
// reduce (nvlsReduces). Block b of every rank moves the same pieces (nvlsPiece), in rounds; per
// piece:
//
//   1. copy the piece of the input into the block's area of this rank's bound memory;
//   2. barrier: every rank's block b has copied its piece;
//   3. for this rank's n-th of the piece's 16-byte words: load them reduced across every rank's
//      area (through the multicast address) and store the result into every area;
//   4. barrier: every rank's share is stored everywhere;
//   5. copy the piece out of the area into the output.
//
// The barrier of block b is a counter in every rank's memory: each rank's arrival adds one to it
// in all of them at once (release), and a rank waits until its own copy has grown by n since its
// last barrier (acquire), polling ncclCommAbort's flag. The barriers passed are kept in the rank's
// memory beside it, so a later launch, or a CUDA graph's replay, goes on from there. A rank
// cannot start piece k + 1 of block b before every rank has left step 3 of piece k.
//
// Written for any block type (src/device/kernel_block.h) and any fabric, which does what the
// switches do. A fabric type provides, each callable where the loop runs:
//
// - `Word16 loadReduce(const char* multicast)`: the 16 bytes at that offset of every rank's area,
//   reduced by the launch's op (multimem.ld_reduce);
// - `void storeEverywhere(char* multicast, const Word16&)`: into every rank's area (multimem.st);
// - `void arrive(unsigned* multicast)`: adds one to the 32-bit counter there in every rank's
//   memory, with release semantics at system scope (multimem.red.release.sys);
// - `unsigned loadAcquire(const unsigned* unicast)`: this rank's copy, acquire at system scope;
// - `void fenceAliases()`: this thread's accesses through one alias of the memory (unicast or
//   multicast) are ordered before its later ones through the other (fence.proxy.alias);
// - `Word16 loadFresh(const void* words, uint64_t index)` and `char loadFreshByte(const char*)`:
//   loads that see what other GPUs wrote since this SM last read there (no L1).
//
// The GPU's fabric is src/device/nvls_switch.cuh; unit tests run the loop with host memory
// standing in for the ranks' areas (tests/unit/nvls_allreduce_test.cc).

#include <cstdint>

#include "src/device/block_loops.h"
#include "src/device/host_device.h"
#include "src/device/kernel_block.h"
#include "src/device/kernel_work.h"
#include "src/device/nvls_plan.h"

namespace weft::device {

namespace nvls_detail {

/// The whole block: waits until block `blockIndex` of every rank has arrived here. False, on every
/// thread, if the communicator was aborted.
template <class Block, class Fabric>
WEFT_KERNEL_CODE bool barrier(Block& block, const Fabric& fabric, const KernelNvls& nvls, uint32_t blockIndex,
                              const volatile int* abortFlag) {
  fabric.fenceAliases();
  block.sync();
  bool aborted = false;
  if (block.thread() == 0) {
    const size_t line = static_cast<size_t>(blockIndex) * kNvlsControlLineBytes;
    const unsigned* arrived = reinterpret_cast<const unsigned*>(nvls.unicast + line);
    unsigned* passed = reinterpret_cast<unsigned*>(nvls.unicast + kMaxNvlsBlocks * kNvlsControlLineBytes + line);
    const unsigned target = *passed + static_cast<unsigned>(nvls.nranks);
    fabric.arrive(reinterpret_cast<unsigned*>(nvls.multicast + line));
    fabric.fenceAliases();  // the add went through the multicast address; the polls read the unicast one
    typename Block::Wait wait(block);
    for (int polls = 0;; ++polls) {
      const unsigned now = fabric.loadAcquire(arrived);
      if (static_cast<int>(now - target) >= 0) break;  // wraps safely: no rank is 2^31 barriers ahead
      if (polls == kPollsPerAbortCheck) {
        if (block.aborted(abortFlag)) {
          aborted = true;
          break;
        }
        wait.note(core::BlockActivity::kAtBarrier, -1, -1, core::WaitSite{}, now, target);
        polls = 0;
      }
    }
    if (!aborted) {
      wait.end();
      *passed = target;
    }
  }
  if (block.syncOr(aborted)) return false;
  fabric.fenceAliases();
  return true;
}

/// The block copies `bytes` from `from` to `to`, 16 bytes at a time where both allow. Reads of the
/// area are `fresh`: other GPUs wrote it since this SM last read it.
template <class Block, class Fabric>
WEFT_KERNEL_CODE void copyBytes(Block& block, const Fabric& fabric, char* to, const char* from, uint64_t bytes,
                                bool fresh) {
  uint64_t done = 0;
  if (((reinterpret_cast<uintptr_t>(to) | reinterpret_cast<uintptr_t>(from)) & 15) == 0) {
    const uint64_t words = bytes / 16;
    for (uint64_t w = block.thread(); w < words; w += block.threads()) {
      storeWord(to, w, fresh ? fabric.loadFresh(from, w) : loadWord(from, w));
    }
    done = words * 16;
  }
  for (uint64_t i = done + block.thread(); i < bytes; i += block.threads()) {
    to[i] = fresh ? fabric.loadFreshByte(from + i) : from[i];
  }
}

}  // namespace nvls_detail

/// Runs the launch's NVLS allreduce (work.nvls.unicast is set) in block `blockIndex`.
template <class Block, class Fabric>
WEFT_KERNEL_CODE void runNvlsAllReduce(Block& block, const KernelWork& work, uint32_t blockIndex,
                                       const Fabric& fabric) {
  using namespace nvls_detail;
  const KernelNvls& nvls = work.nvls;
  const int b = static_cast<int>(blockIndex);
  char* area = nvls.unicast + nvlsAreaOffset(b);
  char* everyArea = nvls.multicast + nvlsAreaOffset(b);
  const uint64_t pieceBytes = nvlsPieceBytes(nvls.bytes, nvls.blocks);
  const uint64_t rounds = nvlsRounds(nvls.bytes, pieceBytes, nvls.blocks, b);
  for (uint64_t round = 0; round < rounds; ++round) {
    const NvlsPiece piece = nvlsPiece(nvls.bytes, pieceBytes, nvls.blocks, b, round);
    const uint64_t bytes = piece.end - piece.begin;
    copyBytes(block, fabric, area, nvls.sendbuff + piece.begin, bytes, false);
    if (!barrier(block, fabric, nvls, blockIndex, work.abortFlag)) return;
    const algorithms::ElementRange words = nvlsRankWords(bytes, nvls.rank, nvls.nranks);
    for (uint64_t w = words.offset + block.thread(); w < words.offset + words.count; w += block.threads()) {
      fabric.storeEverywhere(everyArea + 16 * w, fabric.loadReduce(everyArea + 16 * w));
    }
    if (!barrier(block, fabric, nvls, blockIndex, work.abortFlag)) return;
    copyBytes(block, fabric, nvls.recvbuff + piece.begin, area, bytes, true);
    block.sync();  // every thread has read the area before any refills it
  }
}

}  // namespace weft::device
