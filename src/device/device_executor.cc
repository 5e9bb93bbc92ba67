#include "src/device/device_executor.h"

#include <cuda_runtime_api.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <memory>
#include <mutex>
#include <utility>
#include <vector>

#include "algorithms/gpu_tuner.h"
#include "algorithms/schedule.h"
#include "algorithms/tuner.h"
#include "src/base/log.h"
#include "src/core/communicator.h"
#include "src/device/comm_device.h"
#include "src/device/direct_plan.h"
#include "src/device/gpu_protocol.h"
#include "src/device/host_function.h"
#include "src/device/kernel_work.h"
#include "src/device/launch_tables.h"
#include "src/device/local_clique.h"
#include "src/device/nvls_plan.h"
#include "src/device/step_kernel.h"
#include "src/exec/program_connections.h"
#include "transport/cuda_ipc/cuda_call.h"

namespace weft::device {
namespace {

using algorithms::isPointToPoint;
using algorithms::reduces;

cudaStream_t streamOf(const core::Op& op) { return static_cast<cudaStream_t>(op.stream); }

// Whether another rank of `comm` is a thread of this process on the same GPU.
bool sharesGpuInThisProcess(const core::Communicator& comm) {
  const PeerInfo& self = comm.peer(comm.rank());
  return std::any_of(comm.peers().begin(), comm.peers().end(), [&self](const PeerInfo& peer) {
    return peer.rank != self.rank && peer.sameProcess(self) && peer.cudaDevice == self.cudaDevice;
  });
}

// The legacy default stream would run every rank's kernels in turn.
Status checkLegacyStream(std::span<const core::Op> ops) {
  for (const core::Op& op : ops) {
    if ((op.stream == nullptr || streamOf(op) == cudaStreamLegacy) && sharesGpuInThisProcess(*op.comm)) {
      return invalidUsage("rank %d enqueues on the legacy default stream, but other ranks of its communicator are "
                          "threads of this process on the same GPU: that one stream would run their kernels one "
                          "after the other while each waits for the others; give each rank a stream of its own",
                          op.comm->rank());
    }
  }
  return Status::ok();
}

// A blocking stream (cudaStreamCreate's, cudaStreamPerThread) and the legacy default stream wait
// for each other's work: a cudaMemcpy or cudaMemset on the legacy stream, on any thread, then
// waits for this rank's kernel, which waits for peers that the thread may be the one to launch.
// Said once per process, for ranks that share their GPU with other threads' ranks.
void warnOfBlockingStreams(std::span<const core::Op> ops) {
  static std::atomic<bool> warned{false};
  for (const core::Op& op : ops) {
    if (warned.load(std::memory_order_relaxed) || !sharesGpuInThisProcess(*op.comm)) continue;
    unsigned int flags = cudaStreamNonBlocking;
    if (cudaStreamGetFlags(streamOf(op), &flags) != cudaSuccess) (void)cudaGetLastError();
    if ((flags & cudaStreamNonBlocking) != 0 || warned.exchange(true)) continue;
    WEFT_WARN("rank %d enqueues on a blocking CUDA stream while other ranks of its communicator are threads of this "
              "process on the same GPU: work on the legacy default stream (cudaMemcpy, cudaMemset, stream 0), on "
              "any thread, waits for its kernel, which waits for those ranks; if that thread is one that launches "
              "them, neither ends. Create the ranks' streams with cudaStreamNonBlocking",
              op.comm->rank());
  }
}

// The collectives (not Send/Recv) of `comm` among `ops`.
uint64_t collectiveCalls(std::span<const core::Op> ops, const core::Communicator* comm) {
  return std::count_if(ops.begin(), ops.end(),
                       [comm](const core::Op& op) { return op.comm == comm && !isPointToPoint(op.collective); });
}

// Claims the streams of each communicator's calls for its launch (local_clique.h), where other
// ranks of its clique are threads of this process on its GPU; `claimed` says whose claims were
// recorded, to be withdrawn for those that enqueue no kernel. Just before the kernels, where
// nothing between the claims and the enqueues waits: that narrows, without closing, the window in
// which another thread's claim of the same stream could reach it first.
Status claimLaunchStreams(std::span<const core::Op> ops, std::span<core::Communicator* const> comms,
                          std::span<CommDevice* const> devices, std::vector<bool>* claimed) {
  for (size_t c = 0; c < comms.size(); ++c) {
    if (!sharesGpuInThisProcess(*comms[c])) continue;
    ScopedDevice current(devices[c]->device());
    WEFT_RETURN_IF_ERROR(current.status());
    std::vector<unsigned long long> ids;  // one id names one stream, cudaStreamPerThread's this thread's
    for (const core::Op& op : ops) {
      if (op.comm != comms[c]) continue;
      unsigned long long id = 0;
      WEFT_RETURN_IF_ERROR(cudaStatus(cudaStreamGetId(streamOf(op), &id), "cudaStreamGetId"));
      if (std::find(ids.begin(), ids.end(), id) == ids.end()) ids.push_back(id);
    }
    const LaunchStreams launch{ids, devices[c]->collectivesLaunched(), collectiveCalls(ops, comms[c])};
    WEFT_RETURN_IF_ERROR(claimStreams(devices[c], launch));
    (*claimed)[c] = true;
  }
  return Status::ok();
}

// Appends `values` to `bytes` at the tables' alignment (kernel_work.h); returns their offset.
template <class T>
size_t appendTable(std::vector<char>* bytes, const std::vector<T>& values) {
  const size_t offset = alignTables(bytes->size());
  bytes->resize(offset + values.size() * sizeof(T));
  if (!values.empty()) std::memcpy(bytes->data() + offset, values.data(), values.size() * sizeof(T));
  return offset;
}

// What one launch moves through the network proxies' ends it reaches.
struct ProxyExpectations {
  std::vector<std::pair<transport::DeviceProxy*, uint64_t>> ends;  // and the pieces through each
  transport::ProxyFailureSink* sink = nullptr;

  void tell() const {
    for (const auto& [proxy, pieces] : ends) proxy->expect(pieces, sink);
  }
};

// A captured launch's host node (CUDA runs it on a thread of its own, where it may make no CUDA
// call: expect() only counts and wakes the proxy thread, and an end it fails, at exit, aborts
// without asking CUDA what still runs).
void CUDART_CB tellProxies(void* expectations) {
  HostFunctionScope scope;
  static_cast<const ProxyExpectations*>(expectations)->tell();
}

// One kernel launch: the lanes of some operations of one communicator.
class LaunchBuilder {
 public:
  /// `lowLatency`: the pieces go through the connections' LL slots.
  LaunchBuilder(CommDevice& device, size_t unitBytes, bool lowLatency)
      : device_(device),
        unitBytes_(unitBytes),
        lowLatency_(lowLatency),
        tables_(pieceUnitsOf(),
                [this](int channel, int peer, bool send) { return addConnection(channel, peer, send); }) {}
  LaunchBuilder(const LaunchBuilder&) = delete;  // its tables call back into it
  LaunchBuilder& operator=(const LaunchBuilder&) = delete;

  /// Adds the lanes of `op`'s program. `scale`: units per element of the op's type.
  Status addOp(const core::Op& op, const algorithms::Program& program, size_t scale) {
    return tables_.addOp(program, op.sendbuff, op.recvbuff, scale);
  }

  /// Lays out the kernel's tables (tableBytes() then says their size). False in `*runs` where no
  /// block has anything to move: the kernel is not enqueued.
  Status layOut(bool* runs) {
    *runs = false;
    if (tables_.empty()) return Status::ok();
    KernelTables tables;
    WEFT_RETURN_IF_ERROR(tables_.layOut(device_.rank(), device_.nranks(), device_.blocksPerRank(), window(), &tables));
    blocks_ = static_cast<int>(tables.blocks.size());
    if (blocks_ == 0) return Status::ok();  // every lane moves nothing
    bytes_.clear();
    blocksAt_ = appendTable(&bytes_, tables.blocks);
    runsAt_ = appendTable(&bytes_, tables.runs);
    lanesAt_ = appendTable(&bytes_, tables.lanes);
    stepsAt_ = appendTable(&bytes_, tables.steps);
    connectionsAt_ = appendTable(&bytes_, connections_);
    *runs = true;
    return Status::ok();
  }
  /// Bytes of the tables layOut made.
  size_t tableBytes() const { return bytes_.size(); }
  /// Copies the tables to `hostTables`, memory that the kernel reads at `deviceTables`, for as long
  /// as it runs (captured: for as long as its graph lives).
  void writeTables(char* hostTables, const char* deviceTables) {
    std::memcpy(hostTables, bytes_.data(), bytes_.size());
    deviceTables_ = deviceTables;
  }

  /// Enqueues the kernel, whose tables writeTables placed, on `stream`; `record`: the capture's
  /// record where the communicator's launch is captured into a CUDA graph, else null. `*enqueued`
  /// says whether the kernel was, also where a later step failed.
  Status launch(const algorithms::Reduction* reduction, cudaStream_t stream, CapturedGraphs::Capture* record,
                bool* enqueued) {
    *enqueued = false;
    StreamCapture capture;
    WEFT_RETURN_IF_ERROR(streamCapture(stream, &capture));
    if (capture.active != (record != nullptr)) {
      return internalError("rank %d's kernel is %s, but its tables were placed in %s", device_.rank(),
                           capture.active ? "captured into a CUDA graph" : "enqueued eagerly",
                           capture.active ? "a buffer of its pool" : "a captured graph's memory");
    }
    KernelWork work;
    work.blocks = reinterpret_cast<const KernelBlock*>(deviceTables_ + blocksAt_);
    work.runs = reinterpret_cast<const KernelRun*>(deviceTables_ + runsAt_);
    work.lanes = reinterpret_cast<const KernelLane*>(deviceTables_ + lanesAt_);
    work.steps = reinterpret_cast<const KernelStep*>(deviceTables_ + stepsAt_);
    work.connections = reinterpret_cast<const KernelConnection*>(deviceTables_ + connectionsAt_);
    work.unitBytes = unitBytes_;
    work.pieceUnits = tables_.pieceUnits();
    work.lowLatency = lowLatency_ ? 1 : 0;
    if (reduction != nullptr) {
      std::memcpy(&work.scalar, reduction->scalar, sizeof(work.scalar));
      work.scalarAt = reduction->scalarAt;
      work.divisor = reduction->divisor;
    }
    work.abortFlag = device_.abortFlag();
    // The network proxies carry what the kernel will move through their ends. They count pieces,
    // not launches: a captured launch tells them from a host node before its kernel, at each replay.
    ProxyExpectations expectations;
    expectations.sink = &device_;
    const std::vector<uint64_t>& pieces = tables_.connectionPieces();
    for (size_t i = 0; i < connections_.size(); ++i) {
      if (proxies_[i] != nullptr && pieces[i] > 0) expectations.ends.emplace_back(proxies_[i], pieces[i]);
    }
    WEFT_RETURN_IF_ERROR(device_.orderAfterPrevious(stream, capture));
    std::shared_ptr<ProxyExpectations> kept;
    if (capture.active && !expectations.ends.empty()) {
      kept = std::make_shared<ProxyExpectations>(std::move(expectations));
      WEFT_RETURN_IF_ERROR(device_.capturedGraphs().keep(record, kept));
      WEFT_RETURN_IF_ERROR(cudaStatus(cudaLaunchHostFunc(stream, tellProxies, kept.get()), "cudaLaunchHostFunc"));
    }
    device_.markKernel(&work);
    if (Status launched = launchStepKernel(work, blocks_, reduction, stream); !launched.isOk()) {
      // Where the capture goes on, its host node must not promise the proxies pieces at each replay
      // that no kernel moves (the graph cannot run before its capture has ended).
      if (kept != nullptr) kept->ends.clear();
      return launched;
    }
    *enqueued = true;
    device_.publishKernel(work, blocks_, capture);
    if (!capture.active) expectations.tell();
    return device_.recordLaunch(stream, capture);
  }

 private:
  uint64_t pieceUnitsOf() const {
    const size_t pieceBytes = lowLatency_ ? device_.lowLatencySlotBytes() / kLowLatencyLineBytes * kLowLatencyLineData
                                          : device_.connections().slotBytes();
    return pieceBytes / unitBytes_;
  }

  // The folding window (block_plan.h): the communicator's slot count, which every rank shares and
  // every connection has.
  uint64_t window() const { return static_cast<uint64_t>(device_.connections().slotCount()); }

  // Appends connection end (channel, peer, send) to the launch's connection table.
  Status addConnection(int channel, int peer, bool send) {
    core::ConnectionTable& table = device_.connections();
    const transport::DeviceEnd* end = nullptr;
    if (send && table.send(channel, peer) != nullptr) end = table.send(channel, peer)->deviceEnd();
    if (!send && table.recv(channel, peer) != nullptr) end = table.recv(channel, peer)->deviceEnd();
    if (end == nullptr) {
      return internalError("no GPU connection %s rank %d on channel %d", send ? "to" : "from", peer, channel);
    }
    if (lowLatency_ && (end->llSlots == nullptr || end->llSlotBytes != device_.lowLatencySlotBytes())) {
      return internalError("an LL launch reached the GPU connection %s rank %d on channel %d, whose LL slots (%zu "
                           "bytes) are not the communicator's (%zu)",
                           send ? "to" : "from", peer, channel, end->llSlots == nullptr ? size_t{0} : end->llSlotBytes,
                           device_.lowLatencySlotBytes());
    }
    // The LL clean-up refreshes each slot once in every 2^31 pieces only with this many slots
    // (kLowLatencyCleanMask); every send cleans, so every connection with LL slots needs them.
    if (end->llSlots != nullptr && end->slotCount != algorithms::kSlotsPerConnection) {
      return internalError("the GPU connection %s rank %d on channel %d has %d slots: its LL slots need %d",
                           send ? "to" : "from", peer, channel, end->slotCount, algorithms::kSlotsPerConnection);
    }
    if (static_cast<uint64_t>(end->slotCount) < window()) {
      return internalError("the GPU connection %s rank %d on channel %d has %d slots, fewer than the communicator's "
                           "%llu",
                           send ? "to" : "from", peer, channel, end->slotCount,
                           static_cast<unsigned long long>(window()));
    }
    KernelConnection connection;
    connection.slots = end->slots;
    connection.posted = reinterpret_cast<unsigned long long*>(end->posted);
    connection.released = reinterpret_cast<unsigned long long*>(end->released);
    connection.sizes = reinterpret_cast<unsigned long long*>(end->sizes);
    connection.slotBytes = end->slotBytes;
    connection.slotCount = static_cast<uint64_t>(end->slotCount);
    connection.llSlots = end->llSlots;
    connection.llSlotBytes = end->llSlotBytes;
    connection.peer = peer;
    connection.channel = channel;
    connections_.push_back(connection);
    proxies_.push_back(end->proxy);
    return Status::ok();
  }

  CommDevice& device_;
  size_t unitBytes_;
  bool lowLatency_;
  LaunchTables tables_;
  // Per connection end of the launch, by index: as the kernel uses it, and its network proxy (or
  // nullptr).
  std::vector<KernelConnection> connections_;
  std::vector<transport::DeviceProxy*> proxies_;
  // What layOut made: the blocks, and the tables as the kernel reads them, at these offsets.
  int blocks_ = 0;
  std::vector<char> bytes_;
  size_t blocksAt_ = 0;
  size_t runsAt_ = 0;
  size_t lanesAt_ = 0;
  size_t stepsAt_ = 0;
  size_t connectionsAt_ = 0;
  const char* deviceTables_ = nullptr;
};

// Where `comm`'s ops in `ops` were given several streams, makes each of them wait for the work
// enqueued so far on every other (through the first: it waits for the others, then they wait for
// it), through `mark`, and returns them in `joined`; otherwise leaves `joined` empty. Under capture
// the waits are edges of the graph, so the streams must all be captured into one graph, or none.
Status joinGroupStreams(std::span<const core::Op> ops, const core::Communicator* comm, cudaEvent_t mark,
                        std::vector<cudaStream_t>* joined) {
  std::vector<cudaStream_t> streams;
  for (const core::Op& op : ops) {
    if (op.comm == comm && std::find(streams.begin(), streams.end(), streamOf(op)) == streams.end()) {
      streams.push_back(streamOf(op));
    }
  }
  if (streams.size() < 2) return Status::ok();
  StreamCapture first;
  WEFT_RETURN_IF_ERROR(streamCapture(streams[0], &first));
  for (size_t i = 1; i < streams.size(); ++i) {
    StreamCapture capture;
    WEFT_RETURN_IF_ERROR(streamCapture(streams[i], &capture));
    if (capture.active != first.active || (capture.active && capture.id != first.id)) {
      return invalidUsage("rank %d's calls in one group were given streams of which %s; capture all of them into "
                          "one CUDA graph, or none",
                          comm->rank(),
                          capture.active && first.active ? "two are captured into different CUDA graphs"
                                                         : "one is captured into a CUDA graph and another is not");
    }
  }
  // A wait takes the event as last recorded, so one event serves every hand-over in turn.
  Status status;
  for (size_t i = 1; i < streams.size() && status.isOk(); ++i) {
    status = cudaStatus(cudaEventRecord(mark, streams[i]), "cudaEventRecord");
    if (status.isOk()) status = cudaStatus(cudaStreamWaitEvent(streams[0], mark, 0), "cudaStreamWaitEvent");
  }
  if (status.isOk()) status = cudaStatus(cudaEventRecord(mark, streams[0]), "cudaEventRecord");
  for (size_t i = 1; i < streams.size() && status.isOk(); ++i) {
    status = cudaStatus(cudaStreamWaitEvent(streams[i], mark, 0), "cudaStreamWaitEvent");
  }
  if (status.isOk()) *joined = std::move(streams);
  return status;
}

// Whether collective `op` on `device` moves LL pieces (see gpu_protocol.h).
Status chooseProtocol(const core::Op& op, const CommDevice& device, bool* lowLatency) {
  GpuProtocolInputs inputs;
  inputs.simpleAllowed = op.comm->protocolFilter().allows(op.collective, algorithms::Protocol::kSimple);
  inputs.lowLatencyAllowed = op.comm->protocolFilter().allows(op.collective, algorithms::Protocol::kLL);
  inputs.oneHost = device.oneHost();
  inputs.hasLowLatencySlots = device.lowLatencySlotBytes() > 0;
  inputs.bytes = op.count * algorithms::dataTypeSize(op.type);
  inputs.lowLatencyMaxBytes = op.comm->gpuLowLatencyMaxBytes();
  return chooseGpuProtocol(inputs, algorithms::collectiveName(op.collective), lowLatency);
}

// Whether `op` runs as the direct allreduce on `device`'s boards.
bool runsDirect(const core::Op& op, const CommDevice& device) {
  return device.directBoards() != nullptr && op.collective == algorithms::Collective::kAllReduce;
}

// The algorithm of collective `op` on GPU buffers: for an allreduce, NVLS where the communicator's
// multicast team reduces the op's type and op, NCCL_PROTO allows Simple (NVLS's only protocol, as
// in NCCL) and the tuner (algorithms/gpu_tuner.h) prefers it; else the ring. An error where
// NCCL_ALGO allows neither. The same on every rank.
Status chooseAlgorithm(const core::Op& op, algorithms::Algorithm* chosen) {
  using algorithms::Algorithm;
  using algorithms::Collective;
  const algorithms::AlgorithmFilter& filter = op.comm->algorithmFilter();
  const char* collective = algorithms::collectiveName(op.collective);
  if (op.collective != Collective::kAllReduce) {
    *chosen = Algorithm::kRing;
    if (filter.allows(op.collective, Algorithm::kRing)) return Status::ok();
    return invalidUsage("NCCL_ALGO excludes the ring for %s, the only algorithm Weft has for it on GPU buffers; "
                        "allow ring",
                        collective);
  }
  const bool teamReduces = nvlsReduces(op.reduction.type, op.reduction.kind, op.reduction.divisor);
  const bool simpleAllowed = op.comm->protocolFilter().allows(op.collective, algorithms::Protocol::kSimple);
  const bool nvlsOffered = op.comm->nvlsTeam() != nullptr && teamReduces && simpleAllowed;
  const size_t bytes = op.count * algorithms::dataTypeSize(op.type);
  if (algorithms::chooseGpuAllReduce(op.comm->nranks(), bytes, nvlsOffered, filter, algorithms::GpuCostModel{},
                                     chosen)) {
    return Status::ok();
  }
  if (!filter.allows(op.collective, Algorithm::kNvls)) {
    return invalidUsage("NCCL_ALGO excludes both the ring and NVLS for AllReduce, the algorithms Weft has for it on "
                        "GPU buffers; allow ring or nvls");
  }
  const std::string why = op.comm->nvlsTeam() == nullptr ? op.comm->nvlsUnavailableReason()
                           : !teamReduces
                               ? "the switches do not reduce this type with this op (multimem: sum of 32- and 64-bit "
                                 "integers, half, bfloat16, float and double; min and max of the integers, half and "
                                 "bfloat16)"
                               : "NCCL_PROTO excludes Simple, NVLS's only protocol";
  return invalidUsage("NCCL_ALGO allows only NVLS for AllReduce, which this call cannot take: %s; allow ring",
                      why.c_str());
}

// Enqueues the single-kernel launch `work` of `op` with `blocks` blocks on its stream, after the
// communicator's previous launch. `*enqueued` says whether the kernel was, also where a later step
// failed.
Status enqueueWhole(CommDevice& device, const core::Op& op, KernelWork& work, int blocks, bool* enqueued) {
  work.abortFlag = device.abortFlag();
  const cudaStream_t stream = streamOf(op);
  StreamCapture capture;
  WEFT_RETURN_IF_ERROR(streamCapture(stream, &capture));
  WEFT_RETURN_IF_ERROR(device.orderAfterPrevious(stream, capture));
  device.markKernel(&work);
  WEFT_RETURN_IF_ERROR(launchStepKernel(work, blocks, &op.reduction, stream));
  *enqueued = true;
  device.publishKernel(work, blocks, capture);
  return device.recordLaunch(stream, capture);
}

// Enqueues the NVLS allreduce `op` on its stream (nothing for no elements, on every rank).
Status enqueueNvls(CommDevice& device, const core::Op& op, bool* enqueued) {
  if (op.count == 0) return Status::ok();
  const NvlsTeam& team = *op.comm->nvlsTeam();
  KernelWork work;
  KernelNvls& nvls = work.nvls;
  nvls.unicast = team.unicast();
  nvls.multicast = team.multicast();
  nvls.sendbuff = static_cast<const char*>(op.sendbuff);
  nvls.recvbuff = static_cast<char*>(op.recvbuff);
  nvls.bytes = op.count * algorithms::dataTypeSize(op.type);
  nvls.nranks = op.comm->nranks();
  nvls.rank = op.comm->rank();
  nvls.blocks = nvlsLaunchBlocks(nvls.bytes, std::min(team.blocks(), device.blocksPerRank()));
  return enqueueWhole(device, op, work, nvls.blocks, enqueued);
}

// Enqueues the direct allreduce `op` on its stream (nothing for no elements, on every rank).
Status enqueueDirect(CommDevice& device, const core::Op& op, bool* enqueued) {
  if (op.count == 0) return Status::ok();
  KernelWork work;
  KernelDirect& direct = work.direct;
  direct.boards = device.directBoards();
  direct.sendbuff = static_cast<const char*>(op.sendbuff);
  direct.recvbuff = static_cast<char*>(op.recvbuff);
  direct.count = op.count;
  direct.nranks = op.comm->nranks();
  direct.rank = op.comm->rank();
  direct.blocksPerRank = std::min(directBlocksPerRank(op.count, algorithms::dataTypeSize(op.type), direct.nranks,
                                                      device.multiprocessors(), kStepKernelThreads),
                                  device.blocksPerRank());
  std::memcpy(&work.scalar, op.reduction.scalar, sizeof(work.scalar));
  work.scalarAt = op.reduction.scalarAt;
  work.divisor = op.reduction.divisor;
  return enqueueWhole(device, op, work, direct.blocksPerRank, enqueued);
}

// The kernels of one communicator in one launch, in the order they run. Their tables are put in
// memory with prepare(), before any kernel of the launch is enqueued: a thread that drives several
// ranks then never allocates, nor waits for a buffer, between two ranks' kernels of one launch
// (setup_at_init.h says why that matters).
class CommLaunch {
 public:
  explicit CommLaunch(CommDevice& device) : device_(device) {}
  /// Gives back the pool's buffers that releaseBuffers did not, unless a kernel that reads them was
  /// enqueued: those stay taken, never to be reused.
  ~CommLaunch() {
    if (stepEnqueued_) return;
    for (WorkPool::Buffer* buffer : buffers_) device_.workPool().release(buffer);
  }
  CommLaunch(const CommLaunch&) = delete;
  CommLaunch& operator=(const CommLaunch&) = delete;

  /// Adds a step kernel running `ops` (on the first one's stream) through `programs`: a copy
  /// (Send/Recv, in bytes) or a collective of the ops' type, in LL pieces where `lowLatency`.
  Status addStepKernel(std::span<const core::Op* const> ops, std::span<const algorithms::Program* const> programs,
                       bool copy, bool lowLatency) {
    const core::Op& first = *ops[0];
    auto builder =
        std::make_unique<LaunchBuilder>(device_, copy ? 1 : algorithms::dataTypeSize(first.type), lowLatency);
    for (size_t i = 0; i < ops.size(); ++i) {
      WEFT_RETURN_IF_ERROR(builder->addOp(*ops[i], *programs[i], copy ? algorithms::dataTypeSize(ops[i]->type) : 1));
    }
    kernels_.push_back(Kernel{Kind::kSteps, std::move(builder), &first, copy ? nullptr : &first.reduction});
    return Status::ok();
  }
  /// Adds the direct or (`nvls`) NVLS allreduce of `op`, a kernel without tables.
  void addWholeKernel(const core::Op& op, bool nvls) {
    kernels_.push_back(Kernel{nvls ? Kind::kNvls : Kind::kDirect, nullptr, &op, nullptr});
  }

  /// Lays out every step kernel's tables and puts them in memory the kernels can read: buffers of
  /// the communicator's pool, as few as hold them (taking one may wait for a kernel of an earlier
  /// launch to end), or, where the launch is captured into a CUDA graph, memory its graph keeps.
  Status prepare() {
    for (Kernel& kernel : kernels_) {
      if (kernel.kind != Kind::kSteps) continue;
      bool runs = false;
      WEFT_RETURN_IF_ERROR(kernel.steps->layOut(&runs));
      if (!runs) {
        kernel.steps.reset();
        continue;
      }
      // Where the communicator's calls name several streams, all or none are captured, into one
      // graph (joinGroupStreams): the first step kernel's stream speaks for them.
      if (!captureKnown_) {
        StreamCapture capture;
        WEFT_RETURN_IF_ERROR(streamCapture(streamOf(*kernel.op), &capture));
        if (capture.active) WEFT_RETURN_IF_ERROR(device_.capturedGraphs().findOrMake(capture, &record_));
        captureKnown_ = true;
      }
      char* host = nullptr;
      char* device = nullptr;
      WEFT_RETURN_IF_ERROR(placeTables(kernel.steps->tableBytes(), &host, &device));
      kernel.steps->writeTables(host, device);
    }
    return Status::ok();
  }

  /// Whether every kernel was enqueued (or had nothing to move).
  bool enqueuedAll() const { return next_ == kernels_.size() && !failed_; }
  /// Whether some kernel was enqueued, also where a later one failed.
  bool enqueuedAny() const { return enqueuedAny_; }

  /// Enqueues the next kernel on its first op's stream. Not after a failure.
  Status enqueueNext() {
    Kernel& kernel = kernels_[next_++];
    bool enqueued = false;
    Status status;
    switch (kernel.kind) {
      case Kind::kSteps:
        if (kernel.steps == nullptr) break;  // it moves nothing
        status = kernel.steps->launch(kernel.reduction, streamOf(*kernel.op), record_, &enqueued);
        if (enqueued) {
          stepEnqueued_ = true;
          lastStepStream_ = streamOf(*kernel.op);
        }
        break;
      case Kind::kDirect: status = enqueueDirect(device_, *kernel.op, &enqueued); break;
      case Kind::kNvls: status = enqueueNvls(device_, *kernel.op, &enqueued); break;
    }
    enqueuedAny_ = enqueuedAny_ || enqueued;
    failed_ = !status.isOk();
    return status;
  }

  /// Once the kernels are enqueued (or one failed): gives the pool's buffers back, in use until the
  /// last step kernel that was enqueued has ended: the communicator's kernels end in order, each
  /// waiting for the one before (orderAfterPrevious).
  Status releaseBuffers() {
    Status status;
    for (WorkPool::Buffer* buffer : buffers_) {
      if (!stepEnqueued_) {
        device_.workPool().release(buffer);
        continue;
      }
      const Status released = device_.workPool().releaseAfter(buffer, lastStepStream_);
      if (status.isOk()) status = released;
    }
    buffers_.clear();
    return status;
  }

 private:
  // `bytes` of memory for one kernel's tables, 16-byte aligned: under capture the graph's; else in
  // the last buffer taken where they fit, or in a newly taken one.
  Status placeTables(size_t bytes, char** host, char** device) {
    if (record_ != nullptr) return device_.capturedGraphs().tables(record_, bytes, host, device);
    size_t at = alignTables(used_);
    if (buffers_.empty() || at + bytes > buffers_.back()->capacity) {
      RelaxedCapture relaxed;  // its queries and allocations are not part of a graph another call captures
      WorkPool::Buffer* buffer = nullptr;
      WEFT_RETURN_IF_ERROR(device_.workPool().acquire(bytes, &buffer));
      buffers_.push_back(buffer);
      at = 0;
    }
    *host = buffers_.back()->host + at;
    *device = buffers_.back()->device + at;
    used_ = at + bytes;
    return Status::ok();
  }

  enum class Kind { kSteps, kDirect, kNvls };
  struct Kernel {
    Kind kind;
    std::unique_ptr<LaunchBuilder> steps;    // kSteps only; null once prepare found it moves nothing
    const core::Op* op;                      // its first op
    const algorithms::Reduction* reduction;  // a step kernel's; null for a copy
  };

  CommDevice& device_;
  std::vector<Kernel> kernels_;
  bool captureKnown_ = false;                  // whether prepare asked the capture
  CapturedGraphs::Capture* record_ = nullptr;  // where the launch is captured
  std::vector<WorkPool::Buffer*> buffers_;     // taken from the pool, where it is not
  size_t used_ = 0;                            // bytes of the last buffer taken
  size_t next_ = 0;                            // the kernel enqueueNext enqueues
  bool failed_ = false;                        // enqueueNext failed
  bool enqueuedAny_ = false;
  bool stepEnqueued_ = false;
  cudaStream_t lastStepStream_ = nullptr;  // of the last step kernel enqueued (0 is a stream too)
};

// Whether some rank of `comm`'s clique that is a thread of this process on its GPU has no
// communicator in `comms` (this launch's): another thread enqueues its kernels, which wait for
// this rank's.
bool gpuPeersOutside(const core::Communicator& comm, std::span<core::Communicator* const> comms) {
  const PeerInfo& self = comm.peer(comm.rank());
  return std::any_of(comm.peers().begin(), comm.peers().end(), [&](const PeerInfo& peer) {
    if (peer.rank == self.rank || !peer.sameProcess(self) || peer.cudaDevice != self.cudaDevice) return false;
    return std::none_of(comms.begin(), comms.end(), [&](const core::Communicator* other) {
      return other->cliqueId() == comm.cliqueId() && other->rank() == peer.rank;
    });
  });
}

// After a launch failed (before or while enqueuing, at `why`): the kernels it enqueued to run now
// (not those captured into a graph: one whose capture saw a failed call must not be launched, as
// README says) would wait for ever for those it did not, so their communicators' kernels give up,
// and those communicators report why at their next call. So do those that lack some kernel of the
// launch where ranks of their clique on their GPU are driven by other threads of this process,
// whose kernels of this call, enqueued or to come, wait for it; and then those ranks too, once per
// clique. The others keep theirs: their earlier kernels and graph replays may still be running,
// and end well. `enqueuedAny` and `enqueuedAll` are by communicator; all false before any kernel
// was enqueued. `devices`: null for a communicator whose GPU resources are not made.
void endKernelsLeftWaiting(std::span<const core::Op> ops, std::span<core::Communicator* const> comms,
                           std::span<CommDevice* const> devices, const std::vector<bool>& enqueuedAny,
                           const std::vector<bool>& enqueuedAll, const Status& why) {
  std::vector<size_t> withPeersOutside;
  for (size_t c = 0; c < comms.size(); ++c) {
    if (devices[c] == nullptr) continue;  // no GPU resources: no kernel of its peers reaches it
    const bool peersOutside = gpuPeersOutside(*comms[c], comms);
    if (!enqueuedAny[c] && (enqueuedAll[c] || !peersOutside)) continue;
    const auto first = std::find_if(ops.begin(), ops.end(), [&](const core::Op& op) { return op.comm == comms[c]; });
    ScopedDevice current(devices[c]->device());
    StreamCapture capture;
    // Where CUDA cannot say, as if not captured: ending kernels that wait for nothing costs less
    // than leaving some to wait for ever.
    if (current.status().isOk() && streamCapture(streamOf(*first), &capture).isOk() && capture.active) continue;
    devices[c]->endKernels(why);
    if (peersOutside) withPeersOutside.push_back(c);
  }
  // After the launch's own communicators have recorded the real cause.
  std::vector<std::pair<uint64_t, int>> cliquesEnded;
  for (size_t c : withPeersOutside) {
    const std::pair<uint64_t, int> clique(comms[c]->cliqueId(), devices[c]->device());
    if (std::find(cliquesEnded.begin(), cliquesEnded.end(), clique) != cliquesEnded.end()) continue;
    cliquesEnded.push_back(clique);
    (void)endLocalPeers(clique.first, clique.second, devices[c],
                        remoteError("rank %d of this communicator, a thread of this process on the same GPU, gave up a "
                                    "launch that failed (%s): abort or destroy this communicator too",
                                    comms[c]->rank(), why.message().c_str()));
  }
}

// Where init made every connection a call can need (ranks of one host, some of them threads of one
// process: setup_at_init.h), one made at a call allocates and waits for the GPU while a peer's
// kernel may wait for this rank. Said once per process, for hang reports.
void warnOfConnectionsInitMissed(const core::Op& op, const CommDevice& device) {
  if (!device.connectedAtInit()) return;
  static std::once_flag warned;
  std::call_once(warned, [&op] {
    WEFT_WARN("rank %d: a call on GPU buffers (%s) needs connections that init did not make, though ranks of this "
              "host are threads of one process; making them now may wait for a peer's kernel that waits for this rank",
              op.comm->rank(), algorithms::collectiveName(op.collective));
  });
}

// Numbers each op as the host executor does and leaves the last one of each communicator in its
// progress record, for WEFT_DUMP_SIGNAL and hang reports.
void recordLaunches(std::span<const core::Op> ops) {
  for (const core::Op& op : ops) {
    const uint64_t sequence = op.comm->nextSequence();
    if (op.comm->progress() == nullptr) continue;
    core::recordCall(op.comm->progress(), core::ProgressState::kLaunched, static_cast<int>(op.collective),
                     static_cast<int>(op.type), op.count, sequence);
  }
}

// Waits for `turns` while none of `comms` is aborted or has lost a peer. Without WEFT_TIMEOUT: the
// launches it waits for are enqueueing, which may wait as long as a kernel runs, for a tables
// buffer.
Status awaitTurns(core::LaunchTurns& turns, std::span<core::Communicator* const> comms) {
  if (turns.empty()) return Status::ok();
  WaitContext context = withoutTimeout(comms.front()->waitContext());
  context.what = "an earlier launch of this thread on the same stream";
  context.check = [comms]() -> Status {
    for (const core::Communicator* comm : comms) {
      if (comm->waitContext().check) WEFT_RETURN_IF_ERROR(comm->waitContext().check());
    }
    return Status::ok();
  };
  return turns.await(context);
}

}  // namespace

Status enqueueOnStreams(std::span<const core::Op> ops, core::LaunchTurns& turns) {
  // The communicators and their GPU resources (null until made), those of one clique together (as
  // NCCL joins a group's communicators), cliques in the order of their ids, which every rank knows
  // alike: a group of P's rank 0, S's rank 1, S's rank 0, P's rank 1 would otherwise queue S's
  // rank 1 before P's rank 1 on one stream and P's rank 0 before S's rank 0 on the other, each
  // kernel behind one that waits for it; so would two threads' groups of P and S in opposite orders.
  std::vector<core::Communicator*> comms;
  for (const core::Op& op : ops) {
    if (std::find(comms.begin(), comms.end(), op.comm) == comms.end()) comms.push_back(op.comm);
  }
  std::stable_sort(comms.begin(), comms.end(), [](const core::Communicator* a, const core::Communicator* b) {
    return a->cliqueId() < b->cliqueId();
  });
  std::vector<CommDevice*> commDevices(comms.size(), nullptr);
  for (size_t c = 0; c < comms.size(); ++c) commDevices[c] = static_cast<CommDevice*>(comms[c]->madeDeviceResources());
  // Where this rank fails before its kernels, its peers driven by other threads may already wait
  // for them: those of communicators whose GPU resources are made (ranks that are threads of one
  // process make them at init) give up with it.
  std::vector<bool> claimed(comms.size(), false);  // streams claimed (local_clique.h)
  const auto failBeforeKernels = [&](const Status& failure) {
    for (size_t c = 0; c < comms.size(); ++c) {
      if (claimed[c]) withdrawLatestClaim(commDevices[c]);
    }
    const std::vector<bool> none(comms.size(), false);
    endKernelsLeftWaiting(ops, comms, commDevices, none, none, failure);
    return failure;
  };
  if (Status legacy = checkLegacyStream(ops); !legacy.isOk()) return failBeforeKernels(legacy);
  warnOfBlockingStreams(ops);
  std::vector<CommDevice*> devices(ops.size());
  std::vector<algorithms::Program> programs(ops.size());
  // Send/Recv and the collectives NCCL_ALGO does not govern move Simple pieces.
  std::vector<bool> lowLatencyOps(ops.size(), false);
  std::vector<bool> nvlsOps(ops.size(), false);
  const auto plan = [&](size_t i) -> Status {
    const core::Op& op = ops[i];
    algorithms::Algorithm algorithm = algorithms::Algorithm::kRing;
    if (algorithms::governedByAlgo(op.collective)) WEFT_RETURN_IF_ERROR(chooseAlgorithm(op, &algorithm));
    nvlsOps[i] = algorithm == algorithms::Algorithm::kNvls;
    if (op.comm->madeDeviceResources() == nullptr) turns.settingUp();  // allocations at a first call
    WEFT_RETURN_IF_ERROR(commDevice(*op.comm, &devices[i]));
    commDevices[std::find(comms.begin(), comms.end(), op.comm) - comms.begin()] = devices[i];
    if (nvlsOps[i] || runsDirect(op, *devices[i])) return Status::ok();  // no program, no connections
    if (algorithms::governedByAlgo(op.collective)) {
      bool lowLatency = false;
      WEFT_RETURN_IF_ERROR(chooseProtocol(op, *devices[i], &lowLatency));
      lowLatencyOps[i] = lowLatency;
    }
    algorithms::buildRingProgram(core::shapeOf(op), op.comm->gpuRings(), &programs[i]);
    return Status::ok();
  };
  for (size_t i = 0; i < ops.size(); ++i) {
    if (Status planned = plan(i); !planned.isOk()) return failBeforeKernels(planned);
  }
  {
    // A first call's connections are made at the call, with its peers, whether or not this or
    // another thread captures a graph: not part of any graph.
    RelaxedCapture relaxed;
    Status connected = exec::connectPrograms(
        ops, programs,
        [&](const core::Op& op) -> core::ConnectionTable& { return devices[&op - ops.data()]->connections(); },
        [&](const core::Op& op) {
          turns.settingUp();  // connecting waits for the peers
          warnOfConnectionsInitMissed(op, *devices[&op - ops.data()]);
        });
    if (!connected.isOk()) return failBeforeKernels(connected);
  }
  // This thread's earlier launches on these streams first, but those setting up
  // (core/stream_turns.h).
  if (Status turn = awaitTurns(turns, comms); !turn.isOk()) return failBeforeKernels(turn);
  // Per communicator, in the order above: its Send/Recv in one kernel, then each
  // collective in a kernel of its own. As in NCCL, where its ops were given several streams, its
  // kernels start after the earlier work of them all, and the later work of each waits for its
  // last kernel (its kernels run one after another); under capture, through edges of the graph.
  // Every communicator's streams are joined before any kernel, and made to wait after every
  // kernel: a wait between two communicators' kernels could hold a rank's kernel behind a peer's
  // kernel that waits for it.
  std::vector<std::vector<cudaStream_t>> joined(comms.size());
  for (size_t c = 0; c < comms.size(); ++c) {
    ScopedDevice current(commDevices[c]->device());
    Status streams = current.status();
    if (streams.isOk()) streams = joinGroupStreams(ops, comms[c], commDevices[c]->streamJoinMark(), &joined[c]);
    if (!streams.isOk()) return failBeforeKernels(streams);
  }
  // Every communicator's kernels and tables first, then every kernel: nothing waits or allocates
  // between two ranks' kernels of this launch.
  std::vector<std::unique_ptr<CommLaunch>> launches;
  const auto prepareLaunch = [&](size_t c) -> Status {
    const core::Communicator* comm = comms[c];
    CommDevice* device = commDevices[c];
    auto launch = std::make_unique<CommLaunch>(*device);
    std::vector<const core::Op*> pointToPoint;
    std::vector<const algorithms::Program*> pointToPointPrograms;
    for (size_t i = 0; i < ops.size(); ++i) {
      if (ops[i].comm != comm || !isPointToPoint(ops[i].collective)) continue;
      pointToPoint.push_back(&ops[i]);
      pointToPointPrograms.push_back(&programs[i]);
    }
    if (!pointToPoint.empty()) {
      WEFT_RETURN_IF_ERROR(launch->addStepKernel(pointToPoint, pointToPointPrograms, true, false));
    }
    for (size_t i = 0; i < ops.size(); ++i) {
      if (ops[i].comm != comm || isPointToPoint(ops[i].collective)) continue;
      const core::Op* op = &ops[i];
      if (nvlsOps[i] || runsDirect(*op, *device)) {
        launch->addWholeKernel(*op, nvlsOps[i]);
        continue;
      }
      const algorithms::Program* program = &programs[i];
      WEFT_RETURN_IF_ERROR(launch->addStepKernel(std::span(&op, 1), std::span(&program, 1),
                                                 !reduces(ops[i].collective), lowLatencyOps[i]));
    }
    ScopedDevice current(device->device());
    WEFT_RETURN_IF_ERROR(current.status());
    WEFT_RETURN_IF_ERROR(launch->prepare());
    launches.push_back(std::move(launch));
    return Status::ok();
  };
  for (size_t c = 0; c < comms.size(); ++c) {
    if (Status prepared = prepareLaunch(c); !prepared.isOk()) return failBeforeKernels(prepared);
  }
  if (Status streams = claimLaunchStreams(ops, comms, commDevices, &claimed); !streams.isOk()) {
    return failBeforeKernels(streams);
  }
  // Communicator by communicator, each one's kernels together: interleaved, communicators that
  // share a stream could queue their kernels in different orders on different ranks (whose lists
  // of kernels differ: Send/Recv), each behind a kernel that waits for the other.
  Status failure;
  for (size_t c = 0; c < comms.size() && failure.isOk(); ++c) {
    ScopedDevice current(commDevices[c]->device());
    failure = current.status();
    while (failure.isOk() && !launches[c]->enqueuedAll()) failure = launches[c]->enqueueNext();
  }
  std::vector<bool> enqueuedAny(comms.size(), false);
  std::vector<bool> enqueuedAll(comms.size(), false);
  for (size_t c = 0; c < comms.size(); ++c) {
    enqueuedAny[c] = launches[c]->enqueuedAny();
    enqueuedAll[c] = launches[c]->enqueuedAll();
    ScopedDevice current(commDevices[c]->device());
    Status released = current.status();
    if (released.isOk()) released = launches[c]->releaseBuffers();
    // The launch goes on: a buffer whose release failed stays taken, never to be reused.
    if (!released.isOk()) WEFT_WARN("rank %d: %s", comms[c]->rank(), released.message().c_str());
  }
  // A communicator counts its collectives where all its kernels were enqueued (its peers count
  // theirs), and keeps its claim where some were.
  for (size_t c = 0; c < comms.size(); ++c) {
    if (enqueuedAll[c]) commDevices[c]->countCollectives(collectiveCalls(ops, comms[c]));
    if (claimed[c] && !enqueuedAny[c]) withdrawLatestClaim(commDevices[c]);
  }
  if (!failure.isOk()) {
    endKernelsLeftWaiting(ops, comms, commDevices, enqueuedAny, enqueuedAll, failure);
    return failure;
  }
  for (size_t c = 0; c < comms.size(); ++c) {
    if (joined[c].empty()) continue;
    ScopedDevice current(commDevices[c]->device());
    WEFT_RETURN_IF_ERROR(current.status());
    for (cudaStream_t stream : joined[c]) WEFT_RETURN_IF_ERROR(commDevices[c]->orderAfterPrevious(stream));
  }
  recordLaunches(ops);
  return Status::ok();
}

}  // namespace weft::device
