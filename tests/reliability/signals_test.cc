// Signals: a peer that closed its sockets never kills a process with SIGPIPE, and collectives stay
// right while a timer signal whose handler is installed without SA_RESTART interrupts the ranks'
// system calls every millisecond (each interrupted call is retried).

#include <fcntl.h>
#include <gtest/gtest.h>
#include <poll.h>
#include <signal.h>
#include <sys/time.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <string>
#include <vector>

#include "nccl.h"
#include "tests/harness/rank_check.h"
#include "tests/harness/rank_runner.h"
#include "tests/reliability/allreduce_check.h"
#include "tests/reliability/run_options.h"

namespace weft::reliability {
namespace {

using harness::RankMode;
using harness::RankRunOptions;
using harness::ScopedComm;

/// A pipe that both ranks inherit: rank 1 writes one byte once its sockets are closed.
struct ClosedSignal {
  int fds[2] = {-1, -1};
  ClosedSignal() { (void)pipe2(fds, O_CLOEXEC); }
  ~ClosedSignal() {
    for (int fd : fds) {
      if (fd >= 0) close(fd);
    }
  }
  void tell() const {
    char byte = 1;
    while (write(fds[1], &byte, 1) < 0 && errno == EINTR) {
    }
  }
  bool await(std::chrono::seconds limit) const {
    pollfd entry{fds[0], POLLIN, 0};
    return poll(&entry, 1, static_cast<int>(std::chrono::milliseconds(limit).count())) == 1;
  }
};

constexpr size_t kSentBytes = size_t{16} << 20;

/// Rank 0 sends `bytes` to rank 1 and rank 1 to rank 0, in one group. Returns an empty string or
/// the failure.
std::string sendAndReceive(ncclComm_t comm, int rank, const std::vector<char>& bytes) {
  std::vector<char> received(bytes.size());
  const int peer = 1 - rank;
  ncclResult_t result = ncclGroupStart();
  if (result == ncclSuccess) result = ncclSend(bytes.data(), bytes.size(), ncclChar, peer, comm, nullptr);
  if (result == ncclSuccess) result = ncclRecv(received.data(), received.size(), ncclChar, peer, comm, nullptr);
  ncclResult_t ended = ncclGroupEnd();
  if (result == ncclSuccess) result = ended;
  if (result != ncclSuccess) return "send/recv returned " + harness::describeResult(result);
  if (received != std::vector<char>(bytes.size(), static_cast<char>(peer))) return "received the wrong bytes";
  return "";
}

class Sigpipe : public ::testing::TestWithParam<RankMode> {};

TEST_P(Sigpipe, APeerThatClosedItsSocketsDoesNotKillTheSender) {
  ClosedSignal closed;
  ASSERT_GE(closed.fds[0], 0);
  RankRunOptions options;
  options.nranks = 2;
  options.mode = GetParam();
  options.env = transportEnv(Transport::kSocket);
  options.env.push_back({"WEFT_TIMEOUT", "10"});  // bounds the wait if the error is noticed on a receive
  options.deadline = std::chrono::seconds(120);
  options.label = "sends to a peer that closed its sockets";
  // Default disposition: a write to a closed socket without MSG_NOSIGNAL would end the process.
  struct sigaction previous {};
  struct sigaction fatal {};
  fatal.sa_handler = SIG_DFL;
  ASSERT_EQ(sigaction(SIGPIPE, &fatal, &previous), 0);
  EXPECT_TRUE(harness::runRanks(options, [&closed](int rank, int nranks, const ncclUniqueId& id) {
    ScopedComm comm;
    RANK_CHECK_NCCL(ncclCommInitRank(comm.out(), nranks, id, rank));
    // One exchange while both live makes the point-to-point connections.
    const std::vector<char> bytes(kSentBytes, static_cast<char>(rank));
    std::string failed = sendAndReceive(comm, rank, bytes);
    RANK_CHECK(failed.empty()) << failed;
    if (rank == 1) {
      RANK_CHECK_NCCL(ncclCommAbort(comm.release()));  // closes its sockets, says nothing
      closed.tell();
      return;
    }
    RANK_CHECK(closed.await(std::chrono::seconds(60))) << "rank 1 never said it closed its sockets";
    // Sends only, larger than the socket buffers: rank 0 keeps writing after the peer's reset.
    ncclResult_t result = ncclSuccess;
    for (int attempt = 0; attempt < 3 && result == ncclSuccess; ++attempt) {
      result = ncclSend(bytes.data(), bytes.size(), ncclChar, 1, comm, nullptr);
    }
    RANK_CHECK(result != ncclSuccess) << "sends to a peer that closed its sockets succeeded";
    (void)ncclCommAbort(comm.release());
  }));
  sigaction(SIGPIPE, &previous, nullptr);
}

INSTANTIATE_TEST_SUITE_P(Modes, Sigpipe, ::testing::Values(RankMode::kThreads, RankMode::kProcesses),
                         [](const ::testing::TestParamInfo<RankMode>& info) { return std::string(modeName(info.param)); });

std::atomic<int> gTimerSignals{0};

void countTimerSignal(int) { gTimerSignals.fetch_add(1, std::memory_order_relaxed); }

/// SIGALRM every millisecond with a handler installed without SA_RESTART, for its lifetime.
/// Interval timers belong to a process and are not inherited by fork: processes mode makes one
/// per rank.
class MillisecondTimer {
 public:
  MillisecondTimer() {
    struct sigaction action {};
    action.sa_handler = countTimerSignal;
    sigemptyset(&action.sa_mask);
    action.sa_flags = 0;  // no SA_RESTART: interrupted system calls fail with EINTR
    sigaction(SIGALRM, &action, &previous_);
    itimerval every{{0, 1000}, {0, 1000}};
    setitimer(ITIMER_REAL, &every, nullptr);
  }
  ~MillisecondTimer() {
    itimerval off{};
    setitimer(ITIMER_REAL, &off, nullptr);
    sigaction(SIGALRM, &previous_, nullptr);
  }
  MillisecondTimer(const MillisecondTimer&) = delete;
  MillisecondTimer& operator=(const MillisecondTimer&) = delete;

 private:
  struct sigaction previous_ {};
};

constexpr int kInterruptedCalls = 60;
/// A run this long sees hundreds of ticks; fewer than this means the timer did not run.
constexpr int kFewestSignals = 20;
const size_t kInterruptedCounts[] = {1, 1000, 100000, size_t{1} << 20};

struct EintrCase {
  RankMode mode;
  Transport transport;
};

class Eintr : public ::testing::TestWithParam<EintrCase> {};

/// Init, allreduces of every size, and destroy, all under the timer.
void collectivesUnderTheTimer(int rank, int nranks, const ncclUniqueId& id) {
  ScopedComm comm;
  RANK_CHECK_NCCL(ncclCommInitRank(comm.out(), nranks, id, rank));
  for (int call = 0; call < kInterruptedCalls; ++call) {
    std::string wrong = allReduceAndCheck(comm, rank, nranks, kInterruptedCounts[call % 4], call);
    RANK_CHECK(wrong.empty()) << wrong;
  }
}

TEST_P(Eintr, CollectivesAreRightUnderATimerSignalEveryMillisecond) {
  const EintrCase& param = GetParam();
  RankRunOptions options;
  options.nranks = 3;
  options.mode = param.mode;
  options.env = transportEnv(param.transport);
  options.deadline = std::chrono::seconds(180);
  options.label = "collectives under a 1 ms SIGALRM";
  gTimerSignals = 0;
  if (param.mode == RankMode::kThreads) {
    MillisecondTimer timer;
    EXPECT_TRUE(harness::runRanks(options, collectivesUnderTheTimer));
    EXPECT_GE(gTimerSignals.load(), kFewestSignals) << "the timer did not interrupt the ranks";
    return;
  }
  EXPECT_TRUE(harness::runRanks(options, [](int rank, int nranks, const ncclUniqueId& id) {
    MillisecondTimer timer;
    collectivesUnderTheTimer(rank, nranks, id);
    int signals = gTimerSignals.load();
    RANK_EXPECT(signals >= kFewestSignals) << "only " << signals << " timer signals arrived";
  }));
}

INSTANTIATE_TEST_SUITE_P(Transports, Eintr,
                         ::testing::Values(EintrCase{RankMode::kThreads, Transport::kShm},
                                           EintrCase{RankMode::kThreads, Transport::kSocket},
                                           EintrCase{RankMode::kProcesses, Transport::kShm},
                                           EintrCase{RankMode::kProcesses, Transport::kSocket}),
                         [](const ::testing::TestParamInfo<EintrCase>& info) {
                           return std::string(modeName(info.param.mode)) + "_" + transportName(info.param.transport);
                         });

}  // namespace
}  // namespace weft::reliability
