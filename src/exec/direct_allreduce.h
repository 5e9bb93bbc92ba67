#pragma once
// The direct allreduce on host memory: each rank reduces its share of the elements by reading
// every peer's send buffer with process_vm_readv and writes the result into every peer's receive
// buffer with process_vm_writev, so every input is read once and every output written once (the
// slot ring moves each byte about twice). Used for ranks of one host where cross-memory attach
// works (core::probeCrossMemoryAttach) and the message is large (WEFT_CMA_MIN_BYTES).
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
};

/// Whether `op` runs as a direct allreduce: AllReduce on host buffers of at least
/// op.comm->cmaMinBytes() bytes (never when that is 0). The same on every rank.
bool runsDirect(const core::Op& op);

/// This rank's descriptor for `op`.
DirectDescriptor describeBuffers(const core::Op& op);

/// This rank's part of `op`: its share of the elements (part `rank` of nranks even parts),
/// reduced over every rank's send buffer in pieces that stay in cache, written into its own
/// receive buffer and every peer's. `descriptors` holds every rank's, in rank order. Blocks in
/// system calls only; never waits for a peer. `scratch` is reused across calls.
Status reduceOwnShare(const core::Op& op, std::span<const DirectDescriptor> descriptors, std::vector<char>* scratch);

}  // namespace weft::exec
