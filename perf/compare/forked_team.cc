#include "perf/compare/forked_team.h"

#include <sched.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <new>
#include <vector>

namespace weft::perf::compare {
namespace {

constexpr int kMaxRanks = 64;
// Weft's own back-off (src/base/wait.cc): spin this many polls, then give the CPU away.
constexpr int kSpinsBeforeYield = 1000;

inline void cpuRelax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#endif
}

// The CPUs this process may run on, in order.
std::vector<int> allowedCpus() {
  cpu_set_t set;
  CPU_ZERO(&set);
  std::vector<int> cpus;
  if (sched_getaffinity(0, sizeof(set), &set) != 0) return cpus;
  for (int cpu = 0; cpu < CPU_SETSIZE; ++cpu) {
    if (CPU_ISSET(cpu, &set)) cpus.push_back(cpu);
  }
  return cpus;
}

void pinTo(int cpu) {
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(cpu, &set);
  (void)sched_setaffinity(0, sizeof(set), &set);  // unpinned still measures, only less steadily
}

}  // namespace

struct ForkedTeam::Shared {
  alignas(64) std::atomic<int> arrived{0};
  alignas(64) std::atomic<uint64_t> generation{0};
  // Written by sumOverRanks, alternating between two rows: a rank can only write a row again after
  // every rank has passed the barrier that follows the last read of that row.
  alignas(64) double values[2][kMaxRanks] = {};
};

void idlePoll(int& spins) {
  if (spins < kSpinsBeforeYield) {
    ++spins;
    cpuRelax();
  } else {
    sched_yield();
  }
}

int ForkedTeam::run(int ranks, const std::function<int(ForkedTeam&)>& body) {
  if (ranks < 1 || ranks > kMaxRanks) {
    std::fprintf(stderr, "cannot run %d processes: 1 to %d are supported\n", ranks, kMaxRanks);
    return 1;
  }
  void* mapping = mmap(nullptr, sizeof(Shared), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (mapping == MAP_FAILED) {
    std::perror("mmap of the team's shared state");
    return 1;
  }
  auto* shared = new (mapping) Shared();
  const std::vector<int> cpus = allowedCpus();
  const bool pin = ranks <= static_cast<int>(cpus.size());
  std::fflush(nullptr);  // nothing buffered may be printed once per child
  std::vector<pid_t> children;
  int status = 0;
  for (int rank = 0; rank < ranks && status == 0; ++rank) {
    const pid_t pid = fork();
    if (pid < 0) {
      std::perror("fork");
      status = 1;
    } else if (pid == 0) {
      if (pin) pinTo(cpus[static_cast<size_t>(rank)]);
      ForkedTeam team(shared, rank, ranks);
      const int result = body(team);
      std::fflush(nullptr);
      _exit(result);
    } else {
      children.push_back(pid);
    }
  }
  if (status != 0) {
    for (pid_t child : children) kill(child, SIGKILL);
  }
  for (size_t left = children.size(); left > 0; --left) {
    int childStatus = 0;
    const pid_t done = wait(&childStatus);
    if (done < 0) break;
    if (WIFEXITED(childStatus) && WEXITSTATUS(childStatus) == 0) continue;
    if (status == 0) {
      std::fprintf(stderr, "rank process %d %s %d: stopping the others\n", static_cast<int>(done),
                   WIFEXITED(childStatus) ? "exited with" : "was killed by signal",
                   WIFEXITED(childStatus) ? WEXITSTATUS(childStatus) : WTERMSIG(childStatus));
      for (pid_t child : children) {
        if (child != done) kill(child, SIGKILL);
      }
    }
    status = 1;
  }
  shared->~Shared();
  munmap(mapping, sizeof(Shared));
  return status;
}

void ForkedTeam::barrier() {
  const uint64_t generation = shared_->generation.load(std::memory_order_acquire);
  if (shared_->arrived.fetch_add(1, std::memory_order_acq_rel) == ranks_ - 1) {
    shared_->arrived.store(0, std::memory_order_relaxed);
    shared_->generation.store(generation + 1, std::memory_order_release);
    return;
  }
  for (int spins = 0; shared_->generation.load(std::memory_order_acquire) == generation;) idlePoll(spins);
}

double ForkedTeam::sumOverRanks(double value) {
  double* row = shared_->values[sumCalls_++ & 1];
  row[rank_] = value;
  barrier();
  double sum = 0;
  for (int rank = 0; rank < ranks_; ++rank) sum += row[rank];
  return sum;
}

}  // namespace weft::perf::compare
