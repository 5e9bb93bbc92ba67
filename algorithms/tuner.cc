#include "algorithms/tuner.h"

#include <algorithm>
#include <array>
#include <bit>
#include <cmath>
#include <limits>
#include <vector>

#include "topology/trees.h"

namespace weft::algorithms {

int treeDepth(int nranks) {
  // Each rank's parents, per tree, then the longest walk up to a root.
  std::vector<std::array<int, 2>> parent(nranks);
  for (int rank = 0; rank < nranks; ++rank) {
    const std::array<topology::TreeLinks, 2> links = topology::doubleBinaryTreeLinks(nranks, rank);
    parent[rank] = {links[0].parent, links[1].parent};
  }
  int deepest = 0;
  for (int rank = 0; rank < nranks; ++rank) {
    for (int tree = 0; tree < 2; ++tree) {
      int depth = 0;
      for (int at = parent[rank][tree]; at >= 0; at = parent[at][tree]) ++depth;
      deepest = std::max(deepest, depth);
    }
  }
  return deepest;
}

namespace {

// What the bytes of a schedule of logarithmic steps (Bruck's, recursive halving-doubling) cost
// against the ring's, by the largest exchange: one hand-off while it fits a slot; beyond, its
// pieces pass through the slots one after another, the next step waits for the last, and the
// ring, which streams them, is measured 14-20% faster at 2 MiB on 4 and 8 ranks (docs/PERFORMANCE.md).
double logStepBytesFactor(double largestExchangeBytes, const TuneShape& shape) {
  return largestExchangeBytes <= static_cast<double>(shape.slotBytes) ? 1.0 : 1.2;
}

// An exchange ends only when both partners have sent and received, and every rank works in every
// exchange where a tree's step leaves most ranks idle: at 8 ranks on 2 cores an exchange measured
// 1.1 tree steps over shared memory and 1.7 over sockets (docs/PERFORMANCE.md).
constexpr double kRhdExchangeSteps = 1.1;
constexpr double kRhdNetworkExchangeSteps = 1.7;

// What one of `hop`'s steps costs when `channels` channels share it: one channel's hop with the
// extra channels' hand-offs added to its latency and their bandwidth up to the peak.
HopCost spreadOver(const HopCost& hop, int channels) {
  HopCost spread = hop;
  spread.latencyUs += (channels - 1) * hop.channelLatencyUs;
  spread.bandwidthGBps = std::min(channels * hop.bandwidthGBps, std::max(hop.bandwidthGBps, hop.peakBandwidthGBps));
  return spread;
}

// The prediction on `channels` channels with `model`'s shared-memory hop as the protocol's.
double predictWithHops(Algorithm algorithm, int channels, const TuneShape& shape, const CostModel& oneChannel) {
  CostModel model = oneChannel;
  model.sharedMemory = spreadOver(oneChannel.sharedMemory, channels);
  model.network = spreadOver(oneChannel.network, channels);
  const HopCost& hop = shape.networkHops ? model.network : model.sharedMemory;
  const double n = shape.nranks;
  const double bytesUs = static_cast<double>(shape.bytes) / (hop.bandwidthGBps * 1e3);  // S / b in us
  if (algorithm == Algorithm::kRing) {
    if (shape.nranks <= 1) return bytesUs;
    // A step's latency: the hops' kinds in the proportion the ring has them.
    const double local = shape.localRingHops;
    const double stepUs = ((n - local) * hop.latencyUs + local * model.sharedMemory.latencyUs) / n;
    switch (shape.collective) {
      case Collective::kAllReduce: return 2 * (n - 1) * stepUs + 2 * (n - 1) / n * bytesUs;
      case Collective::kAllGather:
      case Collective::kReduceScatter: return (n - 1) * stepUs + (n - 1) * bytesUs;  // S: one rank's block
      default: return (n - 1) * stepUs + (n - 1) / n * bytesUs;
    }
  }
  const int trees = std::min(2, channels);
  // From the root to the farthest rank: over several hosts along a chain, then between hosts.
  const double treeDepthUs = shape.hostTreeDepth > 0
                                 ? shape.hostTreeDepth * hop.latencyUs + shape.localTreeDepth * model.sharedMemory.latencyUs
                                 : shape.treeDepth * hop.latencyUs;
  if (algorithm == Algorithm::kTree && shape.collective == Collective::kAllReduce) {
    return 2 * treeDepthUs + (trees == 1 ? 2.5 : 2) * bytesUs;
  }
  if (algorithm == Algorithm::kPat &&
      (shape.collective == Collective::kAllGather || shape.collective == Collective::kReduceScatter)) {
    const double steps = std::ceil(std::log2(n));
    // The last step: the blocks that the steps before it (2^(steps-1) blocks) did not bring.
    const double lastStepBytes = (n - std::exp2(steps - 1)) * static_cast<double>(shape.bytes);
    return steps * hop.latencyUs + logStepBytesFactor(lastStepBytes, shape) * (n - 1) * bytesUs;
  }
  if (algorithm == Algorithm::kRhd && shape.collective == Collective::kAllReduce) {
    if (shape.nranks <= 1) return bytesUs;
    const double p = std::bit_floor(static_cast<unsigned>(shape.nranks));
    const double folds = p < n ? 2 : 0;  // the folded pairs' hand-over and hand-back, S each
    const double exchangeUs = (shape.networkHops ? kRhdNetworkExchangeSteps : kRhdExchangeSteps) * hop.latencyUs;
    const double largestExchangeBytes = static_cast<double>(shape.bytes) / (folds > 0 ? 1 : 2);
    return (2 * std::log2(p) + folds) * exchangeUs +
           logStepBytesFactor(largestExchangeBytes, shape) * (2 * (p - 1) / p + folds) * bytesUs;
  }
  if (algorithm == Algorithm::kTree &&
      (shape.collective == Collective::kBroadcast || shape.collective == Collective::kReduce)) {
    // One way only; an inner rank sends its part to two children, or receives it from two.
    return treeDepthUs + (trees == 1 ? 2 : 1) * bytesUs;
  }
  return std::numeric_limits<double>::infinity();
}

}  // namespace

int channelsToPeak(const CostModel& model) {
  int channels = 1;
  for (const HopCost* hop : {&model.sharedMemory, &model.sharedMemoryLL, &model.network}) {
    if (hop->bandwidthGBps <= 0 || hop->peakBandwidthGBps <= hop->bandwidthGBps) continue;
    channels = std::max(channels, static_cast<int>(std::ceil(hop->peakBandwidthGBps / hop->bandwidthGBps - 1e-9)));
  }
  return channels;
}

ChannelBounds hostChannelBounds(int64_t minChannels, int64_t maxChannels, const CostModel& model) {
  ChannelBounds bounds;
  bounds.fewestPerCall = static_cast<int>(std::clamp<int64_t>(minChannels, 1, kMaxChannels));
  const int64_t built = maxChannels > 0 ? maxChannels : channelsToPeak(model);
  bounds.built = static_cast<int>(std::clamp<int64_t>(std::max<int64_t>(bounds.fewestPerCall, built), 1, kMaxChannels));
  return bounds;
}

ChannelRange channelRange(Algorithm algorithm, const TuneShape& shape) {
  const int available = std::max(1, shape.channels);
  const int most = algorithm == Algorithm::kRing ? available : algorithm == Algorithm::kTree ? std::min(2, available) : 1;
  return ChannelRange{std::clamp(shape.minChannels, 1, most), most};
}

double predictMicroseconds(const TuneChoice& choice, const TuneShape& shape, const CostModel& model) {
  switch (choice.protocol) {
    case Protocol::kSimple: return predictWithHops(choice.algorithm, choice.channels, shape, model);
    case Protocol::kLL: {
      CostModel withLL = model;
      withLL.sharedMemory = model.sharedMemoryLL;  // network hops carry LL pieces in Simple slots
      return predictWithHops(choice.algorithm, choice.channels, shape, withLL);
    }
    case Protocol::kLL128: break;
  }
  return std::numeric_limits<double>::infinity();
}

TuneChoice fastestChannels(Algorithm algorithm, Protocol protocol, const TuneShape& shape, const CostModel& model,
                           double* predicted) {
  const ChannelRange range = channelRange(algorithm, shape);
  TuneChoice best{algorithm, protocol, range.fewest};
  *predicted = predictMicroseconds(best, shape, model);
  for (int channels = range.fewest + 1; channels <= range.most; ++channels) {
    const TuneChoice candidate{algorithm, protocol, channels};
    const double time = predictMicroseconds(candidate, shape, model);
    if (time < *predicted) {
      *predicted = time;
      best = candidate;
    }
  }
  return best;
}

bool hasAlgorithm(Algorithm algorithm, Collective collective) {
  TuneShape shape;
  shape.collective = collective;
  shape.nranks = 2;
  return predictMicroseconds(TuneChoice{algorithm, Protocol::kSimple, 1}, shape, CostModel{}) !=
         std::numeric_limits<double>::infinity();
}

bool chooseAlgorithm(const TuneShape& shape, const AlgorithmFilter& algorithms, const ProtocolFilter& protocols,
                     const CostModel& model, TuneChoice* chosen) {
  double best = std::numeric_limits<double>::infinity();
  for (Algorithm algorithm : kWeftAlgorithms) {
    if (!algorithms.allows(shape.collective, algorithm)) continue;
    for (Protocol protocol : kWeftProtocols) {
      if (!protocols.allows(shape.collective, protocol)) continue;
      double predicted = 0;
      const TuneChoice candidate = fastestChannels(algorithm, protocol, shape, model, &predicted);
      if (predicted < best) {
        best = predicted;
        *chosen = candidate;
      }
    }
  }
  return best < std::numeric_limits<double>::infinity();
}

double estimateMicroseconds(const TuneShape& shape, const AlgorithmFilter& algorithms,
                            const ProtocolFilter& protocols, const CostModel& model) {
  if (isPointToPoint(shape.collective)) {
    const HopCost& hop = shape.networkHops ? model.network : model.sharedMemory;
    return hop.latencyUs + static_cast<double>(shape.bytes) / (hop.bandwidthGBps * 1e3);
  }
  TuneChoice chosen = ungovernedChoice(shape.channels);
  if (governedByAlgo(shape.collective) && !chooseAlgorithm(shape, algorithms, protocols, model, &chosen)) {
    return std::numeric_limits<double>::infinity();
  }
  return predictMicroseconds(chosen, shape, model);
}

}  // namespace weft::algorithms
