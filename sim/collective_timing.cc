#include "sim/collective_timing.h"

#include <map>
#include <vector>

#include "algorithms/even_split.h"
#include "algorithms/node_tree.h"
#include "algorithms/schedule.h"

namespace weft::sim {

using algorithms::Collective;

const char* simAlgorithmName(SimAlgorithm algorithm) { return algorithm == SimAlgorithm::kRing ? "ring" : "tree"; }

bool simulates(Collective collective, SimAlgorithm algorithm) {
  if (algorithm == SimAlgorithm::kTree) return collective == Collective::kAllReduce;
  return collective == Collective::kAllReduce || collective == Collective::kAllGather ||
         collective == Collective::kReduceScatter || collective == Collective::kBroadcast ||
         collective == Collective::kReduce;
}

double busBandwidthFactor(Collective collective, int nranks) {
  const double n = nranks;
  if (collective == Collective::kAllReduce) return 2 * (n - 1) / n;
  if (collective == Collective::kAllGather || collective == Collective::kReduceScatter) return (n - 1) / n;
  return 1;
}

CollectiveTiming timeCollective(const Fabric& fabric, Collective collective, SimAlgorithm algorithm, size_t bytes,
                                TimingOptions options) {
  CollectiveTiming timing;
  if (!simulates(collective, algorithm)) {
    timing.error = std::string(simAlgorithmName(algorithm)) + " is not modelled for " + collectiveName(collective);
    return timing;
  }
  options.elementSize = 4;
  const int n = fabric.ranks();
  const int channels = fabric.channels();
  const bool countPerRank = collective == Collective::kAllGather || collective == Collective::kReduceScatter;
  const size_t count = bytes / options.elementSize / (countPerRank ? n : 1);

  // Every channel's connections in the order of its structure (ring positions; the tree node by
  // node, down each chain), so that channels laid out alike list alike.
  std::vector<std::vector<Connection>> connectionsOf(channels);
  std::vector<std::vector<algorithms::TreePlace>> placesOf(channels);
  for (int c = 0; c < channels; ++c) {
    if (algorithm == SimAlgorithm::kRing) {
      const algorithms::Ring& ring = fabric.ring(c);
      for (int i = 0; n > 1 && i < n; ++i) connectionsOf[c].push_back({c, ring[i], ring[(i + 1) % n]});
      continue;
    }
    placesOf[c].resize(n);
    for (const std::vector<int>& chain : fabric.chains(c)) {
      for (int rank : chain) {
        placesOf[c][rank] = algorithms::nodeTreePlace(fabric.chains(c), c % 2, rank);
        const int parent = placesOf[c][rank].parent;
        if (parent < 0) continue;
        connectionsOf[c].push_back({c, rank, parent});
        connectionsOf[c].push_back({c, parent, rank});
      }
    }
  }
  std::vector<Connection> all;
  for (const auto& connections : connectionsOf) all.insert(all.end(), connections.begin(), connections.end());
  const std::unordered_map<uint64_t, LinkTiming> links = fabric.share(all);

  std::map<std::vector<float>, double> timed;  // a channel's layout -> its time
  double slowest = 0;
  for (int c = 0; c < channels; ++c) {
    const size_t part = algorithms::evenPart(count, channels, c).count;
    if (part == 0) continue;
    // Shares summed in different orders differ in their last bits: compared as floats.
    std::vector<float> layout = {static_cast<float>(part), algorithm == SimAlgorithm::kTree ? c % 2 : 0.0f};
    for (const Connection& connection : connectionsOf[c]) {
      const LinkTiming& link = links.at(Fabric::key(c, connection.from, connection.to));
      layout.push_back(static_cast<float>(link.bytesPerMicrosecond));
      layout.push_back(static_cast<float>(link.pieceLatencyMicroseconds));
      layout.push_back(static_cast<float>(link.stepLatencyMicroseconds));
    }
    const auto known = timed.find(layout);
    if (known != timed.end()) {
      slowest = std::max(slowest, known->second);
      continue;
    }
    const ProgramSource programOf = [&](int rank, algorithms::Program* program) {
      const algorithms::OpShape shape{collective, part, 0, n, rank};
      if (algorithm == SimAlgorithm::kRing) {
        algorithms::buildRingProgram(shape, std::span<const algorithms::Ring>(&fabric.ring(c), 1), program);
      } else {
        // As the host executor: two lanes per tree rank once the part spans several pieces.
        const algorithms::TreeLanes lanes = part * options.elementSize > options.pieceBytes
                                                ? algorithms::TreeLanes::kTwo
                                                : algorithms::TreeLanes::kOne;
        algorithms::buildTreeAllReduceOnTrees(shape, std::span<const algorithms::TreePlace>(&placesOf[c][rank], 1),
                                              lanes, program);
      }
    };
    const LinkSource linkOf = [&](int, int from, int to) { return links.at(Fabric::key(c, from, to)); };
    const TimingResult result = timePrograms(n, programOf, linkOf, options);
    if (!result.ok()) {
      timing.error = "channel " + std::to_string(c) + ": " + result.error;
      return timing;
    }
    timed.emplace(std::move(layout), result.microseconds);
    slowest = std::max(slowest, result.microseconds);
  }
  timing.microseconds = slowest + kLaunchMicroseconds;
  timing.algBandwidth = static_cast<double>(bytes) / timing.microseconds / 1000;
  timing.busBandwidth = timing.algBandwidth * busBandwidthFactor(collective, n);
  return timing;
}

}  // namespace weft::sim
