#pragma once
// The ranks of a clique that are threads of this process on one GPU, so that aborting one of them
// ends the others' waiting kernels. Freeing GPU memory (cudaFree, cudaFreeHost) waits for every
// kernel on the GPU; an aborted rank frees its memory, and its peers' kernels on that GPU wait for
// it forever, so without this the abort itself would never return. Every build has this; unit
// tests check it anywhere.

#include <cstdint>

#include "src/base/status.h"

namespace weft::device {

/// A rank's GPU resources, as the registry sees them.
class LocalCliqueMember {
 public:
  virtual ~LocalCliqueMember() = default;
  /// Makes this rank's kernels give up and records `why` as its communicator's asynchronous error.
  /// Called with the registry's lock held: must not call back into it.
  virtual void endKernels(const Status& why) = 0;
};

/// Registers `member`, a rank of clique `cliqueId` (Communicator::cliqueId) on CUDA device `device`.
void joinLocalClique(uint64_t cliqueId, int device, LocalCliqueMember* member);

/// Unregisters `member`; from then on no endKernels call reaches it. Before it is destroyed.
void leaveLocalClique(LocalCliqueMember* member);

/// Calls endKernels(why) on every other registered rank of clique `cliqueId` on `device`; returns
/// how many.
int endLocalPeers(uint64_t cliqueId, int device, const LocalCliqueMember* aborted, const Status& why);

}  // namespace weft::device
