// The rank-to-rank part of the bootstrap, with the table made by hand (no root), so that one
// thread can drive several ranks and a test can knock on a rank's listener.
#include "src/core/bootstrap_socket.h"

#include <gtest/gtest.h>

#include <chrono>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "tests/harness/scoped_env.h"

namespace weft::core {
namespace {

using ::weft::harness::ScopedEnv;
using Clock = std::chrono::steady_clock;

class BootstrapSocketTest : public ::testing::Test {
 protected:
  /// Makes `nranks` ranks that share one secret, each listening on 127.0.0.1.
  void makeRanks(int nranks) {
    wire::Secret secret = wire::secretFromText("bootstrap socket test");
    std::vector<net::Socket> listeners(nranks);
    std::vector<net::SocketAddress> addresses(nranks);
    net::SocketAddress any;
    ASSERT_TRUE(net::SocketAddress::parse("127.0.0.1:0", &any).isOk());
    for (int r = 0; r < nranks; ++r) {
      ASSERT_TRUE(net::Socket::listen(any, &listeners[r]).isOk());
      addresses[r] = listeners[r].localAddress();
    }
    addresses_ = addresses;
    for (int r = 0; r < nranks; ++r) {
      ranks_.push_back(std::make_unique<SocketBootstrap>(r, nranks, &context_, secret, std::move(listeners[r]),
                                                         addresses));
    }
  }

  net::Socket connectTo(int rank) {
    net::Socket socket;
    Status status = net::Socket::connect(addresses_[rank], context_, &socket);
    EXPECT_TRUE(status.isOk()) << status.message();
    return socket;
  }

  ScopedEnv connectTimeout_{"WEFT_SOCKET_CONNECT_TIMEOUT", "10"};
  ScopedEnv handshakeTimeout_{"WEFT_BOOTSTRAP_HANDSHAKE_TIMEOUT", "1"};
  // No wait in these tests lasts more than a few seconds without progress.
  WaitContext context_{{}, 10, "a bootstrap socket test"};
  std::vector<net::SocketAddress> addresses_;
  std::vector<std::unique_ptr<SocketBootstrap>> ranks_;
};

TEST_F(BootstrapSocketTest, OneThreadDrivesSeveralRanks) {
  ASSERT_NO_FATAL_FAILURE(makeRanks(4));
  // Every rank sends to every rank (itself included) before any rank receives.
  for (int from = 0; from < 4; ++from) {
    for (int to = 0; to < 4; ++to) {
      for (uint32_t tag : {1u, 2u}) {
        uint64_t word = from * 100 + to * 10 + tag;
        ASSERT_TRUE(ranks_[from]->send(to, tag, &word, sizeof(word)).isOk());
      }
    }
  }
  for (int to = 3; to >= 0; --to) {
    for (int from = 0; from < 4; ++from) {
      for (uint32_t tag : {2u, 1u}) {
        uint64_t word = 0;
        Status status = ranks_[to]->recv(from, tag, &word, sizeof(word));
        ASSERT_TRUE(status.isOk()) << status.message();
        EXPECT_EQ(word, uint64_t(from * 100 + to * 10 + tag));
      }
    }
  }
}

TEST_F(BootstrapSocketTest, SizeMismatchNamesPeerTagAndSizes) {
  ASSERT_NO_FATAL_FAILURE(makeRanks(2));
  uint64_t word = 42;
  ASSERT_TRUE(ranks_[0]->send(1, 5, &word, sizeof(word)).isOk());
  uint32_t half = 0;
  Status status = ranks_[1]->recv(0, 5, &half, sizeof(half));
  EXPECT_EQ(status.code(), StatusCode::kInternalError);
  for (std::string part : {std::string("rank 0 (") + addresses_[0].toString() + ")", std::string("tag 0x5"),
                           std::string("expected 4 bytes"), std::string("sent 8")}) {
    EXPECT_NE(status.message().find(part), std::string::npos) << part << " missing in: " << status.message();
  }
}

TEST_F(BootstrapSocketTest, RecvFromARankThatLeftIsRemoteError) {
  ASSERT_NO_FATAL_FAILURE(makeRanks(2));
  uint8_t byte = 9;
  ASSERT_TRUE(ranks_[0]->send(1, 1, &byte, 1).isOk());
  ranks_[0].reset();
  uint8_t got = 0;
  ASSERT_TRUE(ranks_[1]->recv(0, 1, &got, 1).isOk());  // what was sent before leaving still arrives
  EXPECT_EQ(got, 9);
  auto start = Clock::now();
  Status status = ranks_[1]->recv(0, 2, &got, 1);
  EXPECT_EQ(status.code(), StatusCode::kRemoteError);
  EXPECT_NE(status.message().find("rank 0"), std::string::npos) << status.message();
  EXPECT_NE(status.message().find("closed its connection"), std::string::npos) << status.message();
  EXPECT_LT(std::chrono::duration<double>(Clock::now() - start).count(), 5.0);
}

TEST_F(BootstrapSocketTest, StrangersAtARankAreDropped) {
  ASSERT_NO_FATAL_FAILURE(makeRanks(2));
  net::Socket garbage = connectTo(1);
  std::vector<uint8_t> junk(200, 0x5c);
  ASSERT_TRUE(garbage.sendAll(junk.data(), junk.size(), context_).isOk());
  net::Socket impostor = connectTo(1);
  auto hello = wire::encodePeerHello({wire::secretFromText("another job"), 0, 2});
  ASSERT_TRUE(impostor.sendAll(hello.data(), hello.size(), context_).isOk());
  net::Socket silent = connectTo(1);

  // Rank 0 sends late, so rank 1 serves the strangers while it waits (handshake timeout: 1 s).
  std::thread sender([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(1500));
    uint32_t word = 0xfeed;
    EXPECT_TRUE(ranks_[0]->send(1, 3, &word, sizeof(word)).isOk());
  });
  uint32_t word = 0;
  Status status = ranks_[1]->recv(0, 3, &word, sizeof(word));
  sender.join();
  ASSERT_TRUE(status.isOk()) << status.message();
  EXPECT_EQ(word, 0xfeedu);
  for (net::Socket* stranger : {&garbage, &impostor, &silent}) {
    uint8_t byte = 0;
    size_t got = 0;
    Status closed = stranger->tryRecv(&byte, 1, &got);
    EXPECT_EQ(closed.code(), StatusCode::kRemoteError) << "a stranger's connection is still open";
  }
}

TEST_F(BootstrapSocketTest, AllGatherAndBarrierOfThreeRanksInThreads) {
  ASSERT_NO_FATAL_FAILURE(makeRanks(3));
  std::vector<std::vector<uint16_t>> data(3, std::vector<uint16_t>(3 * 5, 0));
  std::vector<Status> statuses(3);
  std::vector<std::thread> threads;
  for (int r = 0; r < 3; ++r) {
    threads.emplace_back([&, r] {
      for (int i = 0; i < 5; ++i) data[r][r * 5 + i] = static_cast<uint16_t>(r * 10 + i);
      statuses[r] = ranks_[r]->allGather(data[r].data(), 5 * sizeof(uint16_t));
      if (statuses[r].isOk()) statuses[r] = ranks_[r]->barrier();
    });
  }
  for (std::thread& thread : threads) thread.join();
  for (int r = 0; r < 3; ++r) {
    ASSERT_TRUE(statuses[r].isOk()) << statuses[r].message();
    for (int block = 0; block < 3; ++block) {
      for (int i = 0; i < 5; ++i) EXPECT_EQ(data[r][block * 5 + i], block * 10 + i) << "rank " << r;
    }
  }
}

}  // namespace
}  // namespace weft::core
