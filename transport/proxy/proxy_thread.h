#pragma once
// The network proxy's thread: one per process, running while any proxied end exists. It sweeps
// the ends that launches still need (not ProxiedEnd::drained), advancing each without waiting; when a
// sweep moves nothing it backs off as every wait in Weft does (src/base/wait.h), and when no end
// is needed it sleeps until an expect() wakes it. At exit it stops before the process frees the
// rings it reads: a program may exit with a communicator it never destroyed, mid-launch.

#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <thread>
#include <vector>

namespace weft::transport::proxy {

class ProxiedEnd;

class ProxyThread {
 public:
  /// The process's proxy. Never destroyed: connections may outlive static destructors.
  static ProxyThread& instance();

  /// Starts driving `end` (and the thread, with the first end).
  void add(ProxiedEnd* end);
  /// Stops driving `end`; returns once the thread no longer touches it. Ends the thread with the
  /// last end.
  void remove(ProxiedEnd* end);
  /// Tells the thread that an end may be needed again. Any thread.
  void wake();
  /// Stops the thread for good, whatever ends remain. Called at exit: std::atexit, registered when
  /// the thread first starts, after the CUDA runtime registered its teardown, which so runs later.
  void stopForExit();

 private:
  ProxyThread() = default;
  void run();
  void stopThread();  // under lifecycleMutex_

  std::mutex lifecycleMutex_;  // add and remove, whole: starting and joining the thread
  std::mutex endsMutex_;       // ends_; held by the thread through each sweep
  std::vector<ProxiedEnd*> ends_;
  std::mutex wakeMutex_;
  std::condition_variable wakeup_;
  uint64_t wakeups_ = 0;  // under wakeMutex_
  bool stopping_ = false;  // under wakeMutex_
  bool exited_ = false;    // under lifecycleMutex_: stopForExit ran; never start again
  std::thread thread_;
};

}  // namespace weft::transport::proxy
