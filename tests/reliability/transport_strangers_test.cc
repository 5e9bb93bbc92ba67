// Strangers at the socket transport's listening ports. A receiving end listens from the moment it
// publishes its address until its sender connects; anything may reach the port meanwhile. Here the
// connections made by a first point-to-point call are attacked: rank 0 receives from the last rank,
// which finds rank 0's new listening port as a scanner on this host would, sends a crowd of
// strangers to it (garbage, probes, forged and truncated handshakes, floods, hang-ups and silence,
// more of them than the receiver hears at once), and only then sends. The data must arrive exact
// and without waiting for a silent stranger's handshake timeout, and every stranger is closed.

#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "nccl.h"
#include "tests/harness/rank_check.h"
#include "tests/harness/rank_runner.h"
#include "tests/reliability/allreduce_check.h"
#include "tests/reliability/listening_ports.h"
#include "tests/reliability/run_options.h"
#include "tests/reliability/stranger_crowd.h"

namespace weft::reliability {
namespace {

using harness::RankMode;
using harness::RankRunOptions;
using harness::ScopedComm;
using Clock = std::chrono::steady_clock;

constexpr int kRanks = 3;
/// More than the socket transport hears at once (64), so that some are closed unheard.
constexpr int kStrangers = 100;
/// So long that the send would visibly wait if it waited for a silent stranger's handshake.
constexpr int kHandshakeTimeoutSeconds = 60;
constexpr double kCallLimitSeconds = kHandshakeTimeoutSeconds / 2.0;
constexpr auto kPortSearchLimit = std::chrono::seconds(30);
constexpr auto kDropLimit = std::chrono::seconds(20);
constexpr size_t kCount = 100000;

/// The processes that hold the run's ranks: this one (threads) or the test process's children.
std::vector<pid_t> rankProcesses(RankMode mode, pid_t testProcess) {
  return mode == RankMode::kThreads ? std::vector<pid_t>{getpid()} : childrenOf(testProcess);
}

std::set<uint16_t> portsOf(const std::vector<pid_t>& pids) {
  std::set<uint16_t> ports;
  for (const ListeningSocket& socket : listeningSocketsOf(pids)) ports.insert(socket.port);
  return ports;
}

/// Waits for listening ports of the run that are not in `before`: the receiving ends of the
/// connections being made.
std::string findNewPorts(RankMode mode, pid_t testProcess, const std::set<uint16_t>& before,
                         std::vector<ListeningSocket>* out) {
  const auto deadline = Clock::now() + kPortSearchLimit;
  while (true) {
    out->clear();
    for (const ListeningSocket& socket : listeningSocketsOf(rankProcesses(mode, testProcess))) {
      if (before.count(socket.port) == 0) out->push_back(socket);
    }
    if (!out->empty()) return "";
    if (Clock::now() >= deadline) {
      return "no new listening port of the run within " + std::to_string(kPortSearchLimit.count()) + " s";
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
}

int valueOf(size_t element) { return static_cast<int>(element * 2654435761u % 1000003u); }

void sendPastStrangers(int rank, int nranks, const ncclUniqueId& id, RankMode mode, pid_t testProcess) {
  const int attacker = nranks - 1;
  ScopedComm comm;
  RANK_CHECK_NCCL(ncclCommInitRank(comm.out(), nranks, id, rank));
  // Every ring connection is made at init; the allreduce below cannot end before the attacker has
  // taken this picture, so only the point-to-point connection's port is new after it.
  std::set<uint16_t> before;
  if (rank == attacker) before = portsOf(rankProcesses(mode, testProcess));
  std::string wrong = allReduceAndCheck(comm, rank, nranks, 1000, 0);
  RANK_CHECK(wrong.empty()) << wrong;

  if (rank == 0) {
    std::vector<int> received(kCount, -1);
    auto start = Clock::now();
    RANK_CHECK_NCCL(ncclRecv(received.data(), kCount, ncclInt32, attacker, comm, nullptr));
    double seconds = std::chrono::duration<double>(Clock::now() - start).count();
    RANK_CHECK(seconds < kCallLimitSeconds) << "the receive took " << seconds << " s with strangers at its port: "
                                            << "it waited for a silent one";
    for (size_t i = 0; i < kCount; ++i) {
      RANK_CHECK(received[i] == valueOf(i)) << "element " << i << " is " << received[i] << ", expected "
                                            << valueOf(i);
    }
  } else if (rank == attacker) {
    StrangerCrowd crowd;
    std::vector<ListeningSocket> ports;
    std::string failure = findNewPorts(mode, testProcess, before, &ports);
    RANK_EXPECT(failure.empty()) << failure;
    // Rank 0 listens until this rank connects: every new port is still there.
    const int nports = static_cast<int>(ports.size());
    for (int i = 0; i < nports && failure.empty(); ++i) {
      int share = kStrangers / nports + (i == 0 ? kStrangers % nports : 0);
      failure = crowd.join(ports[i], PortKind::kTransport, share, nranks, Secret{1, 2, 3});
      RANK_EXPECT(failure.empty()) << "at " << addressText(ports[i].address) << ": " << failure;
    }
    std::vector<int> sent(kCount);
    for (size_t i = 0; i < kCount; ++i) sent[i] = valueOf(i);
    RANK_CHECK_NCCL(ncclSend(sent.data(), kCount, ncclInt32, 0, comm, nullptr));
    std::string open = crowd.waitUntilDropped(/*completeOnly=*/false, kDropLimit);
    RANK_EXPECT(open.empty()) << "the receiver did not close its strangers: " << open;
  }
  wrong = allReduceAndCheck(comm, rank, nranks, 1000, 1);
  RANK_CHECK(wrong.empty()) << wrong;
}

class StrangersAtTheTransport : public ::testing::TestWithParam<RankMode> {};

TEST_P(StrangersAtTheTransport, ChangeNothing) {
  const RankMode mode = GetParam();
  const pid_t testProcess = getpid();
  RankRunOptions options;
  options.nranks = kRanks;
  options.mode = mode;
  options.env = transportEnv(Transport::kSocket);
  options.env.push_back({"WEFT_BOOTSTRAP_HANDSHAKE_TIMEOUT", std::to_string(kHandshakeTimeoutSeconds)});
  options.deadline = std::chrono::seconds(180);
  options.label = "a send with strangers at the socket transport's port";
  EXPECT_TRUE(harness::runRanks(options, [&](int rank, int nranks, const ncclUniqueId& id) {
    sendPastStrangers(rank, nranks, id, mode, testProcess);
  }));
}

INSTANTIATE_TEST_SUITE_P(Strangers, StrangersAtTheTransport,
                         ::testing::Values(RankMode::kThreads, RankMode::kProcesses),
                         [](const ::testing::TestParamInfo<RankMode>& info) { return modeName(info.param); });

}  // namespace
}  // namespace weft::reliability
