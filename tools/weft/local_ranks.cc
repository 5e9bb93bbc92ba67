#include "tools/weft/local_ranks.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstring>
#include <random>

#include "src/base/socket.h"

extern char** environ;

namespace weft::tools {
namespace {

using Clock = std::chrono::steady_clock;

std::string randomSecret() {
  std::random_device device;
  std::string secret;
  for (int i = 0; i < 4; ++i) {
    char word[9];
    std::snprintf(word, sizeof(word), "%08x", device());
    secret += word;
  }
  return secret;
}

/// The environment of one rank: this process's, less the job's unset names and every name the
/// job sets, then the job's variables.
std::vector<std::string> rankEnvironment(const LocalJob& job, int rank, int port, const std::string& secret) {
  std::vector<std::pair<std::string, std::string>> set = {
      {"RANK", std::to_string(rank)},
      {"WORLD_SIZE", std::to_string(job.ranks)},
      {"NCCL_COMM_ID", "127.0.0.1:" + std::to_string(port)},
      {"WEFT_COMM_SECRET", secret},
  };
  set.insert(set.end(), job.environment.begin(), job.environment.end());
  std::vector<std::string> removed = job.unset;
  for (const auto& [name, value] : set) removed.push_back(name);
  std::vector<std::string> environment;
  for (char** entry = environ; *entry != nullptr; ++entry) {
    const std::string text = *entry;
    const std::string name = text.substr(0, text.find('='));
    if (std::find(removed.begin(), removed.end(), name) == removed.end()) environment.push_back(text);
  }
  for (const auto& [name, value] : set) environment.push_back(name + "=" + value);
  return environment;
}

std::vector<char*> pointers(std::vector<std::string>& strings) {
  std::vector<char*> result;
  for (std::string& text : strings) result.push_back(text.data());
  result.push_back(nullptr);
  return result;
}

std::string describeExit(int rank, int status) {
  if (WIFSIGNALED(status)) {
    return "rank " + std::to_string(rank) + " was killed by signal " + std::to_string(WTERMSIG(status)) + " (" +
           strsignal(WTERMSIG(status)) + ")";
  }
  return "rank " + std::to_string(rank) + " exited with code " + std::to_string(WEXITSTATUS(status));
}

struct Rank {
  pid_t pid = -1;
  int outputFd = -1;  // read end of the rank's stdout and stderr; -1 once at end of file
  bool exited = false;
};

/// Kills every rank still running, with whatever it started (each rank leads a process group).
void endRanks(std::vector<Rank>& ranks) {
  for (Rank& rank : ranks) {
    if (!rank.exited && rank.pid > 0) kill(-rank.pid, SIGKILL);
  }
}

/// Reaps `rank` if it has exited, first killing what it left in its process group (while the rank
/// is a zombie its pid, the group's id, cannot be reused). True if it was reaped; *status is its
/// exit status.
bool reapIfExited(Rank& rank, int* status) {
  siginfo_t info{};
  if (waitid(P_PID, rank.pid, &info, WEXITED | WNOHANG | WNOWAIT) != 0 || info.si_pid != rank.pid) return false;
  kill(-rank.pid, SIGKILL);
  if (waitpid(rank.pid, status, 0) != rank.pid) *status = W_EXITCODE(127, 0);
  rank.exited = true;
  return true;
}

/// Sets SIGCHLD to its default for the life of the object: with SIGCHLD ignored (inherited from
/// the parent) the kernel would reap the ranks itself and their exit status would be lost.
class DefaultChildSignal {
 public:
  DefaultChildSignal() {
    struct sigaction standard {};
    standard.sa_handler = SIG_DFL;
    sigemptyset(&standard.sa_mask);
    sigaction(SIGCHLD, &standard, &saved_);
  }
  ~DefaultChildSignal() { sigaction(SIGCHLD, &saved_, nullptr); }
  DefaultChildSignal(const DefaultChildSignal&) = delete;
  DefaultChildSignal& operator=(const DefaultChildSignal&) = delete;

 private:
  struct sigaction saved_ {};
};

/// How long the pipes are still read once every rank has exited: what the ranks wrote is there at
/// once; a process that left a rank's group may hold a pipe open, and is not waited for.
constexpr auto kDrainAfterExit = std::chrono::seconds(1);

}  // namespace

LocalJobResult runLocalJob(const LocalJob& job) {
  const DefaultChildSignal defaultChildSignal;
  LocalJobResult result;
  result.output.assign(job.ranks, std::string());
  net::SocketAddress loopback;
  net::Socket reservation;
  Status reserved = net::SocketAddress::parse("127.0.0.1:0", &loopback);
  if (reserved.isOk()) reserved = net::Socket::reservePort(loopback, &reservation);
  if (!reserved.isOk()) {
    result.why = "cannot reserve a loopback port for the bootstrap root: " + reserved.message();
    return result;
  }
  const int port = reservation.localAddress().port();
  const std::string secret = randomSecret();
  std::vector<std::string> argvStrings = {job.program};
  argvStrings.insert(argvStrings.end(), job.arguments.begin(), job.arguments.end());
  std::vector<char*> argv = pointers(argvStrings);

  std::vector<Rank> ranks(job.ranks);
  for (int r = 0; r < job.ranks; ++r) {
    std::vector<std::string> environmentStrings = rankEnvironment(job, r, port, secret);
    std::vector<char*> environment = pointers(environmentStrings);
    int fds[2];
    if (pipe2(fds, O_CLOEXEC) != 0) {
      result.why = std::string("cannot make a pipe: ") + strerror(errno);
      break;
    }
    const pid_t parent = getpid();
    const pid_t pid = fork();
    if (pid == 0) {
      // Its own process group, so that ending the rank ends what it started; killed if this
      // process dies, since that group no longer hears the terminal's Ctrl-C.
      setpgid(0, 0);
      prctl(PR_SET_PDEATHSIG, SIGKILL);
      if (getppid() != parent) _exit(127);
      dup2(fds[1], STDOUT_FILENO);  // dup2 clears close-on-exec on the copies
      dup2(fds[1], STDERR_FILENO);
      execve(argv[0], argv.data(), environment.data());
      const std::string message = "cannot run " + job.program + ": " + strerror(errno) + "\n";
      (void)!write(STDERR_FILENO, message.data(), message.size());
      _exit(127);
    }
    close(fds[1]);
    if (pid < 0) {
      close(fds[0]);
      result.why = std::string("fork failed: ") + strerror(errno);
      break;
    }
    setpgid(pid, pid);  // as the child does, so that no kill can come before its group exists
    ranks[r] = {pid, fds[0], false};
  }
  if (!result.why.empty()) endRanks(ranks);

  const Clock::time_point deadline = Clock::now() + job.deadline;
  Clock::time_point allExited{};
  while (true) {
    std::vector<pollfd> fds;
    std::vector<int> fdRanks;
    for (int r = 0; r < job.ranks; ++r) {
      if (ranks[r].outputFd < 0) continue;
      fds.push_back({ranks[r].outputFd, POLLIN, 0});
      fdRanks.push_back(r);
    }
    const bool running =
        std::any_of(ranks.begin(), ranks.end(), [](const Rank& rank) { return rank.pid > 0 && !rank.exited; });
    if (fds.empty() && !running) break;
    if (!running && allExited == Clock::time_point{}) allExited = Clock::now();
    if (!running && Clock::now() - allExited > kDrainAfterExit) {
      for (Rank& rank : ranks) {
        if (rank.outputFd >= 0) close(rank.outputFd);
        rank.outputFd = -1;
      }
      break;
    }
    if (poll(fds.data(), fds.size(), 100) > 0) {
      for (size_t i = 0; i < fds.size(); ++i) {
        if (fds[i].revents == 0) continue;
        Rank& rank = ranks[fdRanks[i]];
        char buffer[4096];
        const ssize_t n = read(rank.outputFd, buffer, sizeof(buffer));
        if (n > 0) {
          result.output[fdRanks[i]].append(buffer, static_cast<size_t>(n));
        } else if (n == 0 || errno != EINTR) {
          close(rank.outputFd);
          rank.outputFd = -1;
        }
      }
    }
    for (int r = 0; r < job.ranks; ++r) {
      Rank& rank = ranks[r];
      int status = 0;
      if (rank.pid <= 0 || rank.exited || !reapIfExited(rank, &status)) continue;
      if (WIFEXITED(status) && WEXITSTATUS(status) == 0) continue;
      if (result.why.empty()) {
        result.why = describeExit(r, status);
        endRanks(ranks);
      }
    }
    if (result.why.empty() && running && Clock::now() > deadline) {
      result.why = "the job ran longer than " + std::to_string(job.deadline.count()) + " s; every rank was ended";
      endRanks(ranks);
    }
  }
  result.ok = result.why.empty();
  return result;
}

}  // namespace weft::tools
