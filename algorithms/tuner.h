#pragma once
// The tuner: the predicted time of each algorithm Weft has for an operation, from a cost model of
// the hops between ranks, and the fastest one that NCCL_ALGO allows.
//
// The model, for host memory: every step of an algorithm hands data from rank to rank, and the
// slowest kind of hop it takes (the network when ranks span hosts or NCCL_SHM_DISABLE is set;
// shared memory otherwise) sets the cost of every step: `latency` per step, and bytes moved at
// `bandwidth`. For an AllReduce of S bytes over n ranks:
//   ring  2(n-1) steps; each rank sends 2(n-1)/n x S:        2(n-1) a + 2(n-1)/n S / b
//   tree  2d steps (d: the trees' depth); T trees (one per channel, at most two) each carry S/T,
//         and a rank inner in one sends its part up once and down twice, a leaf once; pipelined
//         over slots, one tree measures 2.5 S / b rather than 3:
//                                                             2d a + (T == 1 ? 2.5 : 2) S / b
//         Over several hosts the trees are NCCL's (algorithms/node_tree.h): of the d hops, those
//         along a host's chain cost a shared-memory step, those between hosts a network step.
// Over several hosts a ring's steps are not alike either: of its n hops, one per host crosses the
// network and the others stay on shared memory, and the steps that follow one another around the
// ring pay each kind in that proportion (NCCL's model does the same); its bandwidth is the
// network's.
// A Broadcast (ring: n-1 steps, S / b pipelined) over the trees goes down only, an inner rank
// sending its part to two children, and a Reduce up only, the mirror image:
//                                                             d a + (T == 1 ? 2 : 1) S / b
// An AllGather or ReduceScatter of blocks of S bytes (one per rank) takes the ring n-1 steps,
// each rank moving (n-1) S:                                    (n-1) a + (n-1) S / b
// and with Bruck's schedule (pat) ceil(log2 n) steps for the same bytes:
//                                                              ceil(log2 n) a + L (n-1) S / b
// An AllReduce by recursive halving-doubling (rhd) over p = 2^floor(log2 n) ranks, the other
// n - p folded into partners (f = 2 when n > p: the input handed over, the result handed back),
// its exchanges one after another, each a step that both partners finish (measured as x = 1.1
// steps on shared memory, 1.7 over the network):   (2 log2 p + f) x a + L (2(p-1)/p + f) S / b
// L is what their exchanges' bytes cost against the ring's: 1 while the largest exchange (Bruck's
// last step, about half of what a rank receives; rhd's first halving, S/2, or its hand-over, S)
// fits one slot, so that each step is one hand-off; 1.2 beyond, where a step's pieces follow one
// another through the slots and the next step waits for the last, while the ring streams them.
// Measured on 4 and 8 ranks (docs/PERFORMANCE.md): pat and rhd take 0.6-0.95x the ring's time up
// to 512 KiB, 1.1-1.6x from 2 MiB.
// Other collectives have only the ring.
//
// Each algorithm runs with either protocol: Simple, or LL (data and flag in one word,
// transport/shm/layout.h), whose shared-memory hops cost `sharedMemoryLL` in place of
// `sharedMemory`: a step that may be shorter (one cache line changes hands rather than a count,
// a size and the data), a lower bandwidth (half of every LL word is its flag, and the piece is
// packed and unpacked). Hops over the network carry LL pieces in Simple slots, at the network's
// cost. The constants are defaults measured on a small host (2 cores, 2 to 8 ranks), where an LL
// step measured no shorter than a Simple one (docs/PERFORMANCE.md), so by default Simple wins
// every tie and LL is chosen only where a tune file (weft tune --calibrate) measured it faster.
// The choice depends on the constants' ratios.
//
// Each call also takes a channel count k, from NCCL_MIN_NCHANNELS to the communicator's channels
// (the ring spreads over all k; the tree over min(2, k), one tree per channel; pat and rhd run on
// channel 0 alone). The data is split into k parts that move side by side, and the rank's one
// thread serves the k channels' hand-offs in turn. With k channels a hop's step costs
// a + (k-1) c (c: `channelLatencyUs`), and its bandwidth is min(k b, p) (b: one channel's; p:
// `peakBandwidthGBps`, what all channels reach together, such as a core's copies or a NIC).
// Fewer channels win ties. The built-in c and p are `weft tune --calibrate`'s on a small host (2
// cores, 4 ranks): a further channel added 0.54 us to a shared-memory step of 8.7 (0.37 with LL;
// 0.5 for both, so that LL gains no edge from it) and 33 us to a network step of 57 (30); four
// channels moved 1.12x, 0.96x and 0.87x what one did, so one channel reaches the peak (p = b).
// There a call takes one channel unless NCCL_MIN_NCHANNELS says more (or, over two channels, the
// tree its second tree for large data); on a host whose one channel falls short of its peak (a
// tune file measured it), large calls spread and small ones keep to one channel.

#include <algorithm>
#include <cstddef>
#include <cstdint>

#include "algorithms/algorithm_filter.h"
#include "algorithms/collective.h"
#include "algorithms/protocol_filter.h"

namespace weft::algorithms {

struct HopCost {
  double latencyUs = 0;      // per step, on one channel
  double bandwidthGBps = 0;  // bytes a rank moves per second over this kind of hop on one channel, / 1e9
  /// What each channel beyond the first adds to a step (its hand-offs, served in turn).
  double channelLatencyUs = 0;
  /// What a rank's channels move together at most, GB/s; 0 (or less than bandwidthGBps): what one moves.
  double peakBandwidthGBps = 0;
};

struct CostModel {
  HopCost sharedMemory{4, 5, 0.5};
  HopCost sharedMemoryLL{4, 0.9, 0.5};
  HopCost network{60, 0.5, 30};
};

/// The fewest channels with which every kind of hop in `model` reaches its peak bandwidth (1 where
/// one channel does).
int channelsToPeak(const CostModel& model);

/// NCCL's most channels (MAXCHANNELS), which a communicator on host memory keeps to.
inline constexpr int kMaxChannels = 32;

/// A communicator's host channels: those it builds, and the fewest a call takes.
struct ChannelBounds {
  int built = 1;
  int fewestPerCall = 1;
};

/// The bounds for NCCL_MIN_NCHANNELS and NCCL_MAX_NCHANNELS (<= 0: unset): it builds
/// NCCL_MAX_NCHANNELS channels, else channelsToPeak(model), but never fewer than NCCL_MIN_NCHANNELS,
/// which is the fewest a call takes; both within 1..kMaxChannels.
ChannelBounds hostChannelBounds(int64_t minChannels, int64_t maxChannels, const CostModel& model);

/// What the tuner picks for an operation.
struct TuneChoice {
  Algorithm algorithm = Algorithm::kRing;
  Protocol protocol = Protocol::kSimple;
  int channels = 1;  // the communicator's first `channels` channels carry it
  bool operator==(const TuneChoice&) const = default;
};

/// The algorithms Weft has on host memory, in the order the tuner tries them (the first wins a tie).
inline constexpr Algorithm kWeftAlgorithms[] = {Algorithm::kRing, Algorithm::kTree, Algorithm::kPat, Algorithm::kRhd};

/// The protocols Weft has, in the order the tuner tries them (the first wins a tie).
inline constexpr Protocol kWeftProtocols[] = {Protocol::kSimple, Protocol::kLL};

/// Slots per connection.
inline constexpr int kSlotsPerConnection = 8;

/// A connection's Simple slot for NCCL_BUFFSIZE = `buffSize`: its share of the buffer (at least
/// 4 KiB), 64-byte aligned.
constexpr size_t simpleSlotBytes(int64_t buffSize) {
  const int64_t slot = std::max<int64_t>(buffSize / kSlotsPerConnection, 4096);
  return static_cast<size_t>(slot) & ~size_t{63};
}

/// A Simple slot at NCCL_BUFFSIZE's default (4 MiB).
inline constexpr size_t kDefaultSlotBytes = simpleSlotBytes(int64_t{4} << 20);

/// What the tuner knows about one operation and its communicator.
struct TuneShape {
  Collective collective = Collective::kAllReduce;
  size_t bytes = 0;           // the whole buffer (AllReduce, Broadcast, Reduce) or per rank
  int nranks = 1;
  bool networkHops = false;   // some hop goes over the network
  int treeDepth = 0;          // treeDepth(nranks): the flat trees of one host
  /// The trees over several hosts (communicatorTreeDepths; a rooted collective's trees are the same
  /// turned): hops along a host's chain, costed as shared memory, and between hosts; both 0 on one host.
  int localTreeDepth = 0;
  int hostTreeDepth = 0;
  /// Hops of the ring that stay on shared memory while the others cross the network (ranks over
  /// several hosts: nranks - hosts); 0 when every hop is of one kind.
  int localRingHops = 0;
  int channels = 1;     // the communicator's channels: the most a call may use
  int minChannels = 1;  // NCCL_MIN_NCHANNELS: the fewest a call of an algorithm that spreads uses
  /// A connection's Simple slot (simpleSlotBytes): the most one hand-off carries.
  size_t slotBytes = kDefaultSlotBytes;
};

/// The most hops from the root to a rank in the trees buildTreeAllReduce lays over n ranks.
int treeDepth(int nranks);

/// The channel counts a call of `algorithm` may take on `shape`'s communicator: the ring up to
/// every channel, the tree up to two (a tree per channel), pat and rhd one (channel 0); from
/// shape.minChannels, or the most when that is fewer.
struct ChannelRange {
  int fewest = 1;
  int most = 1;
};
ChannelRange channelRange(Algorithm algorithm, const TuneShape& shape);

/// Predicted microseconds of `choice` (its algorithm, protocol and channel count) for `shape`
/// under `model`; infinity for what Weft does not have (an algorithm other than ring, tree for
/// AllReduce, Broadcast and Reduce, pat for AllGather and ReduceScatter, and rhd for AllReduce;
/// LL128).
double predictMicroseconds(const TuneChoice& choice, const TuneShape& shape, const CostModel& model);

/// The channel count in `algorithm`'s channelRange with the least predicted time for `protocol`
/// (the fewest on a tie), and that time.
TuneChoice fastestChannels(Algorithm algorithm, Protocol protocol, const TuneShape& shape, const CostModel& model,
                           double* predicted);

/// The choice for a collective that NCCL_ALGO does not govern (all-to-all, gather, scatter, send,
/// receive): the ring's schedule (direct lanes) with Simple on every one of the communicator's
/// `channels`.
constexpr TuneChoice ungovernedChoice(int channels) {
  return TuneChoice{Algorithm::kRing, Protocol::kSimple, std::max(1, channels)};
}

/// Whether Weft has `algorithm` for `collective` on host memory: predictMicroseconds gives it a time.
bool hasAlgorithm(Algorithm algorithm, Collective collective);

/// The (algorithm, protocol, channels) the filters allow with the least predicted time (ring,
/// Simple and fewer channels win ties); false when they allow none that Weft has for the collective.
bool chooseAlgorithm(const TuneShape& shape, const AlgorithmFilter& algorithms, const ProtocolFilter& protocols,
                     const CostModel& model, TuneChoice* chosen);

/// Predicted microseconds of the operation as Weft would run it: the choice's for the collectives
/// NCCL_ALGO governs (infinity when the filters allow none), one Simple hop for a send or
/// receive, the ring's with Simple (n-1 steps, (n-1)/n S) for the others (all-to-all, gather,
/// scatter).
double estimateMicroseconds(const TuneShape& shape, const AlgorithmFilter& algorithms,
                            const ProtocolFilter& protocols, const CostModel& model);

}  // namespace weft::algorithms
