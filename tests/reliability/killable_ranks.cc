#include "tests/reliability/killable_ranks.h"

#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <thread>

namespace weft::reliability {

std::vector<pid_t> forkKillableRanks(int nranks, const ncclUniqueId& id,
                                     const std::function<int(int rank, const ncclUniqueId& id)>& body) {
  std::vector<pid_t> children;
  const pid_t parent = getpid();
  for (int rank = 0; rank < nranks; ++rank) {
    pid_t pid = fork();
    if (pid < 0) {
      for (pid_t child : children) kill(child, SIGKILL);
      for (pid_t child : children) (void)waitForRank(child);
      return {};
    }
    if (pid == 0) {
      // Dies with the test's process, which a test runner may kill mid-test.
      prctl(PR_SET_PDEATHSIG, SIGKILL);
      if (getppid() != parent) _exit(1);
      _exit(body(rank, id));
    }
    children.push_back(pid);
  }
  return children;
}

int waitForRank(pid_t pid) {
  int status = 0;
  while (waitpid(pid, &status, 0) < 0) {
    if (errno != EINTR) return -1;  // no such child: never spin
  }
  return status;
}

std::vector<int> waitForRanksWithin(const std::vector<pid_t>& pids, std::chrono::milliseconds limit) {
  std::vector<int> statuses(pids.size(), kStillRunning);
  const auto deadline = std::chrono::steady_clock::now() + limit;
  size_t left = pids.size();
  while (left > 0 && std::chrono::steady_clock::now() < deadline) {
    for (size_t i = 0; i < pids.size(); ++i) {
      if (statuses[i] != kStillRunning) continue;
      int status = 0;
      const pid_t done = waitpid(pids[i], &status, WNOHANG);
      if (done == 0 || (done < 0 && errno == EINTR)) continue;
      statuses[i] = done == pids[i] ? status : -1;
      --left;
    }
    if (left > 0) std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  for (size_t i = 0; i < pids.size(); ++i) {
    if (statuses[i] != kStillRunning) continue;
    kill(pids[i], SIGKILL);
    (void)waitForRank(pids[i]);
  }
  return statuses;
}

}  // namespace weft::reliability
