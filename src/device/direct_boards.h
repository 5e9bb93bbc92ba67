#pragma once
// The boards of the direct allreduce (src/device/direct_plan.h): one array of DirectBoard per
// communicator and device, in device memory, shared by the communicator's ranks, which are threads
// of this process. The first rank to ask makes it (zeroed); the last to let go takes it, to free.

#include <cuda_runtime_api.h>

#include <cstdint>

#include "src/base/status.h"
#include "src/device/kernel_work.h"

namespace weft::device {

/// The `nranks` boards of the communicator `cliqueId` (Communicator::cliqueId) on CUDA device
/// `device` (which must be current), zeroed on `setupStream` (a non-blocking stream that runs
/// nothing else) where this call makes them. Every rank of the communicator calls this once and
/// releaseDirectBoards once.
Status acquireDirectBoards(uint64_t cliqueId, int device, int nranks, cudaStream_t setupStream,
                           DirectBoard** boards);

/// Lets go of the boards acquireDirectBoards gave. The last rank's call returns them, for the caller
/// to free with cudaFree as it frees its own memory (freeWhenCliqueHasLeft: a free waits for every
/// kernel on the GPU); the others return null. No kernel of the communicator may still run.
DirectBoard* releaseDirectBoards(uint64_t cliqueId, int device);

}  // namespace weft::device
