// Bruck's AllGather and ReduceScatter (NCCL_ALGO=pat): ceil(log2 n) steps instead of the ring's
// n-1, for small sizes, where a step's hand-off costs more than its bytes.
//
// Rank i keeps a window of blocks: window place w holds the block of rank (i + w) mod n. It starts
// with its own block (w = 0); in step k (d = 2^k) it sends its first c = min(d, n - d) places to
// rank i - d and receives rank i + d's first c places into its places [d, d + c), so that after
// the step it holds 2d places (all n after the last). The window lives in the receive buffer at
// its absolute place (block (i + w) mod n), so no copy is needed at the end: a range of places
// that wraps past block n - 1 is sent and received as two steps, split at block 0 at both ends
// alike.
//
// Every step starts at a place at or after where the data it sends was received, so a piece of a
// send never needs a later piece of a receive: the executor may run the steps piece by piece
// (round after round) at any size.
//
// Bruck's ReduceScatter is the same exchange run backwards: distances from the largest power of
// two below n down to 1; in the step of distance d rank i sends its places [d, d + c) to rank
// i + d and reduces what rank i - d sends into its places [0, c). A place is sent once, after all
// it receives, and place 0 (the rank's own block) receives in every step, last with distance 1.
// Partial sums live in scratch, indexed by place. Here a send reads sums that any piece of an
// earlier receive may write, so each exchange is a phase of its own (Step::startsPhase).

#include <algorithm>
#include <cassert>
#include <utility>
#include <vector>

#include "algorithms/program_builder.h"
#include "algorithms/schedule.h"

namespace weft::algorithms {
namespace {

// Appends one step per part of window places [first, last) that does not wrap past block n - 1;
// `make` fills a step for `count` elements at receive-buffer offset `offset`.
template <typename MakeStep>
void addWindowSteps(int rank, int nranks, int first, int last, size_t blockCount, std::vector<Step>& steps,
                    MakeStep make) {
  const int wrap = nranks - rank;  // the place that holds block 0
  for (auto [begin, end] : {std::pair{first, std::min(last, wrap)}, std::pair{std::max(first, wrap), last}}) {
    if (begin >= end) continue;
    const size_t block = static_cast<size_t>((rank + begin) % nranks);
    steps.push_back(make(block * blockCount, static_cast<size_t>(end - begin) * blockCount));
  }
}

// The element offset of window place `place` of `rank` in a buffer laid out by blocks.
size_t blockOffset(int rank, int nranks, int place, size_t blockCount) {
  return static_cast<size_t>((rank + place) % nranks) * blockCount;
}

}  // namespace

void buildBruckReduceScatter(const OpShape& shape, Program* program) {
  assert(shape.collective == Collective::kReduceScatter);
  ProgramBuilder builder(program);
  if (shape.count == 0) return;
  const int n = shape.nranks;
  const int rank = shape.rank;
  const size_t blockCount = shape.count;
  std::vector<Step>& steps = builder.startLane(0);
  if (n == 1) {
    steps.push_back(singleRankReduction(blockCount));
    return;
  }
  // Which places hold a partial sum in scratch (at place x blockCount) rather than only this
  // rank's input in the send buffer; the same on every rank at every step.
  std::vector<bool> partial(n, false);
  int distance = 1;
  while (distance * 2 < n) distance *= 2;
  for (; distance >= 1; distance /= 2) {
    const int places = std::min(distance, n - distance);
    const int to = (rank + distance) % n;
    const int from = (rank - distance + n) % n;
    // Sender (places [distance, distance + places)) and receiver (places [0, places)) cut an
    // exchange alike, at the offsets into it where either side's places change between send
    // buffer and scratch, and where the blocks reach block 0 (the same blocks at both ends).
    auto cutsFrom = [&](int firstBlock) {
      std::vector<int> cuts{0};
      for (int u = 1; u < places; ++u) {
        const bool wraps = (firstBlock + u) % n == 0;
        if (wraps || partial[distance + u] != partial[distance + u - 1] || partial[u] != partial[u - 1]) {
          cuts.push_back(u);
        }
      }
      cuts.push_back(places);
      return cuts;
    };
    // Where a place's value is: its partial sum in scratch, or this rank's input.
    auto valueOf = [&](int place) {
      return partial[place] ? BufferSlice{BufferKind::kScratch, static_cast<size_t>(place) * blockCount}
                            : BufferSlice{BufferKind::kSend, blockOffset(rank, n, place, blockCount)};
    };
    const size_t phase = steps.size();
    std::vector<int> cuts = cutsFrom((rank + distance) % n);
    for (size_t k = 0; k + 1 < cuts.size(); ++k) {
      const int place = distance + cuts[k];
      Step send;
      send.count = static_cast<size_t>(cuts[k + 1] - cuts[k]) * blockCount;
      send.sendPeer = to;
      send.contribute = !partial[place];
      send.src = valueOf(place);
      steps.push_back(send);
    }
    cuts = cutsFrom(rank);
    for (size_t k = 0; k + 1 < cuts.size(); ++k) {
      const int place = cuts[k];
      Step receive;
      receive.count = static_cast<size_t>(cuts[k + 1] - cuts[k]) * blockCount;
      receive.recvPeer = from;
      receive.contribute = true;
      receive.srcIsPartial = partial[place];
      receive.src = valueOf(place);
      // The last exchange completes place 0, this rank's own block.
      receive.finalize = distance == 1;
      receive.dst = distance == 1 ? BufferSlice{BufferKind::kRecv, 0}
                                  : BufferSlice{BufferKind::kScratch, static_cast<size_t>(place) * blockCount};
      steps.push_back(receive);
    }
    markPhaseStart(steps, phase);
    for (int place = 0; place < places; ++place) partial[place] = true;
  }
}

void buildBruckAllGather(const OpShape& shape, Program* program) {
  assert(shape.collective == Collective::kAllGather);
  ProgramBuilder builder(program);
  if (shape.count == 0) return;
  const int n = shape.nranks;
  const int rank = shape.rank;
  const size_t blockCount = shape.count;
  std::vector<Step>& steps = builder.startLane(0);
  Step own;
  own.count = blockCount;
  own.src = {BufferKind::kSend, 0};
  own.dst = {BufferKind::kRecv, static_cast<size_t>(rank) * blockCount};
  steps.push_back(own);
  for (int distance = 1; distance < n; distance *= 2) {
    const int places = std::min(distance, n - distance);
    const int to = (rank - distance + n) % n;
    const int from = (rank + distance) % n;
    addWindowSteps(rank, n, 0, places, blockCount, steps, [to](size_t offset, size_t count) {
      Step send;
      send.count = count;
      send.src = {BufferKind::kRecv, offset};
      send.sendPeer = to;
      return send;
    });
    addWindowSteps(rank, n, distance, distance + places, blockCount, steps, [from](size_t offset, size_t count) {
      Step receive;
      receive.count = count;
      receive.recvPeer = from;
      receive.dst = {BufferKind::kRecv, offset};
      return receive;
    });
  }
}

}  // namespace weft::algorithms
