#include "perf/common/watchdog.h"

#include <chrono>
#include <cstdio>

namespace weft::perf {
namespace {

int64_t nowNanoseconds() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

}  // namespace

Watchdog::Watchdog(int timeoutSeconds, int nThreads, ProcessGroup* group)
    : timeoutSeconds_(timeoutSeconds),
      nThreads_(nThreads),
      group_(group),
      since_(new std::atomic<int64_t>[nThreads]),
      ranks_(new std::atomic<int>[nThreads]) {
  for (int t = 0; t < nThreads; ++t) {
    since_[t].store(0);
    ranks_[t].store(-1);
  }
  if (timeoutSeconds_ > 0) thread_ = std::thread([this] { watch(); });
}

Watchdog::~Watchdog() {
  stop_.store(true);
  if (thread_.joinable()) thread_.join();
}

void Watchdog::enter(int thread, int rank) {
  if (timeoutSeconds_ <= 0) return;
  ranks_[thread].store(rank, std::memory_order_relaxed);
  since_[thread].store(nowNanoseconds(), std::memory_order_relaxed);
}

void Watchdog::leave(int thread) {
  if (timeoutSeconds_ <= 0) return;
  since_[thread].store(0, std::memory_order_relaxed);
}

void Watchdog::watch() {
  const int64_t limit = static_cast<int64_t>(timeoutSeconds_) * 1000000000;
  while (!stop_.load()) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    const int64_t now = nowNanoseconds();
    for (int t = 0; t < nThreads_; ++t) {
      int64_t since = since_[t].load(std::memory_order_relaxed);
      if (since == 0 || now - since <= limit) continue;
      std::printf("%s: Test timeout (%ds): rank %d has been in one NCCL call for more than %d s\n",
                  shortHostName().c_str(), timeoutSeconds_, ranks_[t].load(), timeoutSeconds_);
      group_->abort(4);
    }
  }
}

}  // namespace weft::perf
