// hypercube_perf: nccl-tests' HyperCube benchmark on Weft's public API: an all-gather built from
// log2(nranks) grouped exchanges, step k with peer rank ^ (1 << k) (power-of-two rank counts only).

#include <cstring>
#include <string>

#include "nccl.h"
#include "perf/common/benchmark.h"
#include "perf/common/collective.h"
#include "perf/common/data_check.h"
#include "perf/common/data_types.h"

namespace weft::perf {
namespace {

class HyperCube final : public Collective {
 public:
  const char* name() const override { return "HyperCube"; }
  bool reduces() const override { return false; }
  bool hasRoot() const override { return false; }
  std::string skipReason(int nranks) const override {
    if ((nranks & (nranks - 1)) == 0) return {};
    return "nRanks " + std::to_string(nranks) + " is not a power of 2, skipping";
  }

  // As AllGather: count is the whole gathered buffer, a block of count/nranks elements rounded
  // down to 16 bytes per rank.
  CollectiveCounts counts(size_t count, size_t elementSize, int nranks) const override {
    const size_t block = rankBlockCount(count, elementSize, nranks);
    CollectiveCounts c;
    c.sendCount = block;
    c.recvCount = block * static_cast<size_t>(nranks);
    c.paramCount = block;
    c.sendInPlaceOffset = block;
    return c;
  }

  // Each rank receives nranks-1 blocks, over its links in turn.
  double algBandwidthFactor(int nranks) const override { return nranks - 1; }
  double busBandwidthFactor(int) const override { return 1.0; }

  ncclResult_t run(const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t type,
                   ncclRedOp_t, int, ncclComm_t comm, cudaStream_t stream) const override {
    int nranks = 0;
    int rank = 0;
    if (ncclResult_t r = ncclCommCount(comm, &nranks); r != ncclSuccess) return r;
    if (ncclResult_t r = ncclCommUserRank(comm, &rank); r != ncclSuccess) return r;
    const size_t blockBytes = count * typeInfo(type).size;
    char* out = static_cast<char*>(recvbuff);
    char* own = out + blockBytes * static_cast<size_t>(rank);
    if (own != sendbuff) std::memcpy(own, sendbuff, blockBytes);
    // After step k a rank holds the 2^(k+1) blocks of its aligned group; it sends the half it
    // has and receives the peer's half.
    for (int mask = 1; mask < nranks; mask <<= 1) {
      const int sendFirst = rank & ~(mask - 1);
      const int recvFirst = sendFirst ^ mask;
      const size_t stepCount = count * static_cast<size_t>(mask);
      if (ncclResult_t r = ncclGroupStart(); r != ncclSuccess) return r;
      ncclResult_t sent = ncclSend(out + blockBytes * static_cast<size_t>(sendFirst), stepCount, type,
                                   rank ^ mask, comm, stream);
      ncclResult_t received =
          sent == ncclSuccess ? ncclRecv(out + blockBytes * static_cast<size_t>(recvFirst), stepCount,
                                         type, rank ^ mask, comm, stream)
                              : ncclSuccess;
      ncclResult_t ended = ncclGroupEnd();  // always close the group, even after a failed call
      if (sent != ncclSuccess) return sent;
      if (received != ncclSuccess) return received;
      if (ended != ncclSuccess) return ended;
    }
    return ncclSuccess;
  }

  void prepareData(const DataSpec& spec, const CollectiveCounts& counts, int rank, int,
                   void* input, void* expected) const override {
    const size_t block = counts.sendCount;
    fillInput(input, block, block * static_cast<size_t>(rank), spec, rank);
    if (expected == nullptr) return;
    fillGathered(expected, block, spec);
  }
};

}  // namespace
}  // namespace weft::perf

int main(int argc, char** argv) {
  weft::perf::HyperCube hyperCube;
  return weft::perf::benchmarkMain(argc, argv, hyperCube);
}
