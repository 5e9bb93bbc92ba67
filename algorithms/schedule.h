#pragma once
// Schedules: pure functions from one rank's view of an operation to its step program.

#include <span>
#include <vector>

#include "algorithms/collective.h"
#include "algorithms/step.h"

namespace weft::algorithms {

/// The ring of one channel: ring[i] is the rank at position i; rank ring[i] sends to ring[i+1].
using Ring = std::vector<int>;

/// Builds `shape.rank`'s program for `shape` using ring algorithms for collectives over the given
/// channels' rings (at least one; every ring holds every rank once), and direct lanes for
/// AllToAll, Gather, Scatter, Send and Recv. Send and Recv lanes use the point-to-point channels
/// rings.size() .. 2*rings.size()-1, apart from the collectives' connections. The data of a collective is split into contiguous
/// parts, one per channel. Clears and refills `program` (its capacity is reused).
void buildRingProgram(const OpShape& shape, std::span<const Ring> rings, Program* program);

/// AllReduce between exactly two ranks as one exchange on each channel's part: send the (scaled)
/// input, then reduce the peer's with the own. Each step of a part must fit the connection's
/// buffering (both ranks send before either receives): callers use it for small parts only, and
/// only for operators that give the same bits in either operand order (sum, product, PreMulSum).
void buildPairExchangeAllReduce(const OpShape& shape, std::span<const Ring> rings, Program* program);

/// One rank's place in one channel's tree, as ranks: its parent (-1 at the root) and its children.
struct TreePlace {
  int parent = -1;
  std::vector<int> children;
};

/// How a rank of a tree runs its way up and its way down.
enum class TreeLanes {
  kOne,  // one lane: each piece's round trip before the next (least overhead for a single piece)
  kTwo,  // every rank but the root: two lanes of its channel, so that pieces stream both ways
};

/// AllReduce over one tree per channel: trees[c] is this rank's place in channel c's tree (every
/// rank must be given places in the same trees), and channel c carries an even part c of the data,
/// reduced up its tree (children in the order given; partial results in scratch memory),
/// finalized at the root and broadcast back down, so every rank gets the root's bits for any
/// operator.
void buildTreeAllReduceOnTrees(const OpShape& shape, std::span<const TreePlace> trees, TreeLanes lanes,
                               Program* program);

/// buildTreeAllReduceOnTrees over the trees of one host: min(2, rings.size()) trees laid over the
/// positions of rings[0] as topology::doubleBinaryTreeLinks lays them, tree t on channel t.
void buildTreeAllReduce(const OpShape& shape, std::span<const Ring> rings, TreeLanes lanes, Program* program);

/// AllGather in ceil(log2 n) steps (Bruck's; NCCL_ALGO=pat), on channel 0 between ranks i and
/// i +- 2^k in rank order; any size (algorithms/bruck_schedule.cc).
void buildBruckAllGather(const OpShape& shape, Program* program);

/// ReduceScatter in ceil(log2 n) exchanges (Bruck's run backwards; NCCL_ALGO=pat), on channel 0
/// between ranks i and i +- 2^k, each exchange a phase; partial sums in scratch (at most n/2
/// blocks).
void buildBruckReduceScatter(const OpShape& shape, Program* program);

/// AllReduce by recursive halving and doubling (Rabenseifner's; NCCL_ALGO=rhd), on channel 0: for
/// p the largest power of two up to n, the first 2(n - p) ranks fold in pairs (each even rank
/// hands its input to the odd one after it), p ranks reduce-scatter by halving and all-gather by
/// doubling in log2(p) exchanges each with partners 2^k apart, then the folded ranks get the
/// result; each exchange is a phase (algorithms/rhd_schedule.cc).
void buildRhdAllReduce(const OpShape& shape, Program* program);

/// Broadcast down one tree per channel (trees[c]: this rank's place in channel c's tree, each with
/// an even part c of the data), whose root must be the broadcast's root: node_tree.h's
/// rootedTreePlaces (algorithms/tree_schedule.cc).
void buildTreeBroadcast(const OpShape& shape, std::span<const TreePlace> trees, Program* program);

/// Reduce up trees as buildTreeBroadcast takes them: each rank combines its children's partial
/// results (in scratch) with its input and sends them to its parent; the root finalizes.
void buildTreeReduce(const OpShape& shape, std::span<const TreePlace> trees, Program* program);

}  // namespace weft::algorithms
