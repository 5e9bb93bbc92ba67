// Bootstrap security: strangers at the bootstrap ports during init (garbage, probes, truncated and
// oversized hellos, a hello with the wrong secret, floods, hang-ups and silence) change nothing.
// The root's port comes from the unique id; the ranks' ports are found as a scanner on this host
// would find them. Every stranger is in place before the last rank joins, so init cannot complete
// without going past them.

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "nccl.h"
#include "tests/harness/rank_check.h"
#include "tests/harness/rank_runner.h"
#include "tests/reliability/allreduce_check.h"
#include "tests/reliability/run_options.h"
#include "tests/reliability/listening_ports.h"
#include "tests/reliability/stranger_crowd.h"

namespace weft::reliability {
namespace {

using harness::RankMode;
using harness::RankRunOptions;
using harness::ScopedComm;
using Clock = std::chrono::steady_clock;

constexpr int kRanks = 3;
constexpr int kStrangersAtTheRoot = 40;
constexpr int kStrangersAtTheRanks = 40;
/// So long that init would visibly wait if it waited for a silent stranger's handshake.
constexpr int kHandshakeTimeoutSeconds = 60;
/// Generous: init normally takes well under a second.
constexpr double kInitLimitSeconds = kHandshakeTimeoutSeconds / 2.0;
constexpr auto kPortSearchLimit = std::chrono::seconds(30);
constexpr auto kDropLimit = std::chrono::seconds(20);
const size_t kCounts[] = {1, 1000, size_t{1} << 20};

enum class IdKind { kUniqueId, kCommId };

/// The TCP ports this process listens on before a run: left over by earlier tests, not the run's.
std::set<uint16_t> portsListenedOnNow() {
  std::set<uint16_t> ports;
  for (const ListeningSocket& socket : listeningSocketsOf({getpid()})) ports.insert(socket.port);
  return ports;
}

/// A loopback port held for NCCL_COMM_ID while it lives: bound with SO_REUSEADDR and not
/// listening, so that rank 0's root can listen there and no other socket takes it. (These tests
/// see Weft through nccl.h only, so they do not use its socket layer.)
class ReservedLoopbackPort {
 public:
  ReservedLoopbackPort() : fd_(socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0)) {
    const int one = 1;
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t length = sizeof(address);
    if (fd_ >= 0 && setsockopt(fd_, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) == 0 &&
        bind(fd_, reinterpret_cast<sockaddr*>(&address), sizeof(address)) == 0 &&
        getsockname(fd_, reinterpret_cast<sockaddr*>(&address), &length) == 0) {
      port_ = ntohs(address.sin_port);
    }
  }
  ~ReservedLoopbackPort() {
    if (fd_ >= 0) close(fd_);
  }
  ReservedLoopbackPort(const ReservedLoopbackPort&) = delete;
  ReservedLoopbackPort& operator=(const ReservedLoopbackPort&) = delete;

  uint16_t port() const { return port_; }

 private:
  int fd_;
  uint16_t port_ = 0;
};

/// Where the ranks of one run live, for the attacking rank: this process (threads) or the test
/// process's children (processes).
struct RunPlace {
  RankMode mode;
  pid_t testProcess;
  std::set<uint16_t> portsBefore;
};

/// Waits for `count` listening ports of the run other than the root's and those listened on before.
std::string findRankPorts(const RunPlace& place, uint16_t rootPort, int count, std::vector<ListeningSocket>* out) {
  const auto deadline = Clock::now() + kPortSearchLimit;
  while (true) {
    std::vector<pid_t> pids =
        place.mode == RankMode::kThreads ? std::vector<pid_t>{getpid()} : childrenOf(place.testProcess);
    out->clear();
    for (const ListeningSocket& socket : listeningSocketsOf(pids)) {
      if (socket.port != rootPort && place.portsBefore.count(socket.port) == 0) out->push_back(socket);
    }
    if (static_cast<int>(out->size()) >= count) return "";
    if (Clock::now() >= deadline) {
      return "found " + std::to_string(out->size()) + " of the other ranks' " + std::to_string(count) +
             " bootstrap ports within " + std::to_string(kPortSearchLimit.count()) + " s";
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
}

/// Sends the strangers: kStrangersAtTheRoot to the root of `id` (retrying until it listens: with
/// NCCL_COMM_ID rank 0 opens it), and kStrangersAtTheRanks shared among the other ranks' ports.
/// Called by the last rank before its own init, so that the others are waiting for it.
std::string attack(const ncclUniqueId& id, int nranks, const RunPlace& place, StrangerCrowd* atRoot,
                   StrangerCrowd* atRanks) {
  IdRoot root;
  std::string failure;
  if (!decodeIdRoot(id, &root, &failure)) return failure;
  failure = atRoot->join(root.root, PortKind::kRoot, kStrangersAtTheRoot, nranks, root.secret);
  if (!failure.empty()) return "at the root " + addressText(root.root.address) + ": " + failure;
  std::vector<ListeningSocket> ports;
  failure = findRankPorts(place, root.root.port, nranks - 1, &ports);
  if (!failure.empty()) return failure;
  const int nports = static_cast<int>(ports.size());
  for (int i = 0; i < nports; ++i) {
    int share = kStrangersAtTheRanks / nports + (i == 0 ? kStrangersAtTheRanks % nports : 0);
    failure = atRanks->join(ports[i], PortKind::kRank, share, nranks, root.secret);
    if (!failure.empty()) return "at the rank port " + addressText(ports[i].address) + ": " + failure;
  }
  return "";
}

/// Init under the strangers (the last rank sends them first), allreduces checked exactly, and
/// the strangers dropped: at the root every one of them once the ranks have joined, at the ranks
/// every one that sent a whole (bad) hello.
void initPastStrangersAndCheck(int rank, int nranks, const ncclUniqueId& id, const RunPlace& place,
                               StrangerCrowd* atRoot, StrangerCrowd* atRanks) {
  const bool attacker = rank == nranks - 1;
  if (attacker) {
    std::string failure = attack(id, nranks, place, atRoot, atRanks);
    // Go on to init even so: the other ranks wait for this one.
    RANK_EXPECT(failure.empty()) << "placing the strangers: " << failure;
  }
  auto start = Clock::now();
  ScopedComm comm;
  RANK_CHECK_NCCL(ncclCommInitRank(comm.out(), nranks, id, rank));
  double seconds = std::chrono::duration<double>(Clock::now() - start).count();
  RANK_CHECK(seconds < kInitLimitSeconds) << "init took " << seconds << " s with strangers at the bootstrap ports: "
                                          << "it waited for a silent one";
  for (int iteration = 0; iteration < 3; ++iteration) {
    for (size_t count : kCounts) {
      std::string wrong = allReduceAndCheck(comm, rank, nranks, count, iteration);
      RANK_CHECK(wrong.empty()) << wrong;
    }
  }
  if (attacker) {
    RANK_EXPECT(atRoot->size() == kStrangersAtTheRoot && atRanks->size() == kStrangersAtTheRanks)
        << atRoot->size() << " strangers at the root, " << atRanks->size() << " at the ranks";
    std::string open = atRoot->waitUntilDropped(/*completeOnly=*/false, kDropLimit);
    RANK_EXPECT(open.empty()) << "the root did not close its strangers: " << open;
    open = atRanks->waitUntilDropped(/*completeOnly=*/true, kDropLimit);
    RANK_EXPECT(open.empty()) << "the ranks did not close the strangers that sent a bad hello: " << open;
  }
}

RankRunOptions strangerRun(RankMode mode, Transport transport, IdKind idKind,
                           const ReservedLoopbackPort* commIdPort = nullptr) {
  RankRunOptions options;
  options.nranks = kRanks;
  options.mode = mode;
  options.env = transportEnv(transport);
  options.env.push_back({"WEFT_BOOTSTRAP_HANDSHAKE_TIMEOUT", std::to_string(kHandshakeTimeoutSeconds)});
  if (idKind == IdKind::kCommId) {
    options.env.push_back({"NCCL_COMM_ID", "127.0.0.1:" + std::to_string(commIdPort->port())});
  } else {
    options.env.push_back({"NCCL_COMM_ID", std::nullopt});
  }
  options.deadline = std::chrono::seconds(180);
  options.label = "init with strangers at the bootstrap ports";
  return options;
}

struct StrangerCase {
  RankMode mode;
  Transport transport;
  IdKind idKind;
};

std::string caseName(const ::testing::TestParamInfo<StrangerCase>& info) {
  return std::string(modeName(info.param.mode)) + "_" +
         transportName(info.param.transport) + (info.param.idKind == IdKind::kCommId ? "_comm_id" : "_unique_id");
}

class StrangersAtTheBootstrap : public ::testing::TestWithParam<StrangerCase> {};

TEST_P(StrangersAtTheBootstrap, ChangeNothing) {
  const StrangerCase& param = GetParam();
  RunPlace place{param.mode, getpid(), portsListenedOnNow()};
  const ReservedLoopbackPort rootPort;
  EXPECT_TRUE(harness::runRanks(strangerRun(param.mode, param.transport, param.idKind, &rootPort),
                                [&place](int rank, int nranks, const ncclUniqueId& id) {
                                  StrangerCrowd atRoot;
                                  StrangerCrowd atRanks;
                                  initPastStrangersAndCheck(rank, nranks, id, place, &atRoot, &atRanks);
                                }));
}

INSTANTIATE_TEST_SUITE_P(
    Strangers, StrangersAtTheBootstrap,
    ::testing::Values(StrangerCase{RankMode::kThreads, Transport::kShm, IdKind::kUniqueId},
                      StrangerCase{RankMode::kThreads, Transport::kSocket, IdKind::kUniqueId},
                      StrangerCase{RankMode::kProcesses, Transport::kShm, IdKind::kUniqueId},
                      StrangerCase{RankMode::kProcesses, Transport::kSocket, IdKind::kUniqueId},
                      StrangerCase{RankMode::kProcesses, Transport::kShm, IdKind::kCommId},
                      StrangerCase{RankMode::kThreads, Transport::kSocket, IdKind::kCommId}),
    caseName);

/// How many of `lines` contain `prefix`, say that they closed the connection from `local`, and end
/// with `suffix`.
int warningsNaming(const std::vector<std::string>& lines, const std::string& prefix, const std::string& local,
                   const std::string& suffix) {
  const std::string from = "closed the connection from " + local + ":";
  int count = 0;
  for (const std::string& line : lines) {
    count += line.find(prefix) != std::string::npos && line.find(from) != std::string::npos && line.ends_with(suffix);
  }
  return count;
}

TEST(StrangersAtTheBootstrap, EachDroppedStrangerIsNamedInAWarning) {
  char dir[] = "/tmp/weft-reliability-log-XXXXXX";
  ASSERT_NE(mkdtemp(dir), nullptr);
  const std::string log = std::string(dir) + "/weft." + std::to_string(getpid()) + ".log";
  RankRunOptions options = strangerRun(RankMode::kThreads, Transport::kShm, IdKind::kUniqueId);
  options.env.push_back({"NCCL_DEBUG", "WARN"});
  options.env.push_back({"NCCL_DEBUG_FILE", std::string(dir) + "/weft.%p.log"});
  RunPlace place{RankMode::kThreads, getpid(), portsListenedOnNow()};
  StrangerCrowd atRoot;
  StrangerCrowd atRanks;
  EXPECT_TRUE(harness::runRanks(options, [&](int rank, int nranks, const ncclUniqueId& id) {
    initPastStrangersAndCheck(rank, nranks, id, place, &atRoot, &atRanks);
  }));

  std::ifstream in(log);
  std::vector<std::string> lines;
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  std::remove(log.c_str());
  rmdir(dir);
  if (!in.is_open() && lines.empty()) {
    GTEST_SKIP() << "no log at " << log << ": this process set up its logging in an earlier test (NCCL_DEBUG is "
                 << "read once per process); run this test alone, as ctest does";
  }
  // One WARN per connection; where strangers made the same one (madeBy), one per stranger at most.
  // The root's WARN names no port (it has one); a rank's ends with the address it listens on.
  for (const StrangerCrowd::Connection& stranger : atRoot.openConnections(/*completeOnly=*/false)) {
    const int warnings = warningsNaming(lines, "NCCL WARN bootstrap root", stranger.local, "");
    EXPECT_TRUE(warnings >= 1 && warnings <= atRoot.madeBy(stranger))
        << warnings << " WARNs of the root name the stranger from " << stranger.local;
  }
  for (const StrangerCrowd::Connection& stranger : atRanks.openConnections(/*completeOnly=*/true)) {
    const int warnings =
        warningsNaming(lines, "NCCL WARN bootstrap rank", stranger.local, ":" + std::to_string(stranger.targetPort));
    EXPECT_TRUE(warnings >= 1 && warnings <= atRanks.madeBy(stranger))
        << warnings << " WARNs of a rank name the stranger from " << stranger.local << " to port "
        << stranger.targetPort;
  }
}

}  // namespace
}  // namespace weft::reliability
