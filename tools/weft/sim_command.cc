#include "tools/weft/sim_command.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "algorithms/collective_filter.h"
#include "algorithms/tuner.h"
#include "sim/collective_timing.h"
#include "topology/gdr.h"
#include "topology/load.h"

namespace weft::tools {
namespace {

using algorithms::Collective;
using sim::SimAlgorithm;

std::vector<std::string> simAlgorithmNames() {
  std::vector<std::string> names;
  for (SimAlgorithm algorithm : sim::kSimAlgorithms) names.push_back(sim::simAlgorithmName(algorithm));
  return names;
}

struct SimOptions {
  std::string topoFile;
  std::vector<int> nodes = {1};
  std::string collective = "allreduce";
  std::vector<std::string> algorithms = simAlgorithmNames();  // every one modelled for the collective
  size_t minBytes = 8;
  size_t maxBytes = size_t{8} << 30;
  int factor = 4;
  int maxChannels = 32;
  double nicGbps = 0;
  size_t buffSize = size_t{4} << 20;
};

std::vector<size_t> sizesOf(const SimOptions& options) {
  std::vector<size_t> sizes;
  for (size_t bytes = std::max<size_t>(options.minBytes, 4); bytes <= options.maxBytes; bytes *= options.factor) {
    sizes.push_back(bytes);
    if (bytes > std::numeric_limits<size_t>::max() / options.factor) break;
  }
  return sizes;
}

// Schedules that run the same steps (on one node the tree is the ring's chain) differ in their
// times' last bits, summed in different orders: those are ties, won by the algorithm listed first.
bool clearlyFaster(double us, double than) { return us < than * (1 - 1e-9); }

// How the tree compares with the ring over one node count.
struct Crossover {
  int nodes = 0;
  int ranks = 0;
  size_t treeFasterUpTo = 0;  // 0: the tree is never faster
  double smallestRatio = 0;   // tree / ring at the smallest size
};

int runSim(const SimOptions& options) {
  Collective collective = Collective::kAllReduce;
  for (const algorithms::NamedCollective& entry : algorithms::governedCollectives()) {
    if (options.collective == entry.name) collective = entry.collective;
  }
  // In the order of sim::kSimAlgorithms, each once, as far as asked for and modelled.
  std::vector<SimAlgorithm> algorithms;
  for (SimAlgorithm algorithm : sim::kSimAlgorithms) {
    const bool asked = std::find(options.algorithms.begin(), options.algorithms.end(),
                                 sim::simAlgorithmName(algorithm)) != options.algorithms.end();
    if (asked && sim::simulates(collective, algorithm)) algorithms.push_back(algorithm);
  }
  if (algorithms.empty()) {
    std::fprintf(stderr,
                 "weft sim: none of the algorithms asked for is modelled for %s (tree: allreduce, broadcast and "
                 "reduce; rhd: allreduce; pat: allgather and reducescatter)\n",
                 options.collective.c_str());
    return 1;
  }
  topology::System system;
  const std::string file = options.topoFile.empty() ? topology::configuredTopologyFile() : options.topoFile;
  const Status loaded = topology::loadSystem(file, &system);
  if (!loaded.isOk()) {
    std::fprintf(stderr, "weft sim: %s\n", loaded.message().c_str());
    return 1;
  }
  topology::NetGdrPolicy gdr;
  if (const Status policy = topology::netGdrPolicyFromKnobs(&gdr); !policy.isOk()) {
    std::fprintf(stderr, "weft sim: %s\n", policy.message().c_str());
    return 1;
  }
  sim::TimingOptions timing;
  timing.pieceBytes = algorithms::simpleSlotBytes(static_cast<int64_t>(options.buffSize));
  const std::vector<size_t> sizes = sizesOf(options);
  // Where both are timed, the tree against the ring, by node count.
  const auto ringAt = std::find(algorithms.begin(), algorithms.end(), SimAlgorithm::kRing);
  const auto treeAt = std::find(algorithms.begin(), algorithms.end(), SimAlgorithm::kTree);
  const bool compare = ringAt != algorithms.end() && treeAt != algorithms.end();
  std::vector<Crossover> crossovers;
  for (int nodes : options.nodes) {
    sim::FabricOptions fabricOptions;
    fabricOptions.nodes = nodes;
    fabricOptions.maxChannels = options.maxChannels;
    fabricOptions.nicGbps = options.nicGbps;
    fabricOptions.gdr = gdr;
    sim::Fabric fabric;
    const Status built = sim::Fabric::build(system, fabricOptions, &fabric);
    if (!built.isOk()) {
      std::fprintf(stderr, "weft sim: %s\n", built.message().c_str());
      return 1;
    }
    const auto start = std::chrono::steady_clock::now();
    const sim::HopLatencies& latency = fabricOptions.latency;
    std::printf("# %s over %d node(s) like %s: %d ranks (%d GPUs each), %d channels\n",
                algorithms::collectiveName(collective), nodes, system.source().c_str(), fabric.ranks(),
                fabric.gpusPerNode(), fabric.channels());
    if (nodes > 1) std::printf("# NICs %.1f GB/s each (%s)\n", fabric.nicGBps(), fabric.nicSource().c_str());
    std::printf("# hop latency, a step's first piece / the others: NVLink %.1f / %.1f us, PCIe %.1f / %.1f us, "
                "network %.1f / %.1f us\n",
                latency.step.nvlink, latency.piece.nvlink, latency.step.pci, latency.piece.pci, latency.step.network,
                latency.piece.network);
    std::printf("# launch %.1f us; pieces of %zu bytes, %d slots per connection\n", sim::kLaunchMicroseconds,
                timing.pieceBytes, timing.slots);
    std::printf("%14s", "bytes");
    for (SimAlgorithm algorithm : algorithms) {
      const std::string name = sim::simAlgorithmName(algorithm);
      std::printf(" %12s %9s %9s", (name + " us").c_str(), "algbw", "busbw");
    }
    std::printf("%s\n", algorithms.size() > 1 ? "  fastest" : "");
    Crossover crossover{nodes, fabric.ranks(), 0, 0};
    for (size_t bytes : sizes) {
      std::printf("%14zu", bytes);
      std::vector<double> times(algorithms.size());
      for (size_t a = 0; a < algorithms.size(); ++a) {
        const sim::CollectiveTiming result = sim::timeCollective(fabric, collective, algorithms[a], bytes, timing);
        if (!result.ok()) {
          std::printf("\n");
          std::fprintf(stderr, "weft sim: %s\n", result.error.c_str());
          return 1;
        }
        times[a] = result.microseconds;
        std::printf(" %12.1f %9.2f %9.2f", result.microseconds, result.algBandwidth, result.busBandwidth);
      }
      if (compare) {
        const double ring = times[ringAt - algorithms.begin()];
        const double tree = times[treeAt - algorithms.begin()];
        if (clearlyFaster(tree, ring)) crossover.treeFasterUpTo = bytes;
        if (bytes == sizes.front()) crossover.smallestRatio = tree / ring;
      }
      if (algorithms.size() > 1) {
        size_t fastest = 0;
        for (size_t a = 1; a < times.size(); ++a) {
          if (clearlyFaster(times[a], times[fastest])) fastest = a;
        }
        std::printf("  %s", sim::simAlgorithmName(algorithms[fastest]));
      }
      std::printf("\n");
    }
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    std::printf("# simulated in %.2f s\n\n", seconds);
    crossovers.push_back(crossover);
  }
  if (compare && crossovers.size() > 1) {
    std::printf("# where the tree overtakes the ring, by node count\n");
    std::printf("%8s %8s %22s %20s\n", "nodes", "ranks", "tree faster up to", "tree/ring at min");
    for (const Crossover& crossover : crossovers) {
      const std::string upTo = crossover.treeFasterUpTo == 0 ? "never" : std::to_string(crossover.treeFasterUpTo) + " B";
      std::printf("%8d %8d %22s %20.2f\n", crossover.nodes, crossover.ranks, upTo.c_str(), crossover.smallestRatio);
    }
  }
  return 0;
}

}  // namespace

void addSimCommand(CLI::App& app, int* exitCode) {
  auto options = std::make_shared<SimOptions>();
  CLI::App* command = app.add_subcommand(
      "sim", "Time a collective's real schedules over a modelled fabric of --nodes nodes like one topology file "
             "(links shared by the channels that cross them, NCCL's per-hop latencies), per size from --min to "
             "--max and per algorithm");
  command->add_option("--topo-file", options->topoFile,
                      "the NCCL topology XML or hwloc XML file of one node (default: NCCL_TOPO_FILE, else "
                      "WEFT_HWLOC_XML, else this machine)");
  command->add_option("--nodes", options->nodes, "node counts to simulate, e.g. 1,2,4,8")
      ->delimiter(',')
      ->check(CLI::Range(1, 4096))
      ->capture_default_str();
  std::vector<std::string> names;
  for (const algorithms::NamedCollective& entry : algorithms::governedCollectives()) names.push_back(entry.name);
  command->add_option("--collective", options->collective, "the collective")
      ->check(CLI::IsMember(names))
      ->capture_default_str();
  command->add_option("--algo", options->algorithms,
                      "algorithms to time, as modelled for the collective (ring; tree: allreduce, broadcast and "
                      "reduce; rhd: allreduce; pat: allgather and reducescatter)")
      ->delimiter(',')
      ->check(CLI::IsMember(simAlgorithmNames()))
      ->capture_default_str();
  command->add_option("--min", options->minBytes, "the smallest size in bytes (K, M, G suffixes)")
      ->transform(CLI::AsSizeValue(false))
      ->capture_default_str();
  command->add_option("--max", options->maxBytes, "the largest size in bytes (K, M, G suffixes)")
      ->transform(CLI::AsSizeValue(false))
      ->capture_default_str();
  command->add_option("--factor", options->factor, "the ratio between consecutive sizes")
      ->check(CLI::Range(2, 1024))
      ->capture_default_str();
  command->add_option("--max-channels", options->maxChannels, "the most rings searched on a node (NCCL_MAX_NCHANNELS)")
      ->check(CLI::Range(1, 64))
      ->capture_default_str();
  command->add_option("--nic-gbps", options->nicGbps,
                      "each NIC's rate in Gb/s, e.g. 400 (default: the sum of its ports' speeds in the file)")
      ->check(CLI::PositiveNumber);
  command->add_option("--buffsize", options->buffSize, "bytes of each connection's 8 slots (as NCCL_BUFFSIZE)")
      ->transform(CLI::AsSizeValue(false))
      ->check(CLI::Range(size_t{8}, size_t{1} << 34))
      ->capture_default_str();
  command->callback([options, exitCode]() { *exitCode = runSim(*options); });
}

}  // namespace weft::tools
