#pragma once
// Which thread block of a step-kernel launch runs which lanes, in what order. Every build has
// this (the GPU executor uses it; unit tests check it anywhere, on a simulation of the kernel).
//
// The kernel runs a block's lanes one after the other, each lane's steps in rounds of one piece
// (src/device/lane_loop.h), except where they are folded (below). Lanes that share a connection end must run in call order, so they
// share a block; the others get blocks of their own and run at once. A launch may not exceed the
// communicator's blocks per rank (src/device/residency.h, NCCL_MAX_CTAS), yet an all-to-all has a
// lane per peer and direction, and a Send/Recv group as many as it likes. Such lanes are folded
// into fewer blocks, as NCCL schedules its peer-to-peer work:
//
// - A lane that sends to rank r + d or receives from rank r - d (mod n) has *distance* d; a local
//   copy has distance 0. Distance d goes to block d mod B, and every block runs its distances in
//   increasing order, on every rank.
// - Within a distance, the block alternates windows of W pieces (W = the connections' slot count,
//   the same on every rank and never more than any connection's): W pieces of its sends (its
//   lanes to r + d, in call order, as one stream), then W pieces of its receives (from r - d),
//   then the next W of each: one run (KernelRun) of two streams, which the kernel walks itself, so
//   that the tables hold each lane once however long it is. A distance's local copies run whole
//   before it. The stream a rank sends to a peer is the stream that peer receives, piece for
//   piece: one connection carries it (Send/Recv between two ranks take one channel), and NCCL
//   requires a rank's sends to a peer in the order of the peer's receives.
//
// Why no rank waits forever: every wait of distance d on rank r is for a peer's lane of the same
// distance (r + d frees slots, r - d posts pieces) or for the earlier distances of r's own block.
// Within a distance, send window j to r + d fills at most W slots, which r + d has freed once it
// received its window j - 1; receive window j from r - d needs only that rank's send window j. So
// by induction window j of distance d completes on every rank once window j - 1 has, and distance
// d once every smaller one has, whichever block each rank put it in. A rank whose lanes fit its
// blocks runs each lane whole, in a block shared only with the lanes of the same connection end:
// it waits for nothing but its partners, and fits the argument too. (tests/unit/block_plan_test.cc
// simulates the kernel on such plans, and on broken ones.)

#include <cstdint>
#include <span>
#include <vector>

#include "src/base/status.h"
#include "src/device/kernel_work.h"

namespace weft::device {

/// One lane of a launch, as the plan sees it.
struct PlannedLane {
  /// The connection ends its steps use, each a number that names (channel, peer, direction).
  std::vector<uint64_t> endpoints;
  uint64_t rounds = 0;  // pieces of its longest step
  /// A lane of one step that sends to a peer and receives from none (sendPeer), or receives from
  /// a peer and sends to none (recvPeer), or moves nothing between ranks (neither: a local copy).
  /// Only such lanes can be folded; a ring lane, which does both, sets `chained`.
  int sendPeer = -1;
  int recvPeer = -1;
  bool chained = false;
};

/// One block of a launch: the lanes it runs, as indices into the plan's input, and its runs in
/// order, whose lanes are positions in `lanes` (KernelRun; run_walk.h walks them as the kernel
/// does). The runs take the block's lanes in order, each once.
struct PlannedBlock {
  std::vector<uint32_t> lanes;
  std::vector<KernelRun> runs;
};

/// Every lane that moves something is in exactly one block (a lane of no rounds is in none).
using BlockPlan = std::vector<PlannedBlock>;

/// Plans the blocks of a launch of `lanes` (in call order) on rank `rank` of `nranks`: lanes that
/// share an endpoint in one block, whole and in call order, the others in blocks of their own;
/// where that takes more than `blockLimit` blocks, the lanes folded as the header says into at
/// most `blockLimit`, with windows of `window` pieces (the connections' slot count, the same on
/// every rank). An internal error where lanes must be folded but one of them is chained.
Status planBlocks(std::span<const PlannedLane> lanes, int rank, int nranks, int blockLimit, uint64_t window,
                  BlockPlan* plan);

}  // namespace weft::device
