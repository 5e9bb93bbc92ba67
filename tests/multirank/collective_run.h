#pragma once
// One call of one collective on one rank: its arguments, what it must produce, and the check.

#include <cstdint>
#include <initializer_list>
#include <span>
#include <string>

#include "nccl.h"
#include "tests/multirank/collective.h"
#include "tests/multirank/element_types.h"
#include "tests/multirank/reduction.h"

namespace weft::multirank {

struct CollectiveRun {
  Collective collective = Collective::kAllReduce;
  const ElementType* type = nullptr;
  Reduction op;  // reducing collectives only
  size_t count = 0;
  Placement placement = Placement::kOutOfPlace;
  int root = 0;  // rooted collectives only
  uint64_t seed = 0;  // the same on every rank

  /// "AllReduce float32 sum count 7 in-place", "Gather int8 count 1 out-of-place root 2".
  std::string describe() const;
};

/// Elements [first, first + count) of `rank`'s send buffer for `run`.
void fillRankInput(const CollectiveRun& run, int nranks, int rank, size_t first, size_t count,
                   void* out);

/// Writes what `run` must leave in this rank's receive region (recvCount elements of
/// layoutOf(...)), over `recv` which holds the region's content before the call. Elements the
/// collective does not write on this rank (a non-root's Reduce or Gather) are left as they are.
void expectResult(const CollectiveRun& run, int nranks, int rank, void* recv);

/// Makes the NCCL call(s) of `run` (one group for the send/receive patterns) with `op` (a
/// built-in op or a PreMulSum made for this communicator and type) on `stream`. Returns the first
/// failure.
ncclResult_t issueCollective(const CollectiveRun& run, ncclRedOp_t op, const void* send, void* recv,
                             ncclComm_t comm, int nranks, int rank, cudaStream_t stream = {});

/// Where a run's buffers live during the call. Without one they stay in host memory; a GPU test
/// gives one that copies each host buffer into GPU memory before the call and back after it
/// (tests/gpu/device_placement.h), so that the same checks apply.
class BufferPlacement {
 public:
  virtual ~BufferPlacement() = default;
  /// Before the call: a buffer of `bytes` holding the contents of `host`, to pass to NCCL.
  virtual void* place(void* host, size_t bytes) = 0;
  /// After the last place(), before the call: waits until the placed buffers are ready.
  virtual void ready() {}
  /// The stream to pass to NCCL.
  virtual cudaStream_t stream() const = 0;
  /// After the call: waits for it, copies every placed buffer back over its host buffer and frees
  /// it. Records a failure (rank_check.h) if the wait fails or a write went past a buffer.
  virtual void finish() = 0;
};

/// Runs `run` on this rank and checks every element it must write, every element it must leave
/// alone (the rest of an in-place buffer, the send buffer, a non-root's receive buffer) and the
/// guard bytes around each buffer. Records a failure (rank_check.h) at the first problem. Every
/// rank of `comm` must call it with the same run.
void runAndCheck(ncclComm_t comm, int nranks, int rank, const CollectiveRun& run,
                 BufferPlacement* placement = nullptr);

/// Runs every collective on int32 with the first reduction, in the first placement, at each of
/// `counts` in turn (root `root`), checking each as runAndCheck does; stops at the first failure.
/// Every rank of `comm` must call it with the same arguments.
void runEveryCollective(ncclComm_t comm, int nranks, int rank, std::initializer_list<size_t> counts, int root,
                        uint64_t seed);

/// Runs `collective` (root `root` where it has one) for every type, every reduction of it where it
/// reduces, each of `counts` and each of its placements, checking each as runAndCheck does (with
/// `placement`); stops at the first failure. Every rank of `comm` must call it with the same
/// arguments.
void runEveryTypeAndOp(ncclComm_t comm, int nranks, int rank, Collective collective, std::span<const size_t> counts,
                       uint64_t seed, BufferPlacement* placement = nullptr, int root = 0);

}  // namespace weft::multirank
