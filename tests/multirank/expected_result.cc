// What each collective must leave in one rank's receive region, built from every rank's input.

#include <vector>

#include "tests/multirank/collective_run.h"
#include "tests/multirank/reference.h"
#include "tests/multirank/test_inputs.h"

namespace weft::multirank {
namespace {

char* elementAt(void* buffer, const ElementType& type, size_t index) {
  return static_cast<char*>(buffer) + index * type.size;
}

// out = the reduction over all ranks of their elements [first, first + count).
void reduceAllRanks(const CollectiveRun& run, int nranks, size_t first, void* out) {
  std::vector<std::vector<char>> inputs(nranks, std::vector<char>(run.count * run.type->size));
  std::vector<const void*> pointers;
  for (int r = 0; r < nranks; ++r) {
    fillRankInput(run, nranks, r, first, run.count, inputs[r].data());
    pointers.push_back(inputs[r].data());
  }
  reduceReference(*run.type, run.op, pointers, run.count, out);
}

// out chunk r = rank r's elements [first, first + count), for every rank r.
void gatherAllRanks(const CollectiveRun& run, int nranks, size_t first, void* out) {
  for (int r = 0; r < nranks; ++r) {
    fillRankInput(run, nranks, r, first, run.count, elementAt(out, *run.type, r * run.count));
  }
}

}  // namespace

void fillRankInput(const CollectiveRun& run, int nranks, int rank, size_t first, size_t count,
                   void* out) {
  if (reduces(run.collective)) {
    fillReductionInput(*run.type, run.op, nranks, rank, run.seed, first, count, out);
  } else {
    fillArbitraryInput(*run.type, rank, run.seed, first, count, out);
  }
}

void expectResult(const CollectiveRun& run, int nranks, int rank, void* recv) {
  const size_t mine = run.count * static_cast<size_t>(rank);
  const bool isRoot = rank == run.root;
  switch (run.collective) {
    case Collective::kAllReduce: reduceAllRanks(run, nranks, 0, recv); break;
    case Collective::kReduceScatter: reduceAllRanks(run, nranks, mine, recv); break;
    case Collective::kReduce:
      if (isRoot) reduceAllRanks(run, nranks, 0, recv);
      break;
    case Collective::kAllGather: gatherAllRanks(run, nranks, 0, recv); break;
    case Collective::kGather:
      if (isRoot) gatherAllRanks(run, nranks, 0, recv);
      break;
    case Collective::kAlltoAll:
    case Collective::kSendRecvAllPairs: gatherAllRanks(run, nranks, mine, recv); break;
    case Collective::kBroadcast:
    case Collective::kBcast: fillRankInput(run, nranks, run.root, 0, run.count, recv); break;
    case Collective::kScatter: fillRankInput(run, nranks, run.root, mine, run.count, recv); break;
    case Collective::kSendRecvRing:
      fillRankInput(run, nranks, (rank + nranks - 1) % nranks, 0, run.count, recv);
      break;
  }
}

}  // namespace weft::multirank
