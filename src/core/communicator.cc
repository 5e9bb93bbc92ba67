#include "src/core/communicator.h"

#include <sys/random.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <limits>

#include "algorithms/gpu_tuner.h"
#include "algorithms/node_tree.h"
#include "algorithms/tune_file.h"
#include "algorithms/tuner.h"
#include "src/base/knobs.h"
#include "src/base/log.h"
#include "src/core/cma_probe.h"
#include "src/core/host_ring_positions.h"
#include "src/core/ring_order.h"
#include "src/core/topology_dump.h"
#include "src/device/gpu_runtime.h"
#include "src/device/nvls_plan.h"
#include "src/device/residency.h"
#include "src/device/setup_at_init.h"
#include "topology/nvls.h"
#include "transport/registry.h"

namespace weft::core {
namespace {

constexpr int kSlotCount = algorithms::kSlotsPerConnection;
using algorithms::kMaxChannels;
constexpr int kOversubscribedSpinLimit = 2;
constexpr uint32_t kSplitTag = 0x20000;
constexpr uint32_t kShrinkTag = 0x20001;

// Settings every rank must share; rank 0's win.
struct SharedSettings {
  int32_t nChannels;    // host channels built
  int32_t minChannels;  // NCCL_MIN_NCHANNELS: the fewest a call takes
  int32_t gpuChannels;
  int32_t gpuMaxBlocks;  // ncclConfig_t.maxCTAs, else NCCL_MAX_CTAS: the most blocks of a launch (0: unbounded)
  int32_t gpuDirect;  // WEFT_GPU_DIRECT
  int32_t nvlsEnabled;  // NCCL_NVLS_ENABLE not 0
  int32_t nvlsBlocks;   // ncclConfig_t.nvlsCTAs, else NCCL_NVLS_NCHANNELS
  int64_t buffSize;
  int64_t llBuffSize;   // NCCL_LL_BUFFSIZE
  int64_t cmaMinBytes;  // WEFT_CMA_MIN_BYTES (0: never)
  int64_t windowMinBytes;  // WEFT_WINDOW_MIN_BYTES (0: never)
  int64_t gpuLowLatencyMaxBytes;  // WEFT_GPU_LL_MAX_BYTES
  uint64_t cliqueNonce;           // random: tells apart communicators made from one unique id
  algorithms::AlgorithmFilter algorithms;  // NCCL_ALGO
  int32_t algorithmsValid;  // 0: this rank's NCCL_ALGO did not parse (every rank then fails)
  algorithms::ProtocolFilter protocols;  // NCCL_PROTO
  int32_t protocolsValid;   // 0: this rank's NCCL_PROTO did not parse (every rank then fails)
  int32_t shmDisabled;      // NCCL_SHM_DISABLE, for the tuner (whose choice every rank must share)
  int32_t costModelValid;   // 0: this rank's WEFT_TUNE_FILE could not be loaded (every rank then fails)
  algorithms::CostModel costModel;  // WEFT_TUNE_FILE's, or the built-in defaults
};

uint64_t hashBytes(const void* data, size_t size, uint64_t seed) {
  uint64_t hash = seed ^ 1469598103934665603ull;
  const auto* bytes = static_cast<const unsigned char*>(data);
  for (size_t i = 0; i < size; ++i) hash = (hash ^ bytes[i]) * 1099511628211ull;
  return hash;
}

// 64 random bits from the kernel; where it cannot give them, the time and the pid (a nonce need
// not be secret, only different).
uint64_t randomNonce() {
  uint64_t value = 0;
  if (getrandom(&value, sizeof(value), 0) == static_cast<ssize_t>(sizeof(value))) return value;
  return static_cast<uint64_t>(std::chrono::steady_clock::now().time_since_epoch().count()) ^
         (static_cast<uint64_t>(getpid()) << 32);
}

// This rank's settings; *filtersStatus says whether its NCCL_ALGO and NCCL_PROTO parsed,
// *tuneStatus whether its WEFT_TUNE_FILE loaded.
SharedSettings localSettings(const CommOptions& options, Status* filtersStatus, Status* tuneStatus) {
  int64_t buffSize = std::max<int64_t>(knobs::getInt(knobs::KnobId::kBuffSize), kSlotCount * 4096);
  // An LL slot's payload (half its bytes) must fit a Simple slot.
  int64_t llBuffSize = std::clamp<int64_t>(knobs::getInt(knobs::KnobId::kLlBuffSize), 0, 2 * buffSize);
  int64_t gpuChannels = std::clamp<int64_t>(knobs::getInt(knobs::KnobId::kGpuChannels), 1, kMaxChannels);
  // NCCL's CTA bounds: the communicator's config, else the environment.
  const int64_t minCtas = options.minCtas > 0 ? options.minCtas : knobs::getInt(knobs::KnobId::kMinCtas);
  const int64_t maxCtas = options.maxCtas > 0 ? options.maxCtas : knobs::getInt(knobs::KnobId::kMaxCtas);
  if (minCtas > 0) gpuChannels = std::max(gpuChannels, std::min<int64_t>(minCtas, kMaxChannels));
  if (maxCtas > 0) gpuChannels = std::min(gpuChannels, maxCtas);
  int64_t cmaMinBytes = std::max<int64_t>(knobs::getInt(knobs::KnobId::kCmaMinBytes), 0);
  const int64_t gpuLowLatencyMaxBytes = std::max<int64_t>(knobs::getInt(knobs::KnobId::kGpuLlMaxBytes), 0);
  const int64_t nvlsBlocks = options.nvlsCtas > 0 ? options.nvlsCtas : knobs::getInt(knobs::KnobId::kNvlsNChannels);
  SharedSettings settings{1, 1, static_cast<int32_t>(gpuChannels),
                          static_cast<int32_t>(std::clamp<int64_t>(maxCtas, 0, std::numeric_limits<int32_t>::max())),
                          knobs::getBool(knobs::KnobId::kGpuDirect) ? 1 : 0,
                          topology::nvlsEnabledByKnob() ? 1 : 0,
                          static_cast<int32_t>(std::clamp<int64_t>(nvlsBlocks, 1, device::kMaxNvlsBlocks)),
                          buffSize, llBuffSize, cmaMinBytes,
                          std::max<int64_t>(knobs::getInt(knobs::KnobId::kWindowMinBytes), 0),
                          gpuLowLatencyMaxBytes, randomNonce(),
                          algorithms::AlgorithmFilter::all(), 1, algorithms::ProtocolFilter::all(), 1,
                          knobs::getBool(knobs::KnobId::kShmDisable) ? 1 : 0, 1, algorithms::CostModel{}};
  Status algorithmsParsed =
      algorithms::parseAlgorithmFilter(knobs::getString(knobs::KnobId::kAlgo), &settings.algorithms);
  settings.algorithmsValid = algorithmsParsed.isOk() ? 1 : 0;
  Status protocolsParsed =
      algorithms::parseProtocolFilter(knobs::getString(knobs::KnobId::kProto), &settings.protocols);
  settings.protocolsValid = protocolsParsed.isOk() ? 1 : 0;
  *filtersStatus = algorithmsParsed.isOk() ? protocolsParsed : algorithmsParsed;
  const std::string tuneFile = knobs::getString(knobs::KnobId::kTuneFile);
  if (!tuneFile.empty()) *tuneStatus = algorithms::loadTuneFile(tuneFile, &settings.costModel);
  settings.costModelValid = tuneStatus->isOk() ? 1 : 0;
  // The host channels: NCCL_MAX_NCHANNELS, or as many as add bandwidth under the tuner's constants;
  // never fewer than NCCL_MIN_NCHANNELS, which is also the fewest a call takes.
  const algorithms::ChannelBounds channels = algorithms::hostChannelBounds(
      knobs::getInt(knobs::KnobId::kMinNChannels), knobs::getInt(knobs::KnobId::kMaxNChannels), settings.costModel);
  settings.nChannels = channels.built;
  settings.minChannels = channels.fewestPerCall;
  return settings;
}

}  // namespace

int Communicator::spinLimitForMachine() const {
  // The machine's CPUs, not NCCL_HOSTID's host: ranks given host ids of their own on one machine
  // (simulated hosts) still wait for each other's turn on its CPUs.
  int ranksHere = 0;
  for (const PeerInfo& peer : peers_) ranksHere += peer.sameMachine(peers_[rank_]) ? 1 : 0;
  const long cpus = sysconf(_SC_NPROCESSORS_ONLN);
  // Oversubscribed: the rank this one waits for is most likely not running, so poll twice and let
  // the scheduler run it. Spinning longer costs most where a poll is a system call (a socket):
  // 32 polls there took about 50 us per wait (docs/PERFORMANCE.md, "What each change bought").
  return cpus > 0 && ranksHere > cpus ? kOversubscribedSpinLimit : -1;
}

void Communicator::logRings(const char* kind, const std::vector<algorithms::Ring>& rings) const {
  // NCCL's lines: the whole ring under INIT, this rank's neighbours under GRAPH.
  for (size_t channel = 0; channel < rings.size(); ++channel) {
    const algorithms::Ring& ring = rings[channel];
    WEFT_INFO(log::kInit, "%sChannel %02zu/%02zu : %s", kind, channel, rings.size(), describeRing(ring).c_str());
    const size_t position = static_cast<size_t>(std::find(ring.begin(), ring.end(), rank_) - ring.begin());
    WEFT_INFO(log::kGraph, "%sRing %02zu : %d -> %d -> %d", kind, channel,
              ring[(position + ring.size() - 1) % ring.size()], rank_, ring[(position + 1) % ring.size()]);
  }
}

void Communicator::layOutHosts(bool shmDisabled) {
  // Each rank's host, numbered by the lowest rank on it.
  hostOfRank_.assign(nranks_, 0);
  for (int r = 0; r < nranks_; ++r) {
    hostOfRank_[r] = r;
    for (int q = 0; q < r; ++q) {
      if (peers_[q].sameHost(peers_[r])) {
        hostOfRank_[r] = hostOfRank_[q];
        break;
      }
    }
  }
  treePlaces_ = algorithms::communicatorTreePlaces(rings_, hostOfRank_, rank_);
  const bool severalHosts = std::any_of(hostOfRank_.begin(), hostOfRank_.end(), [](int host) { return host != 0; });
  hostLayout_ = algorithms::hostLayoutOf(hostOfRank_, shmDisabled);
  // NCCL's line: per tree, the children, this rank and its parent.
  std::string line;
  for (size_t t = 0; t < treePlaces_.size(); ++t) {
    const algorithms::TreePlace& place = treePlaces_[t];
    line += " [" + std::to_string(t) + "] ";
    for (size_t c = 0; c < 3; ++c) {
      line += (c > 0 ? "/" : "") + std::to_string(c < place.children.size() ? place.children[c] : -1);
    }
    line += "->" + std::to_string(rank_) + "->" + std::to_string(place.parent);
  }
  WEFT_INFO(log::kGraph, "Trees%s%s", line.c_str(), severalHosts ? " (a chain per host, trees between hosts)" : "");
}

Status Communicator::buildRings(int hostChannels, int gpuChannels) {
  const bool gpus =
      std::any_of(peers_.begin(), peers_.end(), [](const PeerInfo& peer) { return peer.gpuBusId[0] != '\0'; });
  if (!gpus) {
    rings_.assign(hostChannels, hostRingOrder(peers_));
    gpuRings_.assign(gpuChannels, rings_.front());
    return Status::ok();
  }
  const int channels = std::max(hostChannels, gpuChannels);
  // Each rank knows only its own machine: it places itself on its host's GPU rings, and the
  // positions are exchanged so that every rank builds the same rings.
  // A rank that cannot place itself still takes part in the exchange, so that every rank fails.
  struct Positions {
    int32_t ofChannel[kMaxChannels];
    int32_t placed;
  };
  std::vector<Positions> gathered(nranks_);
  std::vector<int> mine;
  const Status placed = hostRingPositions(peers_, rank_, channels, &mine);
  if (placed.isOk()) std::copy(mine.begin(), mine.end(), gathered[rank_].ofChannel);
  gathered[rank_].placed = placed.isOk() ? 1 : 0;
  WEFT_RETURN_IF_ERROR(bootstrap_->allGather(gathered.data(), sizeof(Positions)));
  if (!placed.isOk()) return placed;
  for (int r = 0; r < nranks_; ++r) {
    if (gathered[r].placed == 0) {
      return invalidUsage("rank %d could not place itself on its host's GPU rings (its log says why); every rank "
                          "stops",
                          r);
    }
  }
  std::vector<algorithms::Ring> rings;
  for (int channel = 0; channel < channels; ++channel) {
    std::vector<int> positionOfRank(nranks_);
    for (int r = 0; r < nranks_; ++r) positionOfRank[r] = gathered[r].ofChannel[channel];
    rings.push_back(ringFromHostPositions(peers_, positionOfRank));
  }
  rings_.assign(rings.begin(), rings.begin() + hostChannels);
  gpuRings_.assign(rings.begin(), rings.begin() + gpuChannels);
  return Status::ok();
}

Communicator::Communicator(int nranks, int rank, const CommOptions& options)
    : nranks_(nranks), rank_(rank), options_(options) {
  static std::atomic<uint64_t> made{0};
  instanceId_ = made.fetch_add(1, std::memory_order_relaxed) + 1;
  waitContext_.check = [this]() -> Status {
    if (options_.abortInit != nullptr && options_.abortInit->load(std::memory_order_acquire)) {
      return invalidUsage("the communicator was aborted by ncclCommAbort during its initialization");
    }
    if (abortRequested()) {
      return invalidUsage("the communicator was aborted by ncclCommAbort during this call; the call's buffers are undefined");
    }
    if (revoking_.load(std::memory_order_acquire)) {
      return invalidUsage("ncclCommRevoke stopped this call; the call's buffers are undefined");
    }
    if (watch_ != nullptr && watch_->peerFailed() && !onlyExcludedRanksDied()) {
      std::chrono::steady_clock::time_point learnedAt;
      Status failure = watch_->failure(&learnedAt);
      if (std::chrono::steady_clock::now() - learnedAt >= PeerWatch::kDeathGrace) return failure;
    }
    return Status::ok();
  };
  waitContext_.timeoutSeconds = defaultTimeoutSeconds();
  checksCalls_ = knobs::getBool(knobs::KnobId::kCheck);
  checksPointers_ = knobs::getBool(knobs::KnobId::kCheckPointers);
}

Communicator::~Communicator() {
  std::unique_ptr<DeviceResources> device;
  {
    std::lock_guard<std::mutex> lock(deviceMutex_);  // the watch thread's endDeviceKernels reads it
    device = std::move(device_);
    madeDevice_.store(nullptr, std::memory_order_release);
  }
  device.reset();  // waits for this communicator's kernels, which use the connections
  watch_.reset();  // its thread calls endDeviceKernels, which uses this object
  releaseProgressRecord(progress_);
}

void Communicator::endDeviceKernels(const Status& failure) {
  std::lock_guard<std::mutex> lock(deviceMutex_);
  if (device_ != nullptr) device_->endKernels(failure);
}

void Communicator::requestAbort() {
  aborted_.store(true, std::memory_order_release);
  std::lock_guard<std::mutex> lock(deviceMutex_);
  if (device_ != nullptr) device_->abort();
}

Status Communicator::deviceResources(const std::function<Status(std::unique_ptr<DeviceResources>*)>& make,
                                     DeviceResources** out) {
  *out = madeDevice_.load(std::memory_order_acquire);
  if (*out != nullptr) return Status::ok();
  std::lock_guard<std::mutex> lock(deviceMutex_);
  if (device_ == nullptr) {
    std::unique_ptr<DeviceResources> made;
    WEFT_RETURN_IF_ERROR(make(&made));
    device_ = std::move(made);
    if (abortRequested()) device_->abort();
    else if (watch_ != nullptr && watch_->peerFailed()) device_->endKernels(watch_->failure(nullptr));
    madeDevice_.store(device_.get(), std::memory_order_release);
  }
  *out = device_.get();
  return Status::ok();
}

Communicator::DeviceResources* Communicator::madeDeviceResources() {
  return madeDevice_.load(std::memory_order_acquire);
}

Status Communicator::drainDevice() {
  DeviceResources* device = madeDeviceResources();
  return device != nullptr ? device->drain() : Status::ok();
}

void Communicator::leaveCleanly() {
  if (watch_ != nullptr) watch_->sayGoodbye();
}

bool Communicator::onlyExcludedRanksDied() const {
  if (shrinkExcluded_.empty()) return false;
  for (int r = 0; r < nranks_; ++r) {
    if (watch_->isDead(r) && !shrinkExcluded_[r]) return false;
  }
  return true;
}

void Communicator::revoke() {
  revoking_.store(true, std::memory_order_release);
  waitForCallsToLeave();
  revoked_.store(true, std::memory_order_release);
  revoking_.store(false, std::memory_order_release);
  // The calls it stopped recorded their failure; quiescent, the communicator reports success.
  std::lock_guard<std::mutex> lock(asyncErrorMutex_);
  asyncError_.store(StatusCode::kOk, std::memory_order_release);
  asyncErrorMessage_.clear();
}

Status Communicator::shrink(const std::vector<int>& excluded, const CommOptions& options,
                            std::unique_ptr<Communicator>* out) {
  std::vector<bool> isExcluded(nranks_, false);
  for (int rank : excluded) isExcluded[rank] = true;
  std::vector<int> survivors;
  for (int r = 0; r < nranks_; ++r) {
    if (!isExcluded[r]) survivors.push_back(r);
  }
  const int leader = survivors.front();
  const int newRank = static_cast<int>(std::find(survivors.begin(), survivors.end(), rank_) - survivors.begin());
  // The shrink talks to survivors only: the deaths of excluded ranks must not fail its waits.
  enterCall();
  shrinkExcluded_ = isExcluded;
  UniqueId id;
  Status status = Status::ok();
  if (rank_ == leader) {
    status = createUniqueId(&id, RootPlacement::kThisProcess);
    for (size_t i = 1; i < survivors.size() && status.isOk(); ++i) {
      status = bootstrap_->send(survivors[i], kShrinkTag, id.bytes.data(), id.bytes.size());
    }
  } else {
    status = bootstrap_->recv(leader, kShrinkTag, id.bytes.data(), id.bytes.size());
  }
  shrinkExcluded_.clear();
  exitCall();
  WEFT_RETURN_IF_ERROR(status.withContext("ncclCommShrink: receiving the new communicator's id from rank " +
                                          std::to_string(leader)));
  return create(id, static_cast<int>(survivors.size()), newRank, options, out);
}

Status Communicator::explainRemoteFailure(const Status& failure) const {
  if (failure.code() != StatusCode::kRemoteError || watch_ == nullptr) return failure;
  WaitContext context;
  context.timeoutSeconds = 0.5;
  if (!waitUntil(context, [this] { return watch_->peerFailed(); }).isOk()) return failure;
  Status cause = watch_->failure(nullptr);
  if (failure.message().find(cause.message()) != std::string::npos) return failure;  // it is the watch's already
  return Status(cause.code(), cause.message() + " (seen by this rank as: " + failure.message() + ")");
}

void Communicator::setAsyncError(const Status& failure) {
  std::lock_guard<std::mutex> lock(asyncErrorMutex_);
  if (asyncError_.load(std::memory_order_relaxed) != StatusCode::kOk) return;
  asyncErrorMessage_ = failure.message();
  asyncError_.store(failure.code(), std::memory_order_release);
}

Status Communicator::checkUsable() const {
  if (revoked_.load(std::memory_order_acquire)) {
    return invalidUsage("the communicator was revoked by ncclCommRevoke: it can only be split, shrunk or destroyed");
  }
  StatusCode code = asyncError_.load(std::memory_order_acquire);
  if (code != StatusCode::kOk) {
    std::lock_guard<std::mutex> lock(asyncErrorMutex_);
    return makeStatus(code, "an earlier operation on this communicator failed (%s); abort it with ncclCommAbort "
                      "and create a new one", asyncErrorMessage_.c_str());
  }
  if (watch_ != nullptr && watch_->peerFailed()) return watch_->failure(nullptr);
  return Status::ok();
}

StatusCode Communicator::asyncError() const {
  StatusCode code = asyncError_.load(std::memory_order_acquire);
  if (code == StatusCode::kOk && watch_ != nullptr && watch_->peerFailed()) return StatusCode::kRemoteError;
  return code;
}

void Communicator::waitForCallsToLeave() const {
  // Every wait of a call checks the abort flag, so this ends within one back-off period.
  WaitContext context;
  Status status = waitUntil(context, [this] { return activeCalls_.load(std::memory_order_acquire) == 0; });
  (void)status;  // a context without check or timeout cannot fail
}

void Communicator::waitForBackground() const {
  WaitContext context;
  Status status = waitUntil(context, [this] { return !inBackground(); });
  (void)status;  // a context without check or timeout cannot fail
}

Status Communicator::makeNvlsTeam(bool enabled, int blocks) {
  device::NvlsVerdict verdict = device::nvlsTeamVerdict(peers_, enabled);
  if (verdict.possible && !algorithms::nvlsCanBeChosen(nranks_, algorithms_, protocols_, algorithms::GpuCostModel{})) {
    using algorithms::Collective;
    verdict.possible = false;
    if (!protocols_.allows(Collective::kAllReduce, algorithms::Protocol::kSimple)) {
      verdict.reason = "NCCL_PROTO excludes Simple for AllReduce, NVLS's only protocol";
    } else if (!algorithms_.allows(Collective::kAllReduce, algorithms::Algorithm::kNvls)) {
      verdict.reason = "NCCL_ALGO excludes NVLS for AllReduce";
    } else {
      verdict.reason = "at " + std::to_string(nranks_) +
                       " ranks the tuner never prefers NVLS to the ring, so no multicast team was made "
                       "(NCCL_ALGO=nvls forces one)";
    }
  }
  if (!verdict.possible) {
    nvlsUnavailableReason_ = verdict.reason;
    if (peers_[rank_].gpuMulticast != 0) WEFT_INFO(log::kInit, "rank %d: no NVLS: %s", rank_, verdict.reason.c_str());
    return Status::ok();
  }
  WEFT_RETURN_IF_ERROR(device::NvlsTeam::create(*bootstrap_, peers_, rank_, cliqueId_, blocks, &nvlsTeam_));
  if (nvlsTeam_ == nullptr) nvlsUnavailableReason_ = "its multicast team could not be made (the log says why)";
  return Status::ok();
}

Status Communicator::create(const UniqueId& id, int nranks, int rank, const CommOptions& options,
                            std::unique_ptr<Communicator>* out) {
  std::unique_ptr<Communicator> comm(new Communicator(nranks, rank, options));
  WEFT_RETURN_IF_ERROR(comm->init(id));
  *out = std::move(comm);
  return Status::ok();
}

Status Communicator::init(const UniqueId& id) {
  log::printVersionOnce();
  WEFT_RETURN_IF_ERROR(Bootstrap::create(id, rank_, nranks_, &waitContext_, &bootstrap_));

  peers_.resize(nranks_);
  WEFT_RETURN_IF_ERROR(describeLocalPeer(rank_, &peers_[rank_]));
  transport::describeTransports(&peers_[rank_]);
  // The device the caller chose (api/comm_api.cc); none where it names no device of this machine
  // (ranks on host memory).
  peers_[rank_].cudaDevice =
      options_.cudaDevice >= 0 && options_.cudaDevice < device::deviceCount() ? options_.cudaDevice : -1;
  snprintf(peers_[rank_].gpuBusId, sizeof(PeerInfo::gpuBusId), "%s",
           device::pciBusId(peers_[rank_].cudaDevice).c_str());
  peers_[rank_].gpuMulticast = device::multicastSupported(peers_[rank_].cudaDevice) ? 1 : 0;
  peers_[rank_].gpuInUse = device::inUse(peers_[rank_].cudaDevice) ? 1 : 0;
  peers_[rank_].gpuMultiprocessors =
      static_cast<uint16_t>(std::min(device::multiprocessorCount(peers_[rank_].cudaDevice), 65535));
  WEFT_RETURN_IF_ERROR(bootstrap_->allGather(peers_.data(), sizeof(PeerInfo)));
  for (int r = 0; r < rank_; ++r) localRank_ += peers_[r].sameHost(peers_[rank_]) ? 1 : 0;
  waitContext_.spinLimit = spinLimitForMachine();
  log::setLogDevice(localRank_);
  commHash_ = hashBytes(id.bytes.data(), id.bytes.size(), static_cast<uint64_t>(nranks_));
  WEFT_RETURN_IF_ERROR(PeerWatch::start(*bootstrap_, peers_, commHash_, waitContext_,
                                        [this](const Status& failure) { endDeviceKernels(failure); }, &watch_));
  installDumpSignalHandler();
  progress_ = acquireProgressRecord(commHash_, rank_, nranks_);

  std::vector<SharedSettings> settings(nranks_);
  Status filtersStatus;
  Status tuneStatus;
  settings[rank_] = localSettings(options_, &filtersStatus, &tuneStatus);
  WEFT_RETURN_IF_ERROR(bootstrap_->allGather(settings.data(), sizeof(SharedSettings)));
  const SharedSettings& agreed = settings[0];
  // A bad NCCL_ALGO anywhere fails every rank, after the exchange, so that none waits for it.
  if (!filtersStatus.isOk()) return filtersStatus;
  if (!tuneStatus.isOk()) return tuneStatus;
  for (int r = 0; r < nranks_; ++r) {
    if (settings[r].algorithmsValid == 0) {
      return invalidArgument("rank %d's NCCL_ALGO is not valid (its log says why); every rank stops", r);
    }
    if (settings[r].protocolsValid == 0) {
      return invalidArgument("rank %d's NCCL_PROTO is not valid (its log says why); every rank stops", r);
    }
    if (settings[r].costModelValid == 0) {
      return invalidArgument("rank %d could not load its WEFT_TUNE_FILE (its log says why); every rank stops", r);
    }
  }
  algorithms_ = agreed.algorithms;
  protocols_ = agreed.protocols;
  costModel_ = agreed.costModel;
  networkHops_ = agreed.shmDisabled != 0 ||
                 std::any_of(peers_.begin(), peers_.end(), [&](const PeerInfo& peer) { return !peer.sameHost(peers_[0]); });
  treeDepth_ = algorithms::treeDepth(nranks_);

  // Every rank's blocks must fit its GPU at once (src/device/residency.h): fewer channels, not a
  // hang. maxCTAs bounds every launch, as in NCCL; lanes beyond it are folded (block_plan.h).
  gpuBlocksPerRank_ = device::blocksPerRankLimit(peers_, std::numeric_limits<int>::max());
  if (agreed.gpuMaxBlocks > 0) gpuBlocksPerRank_ = std::min(gpuBlocksPerRank_, static_cast<int>(agreed.gpuMaxBlocks));
  gpuChannels_ = std::min(agreed.gpuChannels, gpuBlocksPerRank_);
  if (gpuChannels_ < agreed.gpuChannels) {
    WEFT_INFO(log::kInit, "rank %d: %d channels on GPU buffers, not %d: a kernel of each rank may run %d blocks",
              rank_, gpuChannels_, agreed.gpuChannels, gpuBlocksPerRank_);
  }
  gpuLowLatencyMaxBytes_ = static_cast<size_t>(agreed.gpuLowLatencyMaxBytes);
  gpuDirect_ = agreed.gpuDirect != 0;
  cliqueId_ = agreed.cliqueNonce;
  minChannels_ = agreed.minChannels;
  WEFT_RETURN_IF_ERROR(buildRings(agreed.nChannels, gpuChannels_));
  logRings("", rings_);
  layOutHosts(agreed.shmDisabled != 0);
  if (peers_[rank_].gpuBusId[0] != '\0') logRings("GPU ", gpuRings_);
  WEFT_RETURN_IF_ERROR(dumpTopologyIfAsked(rank_));
  size_t slotBytes = algorithms::simpleSlotBytes(agreed.buffSize);
  size_t llSlotBytes = std::min(static_cast<size_t>(agreed.llBuffSize / kSlotCount) & ~size_t{63}, 2 * slotBytes);
  if (agreed.cmaMinBytes > 0) {
    bool usable = false;
    WEFT_RETURN_IF_ERROR(probeCrossMemoryAttach(*bootstrap_, peers_, rank_, &usable));
    if (usable) cmaMinBytes_ = static_cast<size_t>(agreed.cmaMinBytes);
  }
  windowMinBytes_ = static_cast<size_t>(agreed.windowMinBytes);
  streamMinBytes_ = static_cast<size_t>(std::max<int64_t>(knobs::getInt(knobs::KnobId::kStreamMinBytes), 0));
  slotBytes_ = slotBytes;
  llSlotBytes_ = llSlotBytes;
  slotCount_ = kSlotCount;
  // Before the barrier below: no rank launches a kernel while a peer of its GPU still loads code.
  // A GPU this build has no code for fails only the calls on its buffers, not the communicator.
  if (peers_[rank_].cudaDevice >= 0) {
    const Status loaded = device::preloadKernelsIfInUse(peers_[rank_].cudaDevice);
    if (!loaded.isOk()) {
      WEFT_WARN("rank %d: the GPU kernels could not be loaded on CUDA device %d (%s); calls on GPU buffers will fail",
                rank_, peers_[rank_].cudaDevice, loaded.message().c_str());
    }
  }
  WEFT_RETURN_IF_ERROR(makeNvlsTeam(agreed.nvlsEnabled != 0, agreed.nvlsBlocks));
  connections_ = std::make_unique<ConnectionTable>(&peers_, rank_, bootstrap_.get(), commHash_, agreed.nChannels,
                                                   slotBytes, kSlotCount, llSlotBytes);
  if (nranks_ > 1) {
    WEFT_RETURN_IF_ERROR(connections_->beginConnect(ringNeighbourRequests(rings_, rank_)));
    WEFT_RETURN_IF_ERROR(connections_->finishConnect());
    if (device::setsUpGpuAtInit(peers_)) WEFT_RETURN_IF_ERROR(device::setUpGpuAtInit(*this));
    // No rank returns before every rank has opened its connections: one that destroyed its
    // communicator at once would otherwise remove segments a slower peer has yet to open. Nor,
    // where GPU resources are made here, launches a kernel while a peer still allocates.
    WEFT_RETURN_IF_ERROR(bootstrap_->barrier());
  }
  const std::string direct = cmaMinBytes_ > 0 ? "from " + std::to_string(cmaMinBytes_) + " bytes" : "off";
  WEFT_INFO(log::kInit,
            "comm %p rank %d nranks %d localRank %d - Init COMPLETE (%d channels, %d on GPU buffers, %zu-byte slots, "
            "%zu-byte LL slots, direct allreduce %s)",
            static_cast<void*>(this), rank_, nranks_, localRank_, agreed.nChannels, gpuChannels_, slotBytes,
            llSlotBytes, direct.c_str());
  return Status::ok();
}

Status Communicator::split(int color, int key, const CommOptions& options, std::unique_ptr<Communicator>* out) {
  // The split waits on this communicator's bootstrap: an abort must wait for it to leave.
  enterCall();
  Status status = splitInto(color, key, options, out);
  exitCall();
  return status;
}

Status Communicator::splitInto(int color, int key, const CommOptions& options, std::unique_ptr<Communicator>* out) {
  struct Member {
    int32_t color;
    int32_t key;
  };
  std::vector<Member> members(nranks_);
  members[rank_] = Member{color, key};
  WEFT_RETURN_IF_ERROR(bootstrap_->allGather(members.data(), sizeof(Member)));
  if (color < 0) return Status::ok();

  // New ranks are ordered by key, then by old rank.
  std::vector<int> group;
  for (int r = 0; r < nranks_; ++r) {
    if (members[r].color == color) group.push_back(r);
  }
  std::stable_sort(group.begin(), group.end(), [&](int a, int b) { return members[a].key < members[b].key; });
  int newRank = static_cast<int>(std::find(group.begin(), group.end(), rank_) - group.begin());
  int leader = *std::min_element(group.begin(), group.end());

  UniqueId id;
  if (rank_ == leader) {
    WEFT_RETURN_IF_ERROR(createUniqueId(&id, RootPlacement::kThisProcess));
    for (int member : group) {
      if (member != rank_) WEFT_RETURN_IF_ERROR(bootstrap_->send(member, kSplitTag, id.bytes.data(), id.bytes.size()));
    }
  } else {
    WEFT_RETURN_IF_ERROR(bootstrap_->recv(leader, kSplitTag, id.bytes.data(), id.bytes.size()));
  }
  return create(id, static_cast<int>(group.size()), newRank, options, out);
}

}  // namespace weft::core
