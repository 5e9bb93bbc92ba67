#include "transport/socket/transport.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "src/base/socket.h"
#include "src/base/wait.h"
#include "transport/socket/wire.h"

namespace weft::transport::socket {
namespace {

using Clock = std::chrono::steady_clock;

constexpr int kRecvRank = 0;
constexpr int kSendRank = 3;
constexpr uint64_t kCommHash = 0x5eed'cafe'f00dull;
constexpr int kChannel = 2;
constexpr auto kTestDeadline = std::chrono::seconds(60);

PeerInfo makePeer(int rank, const char* host) {
  PeerInfo info;
  info.rank = rank;
  snprintf(info.hostname, sizeof(info.hostname), "%s", host);
  return info;
}

// The parameters as the side `selfRank` sees them.
ConnectionParams paramsFor(int selfRank, size_t slotBytes, int slotCount) {
  PeerInfo recvPeer = makePeer(kRecvRank, "recvhost");
  PeerInfo sendPeer = makePeer(kSendRank, "sendhost");
  ConnectionParams params;
  params.self = selfRank == kRecvRank ? recvPeer : sendPeer;
  params.peer = selfRank == kRecvRank ? sendPeer : recvPeer;
  params.commHash = kCommHash;
  params.channel = kChannel;
  params.slotBytes = slotBytes;
  params.slotCount = slotCount;
  return params;
}

// Fails the wait when the deadline passes or another thread raised `stop`.
WaitContext deadlineContext(Clock::time_point deadline, const std::atomic<bool>* stop, std::string what) {
  WaitContext context;
  context.what = what;
  context.check = [deadline, stop, what]() -> Status {
    if (stop && stop->load(std::memory_order_relaxed)) return internalError("%s: stopped by the other side", what.c_str());
    if (Clock::now() > deadline) return internalError("%s: test deadline passed", what.c_str());
    return Status::ok();
  };
  return context;
}

uint8_t patternByte(uint64_t seq, size_t i) { return static_cast<uint8_t>(seq * 131 + i * 7 + (i >> 9)); }

void fillPattern(uint64_t seq, void* slot, size_t bytes) {
  auto* out = static_cast<uint8_t*>(slot);
  for (size_t i = 0; i < bytes; ++i) out[i] = patternByte(seq, i);
}

Status checkPattern(uint64_t seq, const void* data, size_t bytes, size_t expectedBytes) {
  if (bytes != expectedBytes) {
    return internalError("slot %llu holds %zu bytes, expected %zu", static_cast<unsigned long long>(seq), bytes,
                         expectedBytes);
  }
  const auto* in = static_cast<const uint8_t*>(data);
  for (size_t i = 0; i < bytes; ++i) {
    if (in[i] != patternByte(seq, i)) {
      return internalError("slot %llu byte %zu is %u, expected %u", static_cast<unsigned long long>(seq), i, in[i],
                           patternByte(seq, i));
    }
  }
  return Status::ok();
}

// Sizes 0, 1 and slotBytes come back often; the rest are spread over [0, slotBytes].
size_t variedSize(uint64_t seq, size_t slotBytes) {
  switch (seq % 8) {
    case 0: return 0;
    case 1: return 1;
    case 2: return slotBytes;
    case 3: return slotBytes - 1;
    default: return static_cast<size_t>((seq * 2654435761ull) % (slotBytes + 1));
  }
}

struct StreamSpec {
  uint64_t slots = 0;
  size_t (*sizeOf)(uint64_t seq, size_t slotBytes) = variedSize;
  bool pattern = true;
};

Status acquire(SendConnection* send, Waiter* waiter, void** slot) {
  while (true) {
    WEFT_RETURN_IF_ERROR(send->tryAcquireSlot(slot, SlotKind::kSimple));
    if (*slot) return Status::ok();
    WEFT_RETURN_IF_ERROR(waiter->idle());
  }
}

Status peek(RecvConnection* recv, Waiter* waiter, const void** data, size_t* bytes) {
  while (true) {
    WEFT_RETURN_IF_ERROR(recv->tryPeekSlot(data, bytes, SlotKind::kSimple));
    if (*data) return Status::ok();
    WEFT_RETURN_IF_ERROR(waiter->idle());
  }
}

Status sendStream(SendConnection* send, const StreamSpec& spec, const WaitContext& context) {
  Waiter waiter(&context);
  for (uint64_t seq = 0; seq < spec.slots; ++seq) {
    void* slot = nullptr;
    WEFT_RETURN_IF_ERROR(acquire(send, &waiter, &slot));
    waiter.progressed();
    size_t bytes = spec.sizeOf(seq, send->slotBytes());
    if (spec.pattern) fillPattern(seq, slot, bytes);
    WEFT_RETURN_IF_ERROR(send->postSlot(bytes));
  }
  while (true) {
    bool done = false;
    WEFT_RETURN_IF_ERROR(send->tryFlush(&done));
    if (done) return Status::ok();
    WEFT_RETURN_IF_ERROR(waiter.idle());
  }
}

Status recvStream(RecvConnection* recv, const StreamSpec& spec, const WaitContext& context, uint64_t* received) {
  Waiter waiter(&context);
  for (uint64_t seq = 0; seq < spec.slots; ++seq) {
    const void* data = nullptr;
    size_t bytes = 0;
    WEFT_RETURN_IF_ERROR(peek(recv, &waiter, &data, &bytes));
    waiter.progressed();
    if (spec.pattern) {
      WEFT_RETURN_IF_ERROR(checkPattern(seq, data, bytes, spec.sizeOf(seq, recv->slotBytes())));
    } else if (bytes != spec.sizeOf(seq, recv->slotBytes())) {
      return internalError("slot %llu holds %zu bytes", static_cast<unsigned long long>(seq), bytes);
    }
    WEFT_RETURN_IF_ERROR(recv->releaseSlot());
    if (received) *received = seq + 1;
  }
  return Status::ok();
}

struct Ends {
  std::unique_ptr<RecvConnection> recv;
  std::unique_ptr<SendConnection> send;
  std::vector<uint8_t> blob;
};

Status listenOnly(size_t slotBytes, int slotCount, Ends* ends) {
  auto transport = makeSocketTransport();
  return transport->listen(paramsFor(kRecvRank, slotBytes, slotCount), &ends->recv, &ends->blob);
}

Status connectOnly(size_t slotBytes, int slotCount, Ends* ends) {
  auto transport = makeSocketTransport();
  return transport->connect(paramsFor(kSendRank, slotBytes, slotCount), ends->blob, &ends->send);
}

net::SocketAddress listenAddress(const std::vector<uint8_t>& blob) {
  ListenBlob parsed;
  memcpy(&parsed, blob.data(), sizeof(parsed));
  return parsed.address;
}

// Streams `spec` from a second thread; the calling thread receives and checks.
void streamWithTwoThreads(Ends* ends, const StreamSpec& spec) {
  auto deadline = Clock::now() + kTestDeadline;
  std::atomic<bool> stop{false};
  Status sendStatus;
  std::thread sender([&] {
    WaitContext context = deadlineContext(deadline, &stop, "sender");
    sendStatus = sendStream(ends->send.get(), spec, context);
    if (!sendStatus.isOk()) stop = true;
  });
  WaitContext context = deadlineContext(deadline, &stop, "receiver");
  uint64_t received = 0;
  Status recvStatus = recvStream(ends->recv.get(), spec, context, &received);
  if (!recvStatus.isOk()) stop = true;
  sender.join();
  EXPECT_TRUE(sendStatus.isOk()) << sendStatus.message();
  EXPECT_TRUE(recvStatus.isOk()) << recvStatus.message();
  EXPECT_EQ(received, spec.slots);
}

class SocketTransportTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (const char* previous = getenv("NCCL_SOCKET_IFNAME")) previousIfname_ = previous;
    setenv("NCCL_SOCKET_IFNAME", "lo", 1);
  }
  void TearDown() override {
    if (previousIfname_) {
      setenv("NCCL_SOCKET_IFNAME", previousIfname_->c_str(), 1);
    } else {
      unsetenv("NCCL_SOCKET_IFNAME");
    }
  }

 private:
  std::optional<std::string> previousIfname_;
};

TEST_F(SocketTransportTest, NameAndReach) {
  auto transport = makeSocketTransport();
  EXPECT_STREQ(transport->name(), "socket");
  EXPECT_TRUE(transport->canConnect(makePeer(0, "a"), makePeer(1, "b")));
}

TEST_F(SocketTransportTest, StreamsVariedSizesWithManyWrapArounds) {
  Ends ends;
  ASSERT_TRUE(listenOnly(8192, 4, &ends).isOk());
  Status status = connectOnly(8192, 4, &ends);
  ASSERT_TRUE(status.isOk()) << status.message();
  streamWithTwoThreads(&ends, StreamSpec{20000});
}

TEST_F(SocketTransportTest, StreamsTinySlotsOneSlotRing) {
  Ends ends;
  ASSERT_TRUE(listenOnly(64, 1, &ends).isOk());
  ASSERT_TRUE(connectOnly(64, 1, &ends).isOk());
  streamWithTwoThreads(&ends, StreamSpec{5000});
}

TEST_F(SocketTransportTest, LargeSlotsSurvivePartialWrites) {
  constexpr size_t kSlot = 4 << 20;
  Ends ends;
  ASSERT_TRUE(listenOnly(kSlot, 2, &ends).isOk());
  ASSERT_TRUE(connectOnly(kSlot, 2, &ends).isOk());
  StreamSpec spec{24, [](uint64_t seq, size_t slotBytes) -> size_t {
                    const size_t sizes[] = {slotBytes, slotBytes - 1, 3 * (slotBytes / 4) + 7, 1};
                    return sizes[seq % 4];
                  }};
  streamWithTwoThreads(&ends, spec);
}

// connect() returns before the receiver does anything; one thread then drives both ends.
TEST_F(SocketTransportTest, OneThreadDrivesBothEnds) {
  constexpr size_t kSlot = 64 << 10;
  Ends ends;
  ASSERT_TRUE(listenOnly(kSlot, 4, &ends).isOk());
  Status status = connectOnly(kSlot, 4, &ends);
  ASSERT_TRUE(status.isOk()) << status.message();
  constexpr uint64_t kSlots = 600;  // ~19 MiB: far more than the sockets buffer
  auto deadline = Clock::now() + kTestDeadline;
  WaitContext context = deadlineContext(deadline, nullptr, "one thread");
  Waiter waiter(&context);
  uint64_t posted = 0, received = 0;
  while (received < kSlots) {
    bool progressed = false;
    void* slot = nullptr;
    if (posted < kSlots) {
      ASSERT_TRUE(ends.send->tryAcquireSlot(&slot, SlotKind::kSimple).isOk());
      if (slot) {
        size_t bytes = variedSize(posted, kSlot);
        fillPattern(posted, slot, bytes);
        ASSERT_TRUE(ends.send->postSlot(bytes).isOk());
        ++posted;
        progressed = true;
      }
    } else {
      bool done = false;
      ASSERT_TRUE(ends.send->tryFlush(&done).isOk());
    }
    const void* data = nullptr;
    size_t bytes = 0;
    status = ends.recv->tryPeekSlot(&data, &bytes, SlotKind::kSimple);
    ASSERT_TRUE(status.isOk()) << status.message();
    if (data) {
      status = checkPattern(received, data, bytes, variedSize(received, kSlot));
      ASSERT_TRUE(status.isOk()) << status.message();
      ASSERT_TRUE(ends.recv->releaseSlot().isOk());
      ++received;
      progressed = true;
    }
    if (progressed) {
      waiter.progressed();
    } else {
      status = waiter.idle();
      ASSERT_TRUE(status.isOk()) << status.message() << " (posted " << posted << ", received " << received << ")";
    }
  }
  bool done = false;
  ASSERT_TRUE(ends.send->tryFlush(&done).isOk());
  EXPECT_TRUE(done);
  EXPECT_EQ(posted, kSlots);
}

// Connects to `address` as some other process would, and sends `bytes`.
net::Socket connectStranger(const net::SocketAddress& address, const void* bytes, size_t size) {
  net::Socket stranger;
  WaitContext context = deadlineContext(Clock::now() + std::chrono::seconds(10), nullptr, "stranger");
  Status status = net::Socket::connect(address, context, &stranger);
  EXPECT_TRUE(status.isOk()) << status.message();
  if (size > 0 && stranger.valid()) {
    status = stranger.sendAll(bytes, size, context);
    EXPECT_TRUE(status.isOk()) << status.message();
  }
  return stranger;
}

// Polls the receiver (which hears strangers only while polled) until it closed `stranger`.
Status awaitClosedByReceiver(RecvConnection* recv, net::Socket* stranger, Clock::time_point deadline) {
  WaitContext context = deadlineContext(deadline, nullptr, "stranger to be closed");
  Status failure;
  WEFT_RETURN_IF_ERROR(waitUntil(context, [&] {
    const void* data = nullptr;
    size_t bytes = 0;
    failure = recv->tryPeekSlot(&data, &bytes, SlotKind::kSimple);
    if (failure.isOk() && data) failure = internalError("a slot arrived from a stranger");
    if (!failure.isOk()) return true;
    uint8_t byte;
    size_t offset = 0;
    return !stranger->tryRecv(&byte, 1, &offset).isOk();  // end of stream or reset: closed
  }));
  return failure;
}

// A receiving end (4 KiB slots x 4) that waits `seconds` for a connection's handshake.
Status listenWithHandshakeTimeout(const char* seconds, Ends* ends) {
  setenv("WEFT_BOOTSTRAP_HANDSHAKE_TIMEOUT", seconds, 1);
  Status status = listenOnly(4096, 4, ends);
  unsetenv("WEFT_BOOTSTRAP_HANDSHAKE_TIMEOUT");
  return status;
}

TEST_F(SocketTransportTest, StrangersAreClosedAndTheSenderStillConnects) {
  Ends ends;
  ASSERT_TRUE(listenOnly(4096, 4, &ends).isOk());
  net::SocketAddress address = listenAddress(ends.blob);
  auto deadline = Clock::now() + std::chrono::seconds(20);

  std::vector<uint8_t> garbage(sizeof(Handshake), 0xab);
  net::Socket garbageSender = connectStranger(address, garbage.data(), garbage.size());
  ASSERT_TRUE(awaitClosedByReceiver(ends.recv.get(), &garbageSender, deadline).isOk());

  ListenBlob parsed;
  memcpy(&parsed, ends.blob.data(), sizeof(parsed));
  Handshake wrongNonce;
  wrongNonce.senderRank = kSendRank;
  wrongNonce.nonce = parsed.nonce + 1;
  wrongNonce.commHash = kCommHash;
  wrongNonce.channel = kChannel;
  net::Socket impostor = connectStranger(address, &wrongNonce, sizeof(wrongNonce));
  ASSERT_TRUE(awaitClosedByReceiver(ends.recv.get(), &impostor, deadline).isOk());

  const char shortBytes[] = "GET";
  net::Socket quitter = connectStranger(address, shortBytes, 3);
  quitter.close();

  Status status = connectOnly(4096, 4, &ends);
  ASSERT_TRUE(status.isOk()) << status.message();
  streamWithTwoThreads(&ends, StreamSpec{3000});
}

TEST_F(SocketTransportTest, SilentStrangerIsDroppedAfterTheHandshakeTimeout) {
  Ends ends;
  Status status = listenWithHandshakeTimeout("1", &ends);
  ASSERT_TRUE(status.isOk()) << status.message();
  net::Socket silent = connectStranger(listenAddress(ends.blob), nullptr, 0);
  auto start = Clock::now();
  ASSERT_TRUE(awaitClosedByReceiver(ends.recv.get(), &silent, start + std::chrono::seconds(20)).isOk());
  double waited = std::chrono::duration<double>(Clock::now() - start).count();
  EXPECT_GE(waited, 0.9);  // not dropped before its time
  EXPECT_LT(waited, 10.0);
  ASSERT_TRUE(connectOnly(4096, 4, &ends).isOk());
  streamWithTwoThreads(&ends, StreamSpec{500});
}

TEST_F(SocketTransportTest, SilentStrangerDoesNotDelayTheRealSender) {
  Ends ends;
  Status status = listenWithHandshakeTimeout("30", &ends);
  ASSERT_TRUE(status.isOk()) << status.message();
  net::Socket silent = connectStranger(listenAddress(ends.blob), nullptr, 0);
  const void* data = nullptr;
  size_t bytes = 0;
  ASSERT_TRUE(ends.recv->tryPeekSlot(&data, &bytes, SlotKind::kSimple).isOk());  // the stranger is now heard
  EXPECT_EQ(data, nullptr);
  ASSERT_TRUE(connectOnly(4096, 4, &ends).isOk());
  auto start = Clock::now();
  streamWithTwoThreads(&ends, StreamSpec{500});
  EXPECT_LT(std::chrono::duration<double>(Clock::now() - start).count(), 15.0);
}

TEST_F(SocketTransportTest, ACrowdOfSilentStrangersDoesNotShutOutTheSender) {
  Ends ends;
  Status status = listenWithHandshakeTimeout("60", &ends);
  ASSERT_TRUE(status.isOk()) << status.message();
  // More than the receiver hears at once; each is accepted before the sender arrives.
  constexpr int kSilent = 100;
  std::vector<net::Socket> crowd;
  for (int i = 0; i < kSilent; ++i) {
    crowd.push_back(connectStranger(listenAddress(ends.blob), nullptr, 0));
    const void* data = nullptr;
    size_t bytes = 0;
    ASSERT_TRUE(ends.recv->tryPeekSlot(&data, &bytes, SlotKind::kSimple).isOk());
    ASSERT_EQ(data, nullptr);
  }
  ASSERT_TRUE(connectOnly(4096, 4, &ends).isOk());
  auto start = Clock::now();
  streamWithTwoThreads(&ends, StreamSpec{500});
  EXPECT_LT(std::chrono::duration<double>(Clock::now() - start).count(), 15.0);
  for (net::Socket& stranger : crowd) {
    uint8_t byte;
    size_t offset = 0;
    EXPECT_FALSE(stranger.tryRecv(&byte, 1, &offset).isOk()) << "a silent stranger is still connected";
  }
}

TEST_F(SocketTransportTest, StrangersQueuedBehindTheSenderDoNotPushItOut) {
  Ends ends;
  Status status = listenWithHandshakeTimeout("60", &ends);
  ASSERT_TRUE(status.isOk()) << status.message();
  ASSERT_TRUE(connectOnly(4096, 4, &ends).isOk());
  // More than the receiver hears at once arrive after the sender and before the receiver's first poll.
  std::vector<net::Socket> crowd;
  for (int i = 0; i < 100; ++i) crowd.push_back(connectStranger(listenAddress(ends.blob), nullptr, 0));
  auto start = Clock::now();
  streamWithTwoThreads(&ends, StreamSpec{500});
  EXPECT_LT(std::chrono::duration<double>(Clock::now() - start).count(), 15.0);
}

TEST_F(SocketTransportTest, SenderGoneMidStreamIsARemoteErrorNamingIt) {
  constexpr size_t kSlot = 256 << 10;
  constexpr uint64_t kPosted = 40;
  Ends ends;
  ASSERT_TRUE(listenOnly(kSlot, 4, &ends).isOk());
  ASSERT_TRUE(connectOnly(kSlot, 4, &ends).isOk());
  auto deadline = Clock::now() + std::chrono::seconds(20);
  std::atomic<bool> stop{false};
  Status sendStatus;
  std::thread sender([&] {
    WaitContext context = deadlineContext(deadline, &stop, "sender");
    Waiter waiter(&context);
    for (uint64_t seq = 0; seq < kPosted && sendStatus.isOk(); ++seq) {
      void* slot = nullptr;
      sendStatus = acquire(ends.send.get(), &waiter, &slot);
      if (!sendStatus.isOk()) break;
      fillPattern(seq, slot, kSlot);
      sendStatus = ends.send->postSlot(kSlot);
    }
    ends.send.reset();  // gone without flushing: the last frames may be cut short
  });
  WaitContext context = deadlineContext(deadline, nullptr, "receiver");
  Waiter waiter(&context);
  uint64_t received = 0;
  Status status;
  while (status.isOk()) {
    const void* data = nullptr;
    size_t bytes = 0;
    status = peek(ends.recv.get(), &waiter, &data, &bytes);
    if (!status.isOk()) break;
    Status check = checkPattern(received, data, bytes, kSlot);
    ASSERT_TRUE(check.isOk()) << check.message();
    ASSERT_TRUE(ends.recv->releaseSlot().isOk());
    ++received;
  }
  stop = true;
  sender.join();
  EXPECT_TRUE(sendStatus.isOk()) << sendStatus.message();
  EXPECT_LE(received, kPosted);
  EXPECT_EQ(status.code(), StatusCode::kRemoteError) << status.message();
  EXPECT_NE(status.message().find("rank 3 on host sendhost"), std::string::npos) << status.message();
  EXPECT_NE(status.message().find("closed the connection"), std::string::npos) << status.message();
  // The failure sticks.
  const void* data = nullptr;
  size_t bytes = 0;
  EXPECT_EQ(ends.recv->tryPeekSlot(&data, &bytes, SlotKind::kSimple).code(), StatusCode::kRemoteError);
}

TEST_F(SocketTransportTest, ReceiverGoneIsARemoteErrorForTheSender) {
  constexpr size_t kSlot = 256 << 10;
  Ends ends;
  ASSERT_TRUE(listenOnly(kSlot, 4, &ends).isOk());
  ASSERT_TRUE(connectOnly(kSlot, 4, &ends).isOk());
  const void* data = nullptr;
  size_t bytes = 0;
  ASSERT_TRUE(ends.recv->tryPeekSlot(&data, &bytes, SlotKind::kSimple).isOk());  // accepts the sender
  ends.recv.reset();
  WaitContext context = deadlineContext(Clock::now() + std::chrono::seconds(20), nullptr, "sender");
  Waiter waiter(&context);
  Status status;
  while (status.isOk()) {
    void* slot = nullptr;
    status = ends.send->tryAcquireSlot(&slot, SlotKind::kSimple);
    if (status.isOk() && slot) status = ends.send->postSlot(kSlot);
    if (status.isOk()) status = waiter.idle();
  }
  EXPECT_EQ(status.code(), StatusCode::kRemoteError) << status.message();
  EXPECT_NE(status.message().find("rank 0 on host recvhost"), std::string::npos) << status.message();
}

TEST_F(SocketTransportTest, OversizedFrameIsACorruptedStream) {
  Ends ends;
  ASSERT_TRUE(listenOnly(4096, 2, &ends).isOk());
  ListenBlob parsed;
  memcpy(&parsed, ends.blob.data(), sizeof(parsed));
  Handshake handshake;
  handshake.senderRank = kSendRank;
  handshake.nonce = parsed.nonce;
  handshake.commHash = kCommHash;
  handshake.channel = kChannel;
  uint8_t bytes[sizeof(Handshake) + kFrameHeaderBytes];
  memcpy(bytes, &handshake, sizeof(handshake));
  uint64_t header = encodeFrameHeader(4097);
  memcpy(bytes + sizeof(handshake), &header, sizeof(header));
  net::Socket forger = connectStranger(parsed.address, bytes, sizeof(bytes));
  WaitContext context = deadlineContext(Clock::now() + std::chrono::seconds(20), nullptr, "receiver");
  Waiter waiter(&context);
  const void* data = nullptr;
  size_t size = 0;
  Status status = peek(ends.recv.get(), &waiter, &data, &size);
  EXPECT_EQ(status.code(), StatusCode::kRemoteError) << status.message();
  EXPECT_NE(status.message().find("corrupted stream from rank 3"), std::string::npos) << status.message();
}

TEST_F(SocketTransportTest, BlobOfAnotherChannelIsRefused) {
  Ends ends;
  ASSERT_TRUE(listenOnly(4096, 2, &ends).isOk());
  auto transport = makeSocketTransport();
  ConnectionParams params = paramsFor(kSendRank, 4096, 2);
  params.channel = kChannel + 1;
  Status status = transport->connect(params, ends.blob, &ends.send);
  EXPECT_EQ(status.code(), StatusCode::kInternalError);
  EXPECT_EQ(ends.send, nullptr);
  std::vector<uint8_t> truncated(ends.blob.begin(), ends.blob.end() - 1);
  status = transport->connect(paramsFor(kSendRank, 4096, 2), truncated, &ends.send);
  EXPECT_EQ(status.code(), StatusCode::kInvalidUsage);
}

// Not a check: prints the streaming bandwidth for the record.
TEST_F(SocketTransportTest, ReportsBandwidthWith512KiBSlots) {
  constexpr size_t kSlot = 512 << 10;
  constexpr uint64_t kSlots = 1024;  // 512 MiB
  Ends ends;
  ASSERT_TRUE(listenOnly(kSlot, 8, &ends).isOk());
  ASSERT_TRUE(connectOnly(kSlot, 8, &ends).isOk());
  StreamSpec spec{kSlots, [](uint64_t, size_t slotBytes) { return slotBytes; }, false};
  auto start = Clock::now();
  streamWithTwoThreads(&ends, spec);
  double seconds = std::chrono::duration<double>(Clock::now() - start).count();
  printf("socket transport, loopback, 512 KiB slots x 8: %.0f MiB in %.3f s = %.2f GB/s\n",
         static_cast<double>(kSlot * kSlots) / (1 << 20), seconds, static_cast<double>(kSlot * kSlots) / seconds / 1e9);
}

}  // namespace
}  // namespace weft::transport::socket
