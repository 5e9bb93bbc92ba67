// Hang reports: with WEFT_TIMEOUT a call that makes no progress fails and says what it waited for;
// with WEFT_DUMP_SIGNAL every rank prints, on that signal, what its communicators wait for, and
// the handler that was there before still runs.

#include <gtest/gtest.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <string>
#include <vector>

#include "nccl.h"
#include "tests/harness/rank_check.h"
#include "tests/harness/rank_runner.h"

namespace weft::reliability {
namespace {

using harness::RankMode;
using harness::RankRunOptions;
using harness::ScopedComm;

TEST(HangReport, TimeoutSaysWhatTheCallWaitsFor) {
  RankRunOptions options;
  options.nranks = 2;
  options.mode = RankMode::kProcesses;
  options.env = {{"WEFT_TIMEOUT", "2"}};
  options.deadline = std::chrono::seconds(90);
  EXPECT_TRUE(harness::runRanks(options, [](int rank, int nranks, const ncclUniqueId& id) {
    ScopedComm comm;
    RANK_CHECK_NCCL(ncclCommInitRank(comm.out(), nranks, id, rank));
    std::vector<float> buffer(4099, 1.0f);
    RANK_CHECK_NCCL(ncclAllReduce(buffer.data(), buffer.data(), buffer.size(), ncclFloat, ncclSum, comm, nullptr));
    if (rank == 1) {
      // Rank 1 does not call the second allreduce; it waits for a message that never comes, and
      // fails too (by its own timeout, or when rank 0 aborts).
      int value = 0;
      RANK_EXPECT(ncclRecv(&value, 1, ncclInt32, 0, comm, nullptr) == ncclRemoteError);
      RANK_CHECK_NCCL(ncclCommAbort(comm.release()));
      return;
    }
    auto start = std::chrono::steady_clock::now();
    ncclResult_t result = ncclAllReduce(buffer.data(), buffer.data(), buffer.size(), ncclFloat, ncclSum, comm, nullptr);
    double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    std::string message = ncclGetLastError(comm);
    RANK_EXPECT(result == ncclRemoteError);
    RANK_EXPECT(seconds >= 1.5);
    RANK_EXPECT(message.find("WEFT_TIMEOUT=2") != std::string::npos);
    RANK_EXPECT(message.find("AllReduce #2 (4099 x float)") != std::string::npos);
    RANK_EXPECT(message.find("waiting to receive from rank 1") != std::string::npos);
    RANK_CHECK_NCCL(ncclCommAbort(comm.release()));
  }));
}

volatile sig_atomic_t gEarlierHandlerRan = 0;

void earlierHandler(int) {
  gEarlierHandlerRan = 1;
  const char text[] = "earlier handler ran\n";
  ssize_t written = write(STDERR_FILENO, text, sizeof(text) - 1);
  (void)written;
}

TEST(HangReport, DumpSignalPrintsEveryWaitAndChainsTheEarlierHandler) {
  int output[2];
  ASSERT_EQ(pipe(output), 0);
  pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    // One process, two ranks (ncclCommInitAll); rank 0 calls an allreduce that rank 1 never
    // joins, so it waits until this process is killed.
    dup2(output[1], STDERR_FILENO);
    close(output[0]);
    signal(SIGUSR1, earlierHandler);
    setenv("WEFT_DUMP_SIGNAL", "USR1", 1);
    ncclComm_t comms[2];
    if (ncclCommInitAll(comms, 2, nullptr) != ncclSuccess) _exit(10);
    const char ready[] = "child ready\n";  // the handlers are in place: signals may come
    if (write(STDERR_FILENO, ready, sizeof(ready) - 1) < 0) _exit(12);
    std::vector<int> buffer(77, 1);
    ncclAllReduce(buffer.data(), buffer.data(), buffer.size(), ncclInt32, ncclSum, comms[0], nullptr);
    _exit(11);
  }
  close(output[1]);
  std::string seen;
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  bool complete = false;
  while (!complete && std::chrono::steady_clock::now() < deadline) {
    if (seen.find("child ready") != std::string::npos) kill(child, SIGUSR1);
    pollfd readable{output[0], POLLIN, 0};
    while (poll(&readable, 1, 300) > 0) {
      char chunk[4096];
      ssize_t got = read(output[0], chunk, sizeof(chunk));
      if (got <= 0) break;
      seen.append(chunk, static_cast<size_t>(got));
    }
    complete = seen.find("rank 0/2 comm 0x") != std::string::npos &&
               seen.find("AllReduce #1 (77 x int32), channel 0 step ") != std::string::npos &&
               seen.find("waiting to receive from rank 1") != std::string::npos &&
               seen.find("rank 1/2 comm 0x") != std::string::npos &&
               seen.find("no call in progress") != std::string::npos &&
               seen.find("earlier handler ran") != std::string::npos;
  }
  kill(child, SIGKILL);
  int status = 0;
  waitpid(child, &status, 0);
  close(output[0]);
  EXPECT_TRUE(complete) << "the dump lacks a line; the child printed:\n" << seen;
}

}  // namespace
}  // namespace weft::reliability
