#include "tools/weft/calibrate.h"

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "algorithms/tune_file.h"
#include "tools/weft/local_ranks.h"

namespace weft::tools {
namespace {

constexpr size_t kLargestBytes = size_t{16} << 20;
constexpr size_t kSizeFactor = 8;  // all_reduce_perf's -f: from the smallest size, it reaches kLargestBytes

// The channels of the second sweep of each kind of hop, against one: what a channel adds to a step,
// and whether channels together move more than one.
constexpr int kSpreadChannels = 4;

// How long a rank may wait without progress (WEFT_TIMEOUT), and how long a sweep may run in all
// before every rank is ended: far beyond what either takes on a busy machine, so that only a hang
// reaches them.
constexpr int kStuckSeconds = 60;
constexpr int kSweepBaseSeconds = 120;
constexpr int kSweepSecondsPerIteration = 2;

// The smallest size measured: the least of 8, 64, 512, ... bytes (kLargestBytes / 8^k) in which
// every rank's block of every channel's ring holds a float. With fewer floats than ranks most of
// the ring's steps carry nothing and finish at once, and the time would understate a step (at 8
// ranks, 8 B measured half of 32 B's time).
size_t smallestBytes(int ranks, int channels) {
  const size_t floats = static_cast<size_t>(ranks) * static_cast<size_t>(channels);
  size_t bytes = 8;
  while (bytes < sizeof(float) * floats && bytes * kSizeFactor <= kLargestBytes) bytes *= kSizeFactor;
  return bytes;
}

std::string findPerf(const CalibrationOptions& options) {
  std::filesystem::path dir = options.perfDir;
  if (dir.empty()) {
    std::error_code error;
    dir = std::filesystem::read_symlink("/proc/self/exe", error).parent_path().parent_path() / "perf";
  }
  return (dir / "all_reduce_perf").string();
}

// The lines of a rank's output, each prefixed with its rank, for a failure message.
std::string rankOutputs(const LocalJobResult& job) {
  std::string text;
  for (size_t rank = 0; rank < job.output.size(); ++rank) {
    std::istringstream lines(job.output[rank]);
    for (std::string line; std::getline(lines, line);) text += "  rank " + std::to_string(rank) + ": " + line + "\n";
  }
  return text;
}

// Runs the sweep as `ranks` processes; fills time in microseconds (out of place) by size from rank
// 0's table. False, with *why, when a rank fails, the sweep hangs or the table is missing.
bool runSweep(const std::string& perf, int ranks, int channels, int iterations, bool network, const char* protocol,
              std::map<size_t, double>* times, std::string* why) {
  const size_t smallestSize = smallestBytes(ranks, channels);
  LocalJob job;
  job.program = perf;
  job.arguments = {"-b", std::to_string(smallestSize), "-e", std::to_string(kLargestBytes), "-f",
                   std::to_string(kSizeFactor), "-n", std::to_string(iterations), "-w",
                   std::to_string(std::max(1, iterations / 5)), "-c", "0"};
  job.ranks = ranks;
  job.environment = {
      {"NCCL_ALGO", "ring"},
      {"NCCL_PROTO", protocol},
      {"NCCL_SOCKET_IFNAME", "lo"},
      {"NCCL_SHM_DISABLE", network ? "1" : "0"},
      {"NCCL_MIN_NCHANNELS", std::to_string(channels)},
      {"NCCL_MAX_NCHANNELS", std::to_string(channels)},
      // A rank that waits this long without progress fails and says what it waited for.
      {"WEFT_TIMEOUT", std::to_string(kStuckSeconds)},
  };
  job.unset = {"WEFT_TUNE_FILE"};
  job.deadline = std::chrono::seconds(kSweepBaseSeconds + kSweepSecondsPerIteration * iterations);
  const LocalJobResult result = runLocalJob(job);
  std::istringstream lines(result.output[0]);
  for (std::string line; std::getline(lines, line);) {
    std::istringstream columns(line);
    size_t size = 0, count = 0;
    std::string type, op, root;
    double time = 0;
    if (line.empty() || line[0] == '#' || !(columns >> size >> count >> type >> op >> root >> time)) continue;
    (*times)[size] = time;
  }
  if (!result.ok || !times->contains(smallestSize) || !times->contains(kLargestBytes)) {
    *why = "all_reduce_perf failed (" + (result.ok ? std::string("its table lacks a size") : result.why) +
           "; run it by hand with the same settings to see more):\n" + rankOutputs(result);
    return false;
  }
  return true;
}

// Runs the sweep `repeats` times (runSweep) and keeps each size's median time: the middle one, or
// the mean of the middle two.
bool runMedianSweep(const std::string& perf, int ranks, int channels, int iterations, int repeats, bool network,
                    const char* protocol, std::map<size_t, double>* times, std::string* why) {
  std::map<size_t, std::vector<double>> runs;
  for (int run = 0; run < repeats; ++run) {
    std::map<size_t, double> one;
    if (!runSweep(perf, ranks, channels, iterations, network, protocol, &one, why)) return false;
    for (const auto& [size, time] : one) runs[size].push_back(time);
  }
  times->clear();
  for (auto& [size, values] : runs) {
    std::sort(values.begin(), values.end());
    const size_t middle = values.size() / 2;
    (*times)[size] = values.size() % 2 == 1 ? values[middle] : (values[middle - 1] + values[middle]) / 2;
  }
  return true;
}

// Fits the ring allreduce's model to one sweep.
algorithms::HopCost fit(const std::map<size_t, double>& times, int ranks) {
  const double n = ranks;
  const double small = times.begin()->second;  // the sweep's smallest size (-b): runSweep made sure it was measured
  const double large = times.at(kLargestBytes);
  algorithms::HopCost hop;
  hop.latencyUs = std::max(small / (2 * (n - 1)), 0.01);
  const double bytesUs = std::max(large - small, 1e-3) / (2 * (n - 1) / n);  // S / b, in microseconds
  hop.bandwidthGBps = static_cast<double>(kLargestBytes) / bytesUs / 1e3;
  return hop;
}

}  // namespace

int runCalibration(const CalibrationOptions& options) {
  if (options.ranks < 2) {
    std::fprintf(stderr, "weft tune --calibrate: --ranks must be at least 2 (a hop needs two ranks)\n");
    return 1;
  }
  const std::string perf = findPerf(options);
  if (access(perf.c_str(), X_OK) != 0) {
    std::fprintf(stderr, "weft tune --calibrate: no all_reduce_perf at %s; build the perf binaries or give "
                 "--perf-dir\n", perf.c_str());
    return 1;
  }
  algorithms::CostModel model;
  nlohmann::json details;
  // Each sweep measures one kind of hop.
  struct Sweep {
    const char* what;
    bool network;
    const char* protocol;  // NCCL_PROTO
    algorithms::HopCost algorithms::CostModel::*hop;
    const char* detailsKey;
  };
  const Sweep sweeps[] = {
      {"shared memory", false, "simple", &algorithms::CostModel::sharedMemory, "shared_memory_sweep_us"},
      {"shared memory, LL", false, "ll", &algorithms::CostModel::sharedMemoryLL, "shared_memory_ll_sweep_us"},
      {"network", true, "simple", &algorithms::CostModel::network, "network_sweep_us"},
  };
  for (const Sweep& sweep : sweeps) {
    // One channel, then kSpreadChannels.
    algorithms::HopCost fitted[2];
    for (int spread = 0; spread < 2; ++spread) {
      const int channels = spread == 0 ? 1 : kSpreadChannels;
      std::map<size_t, double> times;
      std::string why;
      std::printf("# measuring %s%s: %d ranks of %s, NCCL_ALGO=ring NCCL_PROTO=%s, %d channel(s), %zu B and %zu B, "
                  "median of %d runs\n",
                  sweep.what, sweep.network ? " (NCCL_SHM_DISABLE=1)" : "", options.ranks, perf.c_str(), sweep.protocol,
                  channels, smallestBytes(options.ranks, channels), kLargestBytes, options.repeats);
      std::fflush(stdout);
      if (!runMedianSweep(perf, options.ranks, channels, options.iterations, options.repeats, sweep.network,
                          sweep.protocol, &times, &why)) {
        std::fprintf(stderr, "weft tune --calibrate: %s\n", why.c_str());
        return 1;
      }
      fitted[spread] = fit(times, options.ranks);
      nlohmann::json measured;
      for (const auto& [size, time] : times) measured[std::to_string(size)] = time;
      details[std::string(sweep.detailsKey) + (spread == 0 ? "" : "_" + std::to_string(channels) + "_channels")] =
          measured;
    }
    algorithms::HopCost& hop = model.*sweep.hop;
    hop = fitted[0];
    hop.channelLatencyUs = std::max(0.0, (fitted[1].latencyUs - fitted[0].latencyUs) / (kSpreadChannels - 1));
    // Channels add bandwidth only where they measured clearly more than one (runs differ by some 10%).
    hop.peakBandwidthGBps = fitted[1].bandwidthGBps > 1.2 * fitted[0].bandwidthGBps ? fitted[1].bandwidthGBps : 0;
    std::printf("#   %s: %.2f us per step, %.3f GB/s; %d channels: %.2f us per step, %.3f GB/s (a channel adds %.2f us "
                "to a step; %s)\n",
                sweep.what, hop.latencyUs, hop.bandwidthGBps, kSpreadChannels, fitted[1].latencyUs,
                fitted[1].bandwidthGBps, hop.channelLatencyUs,
                hop.peakBandwidthGBps > 0 ? "channels add bandwidth" : "one channel reaches the peak");
  }
  char host[256] = {};
  gethostname(host, sizeof(host) - 1);
  details["measured_on"] = host;
  details["cpus"] = sysconf(_SC_NPROCESSORS_ONLN);
  details["ranks"] = options.ranks;
  details["how"] =
      "weft tune --calibrate: all_reduce_perf, NCCL_ALGO=ring, NCCL_PROTO simple and ll, on 1 and 4 channels, each "
      "fitted to 2(n-1) a + 2(n-1)/n S / b; a channel adds (a4 - a1) / 3 to a step, and the peak is b4 where it "
      "exceeds 1.2 b1";
  std::ofstream file(options.output);
  file << algorithms::tuneFileText(model, details.dump());
  if (!file.good()) {
    std::fprintf(stderr, "weft tune --calibrate: cannot write %s\n", options.output.c_str());
    return 1;
  }
  std::printf("# wrote %s: set WEFT_TUNE_FILE=%s for the tuner to use it\n", options.output.c_str(),
              options.output.c_str());
  return 0;
}

}  // namespace weft::tools
