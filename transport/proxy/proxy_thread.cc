#include "transport/proxy/proxy_thread.h"

#include <pthread.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <new>

#include "src/base/log.h"
#include "src/base/wait.h"
#include "transport/proxy/connection.h"

namespace weft::transport::proxy {

Status ProxyThread::exitingError() {
  return invalidUsage("the process is exiting, so the network proxy has stopped: a launch that still needed it "
                      "cannot complete (synchronize the stream and destroy the communicator before exit)");
}

ProxyThread& ProxyThread::instance() {
  static ProxyThread* proxy = [] {
    auto* made = new ProxyThread();
    if (pthread_atfork(beforeFork, afterForkInParent, afterForkInChild) != 0) {
      WEFT_WARN("the network proxy could not register its fork handlers: a forked child cannot use it");
    }
    return made;
  }();
  return *proxy;
}

void ProxyThread::beforeFork() {
  ProxyThread& proxy = instance();
  proxy.lifecycleMutex_.lock();
  // The wake lock first: the thread takes it at the top of each sweep, so it stops there, and the
  // ends lock is had once the sweep under way (brief) ends, however busy the proxy. (Nothing takes
  // the wake lock while holding the ends lock.)
  proxy.wakeMutex_.lock();
  proxy.endsMutex_.lock();
}

void ProxyThread::afterForkInParent() {
  ProxyThread& proxy = instance();
  proxy.endsMutex_.unlock();
  proxy.wakeMutex_.unlock();
  proxy.lifecycleMutex_.unlock();
}

void ProxyThread::afterForkInChild() {
  ProxyThread& proxy = instance();
  // The copies name the parent's thread, which the child does not have: the handle must not be
  // joined (nor destroyed while joinable), and the condition variable may count that thread among
  // its waiters (a notify would wait for it for ever). Both are made anew, and the locks, which the
  // fork copied held, with them.
  new (&proxy.thread_) std::thread();
  new (&proxy.wakeup_) std::condition_variable();
  new (&proxy.wakeMutex_) std::mutex();
  new (&proxy.endsMutex_) std::mutex();
  new (&proxy.lifecycleMutex_) std::mutex();
  proxy.ends_.clear();  // the parent's, whose rings and sockets the parent drives
  proxy.wakeups_ = 0;
  proxy.stopping_ = false;
  proxy.exited_ = false;
  proxy.owner_ = 0;
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
  if (getpid() != owner_) return;  // this process started no thread (a forked child with no end of its own)
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
