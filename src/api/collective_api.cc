// The collectives and point-to-point calls: argument checks, then one core::Op handed to the group.

#include <cstdint>
#include <cstring>

#include "src/api/api_support.h"
#include "src/core/pointer_check.h"
#include "src/core/group.h"
#include "src/device/gpu_runtime.h"

using weft::Status;
using weft::algorithms::Collective;
using weft::algorithms::DataType;
using weft::api::toResult;
using weft::core::checkBufferDevice;
using weft::core::Communicator;
using weft::core::Group;
using weft::core::Op;
using weft::device::MemoryKind;

namespace {

struct Call {
  const char* function;
  Collective collective;
  const void* sendbuff;
  void* recvbuff;
  size_t count;
  // Enums as int: a C caller may pass any int, and a C++ enum holding a value outside its range is
  // undefined behaviour (UBSan's -fsanitize=enum reports the load).
  int datatype;  // ncclDataType_t
  bool reduces;
  int op;    // ncclRedOp_t, when the collective reduces
  int root;  // root or peer; -1 when unused
  ncclComm_t comm;
  cudaStream_t stream;
};

// The root of a rooted collective, or the peer of a send or receive: a rank to check.
bool usesRoot(Collective collective) {
  return weft::algorithms::hasRoot(collective) || weft::algorithms::isPointToPoint(collective);
}

// An ncclScalarDevice multiplier is read when the call runs, as in NCCL: on GPU buffers by the
// kernel, so it must be memory the GPU reaches; on host buffers now (the call runs now), so it
// must be memory the host reaches. A call of no elements reads nothing.
Status placeScalar(const Call& call, Op* op) {
  const void* scalarAt = op->reduction.scalarAt;
  if (scalarAt == nullptr || call.count == 0) return Status::ok();
  MemoryKind kind = MemoryKind::kHost;
  WEFT_RETURN_IF_ERROR(weft::device::memoryKind(scalarAt, "the reduction's scalar", &kind));
  if (op->onDevice && !weft::device::takesStreamPath(kind)) {
    return weft::invalidArgument("reduction op %d reads its scalar at %p (ncclScalarDevice), ordinary host memory "
                                 "the GPU cannot read, for a call on GPU buffers: give it device, managed or "
                                 "page-locked memory, or create it with ncclScalarHostImmediate",
                                 call.op, scalarAt);
  }
  if (op->onDevice) return Status::ok();
  if (kind == MemoryKind::kDevice) {
    return weft::invalidArgument("reduction op %d reads its scalar at %p (ncclScalarDevice), device memory the host "
                                 "cannot read, for a call on host buffers: give it host memory, or create it with "
                                 "ncclScalarHostImmediate",
                                 call.op, scalarAt);
  }
  std::memcpy(op->reduction.scalar, scalarAt, weft::algorithms::dataTypeSize(op->type));
  op->reduction.scalarAt = nullptr;
  return Status::ok();
}

Status checkAndBuild(const Call& call, Op* op) {
  Communicator* comm = nullptr;
  WEFT_RETURN_IF_ERROR(weft::api::resolveComm(call.comm, &comm));
  WEFT_RETURN_IF_ERROR(comm->checkUsable());
  if (call.datatype < 0 || call.datatype >= ncclNumTypes) {
    return weft::invalidArgument("datatype %d is not an ncclDataType_t (0..%d)", call.datatype, ncclNumTypes - 1);
  }
  DataType type = static_cast<DataType>(call.datatype);
  int nranks = comm->nranks();
  if (usesRoot(call.collective) && (call.root < 0 || call.root >= nranks)) {
    bool isPeer = weft::algorithms::isPointToPoint(call.collective);
    return weft::invalidArgument("%s %d is out of range [0, %d)", isPeer ? "peer" : "root", call.root, nranks);
  }
  size_t elementSize = weft::algorithms::dataTypeSize(type);
  // Every byte count the call implies must fit in size_t.
  if (call.count > SIZE_MAX / elementSize / static_cast<size_t>(nranks)) {
    return weft::invalidArgument("count %zu of %s over %d ranks overflows the address space", call.count,
                                 weft::algorithms::dataTypeName(type), nranks);
  }
  const weft::algorithms::BufferElements needs = weft::algorithms::bufferElements(
      {call.collective, call.count, call.root, nranks, comm->rank()});
  if (needs.send > 0 && call.sendbuff == nullptr) {
    return weft::invalidArgument("sendbuff is NULL with count %zu", call.count);
  }
  if (needs.recv > 0 && call.recvbuff == nullptr) {
    return weft::invalidArgument("recvbuff is NULL with count %zu", call.count);
  }
  // GPU memory (device, managed, registered) takes the stream path, ordinary host memory the host
  // path; one call cannot mix them.
  MemoryKind sendKind = MemoryKind::kHost;
  MemoryKind recvKind = MemoryKind::kHost;
  int sendDevice = -1;
  int recvDevice = -1;
  if (needs.send > 0) {
    WEFT_RETURN_IF_ERROR(weft::device::memoryKind(call.sendbuff, "sendbuff", &sendKind, &sendDevice));
  }
  if (needs.recv > 0) {
    WEFT_RETURN_IF_ERROR(weft::device::memoryKind(call.recvbuff, "recvbuff", &recvKind, &recvDevice));
  }
  if ((sendDevice >= 0 || recvDevice >= 0) && comm->checksPointers()) {
    const int commDevice = comm->peer(comm->rank()).cudaDevice;
    WEFT_RETURN_IF_ERROR(checkBufferDevice("sendbuff", call.sendbuff, sendDevice, comm->rank(), commDevice));
    WEFT_RETURN_IF_ERROR(checkBufferDevice("recvbuff", call.recvbuff, recvDevice, comm->rank(), commDevice));
  }
  const bool sendOnDevice = weft::device::takesStreamPath(sendKind);
  const bool recvOnDevice = weft::device::takesStreamPath(recvKind);
  if (needs.send > 0 && needs.recv > 0 && sendOnDevice != recvOnDevice) {
    return weft::invalidArgument("sendbuff %p is %s memory and recvbuff %p is %s memory: both must be GPU memory "
                                 "(device, managed or registered) or both ordinary host memory",
                                 call.sendbuff, sendOnDevice ? "GPU" : "host", call.recvbuff,
                                 recvOnDevice ? "GPU" : "host");
  }
  op->onDevice = sendOnDevice || recvOnDevice;
  // The host path moves host buffers at once, on this thread: a graph would not repeat it.
  if (!op->onDevice && (needs.send > 0 || needs.recv > 0) && weft::device::isCapturing(call.stream)) {
    return weft::invalidUsage("the call is on host buffers, which Weft moves at once on the calling thread, but its "
                              "stream %p is being captured into a CUDA graph, whose replays would not repeat it: "
                              "give it GPU buffers, or make it outside the capture",
                              static_cast<void*>(call.stream));
  }
  op->stream = call.stream;
  op->comm = comm;
  op->collective = call.collective;
  op->sendbuff = call.sendbuff;
  op->recvbuff = call.recvbuff;
  op->count = call.count;
  op->type = type;
  op->root = call.root < 0 ? 0 : call.root;
  if (!call.reduces) {
    op->reduction.type = type;
    return Status::ok();
  }
  WEFT_RETURN_IF_ERROR(comm->redOps().resolve(call.op, type, nranks, &op->reduction));
  return placeScalar(call, op);
}

ncclResult_t submit(const Call& call) {
  Op op;
  Status status = checkAndBuild(call, &op);
  if (!status.isOk()) {
    Group::current().recordError(status);
    return toResult(status, call.function);
  }
  if (op.count == 0) return ncclSuccess;
  return toResult(Group::current().submit(op), call.function);
}

}  // namespace

WEFT_API ncclResult_t ncclAllReduce(const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype,
                                    ncclRedOp_t op, ncclComm_t comm, cudaStream_t stream) {
  return submit({"ncclAllReduce", Collective::kAllReduce, sendbuff, recvbuff, count, datatype, true, op, -1, comm, stream});
}
WEFT_PROFILING_ALIAS(ncclAllReduce)

WEFT_API ncclResult_t ncclAllGather(const void* sendbuff, void* recvbuff, size_t sendcount, ncclDataType_t datatype,
                                    ncclComm_t comm, cudaStream_t stream) {
  return submit({"ncclAllGather", Collective::kAllGather, sendbuff, recvbuff, sendcount, datatype, false, 0, -1, comm, stream});
}
WEFT_PROFILING_ALIAS(ncclAllGather)

WEFT_API ncclResult_t ncclReduceScatter(const void* sendbuff, void* recvbuff, size_t recvcount,
                                        ncclDataType_t datatype, ncclRedOp_t op, ncclComm_t comm,
                                        cudaStream_t stream) {
  return submit(
      {"ncclReduceScatter", Collective::kReduceScatter, sendbuff, recvbuff, recvcount, datatype, true, op, -1, comm,
       stream});
}
WEFT_PROFILING_ALIAS(ncclReduceScatter)

WEFT_API ncclResult_t ncclBroadcast(const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype,
                                    int root, ncclComm_t comm, cudaStream_t stream) {
  return submit({"ncclBroadcast", Collective::kBroadcast, sendbuff, recvbuff, count, datatype, false, 0, root, comm, stream});
}
WEFT_PROFILING_ALIAS(ncclBroadcast)

WEFT_API ncclResult_t ncclBcast(void* buff, size_t count, ncclDataType_t datatype, int root, ncclComm_t comm,
                                cudaStream_t stream) {
  return submit({"ncclBcast", Collective::kBroadcast, buff, buff, count, datatype, false, 0, root, comm, stream});
}
WEFT_PROFILING_ALIAS(ncclBcast)

WEFT_API ncclResult_t ncclReduce(const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype,
                                 ncclRedOp_t op, int root, ncclComm_t comm, cudaStream_t stream) {
  return submit({"ncclReduce", Collective::kReduce, sendbuff, recvbuff, count, datatype, true, op, root, comm, stream});
}
WEFT_PROFILING_ALIAS(ncclReduce)

WEFT_API ncclResult_t ncclAlltoAll(const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype,
                                   ncclComm_t comm, cudaStream_t stream) {
  return submit({"ncclAlltoAll", Collective::kAllToAll, sendbuff, recvbuff, count, datatype, false, 0, -1, comm, stream});
}
WEFT_PROFILING_ALIAS(ncclAlltoAll)

WEFT_API ncclResult_t ncclGather(const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype,
                                 int root, ncclComm_t comm, cudaStream_t stream) {
  return submit({"ncclGather", Collective::kGather, sendbuff, recvbuff, count, datatype, false, 0, root, comm, stream});
}
WEFT_PROFILING_ALIAS(ncclGather)

WEFT_API ncclResult_t ncclScatter(const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype,
                                  int root, ncclComm_t comm, cudaStream_t stream) {
  return submit({"ncclScatter", Collective::kScatter, sendbuff, recvbuff, count, datatype, false, 0, root, comm, stream});
}
WEFT_PROFILING_ALIAS(ncclScatter)

WEFT_API ncclResult_t ncclSend(const void* sendbuff, size_t count, ncclDataType_t datatype, int peer,
                               ncclComm_t comm, cudaStream_t stream) {
  return submit({"ncclSend", Collective::kSend, sendbuff, nullptr, count, datatype, false, 0, peer, comm, stream});
}
WEFT_PROFILING_ALIAS(ncclSend)

WEFT_API ncclResult_t ncclRecv(void* recvbuff, size_t count, ncclDataType_t datatype, int peer, ncclComm_t comm,
                               cudaStream_t stream) {
  return submit({"ncclRecv", Collective::kRecv, nullptr, recvbuff, count, datatype, false, 0, peer, comm, stream});
}
WEFT_PROFILING_ALIAS(ncclRecv)
