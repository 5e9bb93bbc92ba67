#pragma once
// -T: ends the run when one call has lasted longer than the timeout. Host-memory calls complete
// before they return, so a stuck collective is a call that does not return.

#include <atomic>
#include <memory>
#include <thread>

#include "perf/common/process_group.h"

namespace weft::perf {

class Watchdog {
 public:
  /// timeoutSeconds <= 0 disables it (enter/leave cost one relaxed store). nThreads: rank threads.
  Watchdog(int timeoutSeconds, int nThreads, ProcessGroup* group);
  ~Watchdog();
  Watchdog(const Watchdog&) = delete;
  Watchdog& operator=(const Watchdog&) = delete;

  /// Marks the start and end of a call by thread (0 <= thread < nThreads) of rank.
  void enter(int thread, int rank);
  void leave(int thread);

 private:
  void watch();

  const int timeoutSeconds_;
  const int nThreads_;
  ProcessGroup* const group_;
  std::unique_ptr<std::atomic<int64_t>[]> since_;  // steady-clock ns of the call's start; 0: idle
  std::unique_ptr<std::atomic<int>[]> ranks_;
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

}  // namespace weft::perf
