// The NCCL calls behind each Collective.

#include "tests/multirank/collective_run.h"

namespace weft::multirank {
namespace {

// Keeps the first failure, but a group once started is always ended.
ncclResult_t firstOf(ncclResult_t first, ncclResult_t next) {
  return first != ncclSuccess ? first : next;
}

ncclResult_t sendRecvRing(const CollectiveRun& run, const void* send, void* recv, ncclComm_t comm,
                          int nranks, int rank, cudaStream_t stream) {
  const ncclDataType_t type = run.type->type;
  ncclResult_t result = ncclGroupStart();
  if (result != ncclSuccess) return result;
  result = ncclSend(send, run.count, type, (rank + 1) % nranks, comm, stream);
  result = firstOf(result, ncclRecv(recv, run.count, type, (rank + nranks - 1) % nranks, comm,
                                    stream));
  return firstOf(result, ncclGroupEnd());
}

// Chunk p of the send buffer goes to rank p; chunk p of the receive buffer comes from rank p.
// Even ranks post their receives first, odd ranks their sends, each in a different peer order:
// inside a group the order must not matter.
ncclResult_t sendRecvAllPairs(const CollectiveRun& run, const void* send, void* recv,
                              ncclComm_t comm, int nranks, int rank, cudaStream_t stream) {
  const ncclDataType_t type = run.type->type;
  const size_t chunkBytes = run.count * run.type->size;
  auto postReceives = [&] {
    ncclResult_t result = ncclSuccess;
    for (int peer = nranks - 1; peer >= 0; --peer) {
      result = firstOf(result, ncclRecv(static_cast<char*>(recv) + peer * chunkBytes, run.count,
                                        type, peer, comm, stream));
    }
    return result;
  };
  auto postSends = [&] {
    ncclResult_t result = ncclSuccess;
    for (int i = 0; i < nranks; ++i) {
      const int peer = (rank + i) % nranks;
      result = firstOf(result, ncclSend(static_cast<const char*>(send) + peer * chunkBytes,
                                        run.count, type, peer, comm, stream));
    }
    return result;
  };
  ncclResult_t result = ncclGroupStart();
  if (result != ncclSuccess) return result;
  if (rank % 2 == 0) {
    result = postReceives();
    result = firstOf(result, postSends());
  } else {
    result = postSends();
    result = firstOf(result, postReceives());
  }
  return firstOf(result, ncclGroupEnd());
}

}  // namespace

ncclResult_t issueCollective(const CollectiveRun& run, ncclRedOp_t op, const void* send, void* recv,
                             ncclComm_t comm, int nranks, int rank, cudaStream_t stream) {
  const ncclDataType_t type = run.type->type;
  const size_t count = run.count;
  switch (run.collective) {
    case Collective::kAllReduce: return ncclAllReduce(send, recv, count, type, op, comm, stream);
    case Collective::kAllGather: return ncclAllGather(send, recv, count, type, comm, stream);
    case Collective::kReduceScatter:
      return ncclReduceScatter(send, recv, count, type, op, comm, stream);
    case Collective::kBroadcast:
      return ncclBroadcast(send, recv, count, type, run.root, comm, stream);
    case Collective::kBcast: return ncclBcast(recv, count, type, run.root, comm, stream);
    case Collective::kReduce: return ncclReduce(send, recv, count, type, op, run.root, comm, stream);
    case Collective::kAlltoAll: return ncclAlltoAll(send, recv, count, type, comm, stream);
    case Collective::kGather: return ncclGather(send, recv, count, type, run.root, comm, stream);
    case Collective::kScatter: return ncclScatter(send, recv, count, type, run.root, comm, stream);
    case Collective::kSendRecvRing: return sendRecvRing(run, send, recv, comm, nranks, rank, stream);
    case Collective::kSendRecvAllPairs: return sendRecvAllPairs(run, send, recv, comm, nranks, rank, stream);
  }
  return ncclInvalidUsage;
}

}  // namespace weft::multirank
