#pragma once
// The tuner's view of one operation on its communicator (algorithms/tuner.h): shared by the host
// executor's choice of algorithm and ncclGroupSimulateEnd's estimate.

#include "algorithms/tuner.h"
#include "src/core/op.h"

namespace weft::core {

/// What the tuner knows about `op`: its collective and bytes, and its communicator's ranks, hops,
/// tree depth and channels.
algorithms::TuneShape tuneShapeOf(const Op& op);

/// The tuner's predicted microseconds for `op` under its communicator's NCCL_ALGO and constants.
double predictedMicroseconds(const Op& op);

}  // namespace weft::core
