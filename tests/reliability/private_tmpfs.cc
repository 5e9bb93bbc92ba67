#include "tests/reliability/private_tmpfs.h"

#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <sys/mount.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

namespace weft::reliability {
namespace {

// The child's verdict: one byte, then text.
constexpr char kPassed = 'P';
constexpr char kFailed = 'F';
constexpr char kSkipped = 'S';

void writeVerdict(int fd, char kind, const std::string& text) {
  std::string message = kind + text;
  const char* data = message.data();
  size_t left = message.size();
  while (left > 0) {
    ssize_t written = write(fd, data, left);
    if (written < 0 && errno == EINTR) continue;
    if (written <= 0) return;
    data += written;
    left -= static_cast<size_t>(written);
  }
}

/// In the child: a private mount namespace and the tmpfs. Returns an empty string or why not.
std::string mountPrivateTmpfs(const std::string& folder, size_t bytes) {
  if (unshare(CLONE_NEWNS) != 0) {
    return std::string("cannot enter a mount namespace of its own (unshare(CLONE_NEWNS): ") + std::strerror(errno) +
           "); it needs CAP_SYS_ADMIN (root, or a container allowed to mount)";
  }
  // Private, so that the tmpfs never shows in the machine's mount table.
  if (mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0) {
    return std::string("cannot make the mounts private (mount --make-rprivate /): ") + std::strerror(errno);
  }
  std::string options = "size=" + std::to_string(bytes) + ",mode=0700";
  if (mount("tmpfs", folder.c_str(), "tmpfs", MS_NOSUID | MS_NODEV, options.c_str()) != 0) {
    return "cannot mount a tmpfs (" + options + ") on " + folder + ": " + std::strerror(errno);
  }
  return "";
}

std::string describeEnd(int status) {
  if (WIFEXITED(status)) return "exited with status " + std::to_string(WEXITSTATUS(status));
  if (WIFSIGNALED(status)) {
    return "was killed by signal " + std::to_string(WTERMSIG(status)) + " (" + strsignal(WTERMSIG(status)) + ")";
  }
  return "ended with wait status " + std::to_string(status);
}

}  // namespace

TmpfsRun runWithPrivateTmpfs(size_t bytes, std::chrono::seconds deadline,
                             const std::function<std::string(const std::string& folder)>& body) {
  TmpfsRun run;
  char pattern[] = "/tmp/weft-reliability-tmpfs-XXXXXX";
  if (mkdtemp(pattern) == nullptr) {
    run.failure = std::string("mkdtemp: ") + std::strerror(errno);
    return run;
  }
  const std::string folder = pattern;
  int fds[2];
  if (pipe2(fds, O_CLOEXEC) != 0) {
    run.failure = std::string("pipe: ") + std::strerror(errno);
    rmdir(folder.c_str());
    return run;
  }
  std::fflush(nullptr);
  pid_t child = fork();
  if (child == 0) {
    close(fds[0]);
    std::string why = mountPrivateTmpfs(folder, bytes);
    if (!why.empty()) {
      writeVerdict(fds[1], kSkipped, why);
    } else {
      std::string failure = body(folder);
      writeVerdict(fds[1], failure.empty() ? kPassed : kFailed, failure);
    }
    std::fflush(nullptr);
    _exit(0);
  }
  close(fds[1]);
  if (child < 0) {
    run.failure = std::string("fork: ") + std::strerror(errno);
    close(fds[0]);
    rmdir(folder.c_str());
    return run;
  }

  std::string verdict;
  bool timedOut = false;
  const auto end = std::chrono::steady_clock::now() + deadline;
  while (true) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(end - std::chrono::steady_clock::now());
    if (left.count() <= 0) {
      timedOut = true;
      break;
    }
    pollfd entry{fds[0], POLLIN, 0};
    if (poll(&entry, 1, static_cast<int>(left.count())) <= 0) continue;
    char buffer[4096];
    ssize_t got = read(fds[0], buffer, sizeof(buffer));
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) break;
    verdict.append(buffer, static_cast<size_t>(got));
  }
  close(fds[0]);
  if (timedOut) kill(child, SIGKILL);
  int status = 0;
  while (waitpid(child, &status, 0) < 0 && errno == EINTR) {
  }
  rmdir(folder.c_str());

  if (timedOut) {
    run.failure = "the test's child did not finish within " + std::to_string(deadline.count()) + " s (a hang)";
  } else if (verdict.empty()) {
    run.failure = "the test's child " + describeEnd(status) + " before giving a verdict";
  } else if (verdict[0] == kSkipped) {
    run.skipped = verdict.substr(1);
  } else if (verdict[0] == kFailed) {
    run.failure = verdict.substr(1);
  } else if (!(WIFEXITED(status) && WEXITSTATUS(status) == 0)) {
    run.failure = "the test's child passed but then " + describeEnd(status);
  }
  return run;
}

}  // namespace weft::reliability
