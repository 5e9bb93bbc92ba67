#pragma once
// Direct schedules: AllToAll, Gather, Scatter, Send and Recv move each block straight from the
// rank that has it to the rank that needs it, one lane per peer and direction.

#include "algorithms/collective.h"
#include "algorithms/program_builder.h"

namespace weft::algorithms {

/// The channel that carries the direct traffic from rank `src` to rank `dst`. Both ends compute the
/// same one; the peers that follow a rank on the ring of ranks use consecutive channels, so a
/// rank's lanes spread over the channels. Needs nranks > 0 and nChannels > 0.
int directChannel(int src, int dst, int nranks, int nChannels);

/// Appends `shape.rank`'s lanes for a direct collective (AllToAll, Gather, Scatter, Send, Recv)
/// with a positive count: sends start with the peer after this rank (rank+1, rank+2, ...),
/// receives with the peer before it, and a local block copy (if any) comes last.
void addDirectLanes(const OpShape& shape, int nChannels, ProgramBuilder& builder);

}  // namespace weft::algorithms
