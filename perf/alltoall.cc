// alltoall_perf: nccl-tests' AlltoAll benchmark on Weft's public API.

#include "nccl.h"
#include "perf/common/benchmark.h"
#include "perf/common/collective.h"
#include "perf/common/data_check.h"
#include "perf/common/data_types.h"

namespace weft::perf {
namespace {

class AlltoAll final : public Collective {
 public:
  const char* name() const override { return "AlltoAll"; }
  bool reduces() const override { return false; }
  bool hasRoot() const override { return false; }

  // count is each rank's whole buffer: nranks blocks, one per peer, of count/nranks elements
  // rounded down to 16 bytes (as nccl-tests).
  CollectiveCounts counts(size_t count, size_t elementSize, int nranks) const override {
    const size_t block = rankBlockCount(count, elementSize, nranks);
    CollectiveCounts c;
    c.sendCount = block * static_cast<size_t>(nranks);
    c.recvCount = c.sendCount;
    c.paramCount = block;
    return c;
  }

  double algBandwidthFactor(int nranks) const override { return nranks; }
  // Every block but the one a rank keeps crosses a link.
  double busBandwidthFactor(int nranks) const override {
    return static_cast<double>(nranks - 1) / nranks;
  }

  bool checksInPlace() const override { return false; }

  ncclResult_t run(const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t type,
                   ncclRedOp_t, int, ncclComm_t comm, cudaStream_t stream) const override {
    return ncclAlltoAll(sendbuff, recvbuff, count, type, comm, stream);
  }

  // Rank r's block j holds r's inputs at indices j*block...; rank j receives it as its block r.
  void prepareData(const DataSpec& spec, const CollectiveCounts& counts, int rank, int,
                   void* input, void* expected) const override {
    fillInput(input, counts.sendCount, 0, spec, rank);
    if (expected == nullptr) return;
    const size_t block = counts.paramCount;
    const size_t blockBytes = block * typeInfo(spec.type).size;
    for (int r = 0; r < spec.nranks; ++r) {
      fillInput(static_cast<char*>(expected) + blockBytes * static_cast<size_t>(r), block,
                block * static_cast<size_t>(rank), spec, r);
    }
  }
};

}  // namespace
}  // namespace weft::perf

int main(int argc, char** argv) {
  weft::perf::AlltoAll alltoAll;
  return weft::perf::benchmarkMain(argc, argv, alltoAll);
}
