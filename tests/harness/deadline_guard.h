#pragma once
// A watchdog for code that cannot be interrupted when it hangs (ranks as threads, several
// communicators driven from one thread): past the deadline it prints what was stuck and aborts the
// process, so that ctest reports a failure instead of waiting for its own timeout.

#include <chrono>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <string>
#include <thread>

namespace weft::harness {

class DeadlineGuard {
 public:
  /// Starts the watchdog thread. If the guard still lives after `limit`, prints
  /// "deadline of <limit> s passed in <what>" and then `describe()` (if set; called on the
  /// watchdog thread) to stderr, and aborts.
  DeadlineGuard(std::chrono::seconds limit, std::string what,
                std::function<std::string()> describe = {});
  /// Stops the watchdog; does not block beyond the watchdog thread noticing.
  ~DeadlineGuard();
  DeadlineGuard(const DeadlineGuard&) = delete;
  DeadlineGuard& operator=(const DeadlineGuard&) = delete;

 private:
  void watch(std::chrono::steady_clock::time_point deadline);

  std::chrono::seconds limit_;
  std::string what_;
  std::function<std::string()> describe_;
  std::mutex mutex_;
  std::condition_variable cancelled_;
  bool done_ = false;
  std::thread watchdog_;
};

}  // namespace weft::harness
