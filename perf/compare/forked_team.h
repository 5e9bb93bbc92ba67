#pragma once
// Processes made by fork() for the bounds that need several ranks (visible_allreduce_bound,
// tcp_loopback_bound): a barrier and sums over the ranks through one shared anonymous mapping.
// When there are no more processes than CPUs, rank r is pinned to the r-th CPU this process may
// use, as mpirun binds ranks to cores; beyond that nothing is pinned (mpirun --bind-to none).

#include <atomic>
#include <cstdint>
#include <functional>

namespace weft::perf::compare {

/// One poll of a wait that found nothing new: spins a while, then gives the CPU away, so that more
/// ranks than CPUs still make progress. `spins` counts the polls of the current wait (start at 0).
void idlePoll(int& spins);

class ForkedTeam {
 public:
  /// Forks `ranks` processes that each run body(team) and exit with what it returns. Waits for
  /// all of them; if one fails (non-zero exit or a signal) kills the others. Returns 0 when every
  /// rank returned 0, else 1. Anything mapped MAP_SHARED before the call is shared by the ranks.
  static int run(int ranks, const std::function<int(ForkedTeam&)>& body);

  int rank() const { return rank_; }
  int ranks() const { return ranks_; }

  /// Returns once every rank has called it. Spins, then yields the CPU, so that more ranks than
  /// CPUs still make progress.
  void barrier();

  /// The sum over every rank of value; every rank must call it.
  double sumOverRanks(double value);

 private:
  struct Shared;
  ForkedTeam(Shared* shared, int rank, int ranks) : shared_(shared), rank_(rank), ranks_(ranks) {}

  Shared* shared_;
  int rank_;
  int ranks_;
  uint64_t sumCalls_ = 0;
};

}  // namespace weft::perf::compare
