#pragma once
// The network proxy's thread: one per process, running while any proxied end exists. It sweeps
// the ends that launches still need (not ProxiedEnd::drained), advancing each without waiting; when a
// sweep moves nothing it backs off as every wait in Weft does (src/base/wait.h), and when no end
// is needed it sleeps until an expect() wakes it. At exit it stops before the process frees the
// rings it reads (a program may exit with a communicator it never destroyed, mid-launch), and
// every end that still owes pieces, then or later, fails to its communicator instead of hanging.
// fork() copies the proxy but not its thread: the child starts with no thread and no ends (those
// it inherited are the parent's to drive), and gets a thread of its own with its first new end.

#include <sys/types.h>

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <thread>
#include <vector>

#include "src/base/status.h"

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
  /// Tells the thread that an end may be needed again. Any thread. False once stopped for exit:
  /// nothing will move the end.
  bool wake();
  /// Stops the thread for good and fails every end that still owes pieces (ProxiedEnd::halt).
  /// Called at exit: std::atexit, registered when the thread first starts, after the CUDA runtime
  /// registered its teardown, which so runs later. Does nothing in a process that started no
  /// thread (a forked child that made no end).
  void stopForExit();
  /// What an end that still owes pieces is told once the thread stopped for exit.
  static Status exitingError();

 private:
  ProxyThread() = default;
  void run();
  // fork() handlers: the parent holds every lock across the fork, so that what they guard is whole
  // in the child's copy; the child forgets the parent's thread and ends.
  static void beforeFork();
  static void afterForkInParent();
  static void afterForkInChild();
  void stopThread();  // under lifecycleMutex_

  std::mutex lifecycleMutex_;  // add and remove, whole: starting and joining the thread
  std::mutex endsMutex_;       // ends_; held by the thread through each sweep, never while taking wakeMutex_
  std::vector<ProxiedEnd*> ends_;
  std::mutex wakeMutex_;
  std::condition_variable wakeup_;
  uint64_t wakeups_ = 0;  // under wakeMutex_
  bool stopping_ = false;  // under wakeMutex_
  std::atomic<bool> exited_{false};  // stopForExit ran: never start again
  pid_t owner_ = 0;                  // the process that started the thread
  std::thread thread_;
};

}  // namespace weft::transport::proxy
