#include "src/core/bootstrap.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "src/base/socket.h"
#include "src/core/bootstrap_wire.h"
#include "tests/harness/scoped_env.h"

namespace weft::core {
namespace {

using ::weft::harness::ScopedEnv;
using Clock = std::chrono::steady_clock;

/// Every wait ends after this long without progress, so a broken bootstrap fails instead of hanging.
constexpr double kNoProgressSeconds = 20;

WaitContext rankContext() {
  WaitContext context;
  context.timeoutSeconds = kNoProgressSeconds;
  context.what = "a bootstrap test rank";
  return context;
}

double secondsSince(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

class BootstrapTest : public ::testing::Test {
 protected:
  ScopedEnv ifname_{"NCCL_SOCKET_IFNAME", "lo"};
  ScopedEnv family_{"NCCL_SOCKET_FAMILY", nullptr};
  ScopedEnv commId_{"NCCL_COMM_ID", nullptr};
  ScopedEnv commSecret_{"WEFT_COMM_SECRET", nullptr};
  ScopedEnv connectTimeout_{"WEFT_SOCKET_CONNECT_TIMEOUT", "10"};
  ScopedEnv handshakeTimeout_{"WEFT_BOOTSTRAP_HANDSHAKE_TIMEOUT", "5"};
};

uint64_t valueOf(int rank, int index) { return uint64_t(rank) * 1000003u + uint64_t(index) * 7919u + 1; }

/// What every rank does once joined: allGather, a ring of tagged messages received out of order,
/// an exchange with every peer, and a barrier. Returns the first wrong value as a failure.
Status exercise(Bootstrap& bootstrap) {
  const int rank = bootstrap.rank();
  const int nranks = bootstrap.nranks();
  constexpr int kWords = 3;
  std::vector<uint64_t> gathered(size_t(nranks) * kWords, 0);
  for (int i = 0; i < kWords; ++i) gathered[size_t(rank) * kWords + i] = valueOf(rank, i);
  WEFT_RETURN_IF_ERROR(bootstrap.allGather(gathered.data(), kWords * sizeof(uint64_t)));
  for (int r = 0; r < nranks; ++r) {
    for (int i = 0; i < kWords; ++i) {
      if (gathered[size_t(r) * kWords + i] != valueOf(r, i)) {
        return internalError("rank %d: allGather block %d word %d is %llu, expected %llu", rank, r, i,
                             static_cast<unsigned long long>(gathered[size_t(r) * kWords + i]),
                             static_cast<unsigned long long>(valueOf(r, i)));
      }
    }
  }

  // Three tags of three sizes to the next rank, received from the previous one in another order.
  const int next = (rank + 1) % nranks;
  const int prev = (rank + nranks - 1) % nranks;
  const uint32_t tags[] = {7, 3, 11};
  const size_t sizes[] = {5, 70000, 0};
  for (int k = 0; k < 3; ++k) {
    std::vector<uint8_t> message(sizes[k]);
    for (size_t i = 0; i < message.size(); ++i) message[i] = static_cast<uint8_t>(rank * 31 + tags[k] + i);
    WEFT_RETURN_IF_ERROR(bootstrap.send(next, tags[k], message.data(), message.size()));
  }
  for (int k : {2, 0, 1}) {
    std::vector<uint8_t> message(sizes[k], 0xee);
    WEFT_RETURN_IF_ERROR(bootstrap.recv(prev, tags[k], message.data(), message.size()));
    for (size_t i = 0; i < message.size(); ++i) {
      if (message[i] != static_cast<uint8_t>(prev * 31 + tags[k] + i)) {
        return internalError("rank %d: byte %zu of tag %u from rank %d is %u", rank, i, tags[k], prev, message[i]);
      }
    }
  }

  // Everyone to everyone, received in the reverse order.
  for (int peer = 0; peer < nranks; ++peer) {
    uint64_t word = valueOf(rank, peer);
    WEFT_RETURN_IF_ERROR(bootstrap.send(peer, 20, &word, sizeof(word)));
  }
  for (int peer = nranks - 1; peer >= 0; --peer) {
    uint64_t word = 0;
    WEFT_RETURN_IF_ERROR(bootstrap.recv(peer, 20, &word, sizeof(word)));
    if (word != valueOf(peer, rank)) return internalError("rank %d: word from rank %d is wrong", rank, peer);
  }
  return bootstrap.barrier();
}

/// Runs `nranks` ranks as threads on `id`; returns each rank's status.
std::vector<Status> runThreadRanks(const UniqueId& id, int nranks,
                                   const std::function<Status(Bootstrap&)>& body = exercise) {
  std::vector<Status> statuses(nranks);
  std::vector<std::thread> threads;
  for (int rank = 0; rank < nranks; ++rank) {
    threads.emplace_back([&, rank] {
      WaitContext context = rankContext();
      std::unique_ptr<Bootstrap> bootstrap;
      Status status = Bootstrap::create(id, rank, nranks, &context, &bootstrap);
      if (status.isOk() && (bootstrap->rank() != rank || bootstrap->nranks() != nranks)) {
        status = internalError("rank %d got a bootstrap for rank %d of %d", rank, bootstrap->rank(),
                               bootstrap->nranks());
      }
      if (status.isOk()) status = body(*bootstrap);
      statuses[rank] = status;
    });
  }
  for (std::thread& thread : threads) thread.join();
  return statuses;
}

void expectAllOk(const std::vector<Status>& statuses) {
  for (size_t rank = 0; rank < statuses.size(); ++rank) {
    EXPECT_TRUE(statuses[rank].isOk()) << "rank " << rank << ": " << statuses[rank].message();
  }
}

class BootstrapThreadsTest : public BootstrapTest, public ::testing::WithParamInterface<int> {};

TEST_P(BootstrapThreadsTest, JoinsGathersExchangesAndSynchronizes) {
  UniqueId id;
  ASSERT_TRUE(createUniqueId(&id).isOk());
  auto start = Clock::now();
  expectAllOk(runThreadRanks(id, GetParam()));
  EXPECT_LT(secondsSince(start), kNoProgressSeconds);
}

INSTANTIATE_TEST_SUITE_P(RankCounts, BootstrapThreadsTest, ::testing::Values(1, 2, 3, 8));

TEST_F(BootstrapTest, RanksAsForkedProcesses) {
  for (int nranks : {2, 4}) {
    // Every rank is forked before the id exists and reads it from a pipe: making the id starts the
    // root's thread, and a child forked while that thread runs inherits the locks it holds at that
    // moment (AddressSanitizer's allocator has no fork handlers: the child would hang in malloc).
    std::vector<pid_t> children;
    std::vector<int> idPipes;
    for (int rank = 0; rank < nranks; ++rank) {
      int fds[2];
      ASSERT_EQ(pipe(fds), 0);
      pid_t pid = fork();
      ASSERT_GE(pid, 0);
      if (pid == 0) {
        close(fds[1]);
        for (int earlier : idPipes) close(earlier);
        UniqueId id;
        // One write of 128 bytes (at most PIPE_BUF) arrives whole; end of file means no id.
        if (read(fds[0], id.bytes.data(), id.bytes.size()) != static_cast<ssize_t>(id.bytes.size())) _exit(2);
        WaitContext context = rankContext();
        std::unique_ptr<Bootstrap> bootstrap;
        Status status = Bootstrap::create(id, rank, nranks, &context, &bootstrap);
        if (status.isOk()) status = exercise(*bootstrap);
        if (!status.isOk()) fprintf(stderr, "forked rank %d: %s\n", rank, status.message().c_str());
        _exit(status.isOk() ? 0 : 1);
      }
      close(fds[0]);
      children.push_back(pid);
      idPipes.push_back(fds[1]);
    }
    UniqueId id;
    Status created = createUniqueId(&id);
    EXPECT_TRUE(created.isOk()) << created.message();
    for (int fd : idPipes) {
      if (created.isOk()) {
        EXPECT_EQ(write(fd, id.bytes.data(), id.bytes.size()), static_cast<ssize_t>(id.bytes.size()));
      }
      close(fd);
    }
    // Reap the children within a deadline; a hung child is killed and fails the test.
    auto start = Clock::now();
    for (size_t rank = 0; rank < children.size(); ++rank) {
      int wstatus = 0;
      pid_t done = 0;
      while ((done = waitpid(children[rank], &wstatus, WNOHANG)) == 0 && secondsSince(start) < 60) {
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
      }
      if (done == 0) {
        kill(children[rank], SIGKILL);
        waitpid(children[rank], &wstatus, 0);
        ADD_FAILURE() << "forked rank " << rank << " of " << nranks << " did not finish within 60 s";
        continue;
      }
      EXPECT_TRUE(WIFEXITED(wstatus) && WEXITSTATUS(wstatus) == 0)
          << "forked rank " << rank << " of " << nranks << " failed (status " << wstatus << ")";
    }
  }
}

TEST_F(BootstrapTest, CommIdModeWithRankZeroHostingTheRoot) {
  // The port stays reserved for the test: rank 0's root listens on it, no other socket takes it.
  net::SocketAddress any;
  ASSERT_TRUE(net::SocketAddress::parse("127.0.0.1:0", &any).isOk());
  net::Socket reservation;
  ASSERT_TRUE(net::Socket::reservePort(any, &reservation).isOk());
  const std::string commId = reservation.localAddress().toString();
  ScopedEnv env("NCCL_COMM_ID", commId.c_str());
  UniqueId id;
  ASSERT_TRUE(createUniqueId(&id).isOk());
  wire::IdContents contents;
  ASSERT_TRUE(wire::parseUniqueId(id, &contents).isOk());
  EXPECT_EQ(contents.kind, wire::IdKind::kCommId);
  EXPECT_EQ(contents.root.toString(), commId);

  // Every process derives the same id from the environment alone.
  UniqueId again;
  ASSERT_TRUE(createUniqueId(&again).isOk());
  EXPECT_EQ(again.bytes, id.bytes);
  expectAllOk(runThreadRanks(id, 3));
}

TEST_F(BootstrapTest, CommIdSecretComesFromTheEnvironment) {
  ScopedEnv env("NCCL_COMM_ID", "127.0.0.1:1");
  UniqueId fixed;
  ASSERT_TRUE(createUniqueId(&fixed).isOk());
  ScopedEnv secret("WEFT_COMM_SECRET", "tuesday");
  UniqueId chosen;
  ASSERT_TRUE(createUniqueId(&chosen).isOk());
  wire::IdContents a;
  wire::IdContents b;
  ASSERT_TRUE(wire::parseUniqueId(fixed, &a).isOk());
  ASSERT_TRUE(wire::parseUniqueId(chosen, &b).isOk());
  EXPECT_FALSE(wire::secretsEqual(a.secret, b.secret));
  EXPECT_TRUE(wire::secretsEqual(b.secret, wire::secretFromText("tuesday")));
}

TEST_F(BootstrapTest, CommIdPortInUseIsAClearError) {
  net::SocketAddress any;
  ASSERT_TRUE(net::SocketAddress::parse("127.0.0.1:0", &any).isOk());
  net::Socket holder;
  ASSERT_TRUE(net::Socket::listen(any, &holder).isOk());
  const std::string commId = holder.localAddress().toString();
  ScopedEnv env("NCCL_COMM_ID", commId.c_str());
  UniqueId id;
  ASSERT_TRUE(createUniqueId(&id).isOk());
  WaitContext context = rankContext();
  std::unique_ptr<Bootstrap> bootstrap;
  Status status = Bootstrap::create(id, 0, 2, &context, &bootstrap);
  EXPECT_EQ(status.code(), StatusCode::kSystemError);
  EXPECT_NE(status.message().find("NCCL_COMM_ID"), std::string::npos) << status.message();
  EXPECT_NE(status.message().find(commId + ": the port is in use"), std::string::npos) << status.message();
  EXPECT_EQ(bootstrap, nullptr);
}

// A process that accepts connections at NCCL_COMM_ID's address but is no root (here a listener
// that never reads): the rank fails once the welcome is overdue, instead of waiting for ever.
TEST_F(BootstrapTest, ARankFailsWhenWhatListensAtTheRootNeverWelcomesIt) {
  net::SocketAddress any;
  ASSERT_TRUE(net::SocketAddress::parse("127.0.0.1:0", &any).isOk());
  net::Socket impostor;
  ASSERT_TRUE(net::Socket::listen(any, &impostor).isOk());
  const std::string commId = impostor.localAddress().toString();
  ScopedEnv env("NCCL_COMM_ID", commId.c_str());
  ScopedEnv connectTimeout("WEFT_SOCKET_CONNECT_TIMEOUT", "1");
  ScopedEnv handshakeTimeout("WEFT_BOOTSTRAP_HANDSHAKE_TIMEOUT", "1");
  UniqueId id;
  ASSERT_TRUE(createUniqueId(&id).isOk());
  WaitContext context = rankContext();
  std::unique_ptr<Bootstrap> bootstrap;
  auto start = Clock::now();
  Status status = Bootstrap::create(id, 1, 2, &context, &bootstrap);
  EXPECT_GE(secondsSince(start), 1.5);
  EXPECT_LT(secondsSince(start), 10.0);
  EXPECT_EQ(status.code(), StatusCode::kRemoteError);
  EXPECT_NE(status.message().find(commId + " sent no welcome within 2 s"), std::string::npos) << status.message();
  EXPECT_EQ(bootstrap, nullptr);
}

/// A connection to `address` that the test controls byte by byte.
net::Socket connectStranger(const net::SocketAddress& address) {
  WaitContext context = rankContext();
  net::Socket socket;
  Status status = net::Socket::connect(address, context, &socket);
  EXPECT_TRUE(status.isOk()) << status.message();
  return socket;
}

/// Waits up to `seconds` for the other end to close `socket`; true if it did.
bool closedByPeerWithin(net::Socket& socket, double seconds) {
  auto start = Clock::now();
  while (secondsSince(start) < seconds) {
    uint8_t byte;
    size_t got = 0;
    if (!socket.tryRecv(&byte, 1, &got).isOk()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return false;
}

TEST_F(BootstrapTest, StrangersAtTheRootDoNotDisturbInit) {
  // Long enough that init would visibly wait for a silent stranger if the root served them in turn.
  ScopedEnv handshake("WEFT_BOOTSTRAP_HANDSHAKE_TIMEOUT", "30");
  UniqueId id;
  ASSERT_TRUE(createUniqueId(&id).isOk());
  wire::IdContents contents;
  ASSERT_TRUE(wire::parseUniqueId(id, &contents).isOk());
  WaitContext context = rankContext();

  net::Socket garbage = connectStranger(contents.root);
  std::vector<uint8_t> junk(100, 0xab);
  ASSERT_TRUE(garbage.sendAll(junk.data(), junk.size(), context).isOk());
  net::Socket silent = connectStranger(contents.root);
  net::Socket truncated = connectStranger(contents.root);
  ASSERT_TRUE(truncated.sendAll(junk.data(), 10, context).isOk());
  net::Socket wrongSecret = connectStranger(contents.root);
  wire::RootHello impostor;
  impostor.secret = contents.secret;
  impostor.secret[0] ^= 1;
  impostor.rank = 0;
  impostor.nranks = 3;
  impostor.listenAddress = contents.root;
  auto hello = wire::encodeRootHello(impostor);
  ASSERT_TRUE(wrongSecret.sendAll(hello.data(), hello.size(), context).isOk());

  auto start = Clock::now();
  expectAllOk(runThreadRanks(id, 3));
  EXPECT_LT(secondsSince(start), 10.0);
  EXPECT_TRUE(closedByPeerWithin(garbage, 5));
  EXPECT_TRUE(closedByPeerWithin(wrongSecret, 5));
  // Once every rank joined, the root closes whatever is still pending.
  EXPECT_TRUE(closedByPeerWithin(silent, 5));
  EXPECT_TRUE(closedByPeerWithin(truncated, 5));
}

TEST_F(BootstrapTest, RootClosesASilentConnectionAfterTheHandshakeTimeout) {
  ScopedEnv handshake("WEFT_BOOTSTRAP_HANDSHAKE_TIMEOUT", "1");
  UniqueId id;
  ASSERT_TRUE(createUniqueId(&id).isOk());
  wire::IdContents contents;
  ASSERT_TRUE(wire::parseUniqueId(id, &contents).isOk());
  net::Socket silent = connectStranger(contents.root);
  auto start = Clock::now();
  EXPECT_TRUE(closedByPeerWithin(silent, 5));
  EXPECT_GE(secondsSince(start), 0.5);
  expectAllOk(runThreadRanks(id, 2));  // the root still serves the real ranks
}

TEST_F(BootstrapTest, WrongSecretIsRejected) {
  UniqueId id;
  ASSERT_TRUE(createUniqueId(&id).isOk());
  UniqueId forged = id;
  forged.bytes[8] ^= 0x5a;  // first byte of the secret
  wire::IdContents contents;
  ASSERT_TRUE(wire::parseUniqueId(id, &contents).isOk());

  WaitContext context = rankContext();
  std::unique_ptr<Bootstrap> bootstrap;
  auto start = Clock::now();
  Status status = Bootstrap::create(forged, 0, 2, &context, &bootstrap);
  EXPECT_LT(secondsSince(start), 10.0);
  EXPECT_EQ(status.code(), StatusCode::kRemoteError);
  EXPECT_NE(status.message().find(contents.root.toString()), std::string::npos) << status.message();
  EXPECT_NE(status.message().find("rejected this rank"), std::string::npos) << status.message();
  EXPECT_EQ(bootstrap, nullptr);
  expectAllOk(runThreadRanks(id, 2));  // the forged rank took no one's place
}

TEST_F(BootstrapTest, RootRejectsAnotherNranksAndADuplicateRank) {
  UniqueId id;
  ASSERT_TRUE(createUniqueId(&id).isOk());
  wire::IdContents contents;
  ASSERT_TRUE(wire::parseUniqueId(id, &contents).isOk());
  WaitContext context = rankContext();

  // The test plays rank 0 of 2 by hand, so the root knows nranks = 2 before anyone else comes.
  net::SocketAddress any;
  ASSERT_TRUE(net::SocketAddress::parse("127.0.0.1:0", &any).isOk());
  net::Socket fakeListener;
  ASSERT_TRUE(net::Socket::listen(any, &fakeListener).isOk());
  wire::RootHello hello{contents.secret, 0, 2, fakeListener.localAddress()};
  auto bytes = wire::encodeRootHello(hello);
  net::Socket fakeRank0 = connectStranger(contents.root);
  ASSERT_TRUE(fakeRank0.sendAll(bytes.data(), bytes.size(), context).isOk());
  std::array<uint8_t, wire::kWelcomeBytes> welcome{};
  ASSERT_TRUE(fakeRank0.recvAll(welcome.data(), welcome.size(), context).isOk());
  EXPECT_TRUE(wire::parseWelcome(welcome, 0, 2).isOk());

  std::unique_ptr<Bootstrap> odd;
  Status status = Bootstrap::create(id, 2, 3, &context, &odd);
  EXPECT_EQ(status.code(), StatusCode::kRemoteError) << status.message();
  EXPECT_NE(status.message().find("rejected this rank"), std::string::npos) << status.message();

  net::Socket duplicate = connectStranger(contents.root);
  ASSERT_TRUE(duplicate.sendAll(bytes.data(), bytes.size(), context).isOk());
  EXPECT_TRUE(closedByPeerWithin(duplicate, 5));

  std::unique_ptr<Bootstrap> rank1;
  status = Bootstrap::create(id, 1, 2, &context, &rank1);
  ASSERT_TRUE(status.isOk()) << status.message();
  std::array<uint8_t, wire::kTableHeaderBytes> header{};
  ASSERT_TRUE(fakeRank0.recvAll(header.data(), header.size(), context).isOk());
  EXPECT_TRUE(wire::parseTableHeader(header, 2).isOk());
  std::array<uint8_t, 2 * wire::kAddressBytes> table{};
  ASSERT_TRUE(fakeRank0.recvAll(table.data(), table.size(), context).isOk());
  net::SocketAddress listed;
  ASSERT_TRUE(wire::parseAddress(std::span(table).first(wire::kAddressBytes), &listed).isOk());
  EXPECT_EQ(listed.toString(), fakeListener.localAddress().toString());
}

TEST_F(BootstrapTest, LargeSimultaneousSendsDoNotDeadlock) {
  UniqueId id;
  ASSERT_TRUE(createUniqueId(&id).isOk());
  // Both ranks send first: far more than the kernel buffers, so each must drain the other's
  // data while it waits to send.
  constexpr size_t kBytes = 24u << 20;
  expectAllOk(runThreadRanks(id, 2, [](Bootstrap& b) -> Status {
    const int peer = 1 - b.rank();
    std::vector<uint8_t> out(kBytes, static_cast<uint8_t>(0x10 + b.rank()));
    std::vector<uint8_t> in(kBytes, 0);
    WEFT_RETURN_IF_ERROR(b.send(peer, 1, out.data(), out.size()));
    WEFT_RETURN_IF_ERROR(b.recv(peer, 1, in.data(), in.size()));
    for (size_t i = 0; i < kBytes; i += 4096) {
      if (in[i] != 0x10 + peer) return internalError("byte %zu from rank %d is %u", i, peer, in[i]);
    }
    return Status::ok();
  }));
}

TEST_F(BootstrapTest, RejectsBadArguments) {
  UniqueId id;
  WaitContext context = rankContext();
  std::unique_ptr<Bootstrap> bootstrap;
  Status status = Bootstrap::create(id, 0, 1, &context, &bootstrap);  // all zeros: not an id
  EXPECT_EQ(status.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(status.message().find("ncclGetUniqueId"), std::string::npos) << status.message();
  ASSERT_TRUE(createUniqueId(&id).isOk());
  EXPECT_EQ(Bootstrap::create(id, 2, 2, &context, &bootstrap).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(Bootstrap::create(id, -1, 2, &context, &bootstrap).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(Bootstrap::create(id, 0, 0, &context, &bootstrap).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(Bootstrap::create(id, 0, 1, nullptr, &bootstrap).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(bootstrap, nullptr);
  // Let this id's root finish.
  expectAllOk(runThreadRanks(id, 1, [](Bootstrap& b) -> Status {
    uint8_t byte = 0;
    Status reserved = b.send(0, Bootstrap::kFirstReservedTag, &byte, 1);
    if (reserved.code() != StatusCode::kInvalidArgument) return internalError("a reserved tag was accepted");
    if (b.recv(1, 0, &byte, 1).code() != StatusCode::kInvalidArgument) return internalError("peer 1 of 1 accepted");
    return Status::ok();
  }));
}

}  // namespace
}  // namespace weft::core
