#pragma once
// Direct collectives on host memory: each rank reads its peers' buffers and writes theirs itself,
// so every input is read once and every output written once (the slot ring moves each byte about
// twice). Used for ranks of one host:
// - AllReduce, AllGather and ReduceScatter (the collectives of NCCL's symmetric kernels), and
//   Broadcast, whose buffers on every rank lie in memory windows every rank reaches
//   (src/core/windows.h: ncclCommWindowRegister), from WEFT_WINDOW_MIN_BYTES: a peer's buffers are
//   reached in place;
// - AllReduce from WEFT_CMA_MIN_BYTES where cross-memory attach works
//   (core::probeCrossMemoryAttach): a peer's buffers outside windows are reached through
//   process_vm_readv/writev.
//
// The host executor runs one as three lanes of one operation: an allgather of each rank's
// DirectDescriptor over channel 0's ring (no rank touches a peer's buffers before every rank has
// called), runOwnPart, then an allgather of one byte that tells each rank that every peer is done
// with its buffers.

#include <cstdint>
#include <span>
#include <vector>

#include "src/base/status.h"
#include "src/core/op.h"

namespace weft::exec {

/// Where a rank's buffers are, for its peers.
struct DirectDescriptor {
  int32_t pid = 0;
  int32_t root = 0;  // as the rank called it (all must agree)
  uint64_t sendAddress = 0;
  uint64_t recvAddress = 0;
  uint64_t count = 0;
  /// PreMulSum's multiplier, which may differ between ranks: each input is scaled by its own
  /// rank's (Reduction::scalar's encoding).
  unsigned char scalar[8] = {};
  /// The windows every rank reaches that hold the buffers (Window::number; 0: none), and where the
  /// buffers start in them.
  uint64_t sendWindow = 0;
  uint64_t sendOffset = 0;
  uint64_t recvWindow = 0;
  uint64_t recvOffset = 0;
};

/// Whether `op` is an AllReduce, AllGather, ReduceScatter or Broadcast of two or more ranks on host
/// buffers whose larger one is at least windowMinBytes() bytes (never when 0), each buffer the rank
/// uses (not a non-root's Broadcast input) in a window that every rank reaches, where NCCL_ALGO allows the ring for it and NCCL_PROTO Simple: then it runs direct,
/// whatever the tuner chose. The same on every rank where every rank's buffers lie in such windows
/// or none do (NCCL's rule for symmetric windows).
bool runsInWindows(const core::Op& op);

/// Whether `op` is an AllReduce of two or more ranks on host buffers of at least
/// op.comm->cmaMinBytes() bytes (never when that is 0): it may run direct through cross-memory
/// attach, where the tuner chose the ring on Simple slots.
bool runsThroughCrossMemoryAttach(const core::Op& op);

/// This rank's descriptor for `op`.
DirectDescriptor describeBuffers(const core::Op& op);

/// This rank's part of `op`, whose every rank's descriptor `descriptors` holds in rank order:
/// - AllReduce: part `rank` of nranks even parts of the elements, reduced over every rank's input
///   and written into every rank's output;
/// - AllGather: this rank's input, written into every rank's output;
/// - ReduceScatter: this rank's output, reduced over every rank's input;
/// - Broadcast: part `rank` of nranks even parts of the root's input, written into every rank's
///   output.
/// Works in pieces that stay in cache. Blocks in system calls only; never waits for a peer.
/// `scratch` (reused across calls) holds a piece read through process_vm_readv. With
/// `streamOutput`, outputs that are not the inputs' own memory are written with non-temporal
/// stores (algorithms::ReduceArgs::streamOut).
Status runOwnPart(const core::Op& op, std::span<const DirectDescriptor> descriptors, bool streamOutput,
                  std::vector<char>* scratch);

}  // namespace weft::exec
