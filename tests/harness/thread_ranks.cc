#include <condition_variable>
#include <memory>
#include <mutex>
#include <thread>

#include "tests/harness/deadline_guard.h"
#include "tests/harness/rank_modes.h"

namespace weft::harness {
namespace {

/// Which ranks have returned; shared by the rank threads and the deadline's report.
class Completion {
 public:
  explicit Completion(int nranks) : done_(nranks, false) {}

  void finish(int rank) {
    std::lock_guard<std::mutex> lock(mutex_);
    done_[rank] = true;
  }

  std::vector<int> running() const {
    std::lock_guard<std::mutex> lock(mutex_);
    std::vector<int> ranks;
    for (size_t r = 0; r < done_.size(); ++r) {
      if (!done_[r]) ranks.push_back(static_cast<int>(r));
    }
    return ranks;
  }

 private:
  mutable std::mutex mutex_;
  std::vector<bool> done_;
};

const RankRecord* firstFailing(const std::vector<std::unique_ptr<RankRecord>>& records) {
  const RankRecord* first = nullptr;
  for (const auto& record : records) {
    if (!record->failed()) continue;
    if (first == nullptr || record->firstFailureTime() < first->firstFailureTime()) first = record.get();
  }
  return first;
}

}  // namespace

::testing::AssertionResult runThreadRanks(const RankRunOptions& options, const RankFunction& fn,
                                          const ncclUniqueId& id) {
  const int nranks = options.nranks;
  std::vector<std::unique_ptr<RankRecord>> records;
  for (int r = 0; r < nranks; ++r) records.push_back(std::make_unique<RankRecord>(r));
  Completion completion(nranks);

  ScopedEnv env(options.env);
  {
    DeadlineGuard guard(options.deadline, options.label.empty() ? "ranks as threads" : options.label,
                        [&records, &completion] {
                          std::vector<int> running = completion.running();
                          std::string text = rankList(running) + " still running";
                          for (int rank : running) {
                            std::string note = records[rank]->note();
                            if (!note.empty()) text += "; rank " + std::to_string(rank) + " was at: " + note;
                          }
                          if (const RankRecord* failed = firstFailing(records)) {
                            text += "; first failure: " + failed->firstFailure();
                          }
                          return text;
                        });
    std::vector<std::thread> threads;
    for (int r = 0; r < nranks; ++r) {
      threads.emplace_back([&, r] {
        runOneRank(records[r].get(), fn, nranks, id);
        completion.finish(r);
      });
    }
    for (std::thread& thread : threads) thread.join();
  }

  const RankRecord* failed = firstFailing(records);
  if (failed == nullptr) return ::testing::AssertionSuccess();
  std::vector<int> failing;
  for (const auto& record : records) {
    if (record->failed()) failing.push_back(record->rank());
  }
  auto result = ::testing::AssertionFailure() << failed->firstFailure();
  if (failing.size() > 1 || failed->failureCount() > 1) {
    result << " (failures recorded by " << rankList(failing) << "; this rank recorded "
           << failed->failureCount() << ")";
  }
  return result;
}

}  // namespace weft::harness
