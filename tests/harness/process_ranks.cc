// Ranks as forked children. Each child reports through its own pipe in frames of
// [kind: 1 byte][length: 4 bytes][text]: 'F' at its first failure (sent at once, before the
// rank function unwinds, since unwinding may block on peers), 'N' for each progress note, 'D' when
// it finished cleanly.

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <climits>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <iterator>
#include <string>
#include <system_error>
#include <vector>

#include "tests/harness/dump_signal.h"
#include "tests/harness/rank_modes.h"

#if defined(__SANITIZE_ADDRESS__)
#include <sanitizer/lsan_interface.h>
#endif

namespace weft::harness {
namespace {

constexpr char kFailedFrame = 'F';
constexpr char kDoneFrame = 'D';
constexpr char kNoteFrame = 'N';
constexpr size_t kFrameHeaderBytes = 5;

void writeAll(int fd, const char* data, size_t size) {
  while (size > 0) {
    ssize_t written = write(fd, data, size);
    if (written < 0) {
      if (errno == EINTR) continue;
      return;  // The parent is gone or has stopped listening: nobody is left to tell.
    }
    data += written;
    size -= static_cast<size_t>(written);
  }
}

void writeFrame(int fd, char kind, const std::string& text) {
  std::string frame(kFrameHeaderBytes, '\0');
  frame[0] = kind;
  uint32_t length = static_cast<uint32_t>(text.size());
  std::memcpy(&frame[1], &length, sizeof(length));
  frame += text;
  writeAll(fd, frame.data(), frame.size());
}

std::string describeWaitStatus(int status) {
  if (WIFEXITED(status)) return "exited with status " + std::to_string(WEXITSTATUS(status));
  if (WIFSIGNALED(status)) {
    int signal = WTERMSIG(status);
    return "was killed by signal " + std::to_string(signal) + " (" + strsignal(signal) + ")";
  }
  return "ended with wait status " + std::to_string(status);
}

/// A forked rank ends with _exit, which skips LeakSanitizer's check at exit: in an AddressSanitizer
/// build (gcc's macro), runs it now. True if it reported leaks.
bool leaksFound() {
#if defined(__SANITIZE_ADDRESS__)
  return __lsan_do_recoverable_leak_check() != 0;
#else
  return false;
#endif
}

/// The threads of this process, or 0 if /proc cannot tell.
size_t threadsRunning() {
  std::error_code error;
  std::filesystem::directory_iterator tasks("/proc/self/task", error);
  return error ? 0 : static_cast<size_t>(std::distance(begin(tasks), end(tasks)));
}

/// `checkLeaks`: the parent ran no other thread when it forked. Otherwise LeakSanitizer would count
/// those threads, which it can neither stop nor scan in the child, and report false leaks.
[[noreturn]] void runChild(int rank, int fd, const RankRunOptions& options, const RankFunction& fn,
                           const ncclUniqueId& id, bool checkLeaks) {
  applyEnv(options.env);
  // Logging reads its settings once per process: an earlier test may have set it up in the parent.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
  ncclResetDebugInit();
#pragma GCC diagnostic pop
  RankRecord record(
      rank, [fd](const std::string& text) { writeFrame(fd, kFailedFrame, text); },
      [fd](const std::string& text) { writeFrame(fd, kNoteFrame, text); });
  runOneRank(&record, fn, options.nranks, id);
  if (checkLeaks && leaksFound()) record.addFailure("LeakSanitizer found memory that this rank leaked (report above)");
  if (!record.failed()) writeFrame(fd, kDoneFrame, "");
  std::fflush(nullptr);
  // _exit: the child must not run the parent's atexit handlers or GoogleTest's teardown.
  _exit(record.failed() ? 1 : 0);
}

/// In a child: reads the id the parent sends once every rank is forked. False if the parent closed
/// the pipe without sending it.
bool receiveId(int fd, ncclUniqueId* id) {
  char* bytes = reinterpret_cast<char*>(id);
  size_t got = 0;
  while (got < sizeof(*id)) {
    ssize_t n = read(fd, bytes + got, sizeof(*id) - got);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    got += static_cast<size_t>(n);
  }
  close(fd);
  return true;
}

struct Child {
  int rank = -1;
  pid_t pid = -1;
  int fd = -1;  // the read end; -1 once the child closed its end
  int idFd = -1;  // the write end of the pipe that takes the id to the child; -1 once sent
  std::string inbox;
  bool done = false;
  bool reaped = false;
  std::string failure;
  std::string note;  // the last progress note
};

/// Parses complete frames out of child->inbox. Returns true if a failure frame arrived.
bool takeFrames(Child* child) {
  bool failed = false;
  while (child->inbox.size() >= kFrameHeaderBytes) {
    uint32_t length = 0;
    std::memcpy(&length, &child->inbox[1], sizeof(length));
    if (child->inbox.size() < kFrameHeaderBytes + length) break;
    char kind = child->inbox[0];
    std::string text = child->inbox.substr(kFrameHeaderBytes, length);
    child->inbox.erase(0, kFrameHeaderBytes + length);
    if (kind == kFailedFrame && child->failure.empty()) {
      child->failure = text;
      failed = true;
    } else if (kind == kDoneFrame) {
      child->done = true;
    } else if (kind == kNoteFrame) {
      child->note = text;
    }
  }
  return failed;
}

/// Reaps a child whose pipe reached end of file. Returns true if that counts as a failure.
bool reapFinished(Child* child) {
  int status = 0;
  while (waitpid(child->pid, &status, 0) < 0 && errno == EINTR) {
  }
  child->reaped = true;
  if (!child->failure.empty()) return false;
  if (!child->done) {
    child->failure = "rank " + std::to_string(child->rank) + " " + describeWaitStatus(status) +
                     " before reporting a result";
    return true;
  }
  if (!(WIFEXITED(status) && WEXITSTATUS(status) == 0)) {
    child->failure = "rank " + std::to_string(child->rank) + " finished its checks but then " +
                     describeWaitStatus(status);
    return true;
  }
  return false;
}

void killAndReap(std::vector<Child>* children) {
  for (Child& child : *children) {
    if (!child.reaped && child.pid > 0) kill(child.pid, SIGKILL);
  }
  for (Child& child : *children) {
    if (!child.reaped && child.pid > 0) {
      while (waitpid(child.pid, nullptr, 0) < 0 && errno == EINTR) {
      }
      child.reaped = true;
    }
    if (child.fd >= 0) close(child.fd);
    if (child.idFd >= 0) close(child.idFd);
    child.fd = -1;
    child.idFd = -1;
  }
}

}  // namespace

::testing::AssertionResult runProcessRanks(const RankRunOptions& options, const RankFunction& fn,
                                           const IdMaker& makeId) {
  const int nranks = options.nranks;
  std::vector<Child> children(nranks);
  // Unflushed output would otherwise be printed once more by every child.
  std::fflush(nullptr);
  // Every rank is forked before the id exists, and gets it through a pipe: making the id starts the
  // bootstrap root's thread, and a child forked while that thread runs inherits the locks it holds
  // at that moment (AddressSanitizer's allocator has no fork handlers: such a child would hang in
  // its next malloc).
  const bool checkLeaks = threadsRunning() == 1;
  for (int r = 0; r < nranks; ++r) {
    int fds[2];
    int idFds[2];
    if (pipe2(fds, O_CLOEXEC) != 0 || pipe2(idFds, O_CLOEXEC) != 0) {
      std::string error = std::strerror(errno);
      killAndReap(&children);
      return ::testing::AssertionFailure() << "pipe for rank " << r << ": " << error;
    }
    const pid_t parent = getpid();
    pid_t pid = fork();
    if (pid == 0) {
      // A rank dies with the test's process: one left behind by a crash would hold its pipe open
      // and the crash would pass for a hang.
      prctl(PR_SET_PDEATHSIG, SIGKILL);
      if (getppid() != parent) _exit(1);
      close(fds[0]);
      close(idFds[1]);
      for (int earlier = 0; earlier < r; ++earlier) {
        close(children[earlier].fd);
        close(children[earlier].idFd);
      }
      ncclUniqueId id;
      if (!receiveId(idFds[0], &id)) _exit(1);  // the parent could not make the id and says so
      runChild(r, fds[1], options, fn, id, checkLeaks);
    }
    close(fds[1]);
    close(idFds[0]);
    if (pid < 0) {
      std::string error = std::strerror(errno);
      close(fds[0]);
      close(idFds[1]);
      killAndReap(&children);
      return ::testing::AssertionFailure() << "fork for rank " << r << ": " << error;
    }
    children[r].rank = r;
    children[r].pid = pid;
    children[r].fd = fds[0];
    children[r].idFd = idFds[1];
  }
  ncclUniqueId id{};
  if (::testing::AssertionResult made = makeId(&id); !made) {
    killAndReap(&children);
    return made;
  }
  for (Child& child : children) {
    writeAll(child.idFd, reinterpret_cast<const char*>(&id), sizeof(id));
    close(child.idFd);
    child.idFd = -1;
  }

  const auto deadline = std::chrono::steady_clock::now() + options.deadline;
  int firstFailed = -1;
  bool timedOut = false;
  while (firstFailed < 0) {
    std::vector<pollfd> polled;
    std::vector<Child*> owners;
    for (Child& child : children) {
      if (child.fd < 0) continue;
      polled.push_back({child.fd, POLLIN, 0});
      owners.push_back(&child);
    }
    if (polled.empty()) break;
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) {
      timedOut = true;
      break;
    }
    int ready = poll(polled.data(), polled.size(),
                     static_cast<int>(std::min<int64_t>(left.count() + 1, INT_MAX)));
    if (ready < 0 && errno != EINTR) {
      std::string error = std::strerror(errno);
      killAndReap(&children);
      return ::testing::AssertionFailure() << "poll: " << error;
    }
    for (size_t i = 0; i < polled.size() && ready > 0 && firstFailed < 0; ++i) {
      if (polled[i].revents == 0) continue;
      Child* child = owners[i];
      char buffer[4096];
      ssize_t got = read(child->fd, buffer, sizeof(buffer));
      if (got < 0 && (errno == EINTR || errno == EAGAIN)) continue;
      if (got > 0) {
        child->inbox.append(buffer, static_cast<size_t>(got));
        if (takeFrames(child)) firstFailed = child->rank;
        continue;
      }
      close(child->fd);
      child->fd = -1;
      if (reapFinished(child)) firstFailed = child->rank;
    }
  }

  std::vector<int> running;
  std::vector<int> finished;
  for (const Child& child : children) {
    if (child.done) {
      finished.push_back(child.rank);
    } else if (!child.reaped) {
      running.push_back(child.rank);
    }
  }
  if (timedOut) {
    std::vector<pid_t> stuck;
    for (int rank : running) stuck.push_back(children[rank].pid);
    askForProgressDumps(stuck);
  }
  killAndReap(&children);
  if (timedOut) {
    auto result = ::testing::AssertionFailure()
                  << "deadline of " << options.deadline.count() << " s passed with "
                  << rankList(running) << " still running";
    if (!finished.empty()) result << " (" << rankList(finished) << " had finished)";
    result << "; all ranks were killed";
    for (int rank : running) {
      if (!children[rank].note.empty()) result << "; rank " << rank << " was at: " << children[rank].note;
    }
    return result;
  }
  if (firstFailed >= 0) {
    auto result = ::testing::AssertionFailure() << children[firstFailed].failure;
    std::vector<int> killed;
    for (int rank : running) {
      if (rank != firstFailed) killed.push_back(rank);
    }
    if (!killed.empty()) result << " (then killed " << rankList(killed) << ")";
    return result;
  }
  return ::testing::AssertionSuccess();
}

}  // namespace weft::harness
