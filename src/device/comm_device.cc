#include "src/device/comm_device.h"

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <new>
#include <set>
#include <sstream>
#include <string>

#include "src/base/log.h"
#include "src/core/gpu_peer_access.h"
#include "src/device/direct_boards.h"
#include "src/device/direct_plan.h"
#include "src/device/gpu_runtime.h"
#include "src/device/hardware_queues.h"
#include "src/device/host_function.h"
#include "src/device/setup_at_init.h"
#include "src/device/step_kernel.h"
#include "transport/cuda_ipc/cuda_call.h"

namespace weft::device {
WorkPool::~WorkPool() {
  RelaxedCapture relaxed;  // another thread may be capturing a graph: these frees are not part of it
  for (const std::unique_ptr<Buffer>& buffer : buffers_) {
    if (buffer->done != nullptr) (void)cudaEventDestroy(buffer->done);
    if (buffer->host != nullptr) (void)cudaFreeHost(buffer->host);
  }
}

Status WorkPool::reserve() {
  while (buffers_.size() < kMaxBuffers) {
    Buffer* buffer = nullptr;
    WEFT_RETURN_IF_ERROR(allocate(kReservedBytes, &buffer));
  }
  return Status::ok();
}

Status WorkPool::acquire(size_t bytes, Buffer** out) {
  Status queried;
  const auto eligible = [bytes](const std::unique_ptr<Buffer>& buffer) {
    return buffer->capacity >= bytes && !buffer->taken;
  };
  // Takes a free buffer of `bytes`.
  auto takeFree = [&] {
    for (const std::unique_ptr<Buffer>& buffer : buffers_) {
      if (!eligible(buffer)) continue;
      const cudaError_t state = cudaEventQuery(buffer->done);
      if (state == cudaErrorNotReady) continue;
      if (state != cudaSuccess) {
        queried = cudaStatus(state, "cudaEventQuery of a launch's tables");
        return true;
      }
      buffer->taken = true;
      *out = buffer.get();
      return true;
    }
    return false;
  };
  if (takeFree()) return queried;
  if (buffers_.size() < kMaxBuffers || std::none_of(buffers_.begin(), buffers_.end(), eligible)) {
    WEFT_RETURN_IF_ERROR(allocate(std::max(bytes, kReservedBytes), out));
    (*out)->taken = true;
    return Status::ok();
  }
  WEFT_RETURN_IF_ERROR(waitUntil(context_, takeFree));
  return queried;
}

Status WorkPool::releaseAfter(Buffer* buffer, cudaStream_t stream) {
  // Where the event cannot be recorded, the buffer stays taken: a kernel may still read it.
  WEFT_RETURN_IF_ERROR(cudaStatus(cudaEventRecord(buffer->done, stream), "cudaEventRecord"));
  release(buffer);
  return Status::ok();
}

Status WorkPool::allocate(size_t bytes, Buffer** out) {
  void* host = nullptr;
  WEFT_RETURN_IF_ERROR(cudaStatus(cudaHostAlloc(&host, bytes, cudaHostAllocMapped | cudaHostAllocPortable),
                                  "cudaHostAlloc of a launch's tables"));
  auto buffer = std::make_unique<Buffer>();
  buffer->host = static_cast<char*>(host);
  buffer->capacity = bytes;
  void* device = nullptr;
  Status made = cudaStatus(cudaHostGetDevicePointer(&device, host, 0), "cudaHostGetDevicePointer");
  if (made.isOk()) {
    made = cudaStatus(cudaEventCreateWithFlags(&buffer->done, cudaEventDisableTiming), "cudaEventCreate");
  }
  if (!made.isOk()) {
    (void)cudaFreeHost(host);
    return made;
  }
  buffer->device = static_cast<char*>(device);
  buffers_.push_back(std::move(buffer));
  *out = buffers_.back().get();
  return Status::ok();
}

namespace {

// Ok where every two GPUs of this host's ranks in `peers` can reach each other's memory, which CUDA
// IPC between them needs, as far as this process sees them: a GPU hidden from it
// (CUDA_VISIBLE_DEVICES) is judged by the processes that see it.
Status checkGpusReachEachOther(const std::vector<PeerInfo>& peers, const PeerInfo& self) {
  const auto visible = [](const PeerInfo& peer, int* device) {
    if (cudaDeviceGetByPCIBusId(device, peer.gpuBusId) == cudaSuccess) return true;
    (void)cudaGetLastError();
    return false;
  };
  const auto reaches = [](int from, int to) {
    int can = 0;
    if (cudaDeviceCanAccessPeer(&can, from, to) == cudaSuccess) return can != 0;
    (void)cudaGetLastError();
    return false;
  };
  for (const PeerInfo& a : peers) {
    for (const PeerInfo& b : peers) {
      if (a.rank >= b.rank || !a.sameHost(self) || !b.sameHost(self)) continue;
      if (std::strcmp(a.gpuBusId, b.gpuBusId) == 0) continue;
      int deviceA = -1;
      int deviceB = -1;
      if (!visible(a, &deviceA) || !visible(b, &deviceB)) continue;
      if (!reaches(deviceA, deviceB) || !reaches(deviceB, deviceA)) {
        return invalidUsage("GPUs %s (rank %d) and %s (rank %d) cannot reach each other's memory "
                            "(cudaDeviceCanAccessPeer), which CUDA IPC between them needs; Weft has no transport "
                            "that stages GPU buffers through host memory yet: use host buffers between these ranks",
                            a.gpuBusId, a.rank, b.gpuBusId, b.rank);
      }
    }
  }
  return Status::ok();
}

}  // namespace

Status CommDevice::create(core::Communicator& comm, std::unique_ptr<core::Communicator::DeviceResources>* out) {
  const PeerInfo& self = comm.peer(comm.rank());
  if (self.cudaDevice < 0) {
    return invalidUsage("rank %d has no CUDA device (none was current when its communicator was made): make one "
                        "current with cudaSetDevice before ncclCommInitRank, or pass devlist to ncclCommInitAll",
                        comm.rank());
  }
  WEFT_RETURN_IF_ERROR(core::checkGpuPeerAccess(comm.peers()));
  WEFT_RETURN_IF_ERROR(checkGpusReachEachOther(comm.peers(), self));
  std::unique_ptr<CommDevice> resources(new CommDevice(comm, self.cudaDevice));
  ScopedDevice device(resources->device_);
  WEFT_RETURN_IF_ERROR(device.status());
  // Where init did not load them (the process had not used the GPU then): before this rank's first
  // kernel, which a peer's kernel may already wait for (step_kernel.h, loadStepKernels).
  WEFT_RETURN_IF_ERROR(preloadKernels(resources->device_));
  WEFT_RETURN_IF_ERROR(cudaStatus(cudaStreamCreateWithFlags(&resources->setupStream_, cudaStreamNonBlocking),
                                  "cudaStreamCreate of the setup stream"));
  for (const PeerInfo& peer : comm.peers()) resources->oneHost_ = resources->oneHost_ && peer.sameHost(self);
  // LL pieces never cross hosts (gpu_protocol.h): a communicator that spans hosts needs no LL slots.
  resources->connections_ = std::make_unique<core::ConnectionTable>(
      &comm.peers(), comm.rank(), &comm.bootstrap(), comm.commHash(), comm.gpuChannels(), comm.slotBytes(),
      comm.slotCount(), resources->lowLatencySlotBytes(), core::ConnectionKind::kDevice, resources->setupStream_);
  // The abort flag, then two words where destroy copies a receiving end's counters.
  // The kernels read the flag as a plain int: the host's atomic must be one, and lock-free.
  struct HostWords {
    std::atomic<int> abortFlag{0};
    int unused = 0;
    uint64_t counters[2] = {};
  };
  static_assert(std::atomic<int>::is_always_lock_free && sizeof(std::atomic<int>) == sizeof(int));
  static_assert(offsetof(HostWords, abortFlag) == 0, "the flag's address is the allocation's, which is freed");
  void* flag = nullptr;
  WEFT_RETURN_IF_ERROR(cudaStatus(cudaHostAlloc(&flag, sizeof(HostWords), cudaHostAllocMapped | cudaHostAllocPortable),
                                  "cudaHostAlloc of the abort flag"));
  HostWords* const words = new (flag) HostWords;
  resources->abortFlagHost_ = &words->abortFlag;
  resources->counterCopies_ = words->counters;
  void* flagOnDevice = nullptr;
  WEFT_RETURN_IF_ERROR(cudaStatus(cudaHostGetDevicePointer(&flagOnDevice, flag, 0), "cudaHostGetDevicePointer"));
  resources->abortFlagDevice_ = static_cast<const volatile int*>(flagOnDevice);
  WEFT_RETURN_IF_ERROR(
      cudaStatus(cudaEventCreateWithFlags(&resources->lastLaunch_, cudaEventDisableTiming), "cudaEventCreate"));
  WEFT_RETURN_IF_ERROR(
      cudaStatus(cudaEventCreateWithFlags(&resources->streamJoinMark_, cudaEventDisableTiming), "cudaEventCreate"));
  WEFT_RETURN_IF_ERROR(cudaStatus(
      cudaDeviceGetAttribute(&resources->multiprocessors_, cudaDevAttrMultiProcessorCount, resources->device_),
      "cudaDeviceGetAttribute(cudaDevAttrMultiProcessorCount)"));
  if (comm.gpuDirect() && sharesOneGpuInOneProcess(comm.peers()) &&
      directFits(comm.nranks(), resources->multiprocessors_)) {
    WEFT_RETURN_IF_ERROR(
        acquireDirectBoards(comm.cliqueId(), resources->device_, comm.nranks(), resources->setupStream_,
                            &resources->directBoards_));
  }
  // The tables' memory now (also a first graph capture's), before any kernel of a launch: an
  // allocation between two ranks' kernels of one launch could keep them from running at once
  // (setup_at_init.h).
  WEFT_RETURN_IF_ERROR(resources->workPool_->reserve());
  WEFT_RETURN_IF_ERROR(resources->capturedGraphs_->reserve());
  // WEFT_TIMEOUT reaches the kernels through their blocks' records (gpu_stall_watch.h): the host's
  // waits for them then carry none, since a kernel that runs long is not one that makes no progress.
  const bool timed = comm.waitContext().timeoutSeconds > 0;
  if (const Status recorded = acquireBlockProgress(&resources->blockProgress_); !recorded.isOk()) {
    WEFT_WARN("rank %d: %s; its hang reports will not say what its GPU kernels wait for%s", comm.rank(),
              recorded.message().c_str(), timed ? ", and WEFT_TIMEOUT does not reach them" : "");
  } else {
    if (comm.progress() != nullptr) core::attachGpuBlocks(comm.progress(), resources->blockProgress_.host);
    resources->watchesStalls_ = timed;
    if (timed) resources->kernelWaits_.timeoutSeconds = 0;
  }
  // CUDA's own variable, read as its runtime reads it.
  const std::string queues = hardwareQueueWarning(comm.peers(), comm.rank(), getenv("CUDA_DEVICE_MAX_CONNECTIONS"));
  static std::once_flag queuesWarned;
  if (!queues.empty()) std::call_once(queuesWarned, [&queues] { WEFT_WARN("%s", queues.c_str()); });
  const int ranksHere = static_cast<int>(std::count_if(
      comm.peers().begin(), comm.peers().end(), [&self](const PeerInfo& peer) { return peer.sameProcess(self); }));
  joinLocalClique(comm.cliqueId(), resources->device_, ranksHere, resources.get());
  *out = std::move(resources);
  return Status::ok();
}

namespace {

// What a CommDevice leaves in GPU and pinned memory; destroying it frees that memory.
class DeviceLeftovers final : public LocalCliqueLeftovers {
 public:
  DeviceLeftovers(int device, std::unique_ptr<core::ConnectionTable> connections, std::unique_ptr<WorkPool> workPool,
                  std::unique_ptr<CapturedGraphs> capturedGraphs, BlockProgressArray blockProgress,
                  std::atomic<int>* abortFlag, DirectBoard* directBoards)
      : device_(device),
        connections_(std::move(connections)),
        workPool_(std::move(workPool)),
        capturedGraphs_(std::move(capturedGraphs)),
        blockProgress_(blockProgress),
        abortFlag_(abortFlag),
        directBoards_(directBoards) {}
  ~DeviceLeftovers() override {
    ScopedDevice device(device_);
    RelaxedCapture relaxed;  // another thread may be capturing a graph: these frees are not part of it
    connections_.reset();
    workPool_.reset();
    capturedGraphs_.reset();
    releaseBlockProgress(blockProgress_);
    if (abortFlag_ != nullptr) (void)cudaFreeHost(abortFlag_);  // trivially destructible: no destructor to run
    if (directBoards_ != nullptr) (void)cudaFree(directBoards_);
    (void)cudaGetLastError();
  }

 private:
  int device_;
  std::unique_ptr<core::ConnectionTable> connections_;
  std::unique_ptr<WorkPool> workPool_;
  std::unique_ptr<CapturedGraphs> capturedGraphs_;
  BlockProgressArray blockProgress_;
  std::atomic<int>* abortFlag_;
  DirectBoard* directBoards_;  // the clique's, where this rank was the last to release them
};

}  // namespace

CommDevice::~CommDevice() {
  ScopedDevice device(device_);
  RelaxedCapture relaxed;  // another thread may be capturing a graph: what follows is not part of it
  if (lastLaunch_ != nullptr) {
    // A kernel waiting for a peer that dies meanwhile would hold this wait for ever: once the wait
    // context says the communicator cannot go on (aborted, or a peer dead), its kernels give up.
    // Never on WEFT_TIMEOUT: a kernel that runs long is not one that makes no progress (the stall
    // watch ends kernels that make none).
    cudaError_t state = cudaErrorNotReady;
    const auto ended = [&] { return (state = cudaEventQuery(lastLaunch_)) != cudaErrorNotReady; };
    if (!waitUntil(withoutTimeout(kernelWaits_), ended).isOk()) {
      abort();
      (void)waitUntil(WaitContext{}, ended);
    }
    // A kernel that faulted (or a context with a sticky error) moves no more pieces: its ends must
    // not be waited for below, and the proxies must fail those that still owe some.
    if (state != cudaSuccess && state != cudaErrorNotReady) {
      endKernels(cudaStatus(state, "cudaEventQuery of the last launch"));
    }
  }
  stallWatch_.reset();  // it may have ended the kernels during that wait; it uses what follows
  if (abortFlagHost_ != nullptr && !abortFlagRaised()) awaitSendersLastPosts();
  // Once this rank's kernels gave up, so must those of its clique's ranks on its GPU in this process
  // that may wait for them: they would wait for ever.
  if (abortFlagRaised()) {
    const int ended = endLocalPeers(
        comm_.cliqueId(), device_, this,
        remoteError("rank %d of this communicator, a thread of this process on the same GPU, was aborted or "
                    "lost a peer: abort or destroy this communicator too",
                    comm_.rank()));
    if (ended > 0) {
      WEFT_INFO(log::kInit, "rank %d aborted: the kernels of %d rank(s) sharing its GPU in this process give up",
                comm_.rank(), ended);
    }
  }
  leaveLocalClique(this);  // its kernels have ended: no endKernels reaches it from now on
  // What the kernels posted to other hosts may still be with the proxy: let it leave, unless the
  // communicator was aborted (then nobody waits for it).
  if (connections_ != nullptr && abortFlagHost_ != nullptr && !abortFlagRaised()) {
    const Status drained = waitUntil(comm_.waitContext(), [this] { return proxiesDrained(); });
    if (!drained.isOk()) WEFT_WARN("rank %d: destroying the communicator: %s", comm_.rank(), drained.message().c_str());
  }
  DirectBoard* const lastDirectBoards =
      directBoards_ != nullptr ? releaseDirectBoards(comm_.cliqueId(), device_) : nullptr;
  if (comm_.progress() != nullptr) core::attachGpuBlocks(comm_.progress(), nullptr);
  auto leftovers = std::make_unique<DeviceLeftovers>(device_, std::move(connections_), std::move(workPool_),
                                                     std::move(capturedGraphs_), blockProgress_, abortFlagHost_,
                                                     lastDirectBoards);
  // Within one host its memory stays until its clique's last rank in this process has left, and
  // no communicator of threads remains (local_clique.h). Across hosts its connections include
  // network proxies, which must go with the communicator: its memory is freed at once, even where
  // another communicator's kernels wait for a launch of a thread that this free holds back.
  if (oneHost_) {
    freeWhenCliqueHasLeft(comm_.cliqueId(), std::move(leftovers));
  } else {
    leftovers.reset();
    freeKeptLeftovers();
  }
  if (setupStream_ != nullptr) (void)cudaStreamDestroy(setupStream_);
  if (streamJoinMark_ != nullptr) (void)cudaEventDestroy(streamJoinMark_);
  if (lastLaunch_ != nullptr) (void)cudaEventDestroy(lastLaunch_);  // last: a proxy's abort() queries it
  (void)cudaGetLastError();
}

void CommDevice::awaitSendersLastPosts() {
  if (connections_ == nullptr || setupStream_ == nullptr || counterCopies_ == nullptr) return;
  const PeerInfo& self = comm_.peer(comm_.rank());
  std::vector<const transport::DeviceEnd*> ends;
  for (int channel = 0; channel < 2 * connections_->nChannels(); ++channel) {
    for (int peer = 0; peer < comm_.nranks(); ++peer) {
      const transport::RecvConnection* recv = connections_->recv(channel, peer);
      const transport::DeviceEnd* end = recv != nullptr ? recv->deviceEnd() : nullptr;
      // A sender in this process leaves it alone where this rank's memory stays until the clique
      // has left (one host); across hosts it is freed at once, and a sender on another GPU is not
      // among the kernels that cudaFree waits for.
      const bool memoryKept = oneHost_ && comm_.peer(peer).sameProcess(self);
      if (end != nullptr && end->proxy == nullptr && !memoryKept) ends.push_back(end);
    }
  }
  WaitContext context = comm_.waitContext();
  context.what = "a sender's last posts";
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(1);
  // Copied on the setup stream, which follows no kernel (a legacy-stream copy would wait for every
  // blocking stream's work of this process), into pinned words, and only polled: nothing here
  // blocks, so the wait's second holds.
  uint64_t* copies = const_cast<uint64_t*>(counterCopies_);
  const auto copy = [this](uint64_t* to, const uint64_t* from) {
    return cudaMemcpyAsync(to, from, sizeof(uint64_t), cudaMemcpyDeviceToHost, setupStream_) == cudaSuccess;
  };
  Status posted;
  for (const transport::DeviceEnd* end : ends) {
    // What is left of the one second, for every end together.
    context.timeoutSeconds = std::chrono::duration<double>(deadline - std::chrono::steady_clock::now()).count();
    if (context.timeoutSeconds <= 0) {
      posted = remoteError("a second passed");
      break;
    }
    bool copying = false;
    posted = waitUntil(context, [&] {
      if (!copying) {
        copying = copy(&copies[0], end->posted) && copy(&copies[1], end->released);
        return !copying;  // no copy: nothing to wait for
      }
      const cudaError_t copied = cudaStreamQuery(setupStream_);
      if (copied == cudaErrorNotReady) return false;
      copying = false;
      return copied != cudaSuccess || counterCopies_[0] >= counterCopies_[1];
    });
    if (!posted.isOk()) break;  // a sender gave up, or the communicator cannot go on
  }
  if (!posted.isOk()) {
    WEFT_INFO(log::kInit, "rank %d: not every piece it received was posted (%s); freeing its connections anyway",
              comm_.rank(), posted.message().c_str());
  }
  (void)cudaGetLastError();
}

void CommDevice::markKernel(KernelWork* work) {
  work->kernel = ++kernels_;
  work->blockProgress = blockProgress_.device;
}

void CommDevice::publishKernel(const KernelWork& work, int blocks, const StreamCapture& capture) {
  if (!capture.active && comm_.progress() != nullptr) core::recordKernel(comm_.progress(), work.kernel, blocks);
}

void CommDevice::abort() {
  if (abortFlagHost_ == nullptr) return;
  // Where the abort ends kernels that are stuck (a watchdog's abort, say), what they waited for,
  // as their records say before the flag ends them. A replayed graph's kernels carry other numbers
  // than the latest enqueued: the launch event (which replays record too) says whether any kernel
  // still runs. Not asked from a CUDA host function (a captured launch's proxy ends, failing at
  // exit), where CUDA allows no call.
  const core::ProgressRecord* progress = comm_.progress();
  const bool describe = !abortFlagRaised() && progress != nullptr && lastLaunch_ != nullptr &&
                        !insideHostFunction() && log::enabled(log::Level::kWarn, log::kAll) &&
                        core::gpuBlocksUnfinished(*progress);
  const std::string blocks = describe ? core::describeGpuBlocks(*progress) : std::string();
  // The flag first: the query below may wait behind another thread's free, which waits for every
  // kernel on the GPU, these too. (A kernel looks at the flag only every kPollsPerAbortCheck
  // polls, so it is still running when the query comes, right after.)
  raiseAbortFlag();
  if (!describe) return;
  ScopedDevice device(device_);  // a proxy's or the peer watch's thread may have no device, or another
  RelaxedCapture relaxed;  // another thread may be capturing a graph: this query is not part of it
  if (cudaEventQuery(lastLaunch_) == cudaErrorNotReady) {
    std::istringstream lines(blocks);
    for (std::string line; std::getline(lines, line);) {
      WEFT_WARN("rank %d: aborted before its GPU kernel was done: %s", comm_.rank(), line.c_str());
    }
  }
  (void)cudaGetLastError();
}

Status CommDevice::drain() {
  const WaitContext& context = comm_.waitContext();
  RelaxedCapture relaxed;  // another thread may be capturing a graph: these waits are not part of it
  if (launched_.load(std::memory_order_relaxed)) {
    ScopedDevice device(device_);
    WEFT_RETURN_IF_ERROR(device.status());
    cudaError_t state = cudaErrorNotReady;
    WEFT_RETURN_IF_ERROR(
        waitUntil(kernelWaits_, [&] { return (state = cudaEventQuery(lastLaunch_)) != cudaErrorNotReady; }));
    WEFT_RETURN_IF_ERROR(cudaStatus(state, "cudaEventQuery of the last launch"));
    // Kernels that gave up (a stall, a lost proxy) ended without an error of CUDA's: say why.
    if (abortFlagRaised() && comm_.asyncError() != StatusCode::kOk) return comm_.checkUsable();
  }
  return waitUntil(context, [this] { return proxiesDrained(); });
}

void CommDevice::startStallWatch() {
  auto inFlight = [this, selected = false]() mutable {
    if (!selected) {  // once: the thread is the watch's own, with no device to restore
      selected = cudaSetDevice(device_) == cudaSuccess;
      if (!selected) return false;
    }
    RelaxedCapture relaxed;  // another thread may be capturing a graph: this query is not part of it
    return cudaEventQuery(lastLaunch_) == cudaErrorNotReady;
  };
  stallWatch_ = std::make_unique<core::GpuStallWatch>(comm_.waitContext().timeoutSeconds, blockProgress_.host,
                                                      inFlight, [this](const Status& why) { endKernels(why); });
}

Status CommDevice::checkAlive() {
  const WaitContext& context = comm_.waitContext();
  WEFT_RETURN_IF_ERROR(context.check ? context.check() : Status::ok());
  // Kernels ended without an abort of the communicator (a stall, a lost end, a failed launch, a
  // clique peer's abort) never move the pieces a proxy waits for.
  if (abortFlagRaised()) {
    return remoteError("rank %d's GPU kernels were ended before they moved every piece", comm_.rank());
  }
  return Status::ok();
}

bool CommDevice::proxiesDrained() const {
  for (int channel = 0; channel < 2 * connections_->nChannels(); ++channel) {
    for (int peer = 0; peer < comm_.nranks(); ++peer) {
      const transport::SendConnection* send = connections_->send(channel, peer);
      const transport::DeviceEnd* end = send != nullptr ? send->deviceEnd() : nullptr;
      if (end != nullptr && end->proxy != nullptr && !end->proxy->drained()) return false;
    }
  }
  return true;
}

void CommDevice::proxyFailed(const Status& failure) {
  // Kernels already ended (and said why): an end that fails for that says nothing new.
  if (abortFlagRaised()) {
    comm_.setAsyncError(failure);
    return;
  }
  // The flag alone: this runs on the proxy thread, under the lock that every communicator's
  // proxied ends share, where a CUDA call (abort()'s query) may wait behind another thread's free,
  // which waits for kernels that only this thread's pieces would end.
  endKernelsUnderLock(failure);
}

void CommDevice::endKernels(const Status& why) {
  recordGivingUp(why);
  abort();  // with what each block waited for
}

void CommDevice::endKernelsUnderLock(const Status& why) {
  recordGivingUp(why);
  raiseAbortFlag();  // the flag alone: no CUDA call (local_clique.h)
}

void CommDevice::recordGivingUp(const Status& why) {
  if (launched_.load(std::memory_order_relaxed)) {  // else no kernel ran: nothing to say
    WEFT_WARN("rank %d: %s; the communicator's kernels give up", comm_.rank(), why.message().c_str());
  }
  comm_.setAsyncError(why);
}

Status CommDevice::orderAfterPrevious(cudaStream_t stream) {
  StreamCapture capture;
  WEFT_RETURN_IF_ERROR(streamCapture(stream, &capture));
  return orderAfterPrevious(stream, capture);
}

Status CommDevice::orderAfterPrevious(cudaStream_t stream, const StreamCapture& capture) {
  if (!capture.active) {
    // Even on the stream of the previous launch: one handle may name different streams
    // (cudaStreamPerThread from two threads, a destroyed stream's handle reused), and a graph's
    // replay may have run since on any stream. NCCL, too, always orders a launch after its last.
    if (!launched_.load(std::memory_order_relaxed)) return Status::ok();
    return cudaStatus(cudaStreamWaitEvent(stream, lastLaunch_, 0), "cudaStreamWaitEvent");
  }
  // The record is made before the kernel is captured, so that a kernel in the graph always has one.
  CapturedGraphs::Capture* previous = nullptr;
  WEFT_RETURN_IF_ERROR(capturedGraphs_->findOrMake(capture, &previous));
  if (!previous->hasKernel) {
    // The communicator's first kernel in this graph: an external wait, which each replay makes on
    // the event as last recorded before it (by an earlier call, or an earlier graph's replay).
    return cudaStatus(cudaStreamWaitEvent(stream, lastLaunch_, cudaEventWaitExternal), "cudaStreamWaitEvent");
  }
  // An edge of the graph from right after the communicator's previous kernel in it, even on the
  // same stream handle: cudaStreamPerThread names another stream on each thread that captures.
  return cudaStatus(cudaStreamWaitEvent(stream, previous->afterLastKernel, 0), "cudaStreamWaitEvent");
}

Status CommDevice::recordLaunch(cudaStream_t stream, const StreamCapture& capture) {
  if (!capture.active) {
    WEFT_RETURN_IF_ERROR(cudaStatus(cudaEventRecord(lastLaunch_, stream), "cudaEventRecord"));
  } else {
    CapturedGraphs::Capture* record = nullptr;
    WEFT_RETURN_IF_ERROR(capturedGraphs_->findOrMake(capture, &record));
    // Recorded at each replay: calls enqueued after the graph is launched wait for its kernels.
    WEFT_RETURN_IF_ERROR(cudaStatus(cudaEventRecordWithFlags(lastLaunch_, stream, cudaEventRecordExternal),
                                    "cudaEventRecordWithFlags"));
    WEFT_RETURN_IF_ERROR(cudaStatus(cudaEventRecord(record->afterLastKernel, stream), "cudaEventRecord"));
    record->hasKernel = true;
  }
  launched_.store(true, std::memory_order_relaxed);
  if (watchesStalls_ && stallWatch_ == nullptr) startStallWatch();
  return Status::ok();
}

Status commDevice(core::Communicator& comm, CommDevice** out) {
  core::Communicator::DeviceResources* resources = nullptr;
  WEFT_RETURN_IF_ERROR(comm.deviceResources(
      [&comm](std::unique_ptr<core::Communicator::DeviceResources>* made) {
        // A first call may come while the application captures a graph (even on another thread):
        // the allocations and waits of setup are not part of it, so capture's rules are relaxed.
        RelaxedCapture relaxed;
        return CommDevice::create(comm, made);
      },
      &resources));
  *out = static_cast<CommDevice*>(resources);
  return Status::ok();
}

Status setUpGpuAtInit(core::Communicator& comm) {
  // Where a call on GPU buffers would fail anyway, its failure stays the call's, not init's. The
  // ranks may not reach the same answer: their GPUs may differ in whether this build has code for
  // them, and ranks of several processes in their NCCL_P2P_* settings and visible GPUs. One that
  // connected alone would wait for ever, so they go on only if every rank can.
  const PeerInfo& self = comm.peer(comm.rank());
  const bool usable = preloadKernels(self.cudaDevice).isOk() && core::checkGpuPeerAccess(comm.peers()).isOk() &&
                      checkGpusReachEachOther(comm.peers(), self).isOk();
  std::vector<uint8_t> usableAt(static_cast<size_t>(comm.nranks()), 0);
  usableAt[static_cast<size_t>(comm.rank())] = usable ? 1 : 0;
  WEFT_RETURN_IF_ERROR(comm.bootstrap().allGather(usableAt.data(), 1));
  if (std::find(usableAt.begin(), usableAt.end(), 0) != usableAt.end()) return Status::ok();
  RelaxedCapture relaxed;  // another thread may be capturing a graph: this setup is not part of it
  CommDevice* device = nullptr;
  WEFT_RETURN_IF_ERROR(commDevice(comm, &device));
  ScopedDevice current(device->device());
  WEFT_RETURN_IF_ERROR(current.status());
  // Every connection a call could need: one made at a call would allocate and zero GPU memory while
  // a peer's kernel may already wait for this rank.
  core::ConnectionTable& connections = device->connections();
  std::vector<core::ConnectionRequest> requests = core::ringNeighbourRequests(comm.gpuRings(), comm.rank());
  const std::vector<core::ConnectionRequest> pairs =
      core::directPairRequests(comm.rank(), comm.nranks(), static_cast<int>(comm.gpuRings().size()));
  requests.insert(requests.end(), pairs.begin(), pairs.end());
  WEFT_RETURN_IF_ERROR(connections.beginConnect(requests));
  WEFT_RETURN_IF_ERROR(connections.finishConnect());
  device->connectedAtInit_ = true;
  WEFT_INFO(log::kInit, "rank %d: GPU resources and the connections of %zu GPU rings and to every peer made at "
            "init: some ranks of this host are threads of one process", comm.rank(), comm.gpuRings().size());
  return Status::ok();
}

Status preloadKernelsIfInUse(int device) { return inUse(device) ? preloadKernels(device) : Status::ok(); }

Status preloadKernels(int device) {
  static std::mutex mutex;
  static std::set<int> loaded;
  std::lock_guard<std::mutex> lock(mutex);
  if (loaded.count(device) != 0) return Status::ok();
  RelaxedCapture relaxed;  // another thread may be capturing a graph: loading code is not part of it
  ScopedDevice current(device);
  WEFT_RETURN_IF_ERROR(current.status());
  WEFT_RETURN_IF_ERROR(loadStepKernels());
  loaded.insert(device);
  return Status::ok();
}

}  // namespace weft::device
