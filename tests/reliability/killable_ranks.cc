#include "tests/reliability/killable_ranks.h"

#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>

namespace weft::reliability {

std::vector<pid_t> forkKillableRanks(int nranks, const ncclUniqueId& id,
                                     const std::function<int(int rank, const ncclUniqueId& id)>& body) {
  std::vector<pid_t> children;
  const pid_t parent = getpid();
  for (int rank = 0; rank < nranks; ++rank) {
    pid_t pid = fork();
    if (pid < 0) return {};
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

}  // namespace weft::reliability
