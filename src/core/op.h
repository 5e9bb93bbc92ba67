#pragma once
// One operation as the API hands it to the executor: what to move, where, and how to reduce.

#include <cstddef>

#include "algorithms/collective.h"
#include "algorithms/datatype.h"

namespace weft::core {

class Communicator;

struct Op {
  Communicator* comm = nullptr;
  algorithms::Collective collective = algorithms::Collective::kAllReduce;
  const void* sendbuff = nullptr;
  void* recvbuff = nullptr;
  size_t count = 0;  // as the API takes it (see algorithms::OpShape)
  algorithms::DataType type = algorithms::DataType::kFloat32;
  algorithms::Reduction reduction;
  int root = 0;  // root, or peer for Send/Recv
  /// The buffers are GPU memory (device, managed or registered): the op is enqueued on `stream`
  /// (a cudaStream_t) by the GPU executor. Otherwise it runs on the host and `stream` is unused.
  bool onDevice = false;
  void* stream = nullptr;
  /// Weft's own exchange (WEFT_CHECK's), not an application's call: NCCL_ALGO and NCCL_PROTO do
  /// not govern it, so a filter that leaves the application's calls an algorithm cannot refuse it.
  bool internal = false;
};

/// What a schedule needs of `op` at its communicator's rank, with the data cut in units of
/// algorithms::chunkGranule(op.type).
algorithms::OpShape shapeOf(const Op& op);

}  // namespace weft::core
