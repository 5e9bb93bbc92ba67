#pragma once
// Nonblocking communicators: waiting for a launch in the background to end.

#include "nccl.h"

namespace weft::harness {

/// Polls ncclCommGetAsyncError until `comm` has no launch in progress; returns the state it then
/// reports (ncclSuccess or the launch's error), or ncclInternalError where the poll itself fails.
ncclResult_t settledState(ncclComm_t comm);

}  // namespace weft::harness
