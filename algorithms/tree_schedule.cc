// AllReduce, Broadcast and Reduce over binary trees, for latency.
//
// AllReduce: a part of the data goes up a tree (each node combines
// its children's partial results with its own input and passes the result to its parent; the root
// finalizes it) and comes back down (each node forwards the root's result to its children). A rank
// waits for 2 x depth hand-offs instead of the ring's 2(n-1), and every rank ends with the root's
// bits, whatever the operator.
//
// The trees come as each rank's place in them, one per channel (node_tree.h picks a communicator's:
// up to two, as NCCL's double binary tree, the second mirroring or shifting the first so a rank
// that forwards in one is mostly a leaf in the other; on one host laid over the positions of the
// first ring, whose neighbours are near each other; over several hosts a chain per host and trees
// between the hosts). Each tree carries an even part of the data on a channel of its own.
//
// Broadcast: the root's data goes down the trees (d hand-offs instead of the ring's n-1), the
// communicator's trees turned so that the broadcast's root is their root (node_tree.h,
// rootedTreePlaces; over several hosts a chain per host, starting at the root on its host).
// Reduce: up the same turned trees, as an AllReduce's way up, finalized at the root.

#include <algorithm>
#include <cassert>

#include "algorithms/even_split.h"
#include "algorithms/node_tree.h"
#include "algorithms/program_builder.h"
#include "algorithms/schedule.h"

namespace weft::algorithms {
namespace {

// Down a tree: at a rank with a parent, the data from it into the output and on to the first
// child, then from the output to each other child; at the root, `rootData` to each child.
void addDownSteps(const TreePlace& tree, ElementRange part, BufferSlice rootData, std::vector<Step>& steps) {
  const BufferSlice result{BufferKind::kRecv, part.offset};
  const bool root = tree.parent < 0;
  if (!root) {
    Step step;
    step.count = part.count;
    step.recvPeer = tree.parent;
    step.dst = result;
    if (!tree.children.empty()) step.sendPeer = tree.children[0];
    steps.push_back(step);
  }
  for (size_t i = root ? 0 : 1; i < tree.children.size(); ++i) {
    Step step;
    step.count = part.count;
    step.src = root ? rootData : result;
    step.sendPeer = tree.children[i];
    steps.push_back(step);
  }
}

// Up the tree: the own input, then one child after another into a partial result in scratch
// memory; the last combination goes to the parent (or, at the root, is the finalized result in the
// output buffer).
void addUpSteps(const TreePlace& tree, ElementRange part, std::vector<Step>& steps) {
  const BufferSlice own{BufferKind::kSend, part.offset};
  const BufferSlice partial{BufferKind::kScratch, part.offset};
  const bool root = tree.parent < 0;
  const size_t combinations = std::max<size_t>(1, tree.children.size());
  for (size_t i = 0; i < combinations; ++i) {
    Step step;
    step.count = part.count;
    step.contribute = true;
    step.src = i == 0 ? own : partial;
    step.srcIsPartial = i > 0;
    if (i < tree.children.size()) step.recvPeer = tree.children[i];
    if (i + 1 < combinations) {
      step.dst = partial;
    } else if (!root) {
      step.sendPeer = tree.parent;
    } else {
      step.finalize = true;
      step.dst = BufferSlice{BufferKind::kRecv, part.offset};
    }
    steps.push_back(step);
  }
}

// With TreeLanes::kTwo every rank but the root runs its way up and its way down as two lanes (as
// NCCL splits a tree channel's threads), so that pieces stream both ways instead of each waiting
// for the round trip of the one before. The lanes use different connection ends and the way up
// keeps its partial results in scratch memory; in place, the way down overwrites the input the
// way up read, which data flow orders: a piece of the result comes down only after this rank's
// part of it went up. The root runs both ways in one lane and sends each piece down as soon as it
// is final.
void addTreeAllReduceLanes(const TreePlace& tree, ElementRange part, int channel, TreeLanes lanes,
                           ProgramBuilder& builder) {
  const BufferSlice result{BufferKind::kRecv, part.offset};
  std::vector<Step>& up = builder.startLane(channel);
  addUpSteps(tree, part, up);
  const bool oneLane = lanes == TreeLanes::kOne || tree.parent < 0;
  addDownSteps(tree, part, result, oneLane ? up : builder.startLane(channel));
}

void addTreeBroadcastSteps(const TreePlace& tree, ElementRange part, std::vector<Step>& steps) {
  const BufferSlice own{BufferKind::kSend, part.offset};
  addDownSteps(tree, part, own, steps);
  if (tree.parent < 0) {
    // The root's input into its own output too.
    Step copy;
    copy.count = part.count;
    copy.src = own;
    copy.dst = BufferSlice{BufferKind::kRecv, part.offset};
    steps.push_back(copy);
  }
}

// One lane per tree (tree t on channel t, with an even part t of the data), from `addSteps`.
void buildOnRootedTrees(const OpShape& shape, std::span<const TreePlace> trees,
                        void (*addSteps)(const TreePlace&, ElementRange, std::vector<Step>&), Program* program) {
  assert(!trees.empty());
  ProgramBuilder builder(program);
  if (shape.count == 0) return;
  for (size_t t = 0; t < trees.size(); ++t) {
    const ElementRange part = evenPartInUnits(shape.count, trees.size(), t, shape.granule);
    if (part.count == 0) continue;
    addSteps(trees[t], part, builder.startLane(static_cast<int>(t)));
  }
}

}  // namespace

void buildTreeBroadcast(const OpShape& shape, std::span<const TreePlace> trees, Program* program) {
  assert(shape.collective == Collective::kBroadcast);
  buildOnRootedTrees(shape, trees, addTreeBroadcastSteps, program);
}

void buildTreeReduce(const OpShape& shape, std::span<const TreePlace> trees, Program* program) {
  assert(shape.collective == Collective::kReduce);
  buildOnRootedTrees(shape, trees, addUpSteps, program);
}

void buildTreeAllReduceOnTrees(const OpShape& shape, std::span<const TreePlace> trees, TreeLanes lanes,
                               Program* program) {
  assert(shape.collective == Collective::kAllReduce && !trees.empty());
  ProgramBuilder builder(program);
  if (shape.count == 0) return;
  for (size_t t = 0; t < trees.size(); ++t) {
    const ElementRange part = evenPartInUnits(shape.count, trees.size(), t, shape.granule);
    if (part.count == 0) continue;
    addTreeAllReduceLanes(trees[t], part, static_cast<int>(t), lanes, builder);
  }
}

void buildTreeAllReduce(const OpShape& shape, std::span<const Ring> rings, TreeLanes lanes, Program* program) {
  const std::vector<TreePlace> places = communicatorTreePlaces(rings, {}, shape.rank);
  buildTreeAllReduceOnTrees(shape, places, lanes, program);
}

}  // namespace weft::algorithms
