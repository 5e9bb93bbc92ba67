#pragma once
// One communicator's resources on the GPU path: its CUDA device, connections in GPU memory
// (cuda_ipc) over the communicator's GPU rings (Communicator::gpuRings), the flag its kernels poll for ncclCommAbort,
// the order of its launches across streams, the pinned buffers that hold launches' tables, and
// where its ranks share one GPU in one process, the boards of the direct allreduce.

#include <cuda_runtime_api.h>

#include <atomic>
#include <memory>
#include <vector>

#include "algorithms/schedule.h"
#include "src/base/wait.h"
#include "src/core/communicator.h"
#include "src/core/connection_table.h"
#include "src/core/gpu_stall_watch.h"
#include "src/device/block_progress_pool.h"
#include "src/device/captured_graphs.h"
#include "src/device/kernel_work.h"
#include "src/device/local_clique.h"
#include "src/device/stream_capture.h"

namespace weft::device {

/// Pinned host buffers that kernels read their tables from, taken for a launch before any of its
/// kernels is enqueued and holding the tables of as many of them as fit (device_executor.cc). A
/// buffer is reused once the last kernel that read it has ended (its event has completed). Past
/// kMaxBuffers, a launch waits for a kernel of one of the rank's earlier launches to end rather
/// than allocate, as NCCL's launches wait for room in their work FIFO: a rank far ahead of its peers
/// holds bounded pinned memory, and does not allocate while their kernels run (setup_at_init.h says
/// why that matters). A launch still allocates where one kernel's tables are larger than every
/// buffer, or where every buffer large enough is taken by the launch itself.
/// A launch captured into a CUDA graph takes memory of the graph's instead (captured_graphs.h).
/// Not thread-safe: used by the thread that enqueues the communicator's launches.
class WorkPool {
 public:
  struct Buffer {
    char* host = nullptr;
    char* device = nullptr;  // the same memory as the GPU addresses it
    size_t capacity = 0;
    cudaEvent_t done = nullptr;  // recorded after the last kernel that read it
    bool taken = false;          // by a launch being enqueued (acquire, until release)
  };
  /// Buffers kept before a launch waits for one instead of allocating.
  static constexpr size_t kMaxBuffers = 16;
  /// Bytes of the buffers reserve() makes: at the default 8 channels, the tables of a group of about
  /// 20 ring allreduces of 8 ranks (a step is 40 bytes, a connection end 72).
  static constexpr size_t kReservedBytes = 128 << 10;

  /// Waits go through `context` (an abort or a dead peer ends them); it must outlive the pool's
  /// acquire calls (the pool may outlive it: local_clique.h).
  explicit WorkPool(const WaitContext& context) : context_(context) {}
  ~WorkPool();
  WorkPool(const WorkPool&) = delete;
  WorkPool& operator=(const WorkPool&) = delete;

  /// Allocates buffers of kReservedBytes until kMaxBuffers are there.
  Status reserve();
  /// Takes a buffer of at least `bytes` that no unfinished kernel reads and no launch has taken: a
  /// free one; else a new one while fewer than kMaxBuffers are there, or where none that is not
  /// taken is large enough; else the first of those to be freed. Called before any kernel of the
  /// launch is enqueued, so that every kernel it may wait for is one of an earlier launch: the
  /// peers' kernels it waits for are enqueued by their own threads, or, where this thread drives
  /// them too, were enqueued before this launch.
  Status acquire(size_t bytes, Buffer** out);
  /// Gives back a buffer that acquire took and that no kernel reads: free again at once.
  void release(Buffer* buffer) { buffer->taken = false; }
  /// Gives back a buffer that acquire took, in use until the work enqueued on `stream` so far (the
  /// last kernel that reads it) has ended. `stream` may be the legacy default stream, 0. On failure
  /// the buffer stays taken, never to be reused.
  Status releaseAfter(Buffer* buffer, cudaStream_t stream);

 private:
  Status allocate(size_t bytes, Buffer** out);

  const WaitContext& context_;
  std::vector<std::unique_ptr<Buffer>> buffers_;
};

/// Also the sink of its network proxies' failures (a peer host lost): the communicator records the
/// error (ncclCommGetAsyncError) and its kernels give up, as on ncclCommAbort. A proxy waiting
/// without progress asks it, through the communicator's wait context, whether a peer is known dead.
///
/// Registered with its clique's other ranks on its GPU in this process (local_clique.h): when an
/// aborted rank is destroyed, their kernels give up too, and its memory stays until the last of
/// them has gone.
class CommDevice final : public core::Communicator::DeviceResources,
                         public transport::ProxyFailureSink,
                         public LocalCliqueMember {
 public:
  /// Makes the resources of `comm` (whose rank must have a CUDA device).
  static Status create(core::Communicator& comm, std::unique_ptr<core::Communicator::DeviceResources>* out);
  /// Waits for the communicator's kernels to end, then frees everything.
  ~CommDevice() override;

  void abort() override;
  Status drain() override;
  void proxyFailed(const Status& failure) override;
  void endKernels(const Status& why) override;
  void endKernelsUnderLock(const Status& why) override;
  Status checkAlive() override;

  int device() const { return device_; }
  int rank() const override { return comm_.rank(); }
  int nranks() const { return comm_.nranks(); }
  core::ConnectionTable& connections() { return *connections_; }
  WorkPool& workPool() { return *workPool_; }
  CapturedGraphs& capturedGraphs() { return *capturedGraphs_; }
  const volatile int* abortFlag() const { return abortFlagDevice_; }
  /// The communicator's boards for the direct allreduce (src/device/direct_plan.h), or null where
  /// its allreduces take the ring. The same answer on every rank.
  DirectBoard* directBoards() const { return directBoards_; }
  /// The device's multiprocessors.
  int multiprocessors() const { return multiprocessors_; }
  /// The most thread blocks one kernel of this rank may run (Communicator::gpuBlocksPerRank).
  int blocksPerRank() const { return comm_.gpuBlocksPerRank(); }
  /// Bytes of each connection's LL slots (0: none, as across hosts).
  size_t lowLatencySlotBytes() const { return oneHost_ ? comm_.llSlotBytes() : 0; }
  /// Whether every rank of the communicator is on this rank's host.
  bool oneHost() const { return oneHost_; }
  /// Whether init made every connection a call can need (setup_at_init.h).
  bool connectedAtInit() const { return connectedAtInit_; }

  /// Makes `stream` wait for this communicator's previous launch (or a graph's replay since), so
  /// that a communicator's kernels run in call order whatever streams they are given. While
  /// `stream` is captured into a CUDA graph: after the communicator's previous kernel in that graph,
  /// or, for its first kernel there, each replay after the launches enqueued before the replay.
  Status orderAfterPrevious(cudaStream_t stream);
  /// The same, where the caller already asked `stream` its capture (streamCapture): a launch asks
  /// once, for this and recordLaunch.
  Status orderAfterPrevious(cudaStream_t stream, const StreamCapture& capture);
  /// Numbers the kernel about to be enqueued and tells `work` where its blocks record what they do
  /// (hang reports).
  void markKernel(KernelWork* work);
  /// The kernel just enqueued (markKernel's `work`) with `blocks` blocks on a stream in `capture`
  /// becomes the communicator's latest in its progress record, unless it is captured into a graph
  /// (whose replays carry the number it had at capture).
  void publishKernel(const KernelWork& work, int blocks, const StreamCapture& capture);
  /// The event that joins the streams of a group's calls given several (device_executor.cc): made
  /// with the resources, so that no call creates one while a peer's kernel may wait for it. One
  /// thread at a time enqueues a communicator's calls (as NCCL requires), so one event serves all.
  cudaEvent_t streamJoinMark() const { return streamJoinMark_; }
  /// The collectives enqueued or captured so far, which every rank counts alike (the stream claims
  /// of local_clique.h number calls by it); countCollectives adds a launch's `calls` once all its
  /// kernels are enqueued.
  uint64_t collectivesLaunched() const { return collectivesLaunched_; }
  void countCollectives(uint64_t calls) { collectivesLaunched_ += calls; }
  /// Records the launch just enqueued on `stream` (in `capture`) as this communicator's latest; a
  /// captured one becomes the latest each time its graph is launched.
  Status recordLaunch(cudaStream_t stream, const StreamCapture& capture);

 private:
  CommDevice(core::Communicator& comm, int device)
      : comm_(comm),
        device_(device),
        kernelWaits_(comm.waitContext()),
        workPool_(std::make_unique<WorkPool>(kernelWaits_)),
        capturedGraphs_(std::make_unique<CapturedGraphs>()) {}
  /// Whether every proxied sending end has sent all its kernels posted.
  bool proxiesDrained() const;
  /// Waits (a second at most, and only while the communicator can go on) until every piece this
  /// rank released from a sender of its host was posted (from one in another process, or, where
  /// the communicator spans hosts and its memory is freed at once, in this one too): an LL
  /// receiver does not wait for `posted`, so its kernel may end before its sender's last stores to
  /// this rank's memory (clean lines, then `posted`) have landed, and they must not land in freed
  /// memory.
  void awaitSendersLastPosts();
  /// Says (WARN) that the kernels give up, and records `why` as the asynchronous error.
  void recordGivingUp(const Status& why);
  /// Starts the watch that ends kernels stuck for WEFT_TIMEOUT seconds (gpu_stall_watch.h).
  void startStallWatch();
  /// Whether the abort flag is raised: the kernels were told to give up. False before it exists.
  bool abortFlagRaised() const {
    return abortFlagHost_ != nullptr && abortFlagHost_->load(std::memory_order_acquire) != 0;
  }
  /// Raises the flag the kernels poll. No CUDA call: safe under any lock (local_clique.h).
  void raiseAbortFlag() {
    if (abortFlagHost_ != nullptr) abortFlagHost_->store(1, std::memory_order_release);
  }

  core::Communicator& comm_;
  int device_;
  std::unique_ptr<core::ConnectionTable> connections_;
  // The flag in pinned memory: host threads (abort, the proxies, the stall watch, a clique peer's
  // end) raise and read it as an atomic; the kernels read it through abortFlagDevice_.
  std::atomic<int>* abortFlagHost_ = nullptr;
  const volatile int* abortFlagDevice_ = nullptr;
  // Two pinned words beside the abort flag (one allocation), where awaitSendersLastPosts copies a
  // receiving end's posted and released counts.
  volatile uint64_t* counterCopies_ = nullptr;
  cudaEvent_t lastLaunch_ = nullptr;
  cudaEvent_t streamJoinMark_ = nullptr;
  // Where its connections and boards are zeroed: one stream for all (ConnectionParams::gpuSetupStream).
  cudaStream_t setupStream_ = nullptr;
  std::atomic<bool> launched_{false};  // also read by the threads that end its kernels
  // How the host waits for its kernels: the communicator's wait context, without its timeout where
  // the stall watch gives the kernels theirs.
  WaitContext kernelWaits_;
  // These two, the connections, the block records and the abort flag are what the rank leaves in
  // memory when it goes (local_clique.h).
  std::unique_ptr<WorkPool> workPool_;
  std::unique_ptr<CapturedGraphs> capturedGraphs_;
  DirectBoard* directBoards_ = nullptr;
  BlockProgressArray blockProgress_;
  uint64_t kernels_ = 0;  // kernels enqueued or captured so far: the last one's number
  uint64_t collectivesLaunched_ = 0;
  bool watchesStalls_ = false;  // WEFT_TIMEOUT is set and the blocks keep records
  std::unique_ptr<core::GpuStallWatch> stallWatch_;  // from the first launch on, where watchesStalls_
  int multiprocessors_ = 0;
  bool oneHost_ = true;
  bool connectedAtInit_ = false;
  friend Status setUpGpuAtInit(core::Communicator& comm);  // sets connectedAtInit_
};

/// The GPU resources of `comm`, made on first use (or already at init: setup_at_init.h).
Status commDevice(core::Communicator& comm, CommDevice** out);

}  // namespace weft::device
