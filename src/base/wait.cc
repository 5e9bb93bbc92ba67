#include "src/base/wait.h"

#include <sched.h>
#include <time.h>

#include "src/base/knobs.h"

namespace weft {
namespace {

constexpr int kYieldLimit = 64;  // idle polls spent yielding after spinning, before sleeping
constexpr long kSleepNanos = 20'000;
// The longest spin, whatever a poll costs: a socket poll is a system call (a microsecond or more),
// and a rank whose peer shares its core must not hold the core for a thousand of them.
constexpr auto kMaxSpin = std::chrono::microseconds(50);
constexpr int kPollsPerClockRead = 16;

inline void cpuRelax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  asm volatile("yield");
#endif
}

}  // namespace

WaitContext withoutTimeout(const WaitContext& context) {
  WaitContext untimed = context;
  untimed.timeoutSeconds = 0;
  return untimed;
}

double defaultTimeoutSeconds() { return static_cast<double>(knobs::getInt(knobs::KnobId::kTimeout)); }

namespace {

// Read once: waiters are created on every call's hot path.
int spinLimit() {
  static const int limit = static_cast<int>(knobs::getInt(knobs::KnobId::kSpinCount));
  return limit;
}

}  // namespace

Waiter::Waiter(const WaitContext* context)
    : context_(context),
      spinLimit_(context != nullptr && context->spinLimit >= 0 ? context->spinLimit : spinLimit()) {}

void Waiter::progressed() { idleCount_ = 0; }

Status Waiter::idle() {
  ++idleCount_;
  if (context_ && context_->check) WEFT_RETURN_IF_ERROR(context_->check());
  if (idleCount_ == 1) idleSince_ = std::chrono::steady_clock::now();
  if (idleCount_ <= spinLimit_) {
    if (idleCount_ % kPollsPerClockRead == 0 && std::chrono::steady_clock::now() - idleSince_ > kMaxSpin) {
      idleCount_ = spinLimit_;  // spun long enough: yield from the next idle poll on
    }
    cpuRelax();
    return Status::ok();
  }
  if (context_ && context_->timeoutSeconds > 0) {
    double idleSeconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - idleSince_).count();
    if (idleSeconds > context_->timeoutSeconds) {
      return remoteError("no progress for %.0f s while waiting for %s (WEFT_TIMEOUT=%.0f): a peer may be "
                         "stuck or not calling the same operation",
                         idleSeconds, context_->what.empty() ? "a peer" : context_->what.c_str(),
                         context_->timeoutSeconds);
    }
  }
  if (idleCount_ <= spinLimit_ + kYieldLimit) {
    sched_yield();
    return Status::ok();
  }
  timespec pause{0, kSleepNanos};
  nanosleep(&pause, nullptr);
  return Status::ok();
}

}  // namespace weft
