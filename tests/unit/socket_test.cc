#include "src/base/socket.h"

#include <arpa/inet.h>
#include <net/if.h>
#include <gtest/gtest.h>

#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include "tests/harness/scoped_env.h"

namespace weft::net {
namespace {

using ::weft::harness::ScopedEnv;

/// Every wait of these tests ends after a few seconds without progress, so no test can hang.
WaitContext testContext(const char* what) {
  WaitContext context;
  context.timeoutSeconds = 10;
  context.what = what;
  return context;
}

class SocketTest : public ::testing::Test {
 protected:
  ScopedEnv ifname_{"NCCL_SOCKET_IFNAME", "lo"};
  ScopedEnv family_{"NCCL_SOCKET_FAMILY", nullptr};
  ScopedEnv connectTimeout_{"WEFT_SOCKET_CONNECT_TIMEOUT", "10"};
};

SocketAddress mustParse(const std::string& text) {
  SocketAddress address;
  Status status = SocketAddress::parse(text, &address);
  EXPECT_TRUE(status.isOk()) << text << ": " << status.message();
  return address;
}

/// A listening socket on 127.0.0.1 and a connected pair through it.
struct ConnectedPair {
  Socket listener;
  Socket client;
  Socket server;
};

void connectPair(const char* host, ConnectedPair* pair) {
  SocketAddress address = mustParse(std::string(host) + ":0");
  ASSERT_TRUE(Socket::listen(address, &pair->listener).isOk());
  SocketAddress bound = pair->listener.localAddress();
  ASSERT_NE(bound.port(), 0);
  WaitContext context = testContext("a loopback connection");
  Status status = Socket::connect(bound, context, &pair->client);
  ASSERT_TRUE(status.isOk()) << status.message();
  status = waitUntil(context, [&] {
    Status accepted = pair->listener.tryAccept(&pair->server);
    EXPECT_TRUE(accepted.isOk()) << accepted.message();
    return pair->server.valid() || !accepted.isOk();
  });
  ASSERT_TRUE(status.isOk()) << status.message();
  ASSERT_TRUE(pair->server.valid());
}

TEST_F(SocketTest, ParsesAndFormatsIpv4) {
  SocketAddress address = mustParse("10.1.2.3:5678");
  EXPECT_EQ(address.family(), AF_INET);
  EXPECT_EQ(address.port(), 5678);
  EXPECT_EQ(address.length, sizeof(sockaddr_in));
  EXPECT_EQ(address.toString(), "10.1.2.3:5678");
  address.setPort(9);
  EXPECT_EQ(address.toString(), "10.1.2.3:9");
}

TEST_F(SocketTest, ParsesAndFormatsIpv6) {
  SocketAddress bracketed = mustParse("[fd00::2]:80");
  EXPECT_EQ(bracketed.family(), AF_INET6);
  EXPECT_EQ(bracketed.port(), 80);
  EXPECT_EQ(bracketed.toString(), "[fd00::2]:80");
  SocketAddress bare = mustParse("::1:65535");
  EXPECT_EQ(bare.family(), AF_INET6);
  EXPECT_EQ(bare.port(), 65535);
  EXPECT_EQ(bare.toString(), "[::1]:65535");
}

TEST_F(SocketTest, KeepsTheScopeOfLinkLocalIpv6) {
  SocketAddress address = mustParse("[fe80::1%lo]:7");
  ASSERT_EQ(address.family(), AF_INET6);
  EXPECT_EQ(reinterpret_cast<const sockaddr_in6*>(&address.storage)->sin6_scope_id, if_nametoindex("lo"));
  EXPECT_EQ(address.toString(), "[fe80::1%lo]:7");
}

TEST_F(SocketTest, ResolvesHostNames) {
  SocketAddress address = mustParse("localhost:1234");
  EXPECT_EQ(address.port(), 1234);
  EXPECT_TRUE(address.toString() == "127.0.0.1:1234" || address.toString() == "[::1]:1234") << address.toString();
}

TEST_F(SocketTest, RejectsMalformedAddresses) {
  for (const char* text : {"1.2.3.4", "1.2.3.4:", "1.2.3.4:70000", "1.2.3.4:12x", "[::1]80", "[::1", ":80"}) {
    SocketAddress address;
    Status status = SocketAddress::parse(text, &address);
    EXPECT_EQ(status.code(), StatusCode::kInvalidArgument) << text;
    EXPECT_NE(status.message().find(text), std::string::npos) << status.message();
  }
}

TEST_F(SocketTest, IfnamePrefixSelectsLoopback) {
  std::vector<NetInterface> interfaces;
  ASSERT_TRUE(findInterfaces(&interfaces).isOk());
  ASSERT_EQ(interfaces.size(), 1u);
  EXPECT_EQ(interfaces[0].name, "lo");
  EXPECT_EQ(interfaces[0].address.toString(), "127.0.0.1:0");  // IPv4 before IPv6
}

TEST_F(SocketTest, IfnameExactSelectsLoopback) {
  ScopedEnv exact("NCCL_SOCKET_IFNAME", "=lo");
  std::vector<NetInterface> interfaces;
  ASSERT_TRUE(findInterfaces(&interfaces).isOk());
  ASSERT_EQ(interfaces.size(), 1u);
  EXPECT_EQ(interfaces[0].name, "lo");

  ScopedEnv partial("NCCL_SOCKET_IFNAME", "=l");
  EXPECT_FALSE(findInterfaces(&interfaces).isOk());
}

TEST_F(SocketTest, IfnameExclusionSkipsLoopback) {
  ScopedEnv exclude("NCCL_SOCKET_IFNAME", "^lo");
  std::vector<NetInterface> interfaces;
  Status status = findInterfaces(&interfaces);
  if (status.isOk()) {
    ASSERT_FALSE(interfaces.empty());
    for (const NetInterface& interface : interfaces) EXPECT_NE(interface.name, "lo");
  } else {
    // A host with nothing but lo: the error must still list it.
    EXPECT_NE(status.message().find("lo 127.0.0.1"), std::string::npos) << status.message();
  }
}

TEST_F(SocketTest, FamilySelectsIpv6Loopback) {
  ScopedEnv family("NCCL_SOCKET_FAMILY", "AF_INET6");
  std::vector<NetInterface> interfaces;
  Status status = findInterfaces(&interfaces);
  if (!status.isOk()) GTEST_SKIP() << "lo has no IPv6 address here: " << status.message();
  ASSERT_EQ(interfaces.size(), 1u);
  EXPECT_EQ(interfaces[0].address.family(), AF_INET6);
  EXPECT_EQ(interfaces[0].address.toString(), "[::1]:0");
}

TEST_F(SocketTest, UnmatchedIfnameListsTheInterfaces) {
  ScopedEnv missing("NCCL_SOCKET_IFNAME", "nosuchif");
  std::vector<NetInterface> interfaces;
  Status status = findInterfaces(&interfaces);
  ASSERT_FALSE(status.isOk());
  EXPECT_EQ(status.code(), StatusCode::kSystemError);
  EXPECT_NE(status.message().find("NCCL_SOCKET_IFNAME=nosuchif"), std::string::npos) << status.message();
  EXPECT_NE(status.message().find("lo 127.0.0.1"), std::string::npos) << status.message();
  EXPECT_NE(status.message().find("Set NCCL_SOCKET_IFNAME"), std::string::npos) << status.message();
}

TEST_F(SocketTest, InterfaceForLoopbackAddressIsLo) {
  ScopedEnv unset("NCCL_SOCKET_IFNAME", nullptr);
  NetInterface interface;
  ASSERT_TRUE(findInterfaceFor(mustParse("127.0.0.1:5000"), &interface).isOk());
  EXPECT_EQ(interface.name, "lo");
  EXPECT_EQ(interface.address.toString(), "127.0.0.1:0");
}

TEST_F(SocketTest, ConnectsAndAcceptsOnLoopback) {
  ConnectedPair pair;
  ASSERT_NO_FATAL_FAILURE(connectPair("127.0.0.1", &pair));
  EXPECT_EQ(pair.server.peerAddress().toString(), pair.client.localAddress().toString());
  EXPECT_EQ(pair.client.peerAddress().toString(), pair.listener.localAddress().toString());

  WaitContext context = testContext("a loopback message");
  const uint64_t sent = 0x0123456789abcdefull;
  uint64_t received = 0;
  ASSERT_TRUE(pair.client.sendAll(&sent, sizeof(sent), context).isOk());
  ASSERT_TRUE(pair.server.recvAll(&received, sizeof(received), context).isOk());
  EXPECT_EQ(received, sent);

  Socket none;
  ASSERT_TRUE(pair.listener.tryAccept(&none).isOk());
  EXPECT_FALSE(none.valid());
}

TEST_F(SocketTest, ConnectsOverIpv6Loopback) {
  Socket probe;
  if (!Socket::listen(mustParse("[::1]:0"), &probe).isOk()) GTEST_SKIP() << "no IPv6 loopback here";
  probe.close();
  ConnectedPair pair;
  ASSERT_NO_FATAL_FAILURE(connectPair("[::1]", &pair));
  EXPECT_EQ(pair.server.peerAddress().family(), AF_INET6);
  WaitContext context = testContext("an IPv6 loopback message");
  const char sent[] = "over ::1";
  char received[sizeof(sent)] = {};
  ASSERT_TRUE(pair.server.sendAll(sent, sizeof(sent), context).isOk());
  ASSERT_TRUE(pair.client.recvAll(received, sizeof(received), context).isOk());
  EXPECT_STREQ(received, sent);
}

TEST_F(SocketTest, MovesLargeBuffersBetweenThreads) {
  ConnectedPair pair;
  ASSERT_NO_FATAL_FAILURE(connectPair("127.0.0.1", &pair));
  constexpr size_t kSize = (6u << 20) + 13;  // several MiB, not a multiple of anything
  std::vector<uint8_t> sent(kSize);
  for (size_t i = 0; i < kSize; ++i) sent[i] = static_cast<uint8_t>((i * 2654435761u) >> 13);
  std::vector<uint8_t> received(kSize, 0);

  Status sendStatus;
  std::thread sender([&] {
    WaitContext context = testContext("a large send");
    sendStatus = pair.client.sendAll(sent.data(), sent.size(), context);
  });
  WaitContext context = testContext("a large receive");
  Status recvStatus = pair.server.recvAll(received.data(), received.size(), context);
  sender.join();
  ASSERT_TRUE(sendStatus.isOk()) << sendStatus.message();
  ASSERT_TRUE(recvStatus.isOk()) << recvStatus.message();
  EXPECT_TRUE(received == sent);
}

TEST_F(SocketTest, EndOfFileIsRemoteErrorNamingThePeer) {
  ConnectedPair pair;
  ASSERT_NO_FATAL_FAILURE(connectPair("127.0.0.1", &pair));
  const std::string peer = pair.client.localAddress().toString();
  const uint32_t partial = 7;
  WaitContext context = testContext("a message cut short");
  ASSERT_TRUE(pair.client.sendAll(&partial, sizeof(partial), context).isOk());
  pair.client.close();
  uint64_t received = 0;
  Status status = pair.server.recvAll(&received, sizeof(received), context);
  EXPECT_EQ(status.code(), StatusCode::kRemoteError);
  EXPECT_NE(status.message().find(peer), std::string::npos) << status.message();
  EXPECT_NE(status.message().find("4 of 8 bytes"), std::string::npos) << status.message();
}

TEST_F(SocketTest, SendToAClosedPeerIsRemoteError) {
  ConnectedPair pair;
  ASSERT_NO_FATAL_FAILURE(connectPair("127.0.0.1", &pair));
  pair.server.close();
  std::vector<uint8_t> data(1 << 20, 1);
  WaitContext context = testContext("a send to a closed peer");
  Status status;
  // The first writes may land in the kernel buffer; the peer's reset shows up on a later one.
  for (int i = 0; i < 64 && status.isOk(); ++i) status = pair.client.sendAll(data.data(), data.size(), context);
  EXPECT_EQ(status.code(), StatusCode::kRemoteError);
  EXPECT_NE(status.message().find(pair.listener.localAddress().toString()), std::string::npos) << status.message();
}

TEST_F(SocketTest, ConnectToAClosedPortTimesOut) {
  ScopedEnv timeout("WEFT_SOCKET_CONNECT_TIMEOUT", "1");
  SocketAddress address;
  {
    Socket listener;
    ASSERT_TRUE(Socket::listen(mustParse("127.0.0.1:0"), &listener).isOk());
    address = listener.localAddress();
  }
  WaitContext context = testContext("a connect to a closed port");
  Socket socket;
  auto start = std::chrono::steady_clock::now();
  Status status = Socket::connect(address, context, &socket);
  double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_EQ(status.code(), StatusCode::kRemoteError);
  EXPECT_FALSE(socket.valid());
  EXPECT_GE(elapsed, 0.9);
  EXPECT_LT(elapsed, 5.0);
  EXPECT_NE(status.message().find(address.toString()), std::string::npos) << status.message();
  EXPECT_NE(status.message().find("WEFT_SOCKET_CONNECT_TIMEOUT=1"), std::string::npos) << status.message();
  EXPECT_NE(status.message().find("refused"), std::string::npos) << status.message();
}

TEST_F(SocketTest, ConnectStopsWhenTheContextFails) {
  SocketAddress address;
  {
    Socket listener;
    ASSERT_TRUE(Socket::listen(mustParse("127.0.0.1:0"), &listener).isOk());
    address = listener.localAddress();
  }
  WaitContext context = testContext("an aborted connect");
  context.check = [] { return invalidUsage("communicator aborted"); };
  Socket socket;
  auto start = std::chrono::steady_clock::now();
  Status status = Socket::connect(address, context, &socket);
  double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_EQ(status.code(), StatusCode::kInvalidUsage);
  EXPECT_EQ(status.message(), "communicator aborted");
  EXPECT_LT(elapsed, 5.0);
}

TEST_F(SocketTest, ListenOnAPortInUseSaysSo) {
  Socket first;
  ASSERT_TRUE(Socket::listen(mustParse("127.0.0.1:0"), &first).isOk());
  Socket second;
  Status status = Socket::listen(first.localAddress(), &second);
  EXPECT_EQ(status.code(), StatusCode::kSystemError);
  EXPECT_NE(status.message().find("in use"), std::string::npos) << status.message();
  EXPECT_NE(status.message().find(first.localAddress().toString()), std::string::npos) << status.message();
}

// A reserved port: a plain bind there fails, listen() there succeeds (as rank 0's root does), and a
// second listener still finds it in use. That a bind to port 0 elsewhere never picks it is Linux's
// rule for SO_REUSEADDR sockets that do not listen, and is not tested: the kernel picks among
// thousands of ports, so a test could not tell the rule from luck.
TEST_F(SocketTest, AReservedPortIsLeftToTheOneWhoListensThere) {
  Socket reservation;
  ASSERT_TRUE(Socket::reservePort(mustParse("127.0.0.1:0"), &reservation).isOk());
  const SocketAddress reserved = reservation.localAddress();
  ASSERT_NE(reserved.port(), 0);

  Socket plain(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
  ASSERT_TRUE(plain.valid());
  EXPECT_NE(::bind(plain.fd(), reinterpret_cast<const sockaddr*>(&reserved.storage), reserved.length), 0);
  EXPECT_EQ(errno, EADDRINUSE);

  Socket root;
  Status status = Socket::listen(reserved, &root);
  ASSERT_TRUE(status.isOk()) << status.message();
  Socket client;
  ASSERT_TRUE(Socket::connect(reserved, testContext("a connection to the reserved port"), &client).isOk());

  Socket second;
  EXPECT_EQ(Socket::listen(reserved, &second).code(), StatusCode::kSystemError);
}

}  // namespace
}  // namespace weft::net
