#pragma once
// A thread block of the step kernel on the CPU (src/device/kernel_block.h): a few host threads
// that share the block's memory and meet at a barrier for __syncthreads, so that unit tests run
// the kernel's own loops (src/device/lane_loop.h, src/device/direct_allreduce.h,
// src/device/nvls_allreduce.h) with no GPU.
// Counters and LL lines are atomics, so the loops' hand-offs are real ones between threads. x86
// orders every store anyway, so a missing acquire or release in a loop shows only under
// ThreadSanitizer (scripts/sanitize.sh tsan); a fence is modelled by the atomic add after it
// (fetchAdd orders only after fenceSystem, as on the GPU), which TSan checks too.

#include <atomic>
#include <barrier>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <cstring>
#include <mutex>
#include <thread>
#include <vector>

#include "src/core/gpu_block_progress.h"
#include "src/device/kernel_block.h"

namespace weft::device {

/// The last wait a block recorded for hang reports.
struct NotedWait {
  core::BlockActivity activity = core::BlockActivity::kNone;
  int32_t peer = -1;
  int32_t channel = -1;
  uint64_t seen = 0;
  uint64_t wanted = 0;
  core::WaitSite site;
};

/// What a block's threads share: its shared memory, its barrier and its record.
class HostBlockState {
 public:
  /// Its shared memory starts as garbage, as the GPU's does.
  explicit HostBlockState(uint32_t threads) : barrier_(threads, Completion{this}) {
    std::memset(shared_, 0xa5, sizeof(shared_));
  }

  /// The last wait recorded.
  NotedWait noted() {
    std::lock_guard<std::mutex> hold(mutex_);
    return noted_;
  }

 private:
  friend class HostBlock;

  // Runs once per barrier phase, after every thread arrived and before any leaves: the phase's
  // answer to syncOr.
  struct Completion {
    HostBlockState* state;
    void operator()() noexcept { state->anyResult_ = state->anyPending_.exchange(false); }
  };

  alignas(64) unsigned char shared_[kBlockSharedBytes];
  std::atomic<bool> anyPending_{false};
  bool anyResult_ = false;  // written by the completion, read by every thread once it returns
  std::barrier<Completion> barrier_;
  std::mutex mutex_;
  NotedWait noted_;
};

/// One thread of a block, as the loops see it.
class HostBlock {
 public:
  class Wait {
   public:
    explicit Wait(const HostBlock& block) : state_(block.state_) {}
    void note(core::BlockActivity activity, int32_t peer, int32_t channel, const core::WaitSite& site, uint64_t seen,
              uint64_t wanted) {
      std::lock_guard<std::mutex> hold(state_->mutex_);
      state_->noted_ = {activity, peer, channel, seen, wanted, site};
    }
    void end() {}

   private:
    HostBlockState* state_;
  };

  HostBlock(uint32_t thread, uint32_t threads, HostBlockState* state)
      : thread_(thread), threads_(threads), state_(state) {}

  uint32_t thread() const { return thread_; }
  uint32_t threads() const { return threads_; }
  void sync() const { state_->barrier_.arrive_and_wait(); }
  bool syncOr(bool mine) const {
    if (mine) state_->anyPending_.store(true);
    state_->barrier_.arrive_and_wait();
    return state_->anyResult_;
  }
  template <class T>
  T& shared() const {
    static_assert(sizeof(T) <= kBlockSharedBytes && alignof(T) <= 64);
    return *reinterpret_cast<T*>(state_->shared_);  // an aggregate, made implicitly in the bytes
  }

  static unsigned long long loadAcquire(const unsigned long long* address) {
    return counter(address).load(std::memory_order_acquire);
  }
  static void storeRelease(unsigned long long* address, unsigned long long value) {
    counter(address).store(value, std::memory_order_release);
  }
  static unsigned long long loadAcquireGpu(const unsigned long long* address) { return loadAcquire(address); }
  static void storeReleaseGpu(unsigned long long* address, unsigned long long value) { storeRelease(address, value); }
  static unsigned long long loadOwn(const unsigned long long* address) {
    return counter(address).load(std::memory_order_relaxed);
  }
  // Relaxed, as the GPU's atomicAdd, unless the thread fenced since its last add: then it orders
  // the thread's accesses before it and after it (a fence, the add, a fence).
  unsigned fetchAdd(unsigned* address, unsigned value) {
    const std::memory_order order = fenced_ ? std::memory_order_acq_rel : std::memory_order_relaxed;
    fenced_ = false;
    return std::atomic_ref<unsigned>(*address).fetch_add(value, order);
  }
  // The loops' fences come before a release store, which orders its stores by itself, or before
  // an atomic add, which they order (fetchAdd).
  void fenceSystem() { fenced_ = true; }

  // Each half of a line (4 data bytes and a flag) is one atomic access.
  static void loadLine(const char* line, uint32_t words[4]) {
    for (int half = 0; half < 2; ++half) {
      const uint64_t bits = halfOf(line, half).load(std::memory_order_relaxed);
      words[2 * half] = static_cast<uint32_t>(bits);
      words[2 * half + 1] = static_cast<uint32_t>(bits >> 32);
    }
  }
  static void storeLine(char* line, const uint32_t words[4]) {
    for (int half = 0; half < 2; ++half) {
      const uint64_t bits = words[2 * half] | (static_cast<uint64_t>(words[2 * half + 1]) << 32);
      halfOf(line, half).store(bits, std::memory_order_relaxed);
    }
  }

  // Called every kPollsPerAbortCheck polls: the CPU goes to another thread (a test runs more
  // threads than the host has cores), then the flag is read.
  static bool aborted(const volatile int* flag) {
    std::this_thread::yield();
    return flag != nullptr && std::atomic_ref<int>(*const_cast<int*>(flag)).load(std::memory_order_acquire) != 0;
  }

 private:
  static std::atomic_ref<unsigned long long> counter(const unsigned long long* address) {
    return std::atomic_ref<unsigned long long>(*const_cast<unsigned long long*>(address));
  }
  static std::atomic_ref<uint64_t> halfOf(const char* line, int half) {
    return std::atomic_ref<uint64_t>(*reinterpret_cast<uint64_t*>(const_cast<char*>(line) + 8 * half));
  }

  uint32_t thread_;
  uint32_t threads_;
  HostBlockState* state_;
  bool fenced_ = false;
};

/// Runs blocks on host threads, every block at once, and ends them at a deadline.
class HostBlockRunner {
 public:
  ~HostBlockRunner() { finish(std::chrono::seconds(0), nullptr); }

  /// Starts the threads of block `state` (`threads` of them), each running `run(HostBlock&)`.
  template <class Run>
  void start(HostBlockState* state, uint32_t threads, const Run& run) {
    for (uint32_t t = 0; t < threads; ++t) {
      {
        std::lock_guard<std::mutex> hold(mutex_);
        ++running_;
      }
      threads_.emplace_back([this, state, threads, t, run] {
        HostBlock block(t, threads, state);
        run(block);
        std::lock_guard<std::mutex> hold(mutex_);
        if (--running_ == 0) allDone_.notify_all();
      });
    }
  }

  /// Waits for every thread; if they are not all done within `deadline`, sets `*abortFlag` (the
  /// loops' abort flag), which ends their waits. False if the deadline passed.
  bool finish(std::chrono::seconds deadline, int* abortFlag) {
    bool inTime = true;
    {
      std::unique_lock<std::mutex> hold(mutex_);
      if (!allDone_.wait_for(hold, deadline, [this] { return running_ == 0; }) && abortFlag != nullptr) {
        inTime = false;
        std::atomic_ref<int>(*abortFlag).store(1, std::memory_order_release);
      }
    }
    for (std::thread& thread : threads_) thread.join();
    threads_.clear();
    return inTime;
  }

 private:
  std::mutex mutex_;
  std::condition_variable allDone_;
  size_t running_ = 0;
  std::vector<std::thread> threads_;
};

}  // namespace weft::device
