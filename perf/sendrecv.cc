// sendrecv_perf: nccl-tests' SendRecv benchmark on Weft's public API: every rank sends to the next
// rank and receives from the previous one, in one group.

#include "nccl.h"
#include "perf/common/benchmark.h"
#include "perf/common/collective.h"
#include "perf/common/data_check.h"

namespace weft::perf {
namespace {

class SendRecv final : public Collective {
 public:
  const char* name() const override { return "SendRecv"; }
  bool reduces() const override { return false; }
  bool hasRoot() const override { return false; }

  CollectiveCounts counts(size_t count, size_t, int) const override { return sameCounts(count); }

  double busBandwidthFactor(int) const override { return 1.0; }

  ncclResult_t run(const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t type,
                   ncclRedOp_t, int, ncclComm_t comm, cudaStream_t stream) const override {
    int nranks = 0;
    int rank = 0;
    if (ncclResult_t r = ncclCommCount(comm, &nranks); r != ncclSuccess) return r;
    if (ncclResult_t r = ncclCommUserRank(comm, &rank); r != ncclSuccess) return r;
    const int next = (rank + 1) % nranks;
    const int previous = (rank - 1 + nranks) % nranks;
    if (ncclResult_t r = ncclGroupStart(); r != ncclSuccess) return r;
    ncclResult_t sent = ncclSend(sendbuff, count, type, next, comm, stream);
    ncclResult_t received =
        sent == ncclSuccess ? ncclRecv(recvbuff, count, type, previous, comm, stream) : ncclSuccess;
    ncclResult_t ended = ncclGroupEnd();  // always close the group, even after a failed call
    if (sent != ncclSuccess) return sent;
    if (received != ncclSuccess) return received;
    return ended;
  }

  void prepareData(const DataSpec& spec, const CollectiveCounts& counts, int rank, int,
                   void* input, void* expected) const override {
    fillInput(input, counts.sendCount, counts.sendCount * static_cast<size_t>(rank), spec, rank);
    if (expected == nullptr) return;
    const int previous = (rank - 1 + spec.nranks) % spec.nranks;
    fillInput(expected, counts.recvCount, counts.recvCount * static_cast<size_t>(previous), spec,
              previous);
  }
};

}  // namespace
}  // namespace weft::perf

int main(int argc, char** argv) {
  weft::perf::SendRecv sendRecv;
  return weft::perf::benchmarkMain(argc, argv, sendRecv);
}
