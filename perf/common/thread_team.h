#pragma once
// The rank threads of one process, meeting at barriers and reductions that also span the other
// processes (through the ProcessGroup), like nccl-tests' Barrier and Allreduce.

#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <vector>

#include "perf/common/options.h"
#include "perf/common/process_group.h"

namespace weft::perf {

class ThreadTeam {
 public:
  /// nThreads threads of this process take part; group links the processes; totalRanks counts
  /// the ranks of all processes (for averages).
  ThreadTeam(int nThreads, ProcessGroup* group, int totalRanks);

  /// Blocks until every thread of every process has arrived.
  void barrier();

  /// Collective over all ranks: the time every rank reports, per aggregation. isGlobalRank0 marks
  /// the rank whose value kRank0 reports.
  double aggregateTime(double seconds, TimeAggregation aggregation, bool isGlobalRank0);

  /// Collective over all ranks: the sum of value.
  int64_t sum(int64_t value);

  /// Collective over all ranks (-I): per iteration, the largest of the times of this process's
  /// threads. Process 0 receives these rows of every process, in process order; the others get an
  /// empty list.
  std::vector<std::vector<double>> gatherIterationTimes(const std::vector<double>& seconds);

 private:
  // The last thread to arrive combines the process's value with the other processes' (one thread
  // per process talks to the group at a time) and wakes the others.
  template <typename T, typename Combine>
  T reduce(T value, Combine combine, ReduceKind processKind, bool acrossProcesses);

  const int nThreads_;
  ProcessGroup* const group_;
  const int totalRanks_;
  std::mutex mutex_;
  std::condition_variable wake_;
  int arrived_ = 0;
  uint64_t generation_ = 0;
  // Indexed by generation parity: a thread that has left a reduction may enter the next one (and
  // write its slot) while slower threads still read the result of this one.
  double doubleValues_[2] = {0, 0};
  int64_t integerValues_[2] = {0, 0};
  std::vector<double> iterationMaxima_[2];
  std::vector<std::vector<double>> iterationRows_[2];
};

}  // namespace weft::perf
