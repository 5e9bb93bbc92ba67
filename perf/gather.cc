// gather_perf: nccl-tests' Gather benchmark on Weft's public API (ncclGather).

#include "nccl.h"
#include "perf/common/benchmark.h"
#include "perf/common/collective.h"
#include "perf/common/data_check.h"
#include "perf/common/data_types.h"

namespace weft::perf {
namespace {

class Gather final : public Collective {
 public:
  const char* name() const override { return "Gather"; }
  bool reduces() const override { return false; }
  bool hasRoot() const override { return true; }

  // count is the root's whole buffer; each rank contributes a block of it (count/nranks elements
  // rounded down to 16 bytes, as nccl-tests).
  CollectiveCounts counts(size_t count, size_t elementSize, int nranks) const override {
    const size_t block = rankBlockCount(count, elementSize, nranks);
    CollectiveCounts c;
    c.sendCount = block;
    c.recvCount = block * static_cast<size_t>(nranks);
    c.paramCount = block;
    c.sendInPlaceOffset = block;  // in place: each rank's block sits at its slot
    return c;
  }

  double algBandwidthFactor(int nranks) const override { return nranks; }
  // The root receives every block but its own.
  double busBandwidthFactor(int nranks) const override {
    return static_cast<double>(nranks - 1) / nranks;
  }
  // Only the root receives; the others' receive buffers must stay as they were.
  bool keepsReceiveBuffer(int rank, int root) const override { return rank != root; }

  ncclResult_t run(const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t type,
                   ncclRedOp_t, int root, ncclComm_t comm, cudaStream_t stream) const override {
    return ncclGather(sendbuff, recvbuff, count, type, root, comm, stream);
  }

  void prepareData(const DataSpec& spec, const CollectiveCounts& counts, int rank, int root,
                   void* input, void* expected) const override {
    const size_t block = counts.sendCount;
    fillInput(input, block, block * static_cast<size_t>(rank), spec, rank);
    if (expected == nullptr || rank != root) return;
    fillGathered(expected, block, spec);
  }
};

}  // namespace
}  // namespace weft::perf

int main(int argc, char** argv) {
  weft::perf::Gather gather;
  return weft::perf::benchmarkMain(argc, argv, gather);
}
