#include "tools/weft/tune_command.h"

#include <algorithm>
#include <cstdio>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "algorithms/collective_filter.h"
#include "algorithms/gpu_tuner.h"
#include "algorithms/node_tree.h"
#include "algorithms/tune_file.h"
#include "algorithms/tuner.h"
#include "src/base/knobs.h"
#include "topology/nvls.h"
#include "tools/weft/calibrate.h"

namespace weft::tools {
namespace {

struct TuneOptions {
  std::string collective = "allreduce";
  int ranks = 8;
  int nodes = 1;
  int channels = 0;     // 0: as a communicator builds them (NCCL_MAX_NCHANNELS, else the constants')
  int minChannels = 0;  // 0: NCCL_MIN_NCHANNELS
  std::string algo;  // NCCL_ALGO's syntax; default: the environment's
  bool algoGiven = false;
  std::string proto;  // NCCL_PROTO's syntax; default: the environment's
  bool protoGiven = false;
  size_t minBytes = 8;
  size_t maxBytes = size_t{256} << 20;
  bool ranksGiven = false;
  bool calibrate = false;
  bool gpu = false;  // the GPU path's allreduce: ring or NVLS (algorithms/gpu_tuner.h)
  CalibrationOptions calibration;
};

// A table cell: the predicted microseconds, and "/k" for its channel count where there is a choice.
std::string formatCell(double predicted, int channels, bool showChannels) {
  char cell[48];
  if (showChannels) {
    std::snprintf(cell, sizeof(cell), "%.1f/%d", predicted, channels);
  } else {
    std::snprintf(cell, sizeof(cell), "%.1f", predicted);
  }
  return cell;
}

// NCCL_ALGO and NCCL_PROTO as --algo and --proto (or else the environment) give them, and parsed.
struct Filters {
  std::string algo;
  std::string proto;
  algorithms::AlgorithmFilter algorithms;
  algorithms::ProtocolFilter protocols;
};

// False, having said why, where either does not parse.
bool readFilters(const TuneOptions& options, Filters* out) {
  out->algo = options.algoGiven ? options.algo : knobs::getString(knobs::KnobId::kAlgo);
  out->proto = options.protoGiven ? options.proto : knobs::getString(knobs::KnobId::kProto);
  Status parsed = algorithms::parseAlgorithmFilter(out->algo, &out->algorithms);
  if (parsed.isOk()) parsed = algorithms::parseProtocolFilter(out->proto, &out->protocols);
  if (!parsed.isOk()) std::fprintf(stderr, "weft tune: %s\n", parsed.message().c_str());
  return parsed.isOk();
}

// Why a communicator of --ranks such GPUs would make no multicast team (src/core/communicator.cc,
// src/device/nvls_plan.h), or null where it would.
const char* whyNoTeam(const TuneOptions& options, const Filters& filters, const algorithms::GpuCostModel& model) {
  if (options.nodes > 1) return "the ranks span hosts";
  if (options.ranks < 2) return "one rank";
  if (!topology::nvlsEnabledByKnob()) return "NCCL_NVLS_ENABLE is 0";
  if (!algorithms::nvlsCanBeChosen(options.ranks, filters.algorithms, filters.protocols, model)) {
    return "NVLS is never chosen";
  }
  return nullptr;
}

// The table of the GPU path's allreduce over --ranks GPUs of one host whose multicast team offers
// NVLS: the ring's and NVLS's predictions and the choice (algorithms/gpu_tuner.h).
int runGpuTune(const TuneOptions& options) {
  if (options.collective != "allreduce") {
    std::fprintf(stderr, "weft tune: --gpu covers allreduce only (NVLS serves nothing else yet)\n");
    return 1;
  }
  Filters filters;
  if (!readFilters(options, &filters)) return 1;
  const algorithms::AlgorithmFilter& filter = filters.algorithms;
  const std::string& algo = filters.algo;
  const std::string& proto = filters.proto;
  const algorithms::GpuCostModel model;
  const char* noTeam = whyNoTeam(options, filters, model);
  std::printf("# Weft GPU tuner: AllReduce on GPU buffers, %d GPUs of one host that can multicast, NCCL_ALGO %s, "
              "NCCL_PROTO %s\n",
              options.ranks, algo.empty() ? "unset" : algo.c_str(), proto.empty() ? "unset" : proto.c_str());
  std::printf("# NCCL's Hopper constants: ring %.1f us + %.1f us a step, NVLS %.1f us; NVLink %.0f GB/s, NVLS at %.0f%% "
              "of it; predicted us, * the choice%s%s%s\n",
              model.ringLatencyUs, model.ringStepLatencyUs, model.nvlsLatencyUs, model.nvlinkBandwidthGBps,
              100 * model.nvlsEfficiency, noTeam != nullptr ? " (no multicast team is made: " : "",
              noTeam != nullptr ? noTeam : "", noTeam != nullptr ? ")" : "");
  std::printf("%14s %12s %12s  choice\n", "bytes", "ring", "nvls");
  for (size_t bytes = std::max<size_t>(options.minBytes, 1); bytes <= options.maxBytes; bytes *= 4) {
    algorithms::Algorithm chosen = algorithms::Algorithm::kRing;
    const bool any = algorithms::chooseGpuAllReduce(options.ranks, bytes, noTeam == nullptr, filter, model, &chosen);
    std::printf("%14zu", bytes);
    for (algorithms::Algorithm algorithm : {algorithms::Algorithm::kRing, algorithms::Algorithm::kNvls}) {
      const bool offered = algorithm == algorithms::Algorithm::kRing || noTeam == nullptr;
      if (!offered || !filter.allows(algorithms::Collective::kAllReduce, algorithm)) {
        std::printf(" %12s", "-");
        continue;
      }
      const double predicted = algorithms::predictGpuAllReduceMicroseconds(algorithm, options.ranks, bytes, model);
      std::printf(" %11.1f%c", predicted, any && algorithm == chosen ? '*' : ' ');
    }
    std::printf("  %s\n", any ? algorithms::algorithmName(chosen) : "none allowed");
    if (bytes > std::numeric_limits<size_t>::max() / 4) break;
  }
  return 0;
}

int runTune(const TuneOptions& options) {
  algorithms::TuneShape shape;
  for (const algorithms::NamedCollective& entry : algorithms::governedCollectives()) {
    if (options.collective == entry.name) shape.collective = entry.collective;
  }
  shape.nranks = options.ranks;
  const bool shmDisabled = knobs::getBool(knobs::KnobId::kShmDisable);
  shape.networkHops = options.nodes > 1 || shmDisabled;
  shape.treeDepth = algorithms::treeDepth(options.ranks);
  if (options.nodes > 1) {
    // Ranks spread over the nodes as evenly as they go, as a communicator over hosts sees them.
    std::vector<int> hostOfRank(options.ranks);
    for (int rank = 0; rank < options.ranks; ++rank) hostOfRank[rank] = rank % options.nodes;
    const algorithms::HostLayout layout = algorithms::hostLayoutOf(hostOfRank, shmDisabled);
    shape.localTreeDepth = layout.localTreeDepth;
    shape.hostTreeDepth = layout.hostTreeDepth;
    shape.localRingHops = layout.localRingHops;
  }
  shape.slotBytes = algorithms::simpleSlotBytes(knobs::getInt(knobs::KnobId::kBuffSize));
  Filters filters;
  if (!readFilters(options, &filters)) return 1;
  const std::string& algo = filters.algo;
  const std::string& proto = filters.proto;
  const algorithms::AlgorithmFilter& algorithmFilter = filters.algorithms;
  const algorithms::ProtocolFilter& protocolFilter = filters.protocols;
  algorithms::CostModel model;
  const std::string tuneFile = knobs::getString(knobs::KnobId::kTuneFile);
  if (!tuneFile.empty()) {
    const Status loaded = algorithms::loadTuneFile(tuneFile, &model);
    if (!loaded.isOk()) {
      std::fprintf(stderr, "weft tune: %s\n", loaded.message().c_str());
      return 1;
    }
  }
  // The channels as a communicator takes them (src/core/communicator.cc).
  const algorithms::ChannelBounds channels = algorithms::hostChannelBounds(
      options.minChannels > 0 ? options.minChannels : knobs::getInt(knobs::KnobId::kMinNChannels),
      options.channels > 0 ? options.channels : knobs::getInt(knobs::KnobId::kMaxNChannels), model);
  shape.channels = channels.built;
  shape.minChannels = channels.fewestPerCall;
  std::printf("# Weft tuner: %s, %d ranks on %d node(s), %d channel(s) (a call takes at least %d), NCCL_ALGO %s, "
              "NCCL_PROTO %s\n",
              algorithms::collectiveName(shape.collective), shape.nranks, options.nodes, shape.channels, shape.minChannels,
              algo.empty() ? "unset" : algo.c_str(), proto.empty() ? "unset" : proto.c_str());
  std::printf("# a step over shared memory: Simple %.1f us, %.2f GB/s; LL %.1f us, %.2f GB/s",
              model.sharedMemory.latencyUs, model.sharedMemory.bandwidthGBps, model.sharedMemoryLL.latencyUs,
              model.sharedMemoryLL.bandwidthGBps);
  if (shape.networkHops) {
    std::printf("; over the network: %.1f us, %.2f GB/s", model.network.latencyUs, model.network.bandwidthGBps);
  }
  std::printf(" (%s); predicted us on the fastest channel count (/k: k channels), * the choice\n",
              tuneFile.empty() ? "built-in constants" : ("from " + tuneFile).c_str());
  if (shape.hostTreeDepth > 0) {
    std::printf("# the ring's hops: %d between nodes, %d within; allreduce trees: %d hops between nodes, %d along a "
                "node's chain; broadcast and reduce trees: depth %d\n",
                shape.nranks - shape.localRingHops, shape.localRingHops, shape.hostTreeDepth, shape.localTreeDepth,
                shape.treeDepth);
  } else {
    std::printf("# tree depth %d\n", shape.treeDepth);
  }
  // The algorithms Weft has for the collective.
  std::vector<algorithms::Algorithm> shown;
  for (algorithms::Algorithm algorithm : algorithms::kWeftAlgorithms) {
    if (algorithms::hasAlgorithm(algorithm, shape.collective)) shown.push_back(algorithm);
  }
  std::printf("%14s", "bytes");
  for (algorithms::Algorithm algorithm : shown) {
    for (algorithms::Protocol protocol : algorithms::kWeftProtocols) {
      const std::string name = std::string(algorithms::algorithmName(algorithm)) + "/" +
                               algorithms::protocolName(protocol);
      std::printf(" %16s", name.c_str());
    }
  }
  std::printf("  choice\n");
  for (size_t bytes = std::max<size_t>(options.minBytes, 1); bytes <= options.maxBytes; bytes *= 4) {
    shape.bytes = bytes;
    algorithms::TuneChoice chosen;
    const bool any = algorithms::chooseAlgorithm(shape, algorithmFilter, protocolFilter, model, &chosen);
    std::printf("%14zu", bytes);
    for (algorithms::Algorithm algorithm : shown) {
      for (algorithms::Protocol protocol : algorithms::kWeftProtocols) {
        double predicted = 0;
        const algorithms::TuneChoice best = algorithms::fastestChannels(algorithm, protocol, shape, model, &predicted);
        if (!algorithmFilter.allows(shape.collective, algorithm) || !protocolFilter.allows(shape.collective, protocol) ||
            predicted == std::numeric_limits<double>::infinity()) {
          std::printf(" %16s", "-");
        } else {
          const std::string cell = formatCell(predicted, best.channels, shape.channels > 1);
          std::printf(" %15s%c", cell.c_str(), any && best == chosen ? '*' : ' ');
        }
      }
    }
    if (any) {
      std::printf("  %s/%s", algorithms::algorithmName(chosen.algorithm), algorithms::protocolName(chosen.protocol));
      if (shape.channels > 1) std::printf("/%d", chosen.channels);
      std::printf("\n");
    } else {
      std::printf("  none allowed\n");
    }
    if (bytes > std::numeric_limits<size_t>::max() / 4) break;
  }
  return 0;
}

}  // namespace

void addTuneCommand(CLI::App& app, int* exitCode) {
  auto options = std::make_shared<TuneOptions>();
  CLI::App* tune = app.add_subcommand(
      "tune", "Print the tuner's predicted time of each algorithm and protocol and its choice, for sizes from --min to --max "
              "(by factors of 4), as a communicator of --ranks ranks over --nodes nodes would see them");
  std::vector<std::string> names;
  for (const algorithms::NamedCollective& entry : algorithms::governedCollectives()) names.push_back(entry.name);
  tune->add_option("--collective", options->collective, "the collective")
      ->check(CLI::IsMember(names))
      ->capture_default_str();
  tune->add_option("--ranks", options->ranks, "ranks in the communicator (--calibrate: ranks measured, default 2)")
      ->check(CLI::Range(1, 1 << 20))
      ->capture_default_str()
      ->each([options](const std::string&) { options->ranksGiven = true; });
  tune->add_option("--nodes", options->nodes, "hosts the ranks span (more than one: steps go over the network)")
      ->check(CLI::Range(1, 1 << 20))
      ->capture_default_str();
  tune->add_option("--channels", options->channels,
                   "the communicator's channels, the most a call takes (default: NCCL_MAX_NCHANNELS, else as many as "
                   "the constants say add bandwidth); two give two trees")
      ->check(CLI::Range(1, 32));
  tune->add_option("--min-channels", options->minChannels, "the fewest channels a call takes (default: NCCL_MIN_NCHANNELS)")
      ->check(CLI::Range(1, 32));
  tune->add_option("--algo", options->algo, "algorithms allowed, in NCCL_ALGO's syntax (default: NCCL_ALGO)")
      ->each([options](const std::string&) { options->algoGiven = true; });
  tune->add_option("--proto", options->proto, "protocols allowed, in NCCL_PROTO's syntax (default: NCCL_PROTO)")
      ->each([options](const std::string&) { options->protoGiven = true; });
  tune->add_option("--min", options->minBytes, "the smallest size in bytes (K, M, G suffixes)")
      ->transform(CLI::AsSizeValue(false))
      ->capture_default_str();
  tune->add_option("--max", options->maxBytes, "the largest size in bytes (K, M, G suffixes)")
      ->transform(CLI::AsSizeValue(false))
      ->capture_default_str();
  tune->add_flag("--gpu", options->gpu,
                 "the GPU path's allreduce over --ranks GPUs of one host that can multicast: the ring's and NVLS's "
                 "predicted times and the choice");
  tune->add_flag("--calibrate", options->calibrate,
                 "measure this machine's shared-memory and network hops (all_reduce_perf as --ranks processes) and "
                 "write them to --output for WEFT_TUNE_FILE, instead of printing the table");
  tune->add_option("--output", options->calibration.output, "the tune file --calibrate writes")->capture_default_str();
  tune->add_option("--perf-dir", options->calibration.perfDir,
                   "where --calibrate finds all_reduce_perf (default: ../perf beside weft)");
  tune->add_option("--iters", options->calibration.iterations, "timed iterations per size for --calibrate")
      ->check(CLI::Range(1, 100000))
      ->capture_default_str();
  tune->add_option("--repeats", options->calibration.repeats,
                   "runs of each --calibrate sweep; each size's median time is fitted")
      ->check(CLI::Range(1, 99))
      ->capture_default_str();
  tune->callback([options, exitCode]() {
    if (options->calibrate) {
      if (options->ranksGiven) options->calibration.ranks = options->ranks;
      *exitCode = runCalibration(options->calibration);
    } else if (options->gpu) {
      *exitCode = runGpuTune(*options);
    } else {
      *exitCode = runTune(*options);
    }
  });
}

}  // namespace weft::tools
