// Communicator lifecycle: unique ids, init (single, config, scalable, all), split, finalize,
// destroy, abort, and the queries.

#include <cstring>
#include <functional>
#include <memory>
#include <vector>

#include "src/api/api_support.h"
#include "src/api/config.h"
#include "src/base/knobs.h"
#include "src/base/log.h"
#include "src/core/bootstrap.h"
#include "src/core/group.h"
#include "src/device/gpu_runtime.h"

using weft::Status;
using weft::api::resolveComm;
using weft::api::toResult;
using weft::core::Communicator;
using weft::core::CommOptions;
using weft::core::Group;
using weft::core::UniqueId;

namespace {

ncclComm_t newHandle() {
  auto* handle = new ncclComm;
  handle->magic.store(weft::api::kLiveCommMagic, std::memory_order_release);
  return handle;
}

// Releases the communicator; the handle itself is kept as a tombstone (see ncclComm).
void retireHandle(ncclComm_t handle) {
  handle->magic.store(weft::api::kDestroyedCommMagic, std::memory_order_release);
  handle->impl.reset();
}

// Publishes the end of `handle`'s init: its communicator, or why there is none.
void publishInit(ncclComm_t handle, const Status& status, std::unique_ptr<Communicator> comm) {
  // A handle aborted before its grouped init ran keeps no communicator.
  if (handle->magic.load(std::memory_order_acquire) != weft::api::kLiveCommMagic) comm.reset();
  if (status.isOk()) handle->impl = std::move(comm);
  else handle->initStatus = status;
  handle->initDone.store(true, std::memory_order_release);
}

// Creates `handle`'s communicator with `create`: now, at the end of the enclosing group (on a
// thread of its own, or after the other jobs of the same `parent`), or in the background for a
// nonblocking one. `options.abortInit` becomes the
// handle's, so that ncclCommAbort can end an init that still runs.
Status submitCreation(ncclComm_t handle, CommOptions options, const Communicator* parent,
                      std::function<Status(const CommOptions&, std::unique_ptr<Communicator>*)> create) {
  options.abortInit = handle->abortInit;
  bool blocking = options.blocking;
  Group::InitJob job;
  job.run = [handle, options, create]() -> Status {
    std::unique_ptr<Communicator> comm;
    Status status = create(options, &comm);
    publishInit(handle, status, std::move(comm));
    return status;
  };
  job.cancel = [handle](const Status& why) { publishInit(handle, why, nullptr); };
  job.serialKey = parent;
  return Group::current().submitInit(std::move(job), blocking);
}

Status initInto(ncclComm_t handle, const UniqueId& id, int nranks, int rank, const CommOptions& options) {
  return submitCreation(handle, options, nullptr,
                        [id, nranks, rank](const CommOptions& resolved, std::unique_ptr<Communicator>* out) {
                          return Communicator::create(id, nranks, rank, resolved, out);
                        });
}

Status checkInitArguments(ncclComm_t* comm, int nranks, int rank) {
  if (comm == nullptr) return weft::invalidArgument("the output communicator pointer is NULL");
  if (nranks < 1) return weft::invalidArgument("nranks is %d; it must be at least 1", nranks);
  if (rank < 0 || rank >= nranks) return weft::invalidArgument("rank %d is out of range [0, %d)", rank, nranks);
  return Status::ok();
}

// `cudaDevice`: the rank's CUDA device, or -1 for the one current on the calling thread now (the
// init itself may run on another thread, at the end of a group).
ncclResult_t initRank(ncclComm_t* comm, int nranks, const ncclUniqueId& commId, int rank, ncclConfig_t* config,
                      const char* function, int cudaDevice = -1) {
  Status status = checkInitArguments(comm, nranks, rank);
  CommOptions options;
  if (status.isOk()) status = weft::api::readConfig(config, nullptr, &options);
  options.cudaDevice = cudaDevice >= 0 ? cudaDevice : weft::device::currentDevice();
  if (!status.isOk()) {
    Group::current().recordError(status);
    return toResult(status, function);
  }
  UniqueId id;
  static_assert(sizeof(id.bytes) == sizeof(commId.internal));
  memcpy(id.bytes.data(), commId.internal, sizeof(commId.internal));
  ncclComm_t handle = newHandle();
  status = initInto(handle, id, nranks, rank, options);
  if (!status.isOk() && status.code() != weft::StatusCode::kInProgress && !Group::current().active()) {
    retireHandle(handle);
    *comm = nullptr;
    return toResult(status, function);
  }
  *comm = handle;
  return toResult(status, function);
}

}  // namespace

WEFT_API ncclResult_t ncclGetUniqueId(ncclUniqueId* uniqueId) {
  if (uniqueId == nullptr) return toResult(weft::invalidArgument("uniqueId is NULL"), "ncclGetUniqueId");
  weft::log::printVersionOnce();
  UniqueId id;
  Status status = weft::core::createUniqueId(&id);
  if (status.isOk()) memcpy(uniqueId->internal, id.bytes.data(), sizeof(uniqueId->internal));
  return toResult(status, "ncclGetUniqueId");
}
WEFT_PROFILING_ALIAS(ncclGetUniqueId)

WEFT_API ncclResult_t ncclCommInitRank(ncclComm_t* comm, int nranks, ncclUniqueId commId, int rank) {
  return initRank(comm, nranks, commId, rank, nullptr, "ncclCommInitRank");
}
WEFT_PROFILING_ALIAS(ncclCommInitRank)

WEFT_API ncclResult_t ncclCommInitRankConfig(ncclComm_t* comm, int nranks, ncclUniqueId commId, int rank,
                                             ncclConfig_t* config) {
  return initRank(comm, nranks, commId, rank, config, "ncclCommInitRankConfig");
}
WEFT_PROFILING_ALIAS(ncclCommInitRankConfig)

WEFT_API ncclResult_t ncclCommInitRankScalable(ncclComm_t* newcomm, int nranks, int myrank, int nId,
                                               ncclUniqueId* commIds, ncclConfig_t* config) {
  if (nId < 1 || commIds == nullptr) {
    Status status = weft::invalidArgument("nId is %d and commIds is %p: at least one id is needed", nId,
                                          static_cast<void*>(commIds));
    Group::current().recordError(status);
    return toResult(status, "ncclCommInitRankScalable");
  }
  // Every rank holds the same ids; the first one's root serves the whole clique.
  return initRank(newcomm, nranks, commIds[0], myrank, config, "ncclCommInitRankScalable");
}
WEFT_PROFILING_ALIAS(ncclCommInitRankScalable)

WEFT_API ncclResult_t ncclCommInitAll(ncclComm_t* comms, int ndev, const int* devlist) {
  if (comms == nullptr || ndev < 1) {
    return toResult(weft::invalidArgument("comms is %p and ndev is %d: need an array of at least one",
                                          static_cast<void*>(comms), ndev),
                    "ncclCommInitAll");
  }
  // As NCCL, a listed device must exist. Without a list, rank i uses device i, or i modulo the
  // number of devices where there are fewer (Weft lets ranks share a GPU; NCCL would fail).
  const int devices = weft::device::deviceCount();
  for (int rank = 0; devlist != nullptr && rank < ndev; ++rank) {
    if (devlist[rank] < 0 || (devices > 0 && devlist[rank] >= devices)) {
      const Status bad = devices > 0 ? weft::invalidArgument("devlist[%d] is %d, but this machine's CUDA devices "
                                                            "are 0 to %d", rank, devlist[rank], devices - 1)
                                     : weft::invalidArgument("devlist[%d] is %d: not a device number", rank,
                                                            devlist[rank]);
      return toResult(bad, "ncclCommInitAll");
    }
  }
  ncclUniqueId id;
  ncclResult_t result = ncclGetUniqueId(&id);
  if (result != ncclSuccess) return result;
  const auto deviceOf = [devlist, devices](int rank) {
    return devlist != nullptr ? devlist[rank] : devices > 0 ? rank % devices : -1;
  };
  // The ranks' GPUs are in use before any rank's init looks, as NCCL selects each (setup_at_init.h:
  // ranks of one process whose GPUs are in use make their GPU connections at init, so that no
  // rank makes them at a first call while a peer's kernel waits for it): where the caller named
  // them, or the process uses CUDA already. A host-memory program starts no CUDA here.
  if (devlist != nullptr || weft::device::anyDeviceInUse()) {
    for (int rank = 0; rank < ndev; ++rank) weft::device::useDevice(deviceOf(rank));
  }
  ncclGroupStart();
  for (int rank = 0; rank < ndev; ++rank) {
    result = initRank(&comms[rank], ndev, id, rank, nullptr, "ncclCommInitAll", deviceOf(rank));
    if (result != ncclSuccess) break;
  }
  ncclResult_t endResult = ncclGroupEnd();
  return result != ncclSuccess ? result : endResult;
}
WEFT_PROFILING_ALIAS(ncclCommInitAll)

WEFT_API ncclResult_t ncclCommSplit(ncclComm_t comm, int color, int key, ncclComm_t* newcomm, ncclConfig_t* config) {
  Communicator* parent = nullptr;
  Status status = resolveComm(comm, &parent);
  if (status.isOk() && newcomm == nullptr) status = weft::invalidArgument("newcomm is NULL");
  if (status.isOk() && color < 0 && color != NCCL_SPLIT_NOCOLOR) {
    status = weft::invalidArgument("color %d is negative (use NCCL_SPLIT_NOCOLOR to opt out)", color);
  }
  CommOptions options;
  if (status.isOk()) status = weft::api::readConfig(config, &parent->options(), &options);
  if (status.isOk()) options.cudaDevice = parent->peer(parent->rank()).cudaDevice;  // the parent's, as NCCL
  if (!status.isOk()) {
    Group::current().recordError(status);
    return toResult(status, "ncclCommSplit");
  }
  ncclComm_t handle = color == NCCL_SPLIT_NOCOLOR ? nullptr : newHandle();
  *newcomm = handle;
  auto split = [parent, color, key](const CommOptions& resolved, std::unique_ptr<Communicator>* out) {
    return parent->split(color, key, resolved, out);
  };
  if (handle == nullptr) {
    // This rank opts out, but the parent's ranks still exchange their colors.
    Group::InitJob job;
    job.run = [split, options]() -> Status {
      std::unique_ptr<Communicator> none;
      return split(options, &none);
    };
    job.cancel = [](const Status&) {};
    job.serialKey = parent;
    status = Group::current().submitInit(std::move(job), options.blocking);
  } else {
    status = submitCreation(handle, options, parent, split);
  }
  if (!status.isOk() && status.code() != weft::StatusCode::kInProgress && !Group::current().active() &&
      handle != nullptr) {
    retireHandle(handle);
    *newcomm = nullptr;
  }
  return toResult(status, "ncclCommSplit");
}
WEFT_PROFILING_ALIAS(ncclCommSplit)

namespace {

Status checkShrinkArguments(const Communicator& parent, const int* excludeRanksList, int excludeRanksCount,
                            ncclComm_t* newcomm, int shrinkFlags, std::vector<int>* excluded) {
  if (newcomm == nullptr) return weft::invalidArgument("newcomm is NULL");
  if (shrinkFlags != NCCL_SHRINK_DEFAULT && shrinkFlags != NCCL_SHRINK_ABORT) {
    return weft::invalidArgument("shrinkFlags is %d: use NCCL_SHRINK_DEFAULT or NCCL_SHRINK_ABORT", shrinkFlags);
  }
  if (excludeRanksCount < 0 || (excludeRanksCount > 0 && excludeRanksList == nullptr)) {
    return weft::invalidArgument("excludeRanksList is %p with excludeRanksCount %d",
                                 static_cast<const void*>(excludeRanksList), excludeRanksCount);
  }
  std::vector<bool> seen(parent.nranks(), false);
  for (int i = 0; i < excludeRanksCount; ++i) {
    int rank = excludeRanksList[i];
    if (rank < 0 || rank >= parent.nranks()) {
      return weft::invalidArgument("excludeRanksList[%d] is %d, not a rank of this communicator of %d", i, rank,
                                   parent.nranks());
    }
    if (seen[rank]) return weft::invalidArgument("rank %d appears twice in excludeRanksList", rank);
    if (rank == parent.rank()) {
      return weft::invalidArgument("rank %d is in its own excludeRanksList: excluded ranks do not call ncclCommShrink",
                                   rank);
    }
    seen[rank] = true;
    excluded->push_back(rank);
  }
  return Status::ok();
}

}  // namespace

WEFT_API ncclResult_t ncclCommShrink(ncclComm_t comm, int* excludeRanksList, int excludeRanksCount,
                                     ncclComm_t* newcomm, ncclConfig_t* config, int shrinkFlags) {
  Communicator* parent = nullptr;
  Status status = resolveComm(comm, &parent);
  std::vector<int> excluded;
  if (status.isOk()) {
    status = checkShrinkArguments(*parent, excludeRanksList, excludeRanksCount, newcomm, shrinkFlags, &excluded);
  }
  CommOptions options;
  if (status.isOk()) status = weft::api::readConfig(config, &parent->options(), &options);
  if (status.isOk()) options.cudaDevice = parent->peer(parent->rank()).cudaDevice;  // the parent's, as NCCL
  if (!status.isOk()) {
    Group::current().recordError(status);
    return toResult(status, "ncclCommShrink");
  }
  // NCCL_SHRINK_ABORT: a call may be stuck on a failed peer; stop it first.
  if (shrinkFlags == NCCL_SHRINK_ABORT) parent->revoke();
  ncclComm_t handle = newHandle();
  *newcomm = handle;
  status = submitCreation(handle, options, parent,
                          [parent, excluded](const CommOptions& resolved, std::unique_ptr<Communicator>* out) {
                            return parent->shrink(excluded, resolved, out);
                          });
  if (!status.isOk() && status.code() != weft::StatusCode::kInProgress && !Group::current().active()) {
    retireHandle(handle);
    *newcomm = nullptr;
  }
  return toResult(status, "ncclCommShrink");
}
WEFT_PROFILING_ALIAS(ncclCommShrink)

WEFT_API ncclResult_t ncclCommRevoke(ncclComm_t comm, int revokeFlags) {
  Communicator* impl = nullptr;
  Status status = resolveComm(comm, &impl);
  if (status.isOk() && revokeFlags != NCCL_REVOKE_DEFAULT) {
    status = weft::invalidArgument("revokeFlags is %d: it must be NCCL_REVOKE_DEFAULT (0)", revokeFlags);
  }
  // Host-memory calls run on their callers' threads: once they have left, the communicator is
  // quiescent, so the revoke is complete when this returns.
  if (status.isOk()) impl->revoke();
  return toResult(status, "ncclCommRevoke");
}
WEFT_PROFILING_ALIAS(ncclCommRevoke)

WEFT_API ncclResult_t ncclCommFinalize(ncclComm_t comm) {
  Communicator* impl = nullptr;
  // Host-memory operations complete before their call returns; on GPU buffers, the kernels end
  // and the network proxy sends what they left it.
  Status status = resolveComm(comm, &impl);
  if (status.isOk()) {
    // Inside the call, so that ncclCommAbort from another thread (ending a drain that hangs) waits
    // for it to leave before the communicator is freed.
    impl->enterCall();
    status = impl->drainDevice();
    impl->exitCall();
  }
  return toResult(status, "ncclCommFinalize");
}
WEFT_PROFILING_ALIAS(ncclCommFinalize)

namespace {

// Waits for the init of `handle` to end, unless it is still queued in this thread's open group
// (it would never end): that is an error saying to end the group first.
Status waitForInit(ncclComm_t handle, const char* what) {
  if (handle->initDone.load(std::memory_order_acquire)) return Status::ok();
  if (Group::current().active()) {
    return weft::invalidUsage("%s of a communicator whose init is still pending in the open group: call "
                              "ncclGroupEnd first", what);
  }
  weft::WaitContext context;
  return weft::waitUntil(context, [handle] { return handle->initDone.load(std::memory_order_acquire); });
}

}  // namespace

WEFT_API ncclResult_t ncclCommDestroy(ncclComm_t comm) {
  if (comm == nullptr) return ncclSuccess;  // as NCCL: destroying NULL is a no-op
  if (comm->magic.load() != weft::api::kLiveCommMagic) {
    Communicator* impl = nullptr;
    return toResult(resolveComm(comm, &impl), "ncclCommDestroy");
  }
  Status status = waitForInit(comm, "ncclCommDestroy");
  if (!status.isOk()) return toResult(status, "ncclCommDestroy");
  if (comm->impl) {
    comm->impl->waitForBackground();
    comm->impl->leaveCleanly();
  }
  retireHandle(comm);
  return ncclSuccess;
}
WEFT_PROFILING_ALIAS(ncclCommDestroy)

WEFT_API ncclResult_t ncclCommAbort(ncclComm_t comm) {
  if (comm == nullptr) return ncclSuccess;
  if (comm->magic.load() != weft::api::kLiveCommMagic) {
    Communicator* impl = nullptr;
    return toResult(resolveComm(comm, &impl), "ncclCommAbort");
  }
  // New calls are refused from here on; a call stuck in this communicator on another thread (or a
  // nonblocking launch, or init, in the background) sees the abort at its next wait and returns an
  // error; only then are its resources released.
  comm->magic.store(weft::api::kDestroyedCommMagic, std::memory_order_release);
  comm->abortInit->store(true, std::memory_order_release);
  if (!comm->initDone.load(std::memory_order_acquire)) {
    // Still queued in this thread's group: it will fail at once when the group ends and find the
    // handle retired. Otherwise it runs now and ends promptly.
    if (Group::current().active()) return ncclSuccess;
    weft::WaitContext context;
    Status ended = weft::waitUntil(context, [comm] { return comm->initDone.load(std::memory_order_acquire); });
    (void)ended;  // a context without check or timeout cannot fail
  }
  if (comm->impl) {
    comm->impl->requestAbort();
    comm->impl->waitForCallsToLeave();
    comm->impl->waitForBackground();
  }
  retireHandle(comm);
  return ncclSuccess;
}
WEFT_PROFILING_ALIAS(ncclCommAbort)

WEFT_API ncclResult_t ncclCommGetAsyncError(ncclComm_t comm, ncclResult_t* asyncError) {
  if (asyncError == nullptr) return toResult(weft::invalidArgument("asyncError is NULL"), "ncclCommGetAsyncError");
  if (comm != nullptr && comm->magic.load() == weft::api::kLiveCommMagic) {
    // An init that has not ended is in progress; one that failed reports its error.
    if (!comm->initDone.load(std::memory_order_acquire)) {
      *asyncError = ncclInProgress;
      return ncclSuccess;
    }
    if (!comm->impl) {
      *asyncError = static_cast<ncclResult_t>(comm->initStatus.code());
      return ncclSuccess;
    }
  }
  Communicator* impl = nullptr;
  Status status = resolveComm(comm, &impl);
  if (status.isOk()) {
    *asyncError = impl->inBackground() ? ncclInProgress : static_cast<ncclResult_t>(impl->asyncError());
  }
  return toResult(status, "ncclCommGetAsyncError");
}
WEFT_PROFILING_ALIAS(ncclCommGetAsyncError)

WEFT_API ncclResult_t ncclCommCount(const ncclComm_t comm, int* count) {
  Communicator* impl = nullptr;
  Status status = count == nullptr ? weft::invalidArgument("count is NULL") : resolveComm(comm, &impl);
  if (status.isOk()) *count = impl->nranks();
  return toResult(status, "ncclCommCount");
}
WEFT_PROFILING_ALIAS(ncclCommCount)

WEFT_API ncclResult_t ncclCommUserRank(const ncclComm_t comm, int* rank) {
  Communicator* impl = nullptr;
  Status status = rank == nullptr ? weft::invalidArgument("rank is NULL") : resolveComm(comm, &impl);
  if (status.isOk()) *rank = impl->rank();
  return toResult(status, "ncclCommUserRank");
}
WEFT_PROFILING_ALIAS(ncclCommUserRank)

WEFT_API ncclResult_t ncclCommCuDevice(const ncclComm_t comm, int* device) {
  Communicator* impl = nullptr;
  Status status = device == nullptr ? weft::invalidArgument("device is NULL") : resolveComm(comm, &impl);
  // The rank's CUDA device; without one, its index among the ranks of its host, as logs print it.
  if (status.isOk()) {
    const int cudaDevice = impl->peer(impl->rank()).cudaDevice;
    *device = cudaDevice >= 0 ? cudaDevice : impl->localRank();
  }
  return toResult(status, "ncclCommCuDevice");
}
WEFT_PROFILING_ALIAS(ncclCommCuDevice)
