// Exact results of every collective through the public API, ranks as forked processes.
//
// One test per (collective, ranks, transport) creates one communicator; its ranks then loop over
// every data type x reduction x count {0, 1, 7, 4099} x placement x root, checking every element
// (tests/multirank/collective_run.h). The Large tests run 1M+3 elements of int8, bfloat16,
// float32 and float64 with sum, avg and PreMulSum. Tests named Exhaustive... (ctest label
// `exhaustive`) run the whole product at 8 ranks and the large runs at more rank counts. Trees/...
// run AllReduce, Broadcast and Reduce the same way with NCCL_ALGO=tree, on one channel (one tree)
// and two (two trees), on one host and on hosts simulated with NCCL_HOSTID. LowLatency/... run the
// collectives NCCL_ALGO governs with NCCL_PROTO=LL: on the ring and the trees, over shared memory
// (the LL ring) and across simulated hosts (LL pieces in the sockets' Simple slots). Pat/... run
// AllGather and ReduceScatter with Bruck's schedules (NCCL_ALGO=pat), Rhd/... AllReduce by
// recursive halving-doubling (NCCL_ALGO=rhd), the same ways.

#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <string>
#include <vector>

#include "nccl.h"
#include "tests/harness/rank_check.h"
#include "tests/harness/rank_runner.h"
#include "tests/multirank/collective.h"
#include "tests/multirank/collective_run.h"
#include "tests/multirank/element_types.h"
#include "tests/multirank/reduction.h"
#include "tests/multirank/test_inputs.h"
#include "tests/multirank/transport_env.h"

namespace weft::multirank {
namespace {

using harness::RankMode;
using harness::RankRunOptions;
using harness::ScopedComm;

constexpr size_t kCounts[] = {0, 1, 7, 4099};
constexpr size_t kLargeCount = (size_t{1} << 20) + 3;
constexpr uint64_t kSeed = 0x5eed0f3e4f7a11ULL;
constexpr ncclDataType_t kLargeTypes[] = {ncclInt8, ncclBfloat16, ncclFloat32, ncclFloat64};

enum class Coverage {
  kFull,     // every type x reduction x count x placement x root
  kSampled,  // a third of those combinations, still covering every value of each; roots 0, one
             // past the middle and the last
  kLarge,    // kLargeTypes x largeReductionsFor x both placements at kLargeCount; root the last
};

// Below ctest's TIMEOUT for the test (tests/CMakeLists.txt), so that the harness names the stuck
// ranks before ctest kills the process.
constexpr std::chrono::seconds kDeadline{270};
constexpr std::chrono::seconds kExhaustiveDeadline{840};

struct CollectiveCase {
  Collective collective;
  int nranks;
  Transport transport;
  Coverage coverage;
  std::chrono::seconds deadline;
  const char* algorithm = nullptr;  // NCCL_ALGO; null: unset (the default choice)
  int channels = 0;                 // NCCL_MIN_NCHANNELS and NCCL_MAX_NCHANNELS; 0: unset
  int hosts = 0;                    // more than 1: rank r's NCCL_HOSTID is r mod hosts
  const char* protocol = nullptr;   // NCCL_PROTO; null: unset
};

std::string caseName(const ::testing::TestParamInfo<CollectiveCase>& info) {
  const CollectiveCase& c = info.param;
  std::string name = std::string(collectiveName(c.collective)) + "_" + std::to_string(c.nranks) +
                     "ranks_" + transportName(c.transport);
  // 8 ranks run sampled by default and in full under Exhaustive/.
  if (c.coverage == Coverage::kFull && c.nranks > 4) name += "_full";
  if (c.algorithm != nullptr) name += std::string("_") + c.algorithm;
  if (c.channels > 0) name += "_" + std::to_string(c.channels) + "channels";
  if (c.hosts > 1) name += "_" + std::to_string(c.hosts) + "hosts";
  if (c.protocol != nullptr) name += std::string("_") + c.protocol;
  return name;
}

std::vector<int> rootsOf(const CollectiveCase& c) {
  const int n = c.nranks;
  if (!hasRoot(c.collective)) return {0};
  if (c.coverage == Coverage::kLarge) return {n - 1};
  if (c.coverage == Coverage::kSampled && n > 3) return {0, n / 2 + 1, n - 1};
  std::vector<int> all;
  for (int root = 0; root < n; ++root) all.push_back(root);
  return all;
}

std::vector<const ElementType*> typesOf(const CollectiveCase& c) {
  std::vector<const ElementType*> types;
  if (c.coverage == Coverage::kLarge) {
    for (ncclDataType_t type : kLargeTypes) types.push_back(&elementType(type));
  } else {
    for (const ElementType& type : allElementTypes()) types.push_back(&type);
  }
  return types;
}

std::vector<Reduction> reductionsOf(const CollectiveCase& c, const ElementType& type) {
  if (!reduces(c.collective)) return {Reduction{}};  // unused by data movement
  return c.coverage == Coverage::kLarge ? largeReductionsFor(type) : allReductionsFor(type);
}

std::vector<size_t> countsOf(const CollectiveCase& c) {
  if (c.coverage == Coverage::kLarge) return {kLargeCount};
  return std::vector<size_t>(std::begin(kCounts), std::end(kCounts));
}

RankRunOptions optionsFor(const CollectiveCase& c) {
  RankRunOptions options;
  options.nranks = c.nranks;
  options.mode = RankMode::kProcesses;
  options.env = transportEnv(c.transport);
  if (c.algorithm != nullptr) options.env.push_back({"NCCL_ALGO", c.algorithm});
  if (c.protocol != nullptr) options.env.push_back({"NCCL_PROTO", c.protocol});
  if (c.channels > 0) {
    options.env.push_back({"NCCL_MIN_NCHANNELS", std::to_string(c.channels)});
    options.env.push_back({"NCCL_MAX_NCHANNELS", std::to_string(c.channels)});
  }
  options.deadline = c.deadline;
  options.label = std::string(collectiveName(c.collective)) + " over " + transportName(c.transport);
  return options;
}

// The rank function of every test: one communicator, then every combination of the case's
// coverage. Every rank runs the same sequence of calls with the same seeds.
void runCase(const CollectiveCase& c, int nranks, int rank, const ncclUniqueId& id) {
  // Ranks are forked processes: each sets its own host before init.
  if (c.hosts > 1) setenv("NCCL_HOSTID", ("weft-test-host-" + std::to_string(rank % c.hosts)).c_str(), 1);
  ScopedComm comm;
  RANK_CHECK_NCCL(ncclCommInitRank(comm.out(), nranks, id, rank));
  const std::vector<const ElementType*> types = typesOf(c);
  const std::vector<size_t> counts = countsOf(c);
  const std::vector<Placement> placements = placementsOf(c.collective);
  const std::vector<int> roots = rootsOf(c);
  uint64_t iteration = 0;
  for (size_t t = 0; t < types.size(); ++t) {
    const std::vector<Reduction> reductions = reductionsOf(c, *types[t]);
    for (size_t o = 0; o < reductions.size(); ++o) {
      for (size_t n = 0; n < counts.size(); ++n) {
        for (size_t p = 0; p < placements.size(); ++p) {
          for (size_t r = 0; r < roots.size(); ++r) {
            const uint64_t seed = mixBits(kSeed, iteration++, static_cast<uint64_t>(c.collective));
            // Each index sweeps all its values while the others are fixed, so every value of
            // every dimension is still run.
            if (c.coverage == Coverage::kSampled && (t + o + n + p + r) % 3 != 0) continue;
            CollectiveRun run;
            run.collective = c.collective;
            run.type = types[t];
            run.op = reductions[o];
            run.count = counts[n];
            run.placement = placements[p];
            run.root = roots[r];
            run.seed = seed;
            harness::noteRankProgress(run.describe());
            runAndCheck(comm, nranks, rank, run);
            if (harness::rankFailed()) return;
          }
        }
      }
    }
  }
}

std::vector<CollectiveCase> cases(const std::vector<int>& rankCounts, Coverage coverage,
                                  std::chrono::seconds deadline) {
  std::vector<CollectiveCase> all;
  for (Collective collective : allCollectives()) {
    for (int nranks : rankCounts) {
      for (Transport transport : {Transport::kShm, Transport::kSocket}) {
        all.push_back({collective, nranks, transport, coverage, deadline});
      }
    }
  }
  return all;
}

// The collectives Weft has trees for.
constexpr Collective kTreeCollectives[] = {Collective::kAllReduce, Collective::kBroadcast, Collective::kReduce};

// AllReduce, Broadcast and Reduce over trees (NCCL_ALGO=tree): one tree on one channel, two trees
// on two.
std::vector<CollectiveCase> treeCases(const std::vector<int>& rankCounts, Coverage coverage) {
  std::vector<CollectiveCase> all;
  for (int nranks : rankCounts) {
    for (Transport transport : {Transport::kShm, Transport::kSocket}) {
      for (int channels : {1, 2}) {
        for (Collective collective : kTreeCollectives) {
          all.push_back({collective, nranks, transport, coverage, kDeadline, "tree", channels});
        }
      }
    }
  }
  return all;
}

// The same over simulated hosts (NCCL_HOSTID; shared memory within a host, sockets between): the
// trees are then a chain per host and trees between the hosts (turned to the root for Broadcast
// and Reduce).
std::vector<CollectiveCase> treeCasesOverHosts(const std::vector<int>& rankCounts, int hosts, Coverage coverage) {
  std::vector<CollectiveCase> all;
  for (int nranks : rankCounts) {
    for (int channels : {1, 2}) {
      for (Collective collective : kTreeCollectives) {
        all.push_back({collective, nranks, Transport::kShm, coverage, kDeadline, "tree", channels, hosts});
      }
    }
  }
  return all;
}

// The collectives NCCL_ALGO and NCCL_PROTO govern, with NCCL_PROTO=LL: on the ring over shared
// memory, on the trees (AllReduce and Broadcast), and over `hosts` simulated hosts.
std::vector<CollectiveCase> lowLatencyCases(const std::vector<int>& rankCounts, int hosts, Coverage coverage) {
  std::vector<CollectiveCase> all;
  for (int nranks : rankCounts) {
    for (Collective collective : {Collective::kAllReduce, Collective::kAllGather, Collective::kReduceScatter,
                                  Collective::kBroadcast, Collective::kReduce}) {
      all.push_back({collective, nranks, Transport::kShm, coverage, kDeadline, "ring", 0, hosts, "LL"});
      if (collective != Collective::kAllGather && collective != Collective::kReduceScatter) {
        all.push_back({collective, nranks, Transport::kShm, coverage, kDeadline, "tree", 0, hosts, "LL"});
      }
    }
  }
  return all;
}

// The log-step schedules: AllGather and ReduceScatter with Bruck's (NCCL_ALGO=pat), AllReduce by
// recursive halving-doubling (rhd); over shared memory and sockets, with Simple and LL, and over
// `hosts` simulated hosts.
std::vector<CollectiveCase> logStepCases(const char* algorithm, const std::vector<int>& rankCounts, int hosts,
                                         Coverage coverage) {
  const bool pat = std::string(algorithm) == "pat";
  std::vector<CollectiveCase> all;
  for (int nranks : rankCounts) {
    for (Collective collective : pat ? std::vector{Collective::kAllGather, Collective::kReduceScatter}
                                     : std::vector{Collective::kAllReduce}) {
      for (Transport transport : {Transport::kShm, Transport::kSocket}) {
        for (const char* protocol : {"Simple", "LL"}) {
          if (hosts > 1 && transport == Transport::kSocket) continue;
          all.push_back({collective, nranks, transport, coverage, kDeadline, algorithm, 0, hosts, protocol});
        }
      }
    }
  }
  return all;
}

std::vector<CollectiveCase> concat(std::vector<CollectiveCase> a, const std::vector<CollectiveCase>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

class ExactCollective : public ::testing::TestWithParam<CollectiveCase> {};

TEST_P(ExactCollective, MatchesReference) {
  const CollectiveCase c = GetParam();
  EXPECT_TRUE(harness::runRanks(optionsFor(c), [&c](int rank, int nranks, const ncclUniqueId& id) {
    runCase(c, nranks, rank, id);
  }));
}

class LargeCollective : public ::testing::TestWithParam<CollectiveCase> {};

TEST_P(LargeCollective, MatchesReference) {
  const CollectiveCase c = GetParam();
  EXPECT_TRUE(harness::runRanks(optionsFor(c), [&c](int rank, int nranks, const ncclUniqueId& id) {
    runCase(c, nranks, rank, id);
  }));
}

// The default suite (about 2 minutes on 2 idle cores): everything up to 4 ranks, 8 ranks sampled,
// the large runs at 2 and 3 ranks. Exhaustive/ adds 8 ranks in full (under a minute) and the large
// runs at 1, 4 and 8 ranks.
INSTANTIATE_TEST_SUITE_P(Collectives, ExactCollective,
                         ::testing::ValuesIn(concat(cases({1, 2, 3, 4}, Coverage::kFull, kDeadline),
                                                    cases({8}, Coverage::kSampled, kDeadline))),
                         caseName);
INSTANTIATE_TEST_SUITE_P(Collectives, LargeCollective,
                         ::testing::ValuesIn(cases({2, 3}, Coverage::kLarge, kDeadline)), caseName);
INSTANTIATE_TEST_SUITE_P(Trees, ExactCollective,
                         ::testing::ValuesIn(concat(concat(treeCases({1, 2, 3, 4, 5}, Coverage::kFull),
                                                           treeCases({8}, Coverage::kSampled)),
                                                    concat(treeCasesOverHosts({4, 5}, 2, Coverage::kFull),
                                                           treeCasesOverHosts({8}, 3, Coverage::kSampled)))),
                         caseName);
INSTANTIATE_TEST_SUITE_P(Trees, LargeCollective, ::testing::ValuesIn(treeCases({3}, Coverage::kLarge)),
                         caseName);

INSTANTIATE_TEST_SUITE_P(LowLatency, ExactCollective,
                         ::testing::ValuesIn(concat(concat(lowLatencyCases({2, 3, 4}, 0, Coverage::kFull),
                                                           lowLatencyCases({8}, 0, Coverage::kSampled)),
                                                    lowLatencyCases({4}, 2, Coverage::kFull))),
                         caseName);
INSTANTIATE_TEST_SUITE_P(LowLatency, LargeCollective, ::testing::ValuesIn(lowLatencyCases({3}, 0, Coverage::kLarge)),
                         caseName);
INSTANTIATE_TEST_SUITE_P(Pat, ExactCollective,
                         ::testing::ValuesIn(concat(logStepCases("pat", {1, 2, 3, 4, 5, 7, 8}, 0, Coverage::kFull),
                                                    logStepCases("pat", {5}, 2, Coverage::kFull))),
                         caseName);
INSTANTIATE_TEST_SUITE_P(Pat, LargeCollective, ::testing::ValuesIn(logStepCases("pat", {3}, 0, Coverage::kLarge)),
                         caseName);
INSTANTIATE_TEST_SUITE_P(Rhd, ExactCollective,
                         ::testing::ValuesIn(concat(logStepCases("rhd", {1, 2, 3, 4, 5, 6, 8}, 0, Coverage::kFull),
                                                    logStepCases("rhd", {6}, 2, Coverage::kFull))),
                         caseName);
INSTANTIATE_TEST_SUITE_P(Rhd, LargeCollective, ::testing::ValuesIn(logStepCases("rhd", {3, 4}, 0, Coverage::kLarge)),
                         caseName);
INSTANTIATE_TEST_SUITE_P(Exhaustive, ExactCollective,
                         ::testing::ValuesIn(cases({8}, Coverage::kFull, kExhaustiveDeadline)),
                         caseName);
INSTANTIATE_TEST_SUITE_P(Exhaustive, LargeCollective,
                         ::testing::ValuesIn(cases({1, 4, 8}, Coverage::kLarge, kExhaustiveDeadline)),
                         caseName);
// Six ranks oversubscribe two cores threefold: about four minutes of CI's test time (two of its
// wall time) for what 3 ranks and the exact tests at 1 to 8 ranks already cover.
INSTANTIATE_TEST_SUITE_P(ExhaustivePat, LargeCollective,
                         ::testing::ValuesIn(logStepCases("pat", {6}, 0, Coverage::kLarge)), caseName);

}  // namespace
}  // namespace weft::multirank
