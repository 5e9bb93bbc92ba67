// alltoallv_perf: the nccl-tests family's AlltoAllv benchmark on Weft's public API. NCCL has no
// all-to-all with per-peer counts, so it is what applications write: one ncclSend and one ncclRecv
// per peer in a group, here with the uneven counts of perf/common/alltoallv_counts.h.

#include "nccl.h"
#include "perf/common/alltoallv_counts.h"
#include "perf/common/benchmark.h"
#include "perf/common/collective.h"
#include "perf/common/data_check.h"
#include "perf/common/data_types.h"

namespace weft::perf {
namespace {

class AlltoAllv final : public Collective {
 public:
  const char* name() const override { return "AlltoAllv"; }
  bool reduces() const override { return false; }
  bool hasRoot() const override { return false; }

  // As AlltoAll (count is each rank's whole buffer, the count argument its 16-byte-rounded share
  // per peer), except that sizes too small to give every peer a chunk move nothing.
  CollectiveCounts counts(size_t count, size_t elementSize, int nranks) const override {
    CollectiveCounts c;
    const auto n = static_cast<size_t>(nranks);
    if (count < n * n / 2) return c;
    c.paramCount = rankBlockCount(count, elementSize, nranks);
    c.sendCount = c.paramCount * n;
    c.recvCount = c.sendCount;
    return c;
  }

  double algBandwidthFactor(int nranks) const override { return nranks; }
  // Every element but those a rank keeps for itself crosses a link, as counted for AlltoAll.
  double busBandwidthFactor(int nranks) const override {
    return static_cast<double>(nranks - 1) / nranks;
  }

  // In place, the blocks a rank receives overwrite the ones it still has to send: timed only.
  bool checksInPlace() const override { return false; }

  ncclResult_t run(const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t type,
                   ncclRedOp_t, int, ncclComm_t comm, cudaStream_t stream) const override {
    if (count == 0) return ncclSuccess;
    int nranks = 0;
    int rank = 0;
    if (ncclResult_t r = ncclCommCount(comm, &nranks); r != ncclSuccess) return r;
    if (ncclResult_t r = ncclCommUserRank(comm, &rank); r != ncclSuccess) return r;
    const size_t elementSize = typeInfo(type).size;
    if (ncclResult_t r = ncclGroupStart(); r != ncclSuccess) return r;
    ncclResult_t result = ncclSuccess;
    size_t offset = 0;
    for (int peer = 0; peer < nranks && result == ncclSuccess; ++peer) {
      const size_t peerCount = alltoallvPeerCount(count, rank, peer, nranks);
      if (peerCount != 0) {
        result = ncclSend(static_cast<const char*>(sendbuff) + offset * elementSize, peerCount, type,
                          peer, comm, stream);
        if (result == ncclSuccess) {
          result = ncclRecv(static_cast<char*>(recvbuff) + offset * elementSize, peerCount, type,
                            peer, comm, stream);
        }
      }
      offset += peerCount;
    }
    ncclResult_t ended = ncclGroupEnd();  // always close the group, even after a failed call
    return result != ncclSuccess ? result : ended;
  }

  // Rank r's buffer holds its inputs at indices 0...; its block from peer j is j's block for r,
  // which holds j's inputs at the indices where that block starts in j's buffer.
  void prepareData(const DataSpec& spec, const CollectiveCounts& counts, int rank, int,
                   void* input, void* expected) const override {
    fillInput(input, counts.sendCount, 0, spec, rank);
    if (expected == nullptr) return;
    const size_t elementSize = typeInfo(spec.type).size;
    size_t offset = 0;
    for (int peer = 0; peer < spec.nranks; ++peer) {
      const size_t peerCount = alltoallvPeerCount(counts.paramCount, rank, peer, spec.nranks);
      fillInput(static_cast<char*>(expected) + offset * elementSize, peerCount,
                alltoallvPeerOffset(counts.paramCount, peer, rank, spec.nranks), spec, peer);
      offset += peerCount;
    }
  }
};

}  // namespace
}  // namespace weft::perf

int main(int argc, char** argv) {
  weft::perf::AlltoAllv alltoAllv;
  return weft::perf::benchmarkMain(argc, argv, alltoAllv);
}
