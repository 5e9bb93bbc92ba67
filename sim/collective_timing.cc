#include "sim/collective_timing.h"

#include <algorithm>
#include <map>
#include <vector>

#include "algorithms/datatype.h"
#include "algorithms/even_split.h"
#include "algorithms/node_tree.h"
#include "algorithms/schedule.h"

namespace weft::sim {

using algorithms::Collective;

const char* simAlgorithmName(SimAlgorithm algorithm) {
  switch (algorithm) {
    case SimAlgorithm::kRing: return "ring";
    case SimAlgorithm::kTree: return "tree";
    case SimAlgorithm::kPat: return "pat";
    case SimAlgorithm::kRhd: return "rhd";
  }
  return "?";
}

bool simulates(Collective collective, SimAlgorithm algorithm) {
  switch (algorithm) {
    case SimAlgorithm::kTree:
      return collective == Collective::kAllReduce || collective == Collective::kBroadcast ||
             collective == Collective::kReduce;
    case SimAlgorithm::kRhd: return collective == Collective::kAllReduce;
    case SimAlgorithm::kPat: return collective == Collective::kAllGather || collective == Collective::kReduceScatter;
    case SimAlgorithm::kRing: break;
  }
  return collective == Collective::kAllReduce || collective == Collective::kAllGather ||
         collective == Collective::kReduceScatter || collective == Collective::kBroadcast ||
         collective == Collective::kReduce;
}

namespace {

constexpr int kRoot = 0;  // of Broadcast and Reduce, as nccl-tests' default

// Pat or rhd: every rank's program on channel 0, the links shared out among the connections that
// are each rank's k-th distinct peer (the exchanges that move at once), for every k apart.
TimingResult timeLogSteps(const Fabric& fabric, Collective collective, SimAlgorithm algorithm, size_t count,
                          const TimingOptions& options) {
  const int n = fabric.ranks();
  std::vector<algorithms::Program> programs(n);
  std::vector<std::vector<Connection>> byOrdinal;
  for (int rank = 0; rank < n; ++rank) {
    const algorithms::OpShape shape{collective, count, kRoot, n, rank};
    if (algorithm == SimAlgorithm::kRhd) {
      algorithms::buildRhdAllReduce(shape, &programs[rank]);
    } else if (collective == Collective::kAllGather) {
      algorithms::buildBruckAllGather(shape, &programs[rank]);
    } else {
      algorithms::buildBruckReduceScatter(shape, &programs[rank]);
    }
    std::vector<int> peers;
    for (const algorithms::Lane& lane : programs[rank].lanes) {
      for (const algorithms::Step& step : lane.steps) {
        if (step.sendPeer < 0 || std::find(peers.begin(), peers.end(), step.sendPeer) != peers.end()) continue;
        if (byOrdinal.size() == peers.size()) byOrdinal.emplace_back();
        byOrdinal[peers.size()].push_back({lane.channel, rank, step.sendPeer});
        peers.push_back(step.sendPeer);
      }
    }
  }
  std::unordered_map<uint64_t, LinkTiming> links;
  for (const std::vector<Connection>& connections : byOrdinal) links.merge(fabric.share(connections));
  // timePrograms asks for each rank's program once.
  const ProgramSource programOf = [&](int rank, algorithms::Program* program) { *program = std::move(programs[rank]); };
  const LinkSource linkOf = [&](int channel, int from, int to) { return links.at(Fabric::key(channel, from, to)); };
  return timePrograms(n, programOf, linkOf, options);
}

}  // namespace

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
  const size_t granule = algorithms::chunkGranule(algorithms::DataType::kFloat32);  // cut as the executors cut
  auto finish = [&](double microseconds) {
    timing.microseconds = microseconds + kLaunchMicroseconds;
    timing.algBandwidth = static_cast<double>(bytes) / timing.microseconds / 1000;
    timing.busBandwidth = timing.algBandwidth * busBandwidthFactor(collective, n);
    return timing;
  };
  if (algorithm == SimAlgorithm::kPat || algorithm == SimAlgorithm::kRhd) {
    const TimingResult result = timeLogSteps(fabric, collective, algorithm, count, options);
    if (!result.ok()) {
      timing.error = result.error;
      return timing;
    }
    return finish(result.microseconds);
  }

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
    // A rooted collective's data moves one way only: down from the root, or up to it.
    const bool up = collective != Collective::kBroadcast;
    const bool down = collective != Collective::kReduce;
    placesOf[c].resize(n);
    for (const std::vector<int>& chain : fabric.chains(c)) {
      for (int rank : chain) {
        placesOf[c][rank] = collective == Collective::kAllReduce
                                ? algorithms::nodeTreePlace(fabric.chains(c), c % 2, rank)
                                : algorithms::rootedNodeTreePlace(fabric.chains(c), c % 2, kRoot,
                                                                   algorithms::RootPlace::kAboveChain, rank);
        const int parent = placesOf[c][rank].parent;
        if (parent < 0) continue;
        if (up) connectionsOf[c].push_back({c, rank, parent});
        if (down) connectionsOf[c].push_back({c, parent, rank});
      }
    }
  }
  std::vector<Connection> all;
  for (const auto& connections : connectionsOf) all.insert(all.end(), connections.begin(), connections.end());
  const std::unordered_map<uint64_t, LinkTiming> links = fabric.share(all);

  std::map<std::vector<float>, double> timed;  // a channel's layout -> its time
  double slowest = 0;
  for (int c = 0; c < channels; ++c) {
    const size_t part = algorithms::evenPartInUnits(count, channels, c, granule).count;
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
      const algorithms::OpShape shape{collective, part, kRoot, n, rank, granule};
      if (algorithm == SimAlgorithm::kRing) {
        algorithms::buildRingProgram(shape, std::span<const algorithms::Ring>(&fabric.ring(c), 1), program);
        return;
      }
      const std::span<const algorithms::TreePlace> tree(&placesOf[c][rank], 1);
      if (collective == Collective::kBroadcast) {
        algorithms::buildTreeBroadcast(shape, tree, program);
      } else if (collective == Collective::kReduce) {
        algorithms::buildTreeReduce(shape, tree, program);
      } else {
        // As the host executor: two lanes per tree rank once the part spans several pieces.
        const algorithms::TreeLanes lanes =
            part * options.elementSize > options.pieceBytes ? algorithms::TreeLanes::kTwo : algorithms::TreeLanes::kOne;
        algorithms::buildTreeAllReduceOnTrees(shape, tree, lanes, program);
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
  return finish(slowest);
}

}  // namespace weft::sim
