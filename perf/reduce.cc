// reduce_perf: nccl-tests' Reduce benchmark on Weft's public API.

#include "nccl.h"
#include "perf/common/benchmark.h"
#include "perf/common/collective.h"
#include "perf/common/data_check.h"

namespace weft::perf {
namespace {

class Reduce final : public Collective {
 public:
  const char* name() const override { return "Reduce"; }
  bool reduces() const override { return true; }
  bool hasRoot() const override { return true; }

  CollectiveCounts counts(size_t count, size_t, int) const override { return sameCounts(count); }

  // A pipelined reduction carries the whole buffer over every link once.
  double busBandwidthFactor(int) const override { return 1.0; }
  // Only the root receives; the others' receive buffers must stay as they were.
  bool keepsReceiveBuffer(int rank, int root) const override { return rank != root; }

  ncclResult_t run(const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t type,
                   ncclRedOp_t op, int root, ncclComm_t comm, cudaStream_t stream) const override {
    return ncclReduce(sendbuff, recvbuff, count, type, op, root, comm, stream);
  }

  void prepareData(const DataSpec& spec, const CollectiveCounts& counts, int rank, int root,
                   void* input, void* expected) const override {
    fillInput(input, counts.sendCount, 0, spec, rank);
    if (expected != nullptr && rank == root) fillReduced(expected, counts.recvCount, 0, spec);
  }
};

}  // namespace
}  // namespace weft::perf

int main(int argc, char** argv) {
  weft::perf::Reduce reduce;
  return weft::perf::benchmarkMain(argc, argv, reduce);
}
