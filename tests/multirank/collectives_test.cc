// Exact results of every collective through the public API, ranks as forked processes.
//
// One test per (collective, ranks, transport) creates one communicator; its ranks then loop over
// every data type x reduction x count {0, 1, 7, 4099} x placement x root, checking every element
// (tests/multirank/collective_run.h). The Large tests run 1M+3 elements of int8, bfloat16,
// float32 and float64 with sum, avg and PreMulSum. Tests named Exhaustive/... (ctest label
// `exhaustive`) add every root at 8 ranks and the large runs at 1, 4 and 8 ranks.

#include <gtest/gtest.h>

#include <chrono>
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

enum class Roots {
  kAll,      // every rank is root once
  kSampled,  // every rank up to 4 ranks; beyond, 0, one past the middle, the last
  kLast,     // the last rank
};

// Below ctest's TIMEOUT for the test (tests/CMakeLists.txt), so that the harness names the stuck
// ranks before ctest kills the process.
constexpr std::chrono::seconds kDeadline{270};
constexpr std::chrono::seconds kExhaustiveDeadline{840};

struct CollectiveCase {
  Collective collective;
  int nranks;
  Transport transport;
  Roots roots;
  std::chrono::seconds deadline;
};

std::string caseName(const ::testing::TestParamInfo<CollectiveCase>& info) {
  const CollectiveCase& c = info.param;
  std::string name = std::string(collectiveName(c.collective)) + "_" + std::to_string(c.nranks) +
                     "ranks_" + transportName(c.transport);
  if (hasRoot(c.collective) && c.roots == Roots::kAll && c.nranks > 4) name += "_allroots";
  return name;
}

std::vector<int> rootsOf(const CollectiveCase& c) {
  if (!hasRoot(c.collective)) return {0};
  const int n = c.nranks;
  if (c.roots == Roots::kLast) return {n - 1};
  if (c.roots == Roots::kAll || n <= 4) {
    std::vector<int> all;
    for (int root = 0; root < n; ++root) all.push_back(root);
    return all;
  }
  return {0, n / 2 + 1, n - 1};
}

std::vector<Reduction> reductionsOf(Collective collective, const ElementType& type, bool large) {
  if (!reduces(collective)) return {Reduction{}};  // unused by data movement
  return large ? largeReductionsFor(type) : allReductionsFor(type);
}

RankRunOptions optionsFor(const CollectiveCase& c) {
  RankRunOptions options;
  options.nranks = c.nranks;
  options.mode = RankMode::kProcesses;
  options.env = transportEnv(c.transport);
  options.deadline = c.deadline;
  options.label = std::string(collectiveName(c.collective)) + " over " + transportName(c.transport);
  return options;
}

// Every rank runs the same sequence of calls: the seeds come from the position in the loops.
void runCase(const CollectiveCase& c, const std::vector<const ElementType*>& types,
             const std::vector<size_t>& counts, bool large, int nranks, int rank,
             const ncclUniqueId& id) {
  ScopedComm comm;
  RANK_CHECK_NCCL(ncclCommInitRank(comm.out(), nranks, id, rank));
  uint64_t iteration = 0;
  for (const ElementType* type : types) {
    for (const Reduction& op : reductionsOf(c.collective, *type, large)) {
      for (size_t count : counts) {
        for (Placement placement : placementsOf(c.collective)) {
          for (int root : rootsOf(c)) {
            CollectiveRun run;
            run.collective = c.collective;
            run.type = type;
            run.op = op;
            run.count = count;
            run.placement = placement;
            run.root = root;
            run.seed = mixBits(kSeed, iteration++, static_cast<uint64_t>(c.collective));
            harness::noteRankProgress(run.describe());
            runAndCheck(comm, nranks, rank, run);
            if (harness::rankFailed()) return;
          }
        }
      }
    }
  }
}

std::vector<CollectiveCase> cases(const std::vector<Collective>& collectives,
                                  const std::vector<int>& rankCounts, Roots roots,
                                  std::chrono::seconds deadline) {
  std::vector<CollectiveCase> all;
  for (Collective collective : collectives) {
    for (int nranks : rankCounts) {
      for (Transport transport : {Transport::kShm, Transport::kSocket}) {
        all.push_back({collective, nranks, transport, roots, deadline});
      }
    }
  }
  return all;
}

std::vector<Collective> rootedCollectives() {
  std::vector<Collective> rooted;
  for (Collective collective : allCollectives()) {
    if (hasRoot(collective)) rooted.push_back(collective);
  }
  return rooted;
}

class ExactCollective : public ::testing::TestWithParam<CollectiveCase> {};

TEST_P(ExactCollective, MatchesReference) {
  const CollectiveCase c = GetParam();
  std::vector<const ElementType*> types;
  for (const ElementType& type : allElementTypes()) types.push_back(&type);
  const std::vector<size_t> counts(std::begin(kCounts), std::end(kCounts));
  EXPECT_TRUE(harness::runRanks(optionsFor(c),
                                [&](int rank, int nranks, const ncclUniqueId& id) {
                                  runCase(c, types, counts, false, nranks, rank, id);
                                }));
}

class LargeCollective : public ::testing::TestWithParam<CollectiveCase> {};

TEST_P(LargeCollective, MatchesReference) {
  const CollectiveCase c = GetParam();
  std::vector<const ElementType*> types;
  for (ncclDataType_t type : kLargeTypes) types.push_back(&elementType(type));
  EXPECT_TRUE(harness::runRanks(optionsFor(c),
                                [&](int rank, int nranks, const ncclUniqueId& id) {
                                  runCase(c, types, {kLargeCount}, true, nranks, rank, id);
                                }));
}

// 8 ranks try three roots here; Exhaustive/ExactCollective tries all of them.
INSTANTIATE_TEST_SUITE_P(Collectives, ExactCollective,
                         ::testing::ValuesIn(cases(allCollectives(), {1, 2, 3, 4, 8}, Roots::kSampled, kDeadline)),
                         caseName);
INSTANTIATE_TEST_SUITE_P(Collectives, LargeCollective,
                         ::testing::ValuesIn(cases(allCollectives(), {2, 3}, Roots::kLast, kDeadline)),
                         caseName);

INSTANTIATE_TEST_SUITE_P(Exhaustive, ExactCollective,
                         ::testing::ValuesIn(cases(rootedCollectives(), {8}, Roots::kAll, kExhaustiveDeadline)),
                         caseName);
INSTANTIATE_TEST_SUITE_P(Exhaustive, LargeCollective,
                         ::testing::ValuesIn(cases(allCollectives(), {1, 4, 8}, Roots::kLast, kExhaustiveDeadline)),
                         caseName);

}  // namespace
}  // namespace weft::multirank
