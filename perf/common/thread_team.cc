#include "perf/common/thread_team.h"

#include <algorithm>
#include <cstring>
#include <type_traits>

namespace weft::perf {

ThreadTeam::ThreadTeam(int nThreads, ProcessGroup* group, int totalRanks)
    : nThreads_(nThreads), group_(group), totalRanks_(totalRanks) {}

template <typename T, typename Combine>
T ThreadTeam::reduce(T value, Combine combine, ReduceKind processKind, bool acrossProcesses) {
  std::unique_lock<std::mutex> lock(mutex_);
  const uint64_t generation = generation_;
  T* slot;
  if constexpr (std::is_same_v<T, double>) {
    slot = &doubleValues_[generation & 1];
  } else {
    slot = &integerValues_[generation & 1];
  }
  *slot = arrived_ == 0 ? value : combine(*slot, value);
  if (++arrived_ == nThreads_) {
    if (acrossProcesses) group_->allReduce(slot, processKind);
    arrived_ = 0;
    ++generation_;
    wake_.notify_all();
  } else {
    wake_.wait(lock, [&] { return generation_ != generation; });
  }
  return *slot;
}

void ThreadTeam::barrier() {
  // The last thread of this process to arrive meets the other processes for all of them.
  std::unique_lock<std::mutex> lock(mutex_);
  const uint64_t generation = generation_;
  if (++arrived_ == nThreads_) {
    group_->barrier();
    arrived_ = 0;
    ++generation_;
    wake_.notify_all();
  } else {
    wake_.wait(lock, [&] { return generation_ != generation; });
  }
}

double ThreadTeam::aggregateTime(double seconds, TimeAggregation aggregation, bool isGlobalRank0) {
  switch (aggregation) {
    case TimeAggregation::kRank0:
      return reduce(isGlobalRank0 ? seconds : 0.0, [](double a, double b) { return a + b; },
                    ReduceKind::kSum, true);
    case TimeAggregation::kMinimum:
      return reduce(seconds, [](double a, double b) { return std::min(a, b); }, ReduceKind::kMin, true);
    case TimeAggregation::kMaximum:
      return reduce(seconds, [](double a, double b) { return std::max(a, b); }, ReduceKind::kMax, true);
    case TimeAggregation::kAverage:
      break;
  }
  return reduce(seconds, [](double a, double b) { return a + b; }, ReduceKind::kSum, true) /
         totalRanks_;
}

int64_t ThreadTeam::sum(int64_t value) {
  return reduce(value, [](int64_t a, int64_t b) { return a + b; }, ReduceKind::kSum, true);
}

std::vector<std::vector<double>> ThreadTeam::gatherIterationTimes(const std::vector<double>& seconds) {
  std::unique_lock<std::mutex> lock(mutex_);
  const uint64_t generation = generation_;
  std::vector<double>& maxima = iterationMaxima_[generation & 1];
  std::vector<std::vector<double>>& rows = iterationRows_[generation & 1];
  if (arrived_ == 0) {
    maxima = seconds;
  } else {
    for (size_t i = 0; i < maxima.size() && i < seconds.size(); ++i) {
      maxima[i] = std::max(maxima[i], seconds[i]);
    }
  }
  if (++arrived_ == nThreads_) {
    std::string bytes(maxima.size() * sizeof(double), '\0');
    std::memcpy(bytes.data(), maxima.data(), bytes.size());
    rows.clear();
    for (const std::string& row : group_->gatherToRoot(bytes)) {
      rows.emplace_back(row.size() / sizeof(double));
      std::memcpy(rows.back().data(), row.data(), rows.back().size() * sizeof(double));
    }
    arrived_ = 0;
    ++generation_;
    wake_.notify_all();
  } else {
    wake_.wait(lock, [&] { return generation_ != generation; });
  }
  return rows;
}

}  // namespace weft::perf
