#include "tests/harness/deadline_guard.h"

#include <cstdio>
#include <cstdlib>

#include "tests/harness/dump_signal.h"

namespace weft::harness {

DeadlineGuard::DeadlineGuard(std::chrono::seconds limit, std::string what,
                             std::function<std::string()> describe)
    : limit_(limit), what_(std::move(what)), describe_(std::move(describe)) {
  auto deadline = std::chrono::steady_clock::now() + limit;
  watchdog_ = std::thread([this, deadline] { watch(deadline); });
}

DeadlineGuard::~DeadlineGuard() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    done_ = true;
  }
  cancelled_.notify_all();
  watchdog_.join();
}

void DeadlineGuard::watch(std::chrono::steady_clock::time_point deadline) {
  std::unique_lock<std::mutex> lock(mutex_);
  if (cancelled_.wait_until(lock, deadline, [this] { return done_; })) return;
  std::string details = describe_ ? describe_() : std::string();
  std::fprintf(stderr, "deadline of %lld s passed in %s%s%s\naborting the test process\n",
               static_cast<long long>(limit_.count()), what_.c_str(), details.empty() ? "" : ": ",
               details.c_str());
  std::fflush(stderr);
  askThisProcessForProgressDump();  // what the communicators of this process wait for
  std::abort();
}

}  // namespace weft::harness
