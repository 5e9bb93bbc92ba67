// AllReduce between two ranks in one exchange: each rank sends its (scaled) input to the other,
// then reduces what it receives with its own input. One hand-off instead of the ring's two, for
// latency. Both ranks combine the same two values, in opposite operand order: callers use it only
// for operators whose result does not depend on that order, bit for bit (sum, product, PreMulSum).

#include <cassert>

#include "algorithms/even_split.h"
#include "algorithms/program_builder.h"
#include "algorithms/schedule.h"

namespace weft::algorithms {

void buildPairExchangeAllReduce(const OpShape& shape, std::span<const Ring> rings, Program* program) {
  assert(shape.collective == Collective::kAllReduce && shape.nranks == 2 && !rings.empty());
  ProgramBuilder builder(program);
  const int peer = 1 - shape.rank;
  for (size_t channel = 0; channel < rings.size(); ++channel) {
    const ElementRange part = evenPartInUnits(shape.count, rings.size(), channel, shape.granule);
    if (part.count == 0) continue;
    std::vector<Step>& steps = builder.startLane(static_cast<int>(channel));
    Step give;
    give.count = part.count;
    give.src = {BufferKind::kSend, part.offset};
    give.contribute = true;
    give.sendPeer = peer;
    steps.push_back(give);
    Step combine;
    combine.count = part.count;
    combine.recvPeer = peer;
    combine.src = {BufferKind::kSend, part.offset};
    combine.contribute = true;
    combine.finalize = true;
    combine.dst = {BufferKind::kRecv, part.offset};
    steps.push_back(combine);
  }
}

}  // namespace weft::algorithms
