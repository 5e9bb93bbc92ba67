#pragma once
// The two ways of running ranks behind runRanks (tests/harness/rank_runner.h). Internal to the
// harness.

#include <functional>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "nccl.h"
#include "tests/harness/rank_check.h"
#include "tests/harness/rank_runner.h"

namespace weft::harness {

/// Ranks as threads of this process; aborts the process at the deadline.
::testing::AssertionResult runThreadRanks(const RankRunOptions& options, const RankFunction& fn,
                                          const ncclUniqueId& id);

/// Makes the ranks' unique id (ncclGetUniqueId, with the run's environment in force).
using IdMaker = std::function<::testing::AssertionResult(ncclUniqueId* id)>;

/// Ranks as forked children reporting through pipes; kills them at the deadline or the first
/// failure. Calls `makeId` once every child is forked, and sends the children its id.
::testing::AssertionResult runProcessRanks(const RankRunOptions& options, const RankFunction& fn,
                                           const IdMaker& makeId);

/// Runs `fn` for one rank under a RankScope bound to `record`, turning exceptions into failures.
void runOneRank(RankRecord* record, const RankFunction& fn, int nranks, const ncclUniqueId& id);

/// "ranks 1, 3" / "rank 2" / "no rank".
std::string rankList(const std::vector<int>& ranks);

}  // namespace weft::harness
