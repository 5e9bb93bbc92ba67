// Bruck's AllGather (NCCL_ALGO=pat): ceil(log2 n) steps instead of the ring's n-1, for small
// sizes, where a step's hand-off costs more than its bytes.
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

}  // namespace

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
