#pragma once
// A communicator: one rank's membership in a clique of ranks, split by concern into its bootstrap
// network, the peers' descriptions, the rings, the connections, the user's reduction ops, and its
// error state.

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "algorithms/algorithm_filter.h"
#include "algorithms/node_tree.h"
#include "algorithms/protocol_filter.h"
#include "algorithms/schedule.h"
#include "algorithms/tuner.h"
#include "src/base/peer_info.h"
#include "src/base/status.h"
#include "src/base/wait.h"
#include "src/core/bootstrap.h"
#include "src/core/connection_table.h"
#include "src/core/peer_watch.h"
#include "src/core/progress_record.h"
#include "src/core/redop_table.h"
#include "src/core/windows.h"
#include "src/device/nvls_team.h"
#include "transport/registered_memory.h"

namespace weft::core {

/// What the user configured (ncclConfig_t), resolved against the environment.
struct CommOptions {
  bool blocking = true;
  std::string name;
  /// Set (from any thread) to make the init fail promptly: ncclCommAbort of a handle whose
  /// nonblocking init is still running. May be null.
  std::shared_ptr<std::atomic<bool>> abortInit;
  /// The CUDA device of this rank (the caller's current one, or ncclCommInitAll's); -1, or a number
  /// this machine has no device for: none (the rank works on host memory only).
  int cudaDevice = -1;
  /// ncclConfig_t.minCTAs / maxCTAs: bounds on the channels of GPU collectives, and maxCTAs on the
  /// blocks of any launch; -1: NCCL_MIN_CTAS / NCCL_MAX_CTAS, or none.
  int minCtas = -1;
  int maxCtas = -1;
  /// ncclConfig_t.nvlsCTAs: thread blocks of an NVLS allreduce; -1: NCCL_NVLS_NCHANNELS.
  int nvlsCtas = -1;
};

class Communicator {
 public:
  /// Joins the clique `id` as `rank` of `nranks`: bootstrap, peer exchange, rings, and the ring
  /// connections. Blocks until every rank has joined. Called from the rank's own thread, or from a
  /// thread of the group that initialises it.
  static Status create(const UniqueId& id, int nranks, int rank, const CommOptions& options,
                       std::unique_ptr<Communicator>* out);

  /// Releases every connection and the bootstrap. Must not race with a call in progress. Unless
  /// leaveCleanly() was called, the other ranks report this rank as gone.
  ~Communicator();

  /// Tells the other ranks that this rank leaves through ncclCommDestroy, not by a crash or abort.
  void leaveCleanly();

  /// ncclCommSplit: every rank of this communicator calls it (NCCL_SPLIT_NOCOLOR = -1 to opt out,
  /// leaving *out empty). Blocks until the new communicators are ready.
  Status split(int color, int key, const CommOptions& options, std::unique_ptr<Communicator>* out);

  /// ncclCommShrink: the ranks not in `excluded` (valid, distinct, not this rank) form a new
  /// communicator, numbered in the old order. Every surviving rank calls it; the excluded ranks do
  /// not (they may be dead: their deaths do not fail the shrink). Blocks until the new one is ready.
  Status shrink(const std::vector<int>& excluded, const CommOptions& options, std::unique_ptr<Communicator>* out);

  /// ncclCommRevoke: stops the calls in flight (they fail), waits until none is left, and from then
  /// on refuses collectives; split, shrink and destroy still work. asyncError() is kOk afterwards
  /// unless a peer is dead. Any thread.
  void revoke();

  int rank() const { return rank_; }
  int nranks() const { return nranks_; }
  int localRank() const { return localRank_; }
  const PeerInfo& peer(int rank) const { return peers_[rank]; }
  const std::vector<PeerInfo>& peers() const { return peers_; }
  uint64_t commHash() const { return commHash_; }
  /// Unique among the communicators this process ever made (1, 2, ...): names this one where its
  /// address cannot, since a destroyed communicator's address may be a new one's.
  uint64_t instanceId() const { return instanceId_; }
  const CommOptions& options() const { return options_; }

  Bootstrap& bootstrap() { return *bootstrap_; }
  ConnectionTable& connections() { return *connections_; }
  const std::vector<algorithms::Ring>& rings() const { return rings_; }
  /// The GPU path's rings, one per GPU channel.
  const std::vector<algorithms::Ring>& gpuRings() const { return gpuRings_; }
  /// Channels (thread blocks) of a GPU ring collective, agreed at init (WEFT_GPU_CHANNELS).
  int gpuChannels() const { return gpuChannels_; }
  /// The most thread blocks one kernel of this rank may run: every rank's blocks must fit its GPU
  /// at once (src/device/residency.h), and no more than maxCTAs. The same on every rank. Ring
  /// collectives use at most this many channels; other lanes are folded into it.
  int gpuBlocksPerRank() const { return gpuBlocksPerRank_; }
  /// Collectives on GPU buffers of at most this many bytes move LL pieces (WEFT_GPU_LL_MAX_BYTES,
  /// rank 0's value).
  size_t gpuLowLatencyMaxBytes() const { return gpuLowLatencyMaxBytes_; }
  /// Whether allreduces of ranks sharing one GPU in one process may run direct (WEFT_GPU_DIRECT,
  /// rank 0's value).
  bool gpuDirect() const { return gpuDirect_; }
  /// Random, the same on every rank of this communicator and different for every other one, even
  /// one made from the same unique id (NCCL_COMM_ID gives every init the same).
  uint64_t cliqueId() const { return cliqueId_; }
  /// The multicast team of the communicator's GPUs (src/device/nvls_team.h), made at init, or null
  /// where there is none (nvlsUnavailableReason() says why).
  device::NvlsTeam* nvlsTeam() const { return nvlsTeam_.get(); }
  const std::string& nvlsUnavailableReason() const { return nvlsUnavailableReason_; }
  /// NCCL_MIN_NCHANNELS (rank 0's): the fewest host channels a collective that spreads takes.
  int minChannels() const { return minChannels_; }
  /// Whether some hop between ranks goes over the network (ranks on several hosts, or
  /// NCCL_SHM_DISABLE=1), for the tuner.
  bool networkHops() const { return networkHops_; }
  /// The depth of the flat trees over this communicator's ranks (algorithms::treeDepth), for the tuner.
  int treeDepth() const { return treeDepth_; }
  /// This rank's place in each tree of the tree AllReduce (algorithms::communicatorTreePlaces: NCCL's
  /// trees over hosts when ranks span several), one per channel, at most two.
  const std::vector<algorithms::TreePlace>& treePlaces() const { return treePlaces_; }
  /// Each rank's host, numbered by the lowest rank on it: the trees of a rooted collective are
  /// algorithms::rootedTreePlaces(rings(), hostOfRank(), root, rank()).
  const std::vector<int>& hostOfRank() const { return hostOfRank_; }
  /// How the ranks spread over hosts, as the tuner sees it (algorithms::hostLayoutOf).
  const algorithms::HostLayout& hostLayout() const { return hostLayout_; }
  /// The algorithms NCCL_ALGO allows (rank 0's setting), agreed at init.
  const algorithms::AlgorithmFilter& algorithmFilter() const { return algorithms_; }
  /// NCCL_PROTO as rank 0 gave it.
  const algorithms::ProtocolFilter& protocolFilter() const { return protocols_; }
  /// The tuner's constants: rank 0's WEFT_TUNE_FILE, or the built-in defaults.
  const algorithms::CostModel& costModel() const { return costModel_; }
  /// The tuner's latest choice on this communicator and what it was for. The choice depends only
  /// on the collective and the bytes (everything else the tuner reads is fixed at init), so a loop
  /// of one call reuses it instead of predicting every algorithm again (src/exec/host_executor.cc).
  /// Like the communicator, used by one thread at a time.
  struct TuneMemo {
    algorithms::Collective collective = algorithms::Collective::kAllReduce;
    size_t bytes = SIZE_MAX;  // no choice yet
    algorithms::TuneChoice choice;
  };
  TuneMemo& tuneMemo() const { return tuneMemo_; }
  size_t slotBytes() const { return slotBytes_; }
  /// Bytes of each LL slot (NCCL_LL_BUFFSIZE / slotCount(); 0: no LL ring).
  size_t llSlotBytes() const { return llSlotBytes_; }
  /// Host allreduces of at least this many bytes read the peers' buffers directly
  /// (src/exec/direct_collectives.h); 0 when cross-memory attach is off or does not work here.
  size_t cmaMinBytes() const { return cmaMinBytes_; }
  /// Host allreduces, allgathers, reducescatters and broadcasts whose buffers lie in windows
  /// every rank reaches and whose larger buffer holds at least this many bytes read and
  /// write the peers' buffers in place (WEFT_WINDOW_MIN_BYTES, rank 0's value; 0: never).
  size_t windowMinBytes() const { return windowMinBytes_; }
  /// Host operations of at least this many bytes (count times element size) write the user's
  /// buffers with non-temporal stores (WEFT_STREAM_MIN_BYTES, this process's value; 0: never).
  size_t streamMinBytes() const { return streamMinBytes_; }
  int slotCount() const { return slotCount_; }

  /// The GPU path's resources for this communicator (src/device/device_executor.h): connections
  /// in GPU memory, the launch order, the abort flag kernels poll. Made on first use, or at init
  /// where the ranks are threads of one process (src/device/setup_at_init.h).
  class DeviceResources {
   public:
    virtual ~DeviceResources() = default;
    /// Makes running kernels of this communicator give up. Any thread.
    virtual void abort() = 0;
    /// The same where the communicator cannot go on (a peer is lost): also records `why` as its
    /// asynchronous error. Any thread.
    virtual void endKernels(const Status& why) = 0;
    /// Waits until the kernels enqueued so far have ended and everything they sent has left this
    /// rank (a network proxy may still hold pieces after its kernel ended). Fails, through the
    /// communicator's wait context, on abort or a dead peer.
    virtual Status drain() = 0;
  };
  /// Returns the resources, making them with `make` if there are none yet. Thread-safe.
  Status deviceResources(const std::function<Status(std::unique_ptr<DeviceResources>*)>& make,
                         DeviceResources** out);
  /// The resources where they are made, else null. Thread-safe.
  DeviceResources* madeDeviceResources();
  /// DeviceResources::drain, if the communicator has GPU resources (ncclCommFinalize).
  Status drainDevice();
  RedOpTable& redOps() { return redOps_; }
  /// The buffers registered with ncclCommRegister.
  transport::RegistrationTable& registrations() { return registrations_; }
  /// The windows registered with ncclCommWindowRegister.
  WindowTable& windows() { return windows_; }
  /// What this communicator is doing, for hang reports; null when the pool was exhausted.
  ProgressRecord* progress() { return progress_; }
  /// Numbers the operations started on this communicator: 1, 2, ...
  uint64_t nextSequence() { return ++sequence_; }
  /// WEFT_CHECK: the ranks compare their calls before each launch.
  bool checksCalls() const { return checksCalls_; }
  /// NCCL_CHECK_POINTERS, read at init: a call's device memory must be its GPU's (pointer_check.h).
  bool checksPointers() const { return checksPointers_; }
  /// Numbers `n` collective calls (Send/Recv excluded); returns the first number (1, 2, ...).
  uint64_t takeCollectiveNumbers(uint64_t n) {
    uint64_t first = collectivesCalled_ + 1;
    collectivesCalled_ += n;
    return first;
  }

  /// The wait context of this communicator's calls: fails once abort is requested, or a peer is
  /// known dead and the wait has not moved for a second since (data the dead rank sent before it
  /// died is still delivered).
  const WaitContext& waitContext() const { return waitContext_; }
  /// Makes every wait of this communicator fail promptly. Callable from any thread.
  void requestAbort();
  bool abortRequested() const { return aborted_.load(std::memory_order_acquire); }

  /// Brackets a call that uses this communicator (the executor's), so that an abort from another
  /// thread can wait for it to leave before the communicator is destroyed. Lock-free.
  void enterCall() { activeCalls_.fetch_add(1, std::memory_order_acq_rel); }
  void exitCall() { activeCalls_.fetch_sub(1, std::memory_order_acq_rel); }
  /// Blocks until no call is inside this communicator. Call after requestAbort(), whose waits
  /// end every call promptly.
  void waitForCallsToLeave() const;

  /// Nonblocking launches: brackets a launch that runs on a background thread, so that
  /// ncclCommGetAsyncError reports ncclInProgress and destroy waits until it has ended.
  void beginBackground() { backgroundLaunches_.fetch_add(1, std::memory_order_acq_rel); }
  void endBackground() { backgroundLaunches_.fetch_sub(1, std::memory_order_acq_rel); }
  bool inBackground() const { return backgroundLaunches_.load(std::memory_order_acquire) > 0; }
  /// Blocks until no background launch uses this communicator.
  void waitForBackground() const;

  /// The error that ended the last operation in the background, or kRemoteError once a peer is
  /// known dead (kOk if neither). Any thread.
  StatusCode asyncError() const;
  /// A transport error (a peer closed its connection) is often the echo of another rank's death:
  /// gives the peer watch half a second to learn of a dead rank and, if it does, returns the
  /// watch's error, which names the rank that died, with `failure` as how this rank saw it.
  Status explainRemoteFailure(const Status& failure) const;
  /// Records the failure that ended an operation; the first one is kept. Any thread.
  void setAsyncError(const Status& failure);
  /// Ok while new calls may run; after a failed operation (whose data may still sit in the
  /// connections) or once a peer is known dead, the error that says why and what to do.
  Status checkUsable() const;

 private:
  Communicator(int nranks, int rank, const CommOptions& options);
  Status init(const UniqueId& id);
  Status splitInto(int color, int key, const CommOptions& options, std::unique_ptr<Communicator>* out);

  int nranks_;
  int rank_;
  int localRank_ = 0;
  uint64_t commHash_ = 0;
  uint64_t instanceId_;
  CommOptions options_;
  /// During a shrink: whether every dead rank is one the shrink excludes.
  bool onlyExcludedRanksDied() const;
  /// The peer watch's handler of a lost peer: the GPU kernels, if any, give up with `failure` (a
  /// kernel waiting for a dead rank would wait for ever).
  void endDeviceKernels(const Status& failure);
  /// The wait context's spin limit for the ranks on this machine (see WaitContext::spinLimit).
  int spinLimitForMachine() const;
  /// Sets rings_ (`hostChannels` of them) and gpuRings_ (`gpuChannels`): hostRingOrder when no rank
  /// has a GPU; otherwise each host's ranks along its GPU rings, channel c on GPU ring c mod the
  /// rings found, positions exchanged over the bootstrap (host_ring_positions.h).
  Status buildRings(int hostChannels, int gpuChannels);
  /// Makes the communicator's multicast team where nvlsTeamVerdict allows it and the GPU tuner could
  /// choose NVLS (every rank together), else records why not.
  Status makeNvlsTeam(bool enabled, int blocks);
  /// From rings_ and the ranks' hosts (hostOfRank_): this rank's trees (treePlaces_, logged as NCCL
  /// does under GRAPH) and, for the tuner, the trees' depths and the ring's hops within hosts.
  void layOutHosts(bool shmDisabled);
  /// Logs `rings` as NCCL does: each whole ring under INIT, this rank's neighbours under GRAPH;
  /// `kind` prefixes the lines ("" for the host path's, "GPU " for the GPU path's).
  void logRings(const char* kind, const std::vector<algorithms::Ring>& rings) const;

  std::atomic<bool> aborted_{false};
  std::atomic<bool> revoking_{false};  // calls in flight must stop
  std::atomic<bool> revoked_{false};   // collectives are refused
  std::vector<bool> shrinkExcluded_;   // during a shrink, on the shrinking thread only
  std::atomic<int> activeCalls_{0};
  std::atomic<int> backgroundLaunches_{0};
  std::atomic<StatusCode> asyncError_{StatusCode::kOk};
  mutable std::mutex asyncErrorMutex_;
  std::string asyncErrorMessage_;  // of the first failure, under asyncErrorMutex_
  WaitContext waitContext_;
  std::unique_ptr<Bootstrap> bootstrap_;
  std::vector<PeerInfo> peers_;
  std::unique_ptr<PeerWatch> watch_;
  ProgressRecord* progress_ = nullptr;
  uint64_t sequence_ = 0;
  uint64_t collectivesCalled_ = 0;
  bool checksCalls_ = false;
  bool checksPointers_ = false;
  std::vector<algorithms::Ring> rings_;     // the host path's channels
  std::vector<algorithms::Ring> gpuRings_;  // the GPU path's channels
  std::unique_ptr<ConnectionTable> connections_;
  int gpuChannels_ = 1;
  int gpuBlocksPerRank_ = 1;
  size_t gpuLowLatencyMaxBytes_ = 0;
  bool gpuDirect_ = true;
  uint64_t cliqueId_ = 0;
  int minChannels_ = 1;
  algorithms::AlgorithmFilter algorithms_ = algorithms::AlgorithmFilter::all();
  algorithms::ProtocolFilter protocols_ = algorithms::ProtocolFilter::all();
  algorithms::CostModel costModel_;
  mutable TuneMemo tuneMemo_;
  bool networkHops_ = false;
  int treeDepth_ = 0;
  std::vector<algorithms::TreePlace> treePlaces_;
  std::vector<int> hostOfRank_;
  algorithms::HostLayout hostLayout_;
  size_t cmaMinBytes_ = 0;
  size_t windowMinBytes_ = 0;
  size_t streamMinBytes_ = 0;
  size_t slotBytes_ = 0;
  size_t llSlotBytes_ = 0;
  int slotCount_ = 0;
  RedOpTable redOps_;
  transport::RegistrationTable registrations_;
  WindowTable windows_;
  std::mutex deviceMutex_;
  std::unique_ptr<device::NvlsTeam> nvlsTeam_;  // its memory outlives the kernels device_ waits for
  std::string nvlsUnavailableReason_;
  // Last of the members that use the ones above: destroyed first.
  std::unique_ptr<DeviceResources> device_;
  // device_ once made, which calls read without deviceMutex_: a launch never waits behind an
  // abort's CUDA query under that lock (the query may wait in the driver for another thread's
  // free, which waits for every kernel, one of them waiting for this launch). Its readers are
  // inside a call (enterCall), which ncclCommAbort waits to leave before the destructor clears it.
  std::atomic<DeviceResources*> madeDevice_{nullptr};
};

}  // namespace weft::core
