#pragma once
// Ranks as forked processes that may die on purpose. Unlike the harness's process ranks (which
// stop every rank at the first failure), a rank that is killed here leaves the others running,
// so a test can watch what the survivors see. Each rank reports through its exit status.

#include <sys/types.h>

#include <chrono>
#include <functional>
#include <vector>

#include "nccl.h"

namespace weft::reliability {

/// Forks `nranks` children; child r runs body(r, id) (with `id` from ncclGetUniqueId here) and
/// _exits with its return value. Returns the children's pids in rank order (empty if a fork
/// failed: the children already forked are killed and reaped).
std::vector<pid_t> forkKillableRanks(int nranks, const ncclUniqueId& id,
                                     const std::function<int(int rank, const ncclUniqueId& id)>& body);

/// Waits for `pid`; returns its raw wait status (-1 if it is not a child left to wait for).
int waitForRank(pid_t pid);

/// A raw wait status that waitForRanksWithin gives a child still running at its limit.
inline constexpr int kStillRunning = -2;

/// Waits for every child in `pids` until `limit` has passed; then kills and reaps those still
/// running. Their raw wait statuses in the order of `pids`: kStillRunning for those it killed, -1
/// for one that is not a child left to wait for.
std::vector<int> waitForRanksWithin(const std::vector<pid_t>& pids, std::chrono::milliseconds limit);

}  // namespace weft::reliability
