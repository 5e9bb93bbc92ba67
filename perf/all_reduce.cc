// all_reduce_perf: nccl-tests' AllReduce benchmark on Weft's public API.

#include "nccl.h"
#include "perf/common/benchmark.h"
#include "perf/common/collective.h"
#include "perf/common/data_check.h"

namespace weft::perf {
namespace {

class AllReduce final : public Collective {
 public:
  const char* name() const override { return "AllReduce"; }
  bool reduces() const override { return true; }
  bool hasRoot() const override { return false; }

  CollectiveCounts counts(size_t count, size_t, int) const override { return sameCounts(count); }

  // A ring moves each element off every rank twice (reduce-scatter, then all-gather), less the
  // share a rank keeps: 2(n-1)/n.
  double busBandwidthFactor(int nranks) const override {
    return 2.0 * (nranks - 1) / nranks;
  }

  ncclResult_t run(const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t type,
                   ncclRedOp_t op, int, ncclComm_t comm, cudaStream_t stream) const override {
    return ncclAllReduce(sendbuff, recvbuff, count, type, op, comm, stream);
  }

  void prepareData(const DataSpec& spec, const CollectiveCounts& counts, int rank, int,
                   void* input, void* expected) const override {
    fillInput(input, counts.sendCount, 0, spec, rank);
    if (expected != nullptr) fillReduced(expected, counts.recvCount, 0, spec);
  }
};

}  // namespace
}  // namespace weft::perf

int main(int argc, char** argv) {
  weft::perf::AllReduce allReduce;
  return weft::perf::benchmarkMain(argc, argv, allReduce);
}
