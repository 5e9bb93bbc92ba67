#include "tests/reliability/killable_ranks.h"

#include <sys/wait.h>
#include <unistd.h>

namespace weft::reliability {

std::vector<pid_t> forkKillableRanks(int nranks, const ncclUniqueId& id,
                                     const std::function<int(int rank, const ncclUniqueId& id)>& body) {
  std::vector<pid_t> children;
  for (int rank = 0; rank < nranks; ++rank) {
    pid_t pid = fork();
    if (pid < 0) return {};
    if (pid == 0) _exit(body(rank, id));
    children.push_back(pid);
  }
  return children;
}

int waitForRank(pid_t pid) {
  int status = 0;
  while (waitpid(pid, &status, 0) < 0) {
  }
  return status;
}

}  // namespace weft::reliability
