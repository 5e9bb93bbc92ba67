// AllReduce by recursive halving and doubling (Rabenseifner's; NCCL_ALGO=rhd): 2 log2(p)
// exchanges, where the ring takes 2(n - 1) steps, for the ring's bytes. It wins at mid sizes on
// many ranks, where the ring's steps cost more than the tree's extra bytes.
//
// For p the largest power of two up to n, the first 2r = 2(n - p) ranks fold in pairs: even rank
// 2k sends its input to rank 2k + 1, which reduces it into its own and takes part in its place
// (virtual rank k); ranks from 2r on are virtual ranks r.. p - 1. The p virtual ranks then
// reduce-scatter by recursive halving: in the exchange with the partner whose virtual rank
// differs in bit m (m from p/2 down to 1), each keeps one half of its range (the lower when its
// bit is clear), sends the other, and reduces the partner's copy of its half into its own. After
// log2(p) exchanges virtual rank v holds the sum of the v-th of p near-equal parts. Recursive
// doubling retraces the exchanges backwards, each rank sending what it holds and receiving what
// it gave away, and the folded ranks finally receive the whole result.
//
// Partial sums are written in the receive buffer (in place, over input already sent or reduced),
// and each exchange is a phase of its own (Step::startsPhase): a send reads sums that any piece
// of the previous exchange's receive may write.

#include <algorithm>
#include <bit>
#include <cassert>
#include <vector>

#include "algorithms/program_builder.h"
#include "algorithms/schedule.h"

namespace weft::algorithms {
namespace {

struct Range {
  size_t begin = 0;
  size_t end = 0;
  size_t count() const { return end - begin; }
};

}  // namespace

void buildRhdAllReduce(const OpShape& shape, Program* program) {
  assert(shape.collective == Collective::kAllReduce);
  ProgramBuilder builder(program);
  if (shape.count == 0) return;
  const int n = shape.nranks;
  const int rank = shape.rank;
  std::vector<Step>& steps = builder.startLane(0);
  bool partial = false;  // this rank's data is a partial sum in the receive buffer, not its input
  // Appends a phase: send `sent` to `peer`, then reduce what `peer` sends of `kept` into this
  // rank's copy (or, with reduce false, receive it as it is); an empty range gives no step.
  auto exchange = [&](int peer, Range sent, Range kept, bool reduce, bool finalize) {
    const size_t phase = steps.size();
    if (sent.count() > 0) {
      Step send;
      send.count = sent.count();
      send.sendPeer = peer;
      send.contribute = !partial;
      send.src = {partial ? BufferKind::kRecv : BufferKind::kSend, sent.begin};
      steps.push_back(send);
    }
    if (kept.count() > 0) {
      Step receive;
      receive.count = kept.count();
      receive.recvPeer = peer;
      if (reduce) {
        receive.contribute = true;
        receive.srcIsPartial = partial;
        receive.src = {partial ? BufferKind::kRecv : BufferKind::kSend, kept.begin};
      }
      receive.finalize = finalize;
      receive.dst = {BufferKind::kRecv, kept.begin};
      steps.push_back(receive);
    }
    markPhaseStart(steps, phase);
  };
  const Range all{0, shape.count};
  const Range none{};
  if (n == 1) {
    steps.push_back(singleRankReduction(shape.count));
    return;
  }
  const int p = static_cast<int>(std::bit_floor(static_cast<unsigned>(n)));
  const int folded = n - p;  // pairs that fold into one virtual rank
  const bool inPair = rank < 2 * folded;
  if (inPair && rank % 2 == 0) {
    exchange(rank + 1, all, none, false, false);
    exchange(rank + 1, none, all, false, false);
    return;
  }
  if (inPair) {
    exchange(rank - 1, none, all, true, false);
    partial = true;
  }
  const int virtualRank = inPair ? rank / 2 : rank - folded;
  auto realRank = [folded](int v) { return v < folded ? 2 * v + 1 : v + folded; };
  Range held = all;
  std::vector<Range> given;  // what each halving exchange gave away, to take back when doubling
  for (int bit = p / 2; bit >= 1; bit /= 2) {
    const size_t middle = held.begin + held.count() / 2;
    const Range lower{held.begin, middle};
    const Range upper{middle, held.end};
    const bool keepsUpper = (virtualRank & bit) != 0;
    const Range kept = keepsUpper ? upper : lower;
    const Range sent = keepsUpper ? lower : upper;
    exchange(realRank(virtualRank ^ bit), sent, kept, true, bit == 1);
    partial = true;
    given.push_back(sent);
    held = kept;
  }
  for (int bit = 1; bit < p; bit *= 2) {
    const Range taken = given.back();
    given.pop_back();
    exchange(realRank(virtualRank ^ bit), held, taken, false, false);
    held = Range{std::min(held.begin, taken.begin), std::max(held.end, taken.end)};
  }
  if (inPair) exchange(rank - 1, all, none, false, false);
}

}  // namespace weft::algorithms
