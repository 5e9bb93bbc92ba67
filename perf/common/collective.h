#pragma once
// What one benchmark binary supplies to the shared driver (benchmark.h): the collective's buffer
// sizes, bandwidth formula, call and expected result. all_reduce.cc is the model to copy.

#include <cstddef>
#include <string>

#include "nccl.h"
#include "perf/common/data_check.h"

namespace weft::perf {

/// Element counts of one call, for a given per-rank count and rank count.
struct CollectiveCounts {
  size_t sendCount = 0;          // elements each rank's send buffer holds
  size_t recvCount = 0;          // elements each rank's receive buffer holds (and checks)
  size_t paramCount = 0;         // the count argument of the call
  size_t sendInPlaceOffset = 0;  // in place: send = recv + sendInPlaceOffset*rank elements
  size_t recvInPlaceOffset = 0;  // in place: recv = recv + recvInPlaceOffset*rank elements
};

/// nccl-tests' share of one rank in a collective that splits its buffer over the ranks (AllGather,
/// ReduceScatter, AlltoAll, Gather, Scatter, HyperCube): count/nranks elements, rounded down to a
/// whole number of 16-byte units, so that the size and count columns match nccl-tests' for the
/// same flags. elementSize is a power of two no larger than 16.
inline size_t rankBlockCount(size_t count, size_t elementSize, int nranks) {
  const size_t elementsPer16Bytes = 16 / elementSize;
  return count / static_cast<size_t>(nranks) / elementsPer16Bytes * elementsPer16Bytes;
}

/// Counts of a call whose send and receive buffers both hold the count argument (AllReduce,
/// Broadcast, Reduce, SendRecv); in place, both buffers are the receive buffer itself.
inline CollectiveCounts sameCounts(size_t count) {
  CollectiveCounts c;
  c.sendCount = count;
  c.recvCount = count;
  c.paramCount = count;
  return c;
}

class Collective {
 public:
  virtual ~Collective() = default;

  /// The collective's name as nccl-tests spells it ("AllReduce").
  virtual const char* name() const = 0;
  /// Whether -o applies (false: the table shows "none" and the operator is not passed).
  virtual bool reduces() const = 0;
  /// Whether the root column and -r apply (false: the table shows -1).
  virtual bool hasRoot() const = 0;
  /// Why the benchmark does not run with nranks ranks (printed instead of the rows; the run still
  /// succeeds, as in nccl-tests), or an empty string when it does.
  virtual std::string skipReason(int) const { return {}; }

  /// Counts for a size of count elements of elementSize bytes (nccl-tests' getCollByteCount).
  virtual CollectiveCounts counts(size_t count, size_t elementSize, int nranks) const = 0;
  /// busbw = algbw * factor: the fraction of the data each rank's link must carry.
  virtual double busBandwidthFactor(int nranks) const = 0;
  /// algbw = bytes of paramCount elements / time * factor: nccl-tests' getBw counts the whole
  /// exchange (nranks blocks) for the collectives whose count argument is per rank.
  virtual double algBandwidthFactor(int) const { return 1.0; }
  /// Whether rank must end with its receive buffer as prepareData left it (zeros, or its input in
  /// place) rather than with expected: nccl-tests' check of the non-root ranks of Reduce and Gather.
  virtual bool keepsReceiveBuffer(int, int) const { return false; }
  /// Whether the in-place result is checked (false: timed only, "N/A" in the #wrong column, as
  /// nccl-tests does for AlltoAll, which NCCL does not define in place).
  virtual bool checksInPlace() const { return true; }

  /// Issues the call on one rank; returns its result. Host buffers: complete on return.
  virtual ncclResult_t run(const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t type,
                           ncclRedOp_t op, int root, ncclComm_t comm, cudaStream_t stream) const = 0;

  /// Writes rank's input (into input, which is the send buffer or, in place, the receive buffer at
  /// the in-place offset) and the result rank must end with (expected, counts.recvCount elements).
  virtual void prepareData(const DataSpec& spec, const CollectiveCounts& counts, int rank, int root,
                           void* input, void* expected) const = 0;
};

}  // namespace weft::perf
