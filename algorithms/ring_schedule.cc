// Ring schedules. On each channel, the ranks form a ring and rank ring[i] sends to ring[i+1]; the
// channel's part of the data moves around it:
//   AllReduce      reduce-scatter then all-gather over nranks chunks of the part (2n-1 steps)
//   ReduceScatter  the reduce-scatter half, over the channel's part of every rank's block
//   AllGather      a local copy of the own block, then the all-gather half
//   Broadcast      a pipeline from the root around the ring
//   Reduce         a pipeline around the ring that ends at the root
// Steps that would move no element are left out on both ends of a connection alike, because both
// ends derive the chunk of every step from the same shape.

#include <algorithm>
#include <cassert>

#include "algorithms/direct_schedule.h"
#include "algorithms/even_split.h"
#include "algorithms/program_builder.h"
#include "algorithms/schedule.h"

namespace weft::algorithms {
namespace {

BufferSlice sendAt(size_t offset) { return {BufferKind::kSend, offset}; }
BufferSlice recvAt(size_t offset) { return {BufferKind::kRecv, offset}; }

// One rank's place on one channel's ring.
class RingPlace {
 public:
  RingPlace(const Ring& ring, int rank) : ring_(ring), size_(static_cast<int>(ring.size())) {
    position_ = positionOf(rank);
  }

  int size() const { return size_; }
  int position() const { return position_; }
  /// The rank `distance` places after this one on the ring; a negative distance looks back.
  int rankAfter(int distance) const { return ring_[wrap(position_ + distance)]; }
  int next() const { return rankAfter(1); }
  int prev() const { return rankAfter(-1); }
  /// How many places after `rank` this rank sits, in [0, size).
  int distanceFrom(int rank) const { return wrap(position_ - positionOf(rank)); }
  /// Ring position of the chunk `distance` places after this rank's own.
  int positionAfter(int distance) const { return wrap(position_ + distance); }

 private:
  int wrap(int position) const { return ((position % size_) + size_) % size_; }
  int positionOf(int rank) const {
    auto found = std::find(ring_.begin(), ring_.end(), rank);
    assert(found != ring_.end());
    return static_cast<int>(found - ring_.begin());
  }

  const Ring& ring_;
  int size_;
  int position_ = 0;
};

void addStep(std::vector<Step>& steps, const Step& step) {
  if (step.count > 0) steps.push_back(step);
}

// The part is cut into one chunk per ring position. In step s of the reduce-scatter, a rank
// reduces the chunk s+1 positions behind its own, so that its last step completes its own chunk;
// in step t of the all-gather, it forwards the chunk t+1 positions behind.
void addAllReduceSteps(const RingPlace& ring, ElementRange part, size_t granule, std::vector<Step>& steps) {
  const int n = ring.size();
  auto chunk = [&](int distance) {
    ElementRange range = evenPartInUnits(part.count, n, ring.positionAfter(distance), granule);
    range.offset += part.offset;
    return range;
  };
  for (int s = 0; s < n; ++s) {
    ElementRange range = chunk(-s - 1);
    Step step;
    step.count = range.count;
    step.src = sendAt(range.offset);
    step.contribute = true;
    if (s > 0) step.recvPeer = ring.prev();
    if (n > 1) step.sendPeer = ring.next();
    if (s == n - 1) {
      step.finalize = true;
      step.dst = recvAt(range.offset);
    }
    addStep(steps, step);
  }
  for (int t = 0; t + 1 < n; ++t) {
    ElementRange range = chunk(-t - 1);
    Step step;
    step.count = range.count;
    step.recvPeer = ring.prev();
    step.dst = recvAt(range.offset);
    if (t + 2 < n) step.sendPeer = ring.next();
    addStep(steps, step);
  }
}

// `part` is the channel's range within every rank's block of `blockCount` elements.
void addReduceScatterSteps(const RingPlace& ring, size_t blockCount, ElementRange part, std::vector<Step>& steps) {
  const int n = ring.size();
  for (int s = 0; s < n; ++s) {
    Step step;
    step.count = part.count;
    step.src = sendAt(static_cast<size_t>(ring.rankAfter(-s - 1)) * blockCount + part.offset);
    step.contribute = true;
    if (s > 0) step.recvPeer = ring.prev();
    if (s + 1 < n) {
      step.sendPeer = ring.next();
    } else {
      step.finalize = true;
      step.dst = recvAt(part.offset);
    }
    addStep(steps, step);
  }
}

void addAllGatherSteps(const RingPlace& ring, int rank, size_t blockCount, ElementRange part,
                       std::vector<Step>& steps) {
  const int n = ring.size();
  Step copy;
  copy.count = part.count;
  copy.src = sendAt(part.offset);
  copy.dst = recvAt(static_cast<size_t>(rank) * blockCount + part.offset);
  addStep(steps, copy);
  if (n == 1) return;
  Step first;
  first.count = part.count;
  first.src = sendAt(part.offset);
  first.sendPeer = ring.next();
  addStep(steps, first);
  for (int t = 1; t < n; ++t) {
    Step step;
    step.count = part.count;
    step.recvPeer = ring.prev();
    step.dst = recvAt(static_cast<size_t>(ring.rankAfter(-t)) * blockCount + part.offset);
    if (t + 1 < n) step.sendPeer = ring.next();
    addStep(steps, step);
  }
}

void addBroadcastSteps(const RingPlace& ring, int root, ElementRange part, std::vector<Step>& steps) {
  const int n = ring.size();
  const int distance = ring.distanceFrom(root);
  Step step;
  step.count = part.count;
  if (distance == 0) {
    if (n > 1) {
      step.src = sendAt(part.offset);
      step.sendPeer = ring.next();
      addStep(steps, step);
    }
    Step copy;
    copy.count = part.count;
    copy.src = sendAt(part.offset);
    copy.dst = recvAt(part.offset);
    addStep(steps, copy);
    return;
  }
  step.recvPeer = ring.prev();
  step.dst = recvAt(part.offset);
  if (distance + 1 < n) step.sendPeer = ring.next();
  addStep(steps, step);
}

void addReduceSteps(const RingPlace& ring, int root, ElementRange part, std::vector<Step>& steps) {
  const int n = ring.size();
  const int distance = ring.distanceFrom(root);
  Step step;
  step.count = part.count;
  step.src = sendAt(part.offset);
  step.contribute = true;
  // The pipeline starts right after the root and ends at it.
  if (distance != 1 && n > 1) step.recvPeer = ring.prev();
  if (distance == 0) {
    step.finalize = true;
    step.dst = recvAt(part.offset);
  } else {
    step.sendPeer = ring.next();
  }
  addStep(steps, step);
}

void addRingLanes(const OpShape& shape, std::span<const Ring> rings, ProgramBuilder& builder) {
  const size_t nChannels = rings.size();
  for (size_t channel = 0; channel < nChannels; ++channel) {
    assert(rings[channel].size() == static_cast<size_t>(shape.nranks));
    const ElementRange part = evenPartInUnits(shape.count, nChannels, channel, shape.granule);
    if (part.count == 0) continue;
    const RingPlace ring(rings[channel], shape.rank);
    std::vector<Step>& steps = builder.startLane(static_cast<int>(channel));
    switch (shape.collective) {
      case Collective::kAllReduce:
        addAllReduceSteps(ring, part, shape.granule, steps);
        break;
      case Collective::kReduceScatter:
        addReduceScatterSteps(ring, shape.count, part, steps);
        break;
      case Collective::kAllGather:
        addAllGatherSteps(ring, shape.rank, shape.count, part, steps);
        break;
      case Collective::kBroadcast:
        addBroadcastSteps(ring, shape.root, part, steps);
        break;
      case Collective::kReduce:
        addReduceSteps(ring, shape.root, part, steps);
        break;
      default:
        assert(false && "not a ring collective");
    }
  }
}

}  // namespace

void buildRingProgram(const OpShape& shape, std::span<const Ring> rings, Program* program) {
  assert(!rings.empty());
  assert(shape.rank >= 0 && shape.rank < shape.nranks);
  ProgramBuilder builder(program);
  if (shape.count == 0) return;
  switch (shape.collective) {
    case Collective::kAllReduce:
    case Collective::kReduceScatter:
    case Collective::kAllGather:
    case Collective::kBroadcast:
    case Collective::kReduce:
      addRingLanes(shape, rings, builder);
      return;
    case Collective::kAllToAll:
    case Collective::kGather:
    case Collective::kScatter:
    case Collective::kSend:
    case Collective::kRecv:
      addDirectLanes(shape, static_cast<int>(rings.size()), builder);
      return;
  }
}

}  // namespace weft::algorithms
