#include "transport/proxy/proxy_thread.h"

#include <unistd.h>

#include <algorithm>
#include <cstdlib>

#include "src/base/log.h"
#include "src/base/wait.h"
#include "transport/proxy/connection.h"

namespace weft::transport::proxy {

Status ProxyThread::exitingError() {
  return invalidUsage("the process is exiting, so the network proxy has stopped: a launch that still needed it "
                      "cannot complete (synchronize the stream and destroy the communicator before exit)");
}

ProxyThread& ProxyThread::instance() {
  static ProxyThread* proxy = new ProxyThread();
  return *proxy;
}

void ProxyThread::add(ProxiedEnd* end) {
  std::lock_guard<std::mutex> lifecycle(lifecycleMutex_);
  {
    std::lock_guard<std::mutex> lock(endsMutex_);
    ends_.push_back(end);
  }
  if (thread_.joinable() || exited_) return;
  {
    std::lock_guard<std::mutex> lock(wakeMutex_);
    stopping_ = false;
  }
  static const bool stopsAtExit = std::atexit([] { instance().stopForExit(); }) == 0;
  if (!stopsAtExit) WEFT_WARN("the network proxy could not register its exit handler");
  owner_ = getpid();
  thread_ = std::thread([this] { run(); });
}

void ProxyThread::remove(ProxiedEnd* end) {
  std::lock_guard<std::mutex> lifecycle(lifecycleMutex_);
  bool last = false;
  {
    std::lock_guard<std::mutex> lock(endsMutex_);  // waits for the sweep that may touch `end`
    ends_.erase(std::remove(ends_.begin(), ends_.end(), end), ends_.end());
    last = ends_.empty();
  }
  if (last) stopThread();
}

void ProxyThread::stopForExit() {
  if (getpid() != owner_) return;  // a forked child: the thread, and its locks' holder, stayed behind
  std::lock_guard<std::mutex> lifecycle(lifecycleMutex_);
  exited_ = true;
  if (thread_.get_id() == std::this_thread::get_id()) return;
  stopThread();
  std::lock_guard<std::mutex> lock(endsMutex_);
  for (ProxiedEnd* end : ends_) end->halt(exitingError());
}

void ProxyThread::stopThread() {
  if (!thread_.joinable()) return;
  {
    std::lock_guard<std::mutex> lock(wakeMutex_);
    stopping_ = true;
  }
  wakeup_.notify_one();
  thread_.join();
}

bool ProxyThread::wake() {
  if (exited_.load(std::memory_order_acquire)) return false;
  {
    std::lock_guard<std::mutex> lock(wakeMutex_);
    ++wakeups_;
  }
  wakeup_.notify_one();
  return true;
}

void ProxyThread::run() {
  const WaitContext context;  // no deadline: the kernels' own waits give up on abort
  Waiter waiter(&context);
  for (;;) {
    uint64_t seen = 0;
    {
      std::lock_guard<std::mutex> lock(wakeMutex_);
      if (stopping_) return;
      seen = wakeups_;
    }
    bool busy = false;
    bool moved = false;
    {
      std::lock_guard<std::mutex> lock(endsMutex_);
      for (ProxiedEnd* end : ends_) {
        if (end->drained()) continue;  // no launch needs it now
        busy = true;
        moved |= end->advance();
      }
    }
    if (moved) {
      waiter.progressed();
    } else if (busy) {
      (void)waiter.idle();
    } else {
      // Nothing needed: sleep until an expect() (made since `seen` was read) or the end.
      std::unique_lock<std::mutex> lock(wakeMutex_);
      wakeup_.wait(lock, [&] { return stopping_ || wakeups_ != seen; });
      waiter.progressed();
    }
  }
}

}  // namespace weft::transport::proxy
