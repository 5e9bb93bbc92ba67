#pragma once
// The direct allreduce on host memory: each rank reduces its share of the elements, reading every
// peer's send buffer and writing the result into every peer's receive buffer, so every input is
// read once and every output written once (the slot ring moves each byte about twice). A peer's
// buffers are reached in place where they lie in memory windows every rank reaches
// (src/core/windows.h: ncclCommWindowRegister), else through process_vm_readv/writev. Used for
// ranks of one host, for messages from WEFT_WINDOW_MIN_BYTES where every rank's buffers lie in
// such windows, or from WEFT_CMA_MIN_BYTES where cross-memory attach works
// (core::probeCrossMemoryAttach).
//
// The host executor runs it as three lanes of one operation: an allgather of each rank's
// DirectDescriptor over channel 0's ring, reduceOwnShare, then an allgather of one byte that
// tells each rank that every peer is done with its buffers.

#include <cstdint>
#include <span>
#include <vector>

#include "src/base/status.h"
#include "src/core/op.h"

namespace weft::exec {

/// Where a rank's buffers are, for its peers.
struct DirectDescriptor {
  int32_t pid = 0;
  int32_t reserved = 0;
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

/// Whether `op` runs as a direct allreduce: AllReduce of two or more ranks on host buffers of at least
/// op.comm->cmaMinBytes() bytes (never when that is 0), or of at least windowMinBytes() bytes
/// (never when 0) in windows every rank reaches. The same on every rank where every rank's buffers
/// lie in such windows or none do (NCCL's rule for symmetric windows).
bool runsDirect(const core::Op& op);

/// Whether `op` is an allreduce of two or more ranks on host buffers of at least
/// windowMinBytes() bytes, both in windows that every rank reaches, where NCCL_ALGO allows the
/// ring and NCCL_PROTO Simple: then it runs direct, whatever the tuner chose.
bool runsInWindows(const core::Op& op);

/// This rank's descriptor for `op`.
DirectDescriptor describeBuffers(const core::Op& op);

/// This rank's part of `op`: its share of the elements (part `rank` of nranks even parts),
/// reduced over every rank's send buffer in pieces that stay in cache, written into its own
/// receive buffer and every peer's. `descriptors` holds every rank's, in rank order. Blocks in
/// system calls only; never waits for a peer. `scratch` (reused across calls) holds a piece read
/// through process_vm_readv. With `streamOutput`, this rank's output is written with non-temporal
/// stores (algorithms::ReduceArgs::streamOut).
Status reduceOwnShare(const core::Op& op, std::span<const DirectDescriptor> descriptors, bool streamOutput,
                      std::vector<char>* scratch);

}  // namespace weft::exec
