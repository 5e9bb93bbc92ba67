#pragma once
// The ranks of a clique that are threads of this process on one GPU, so that aborting one of them
// ends the others' waiting kernels, and so that none frees memory while another's kernel may run.
// Freeing GPU or pinned memory (cudaFree, cudaFreeHost) waits for every kernel on the GPU, and
// meanwhile holds up other threads' launches and CUDA calls that touch the GPU's page tables (an
// allocation, a copy to pageable memory): a rank that went first would wait for a peer's kernel
// that waits for a third rank whose thread waits for the free. So the memory of a rank that
// leaves stays until the clique's last rank in this process has left, when every kernel of theirs
// has ended, and no other communicator with two or more ranks in this process remains (the last
// rank of a split, freeing, would hold back its thread's next launch, which the parent's kernels
// of the other threads may wait for). It also keeps the streams of each rank's recent launches,
// so that two ranks on one stream are refused rather than left waiting for each other. Every build
// has this; unit tests check it anywhere.

#include <cstdint>
#include <memory>
#include <span>

#include "src/base/status.h"

namespace weft::device {

/// A rank's GPU resources, as the registry sees them.
class LocalCliqueMember {
 public:
  virtual ~LocalCliqueMember() = default;
  /// The rank in its communicator, for messages.
  virtual int rank() const = 0;
  /// Makes this rank's kernels give up and records `why` as its communicator's asynchronous error.
  /// Called with the registry's lock held: must not call back into it, nor make a CUDA call (one
  /// could wait behind another thread's free, which waits for kernels not yet ended).
  virtual void endKernelsUnderLock(const Status& why) = 0;
};

/// What a rank that left holds in GPU or pinned memory: destroying it frees that memory.
class LocalCliqueLeftovers {
 public:
  virtual ~LocalCliqueLeftovers() = default;
};

/// Registers `member`, a rank of clique `cliqueId` (Communicator::cliqueId) on CUDA device `device`,
/// whose communicator has `ranksHere` ranks in this process. A registered rank may have kernels
/// running.
void joinLocalClique(uint64_t cliqueId, int device, int ranksHere, LocalCliqueMember* member);

/// Unregisters `member`, once its kernels have ended and before it is destroyed; from then on no
/// endKernelsUnderLock call reaches it.
void leaveLocalClique(LocalCliqueMember* member);

/// Frees `leftovers`, of a rank of clique `cliqueId` that has left, once no rank of its clique is
/// registered any more, on any GPU (the page tables' lock is the process's), and no registered
/// rank's communicator has two or more ranks in this process (joinLocalClique's `ranksHere`, so
/// that one whose other ranks here are still in init counts): a free waits for every kernel on
/// the GPU and holds back the launches of other threads meanwhile, so it could wait for ever for
/// a kernel of threads' ranks whose peer's launch it holds back (a split destroyed on one thread
/// while the parent's kernels of the other threads wait for this one's). Until then keeps them,
/// and frees them with the first leftovers handed over afterwards (or at freeKeptLeftovers);
/// what is kept grows without bound while such a communicator lasts (a warning says so at every
/// doubling from 32 ranks' worth on). Frees outside the registry's lock.
void freeWhenCliqueHasLeft(uint64_t cliqueId, std::unique_ptr<LocalCliqueLeftovers> leftovers);

/// Frees what freeWhenCliqueHasLeft kept and may now free: for a rank that left and frees its own
/// memory at once (a communicator across hosts), which may have been the last to hold it.
void freeKeptLeftovers();

/// The streams of a launch that a rank is about to enqueue, and the collective calls of its
/// communicator that the launch holds: numbers firstCall to firstCall + calls - 1, counted alike on
/// every rank (a launch of Send/Recv alone holds firstCall, the number of its next collective).
struct LaunchStreams {
  std::span<const unsigned long long> streamIds;  // CUDA's ids of the streams, unique in the process
  uint64_t firstCall = 0;
  uint64_t calls = 0;
};

/// Records `launch` as `member`'s. Fails with ncclInvalidUsage, recording nothing, where another
/// registered rank of its clique on its GPU launched on one of these streams a kernel holding a
/// call numbered firstCall or later: that kernel, queued there, waits for this rank's kernel of
/// that call, which runs after this launch (a communicator's kernels run in call order), itself
/// queued behind it. Ranks may change streams from call to call. (A launch of Send/Recv alone is
/// taken to hold the next collective's number: a rank whose Send/Recv kernel is on a stream keeps
/// its peers' next collectives off it; and two ranks' Send/Recv on one stream a collective apart
/// are not caught.) A rank's latest 64 launches are kept.
Status claimStreams(LocalCliqueMember* member, const LaunchStreams& launch);

/// Withdraws `member`'s latest claim, that of a launch that enqueued no kernel (it failed first, or
/// moved nothing).
void withdrawLatestClaim(LocalCliqueMember* member);

/// Calls endKernelsUnderLock(why) on every other registered rank of clique `cliqueId` on `device`;
/// returns how many.
int endLocalPeers(uint64_t cliqueId, int device, const LocalCliqueMember* aborted, const Status& why);

}  // namespace weft::device
