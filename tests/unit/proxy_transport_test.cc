// The network proxy (transport/proxy/) with the kernel played by a host thread: it follows the
// DeviceEnd protocol on the staged rings (here plain host memory, which is what pinned memory is
// to the proxy) while the proxy thread carries the pieces over a real network connection (socket
// over loopback; ib where a verbs port is usable, as in the soft-RoCE guest: ctest -R ib_proxy),
// or over a scripted network connection that checks the ib transport's announcement rule or fails.

#include "transport/proxy/transport.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "tests/harness/scoped_env.h"
#include "transport/proxy/connection.h"
#include "transport/proxy/proxy_thread.h"
#include "transport/socket/transport.h"
#if WEFT_IB
#include "transport/ib/ports.h"
#include "transport/ib/transport.h"
#endif

namespace weft::transport::proxy {
namespace {

using Clock = std::chrono::steady_clock;

constexpr int kRecvRank = 0;
constexpr int kSendRank = 3;
constexpr int kChannel = 2;
constexpr size_t kSlotBytes = 4096;
constexpr int kSlotCount = 8;
constexpr auto kDeadline = std::chrono::seconds(30);

ConnectionParams paramsFor(int selfRank) {
  ConnectionParams params;
  params.self.rank = selfRank;
  params.peer.rank = selfRank == kRecvRank ? kSendRank : kRecvRank;
  std::snprintf(params.self.hostname, sizeof(params.self.hostname), "host%d", selfRank);
  std::snprintf(params.peer.hostname, sizeof(params.peer.hostname), "host%d", params.peer.rank);
  params.commHash = 0x9e0c'0ffeull;
  params.channel = kChannel;
  params.slotBytes = kSlotBytes;
  params.slotCount = kSlotCount;
  return params;
}

uint8_t patternByte(uint64_t piece, size_t i) { return static_cast<uint8_t>(piece * 37 + i * 11 + (i >> 8)); }

// Piece sizes as kernels post them: full slots, an empty piece, a short last one.
size_t pieceBytes(uint64_t piece) {
  switch (piece % 5) {
    case 0: return kSlotBytes;
    case 1: return 0;
    case 2: return 1;
    case 3: return kSlotBytes - 8;
    default: return (piece * 977) % kSlotBytes;
  }
}

uint64_t load(uint64_t* counter) { return std::atomic_ref<uint64_t>(*counter).load(std::memory_order_acquire); }

void store(uint64_t* counter, uint64_t value) {
  std::atomic_ref<uint64_t>(*counter).store(value, std::memory_order_release);
}

// The kernel's sending side: post `count` pieces through `end`, from piece `first` (the pieces
// posted before). False past the deadline.
bool kernelSends(const DeviceEnd& end, uint64_t count, Clock::time_point deadline, uint64_t first = 0) {
  for (uint64_t piece = first; piece < first + count; ++piece) {
    while (piece - load(end.released) >= static_cast<uint64_t>(end.slotCount)) {
      if (Clock::now() > deadline) return false;
      std::this_thread::yield();
    }
    char* slot = end.slots + (piece % end.slotCount) * end.slotBytes;
    for (size_t i = 0; i < pieceBytes(piece); ++i) slot[i] = static_cast<char>(patternByte(piece, i));
    end.sizes[piece % end.slotCount] = pieceBytes(piece);
    store(end.posted, piece + 1);
  }
  return true;
}

// The kernel's receiving side: takes `count` pieces from `end`, checking each against the
// pattern (the kernel knows each piece's size from its program). Returns the first problem, or "".
std::string kernelReceives(const DeviceEnd& end, uint64_t count, Clock::time_point deadline) {
  for (uint64_t piece = 0; piece < count; ++piece) {
    while (load(end.posted) <= piece) {
      if (Clock::now() > deadline) return "piece " + std::to_string(piece) + " never arrived";
      std::this_thread::yield();
    }
    const char* slot = end.slots + (piece % end.slotCount) * end.slotBytes;
    for (size_t i = 0; i < pieceBytes(piece); ++i) {
      if (static_cast<uint8_t>(slot[i]) != patternByte(piece, i)) {
        return "piece " + std::to_string(piece) + " byte " + std::to_string(i) + " differs";
      }
    }
    store(end.released, piece + 1);
  }
  return "";
}

// Records the failures a proxy reports.
struct RecordingSink : ProxyFailureSink {
  void proxyFailed(const Status& failure) override {
    std::lock_guard<std::mutex> lock(mutex);
    failures.push_back(failure.message());
  }
  std::vector<std::string> seen() {
    std::lock_guard<std::mutex> lock(mutex);
    return failures;
  }
  std::mutex mutex;
  std::vector<std::string> failures;
};

bool waitFor(const std::function<bool()>& condition) {
  const auto deadline = Clock::now() + kDeadline;
  while (!condition()) {
    if (Clock::now() > deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return true;
}

// Both ends of a proxied connection of the network GetParam() names ("socket", "ib"), in this process.
class ProxiedNetwork : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    if (GetParam() == "socket") network_ = socket::makeSocketTransport();
#if WEFT_IB
    if (GetParam() == "ib") {
      if (ib::usablePortCount() == 0) {
        GTEST_SKIP() << "no usable verbs port here: ctest -R ib_proxy runs this in a guest";
      }
      network_ = ib::makeIbTransport();
    }
#endif
    ASSERT_NE(network_, nullptr) << GetParam() << " is not in this build";
    proxy_ = makeProxyTransport(network_.get(), allocateHostStaging);
    std::vector<uint8_t> blob;
    ASSERT_TRUE(proxy_->listen(paramsFor(kRecvRank), &recv_, &blob).isOk());
    ASSERT_TRUE(proxy_->connect(paramsFor(kSendRank), blob, &send_).isOk());
    ASSERT_NE(send_->deviceEnd(), nullptr);
    ASSERT_NE(recv_->deviceEnd(), nullptr);
  }

  harness::ScopedEnv env_{"NCCL_SOCKET_IFNAME", "lo"};
  RecordingSink sink_;  // outlives the ends, which may still report to it as they go
  std::unique_ptr<Transport> network_;
  std::unique_ptr<Transport> proxy_;
  std::unique_ptr<RecvConnection> recv_;
  std::unique_ptr<SendConnection> send_;
};

TEST_P(ProxiedNetwork, IsNamedAfterItsNetworkAndOffersItsDevices) {
  EXPECT_EQ(std::string(proxy_->name()), "proxy/" + GetParam());
  EXPECT_EQ(proxy_->netDevices().size(), network_->netDevices().size());
  EXPECT_NE(send_->deviceEnd()->proxy, nullptr);
  EXPECT_NE(send_->deviceEnd()->sizes, nullptr);   // the kernel writes each post's size
  EXPECT_EQ(recv_->deviceEnd()->sizes, nullptr);   // the receiving kernel knows them
}

TEST_P(ProxiedNetwork, CarriesEveryPieceInOrderWithItsSize) {
  constexpr uint64_t kPieces = 200;  // 25 times round the rings
  send_->deviceEnd()->proxy->expect(kPieces, &sink_);
  recv_->deviceEnd()->proxy->expect(kPieces, &sink_);
  const auto deadline = Clock::now() + kDeadline;
  bool sent = false;
  std::thread sender([&] { sent = kernelSends(*send_->deviceEnd(), kPieces, deadline); });
  const std::string problem = kernelReceives(*recv_->deviceEnd(), kPieces, deadline);
  sender.join();
  EXPECT_TRUE(sent) << "the sending kernel found no free slot before the deadline";
  EXPECT_EQ(problem, "");
  EXPECT_TRUE(sink_.seen().empty());
}

TEST_P(ProxiedNetwork, CarriesNothingUntilALaunchExpectsIt) {
  const DeviceEnd& end = *send_->deviceEnd();
  ASSERT_TRUE(kernelSends(end, 3, Clock::now() + kDeadline));
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  EXPECT_EQ(load(end.released), 0u) << "the proxy moved pieces that no launch announced";
  end.proxy->expect(3, &sink_);
  recv_->deviceEnd()->proxy->expect(3, &sink_);
  EXPECT_TRUE(waitFor([&] { return load(end.released) == 3; }));
  EXPECT_EQ(kernelReceives(*recv_->deviceEnd(), 3, Clock::now() + kDeadline), "");
}

TEST_P(ProxiedNetwork, ALostPeerReachesTheSinkOnce) {
  if (GetParam() == "ib") GTEST_SKIP() << "ib notices a lost peer when its retries run out (ib_peer_killed)";
  recv_->deviceEnd()->proxy->expect(4, &sink_);
  send_->deviceEnd()->proxy->expect(1, &sink_);
  ASSERT_TRUE(kernelSends(*send_->deviceEnd(), 1, Clock::now() + kDeadline));
  ASSERT_TRUE(waitFor([&] { return load(recv_->deviceEnd()->posted) == 1; }));
  send_.reset();  // the sending host is gone: its socket closes
  ASSERT_TRUE(waitFor([&] { return !sink_.seen().empty(); }));
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  const std::vector<std::string> failures = sink_.seen();
  ASSERT_EQ(failures.size(), 1u);
  EXPECT_NE(failures[0].find("network proxy receiving from rank 3 on channel 2 over socket"), std::string::npos)
      << failures[0];
}

TEST_P(ProxiedNetwork, TheHostPathCannotUseAProxiedEnd) {
  void* slot = nullptr;
  EXPECT_FALSE(send_->tryAcquireSlot(&slot, SlotKind::kSimple).isOk());
  const void* data = nullptr;
  size_t bytes = 0;
  EXPECT_FALSE(recv_->tryPeekSlot(&data, &bytes, SlotKind::kSimple).isOk());
}

#if WEFT_IB
INSTANTIATE_TEST_SUITE_P(Networks, ProxiedNetwork, ::testing::Values("socket", "ib"),
                         [](const auto& info) { return info.param; });
#else
INSTANTIATE_TEST_SUITE_P(Networks, ProxiedNetwork, ::testing::Values("socket"),
                         [](const auto& info) { return info.param; });
#endif

// A receiving network connection that, like ib's, lets a piece arrive only once it was announced.
// It counts the releases after which no further piece was announced although `total` were to come:
// a sender would wait there for an offer.
class AnnouncedOnly final : public RecvConnection {
 public:
  explicit AnnouncedOnly(uint64_t total) : total_(total) {}
  Status tryPeekSlot(const void** data, size_t* bytes, SlotKind /*kind*/) override {
    *data = nullptr;
    if (arrived_ >= announced_) return Status::ok();
    fill(arrived_);
    *data = slot_.data();
    *bytes = pieceBytes(arrived_);
    return Status::ok();
  }
  Status releaseSlot() override {
    ++arrived_;
    if (arrived_ == announced_ && arrived_ < total_) ++starvedReleases;
    return Status::ok();
  }
  bool takesLandings() const override { return true; }
  Status expectLandings(std::span<const Landing> landings) override {
    for (const Landing& landing : landings) {
      if (landing.dst != nullptr) return internalError("a proxied piece must land in a slot");
    }
    announced_ += landings.size();
    largestLead = std::max<uint64_t>(largestLead, announced_ - arrived_);
    return Status::ok();
  }
  size_t slotBytes() const override { return kSlotBytes; }

  std::atomic<uint64_t> largestLead{0};      // most pieces announced and not yet arrived
  std::atomic<uint64_t> starvedReleases{0};

 private:
  void fill(uint64_t piece) {
    for (size_t i = 0; i < pieceBytes(piece); ++i) slot_[i] = static_cast<char>(patternByte(piece, i));
  }
  const uint64_t total_;
  std::vector<char> slot_ = std::vector<char>(kSlotBytes);
  uint64_t announced_ = 0;
  uint64_t arrived_ = 0;
};

TEST(ProxiedRecv, AnnouncesExpectedPiecesAheadToANetworkThatTakesLandings) {
  RecordingSink sink;
  auto network = std::make_unique<AnnouncedOnly>(43);
  AnnouncedOnly* scripted = network.get();
  std::unique_ptr<ProxyRecvConnection> recv;
  ASSERT_TRUE(ProxyRecvConnection::create(std::move(network), allocateHostStaging, paramsFor(kRecvRank), "scripted",
                                          &recv)
                  .isOk());
  recv->deviceEnd()->proxy->expect(30, &sink);
  recv->deviceEnd()->proxy->expect(13, &sink);  // a second launch
  EXPECT_EQ(kernelReceives(*recv->deviceEnd(), 43, Clock::now() + kDeadline), "");
  EXPECT_TRUE(sink.seen().empty()) << sink.seen().front();
  EXPECT_EQ(scripted->starvedReleases.load(), 0u);  // the next piece was always announced in time
  EXPECT_GT(scripted->largestLead.load(), static_cast<uint64_t>(kSlotCount));
  EXPECT_LE(scripted->largestLead.load(), 2 * static_cast<uint64_t>(kSlotCount));  // bounded
}

// A sending network connection that records the byte count of every post or, with `failPosts`,
// fails them as a socket does when the peer resets it.
class ScriptedSend final : public SendConnection {
 public:
  explicit ScriptedSend(bool failPosts) : failPosts_(failPosts) {}
  Status tryAcquireSlot(void** slot, SlotKind /*kind*/) override {
    *slot = slot_.data();
    return Status::ok();
  }
  Status postSlot(size_t bytes) override {
    if (failPosts_) return remoteError("connection reset by peer");
    std::lock_guard<std::mutex> lock(mutex_);
    posted_.push_back(bytes);
    return Status::ok();
  }
  Status tryFlush(bool* done) override {
    *done = true;
    return Status::ok();
  }
  size_t slotBytes() const override { return kSlotBytes; }
  std::vector<size_t> posted() {
    std::lock_guard<std::mutex> lock(mutex_);
    return posted_;
  }

 private:
  bool failPosts_;
  std::vector<char> slot_ = std::vector<char>(kSlotBytes);
  std::mutex mutex_;
  std::vector<size_t> posted_;
};

// A proxied sending end over a ScriptedSend that records its posts into `*recording`; null if it
// could not be made.
std::unique_ptr<ProxySendConnection> makeRecordedSend(ScriptedSend** recording) {
  auto network = std::make_unique<ScriptedSend>(false);
  *recording = network.get();
  std::unique_ptr<ProxySendConnection> send;
  if (!ProxySendConnection::create(std::move(network), allocateHostStaging, paramsFor(kSendRank), "scripted", &send)
           .isOk()) {
    return nullptr;
  }
  return send;
}

TEST(ProxiedSend, PostsEachPieceWithTheKernelsByteCount) {
  RecordingSink sink;
  ScriptedSend* recording = nullptr;
  std::unique_ptr<ProxySendConnection> send = makeRecordedSend(&recording);
  ASSERT_NE(send, nullptr);
  constexpr uint64_t kPieces = 20;
  send->deviceEnd()->proxy->expect(kPieces, &sink);
  ASSERT_TRUE(kernelSends(*send->deviceEnd(), kPieces, Clock::now() + kDeadline));
  ASSERT_TRUE(waitFor([&] { return recording->posted().size() == kPieces; }));
  const std::vector<size_t> posted = recording->posted();
  for (uint64_t piece = 0; piece < kPieces; ++piece) EXPECT_EQ(posted[piece], pieceBytes(piece)) << piece;
  // Drained (and so flushed, for the host path's callers) once every expected piece has left.
  EXPECT_TRUE(waitFor([&] { return send->deviceEnd()->proxy->drained(); }));
  bool flushed = false;
  EXPECT_TRUE(send->tryFlush(&flushed).isOk());
  EXPECT_TRUE(flushed);
  send->deviceEnd()->proxy->expect(1, &sink);
  EXPECT_FALSE(send->deviceEnd()->proxy->drained()) << "a piece the kernel has not posted yet cannot have left";
}

// A network connection that never frees a slot, as when the peer host is gone but its connection
// was never closed; and a sink whose communicator has learned of that (its peer watch).
class StuckSend final : public SendConnection {
 public:
  Status tryAcquireSlot(void** slot, SlotKind /*kind*/) override {
    *slot = nullptr;
    return Status::ok();
  }
  Status postSlot(size_t /*bytes*/) override { return internalError("nothing was acquired"); }
  Status tryFlush(bool* done) override {
    *done = true;
    return Status::ok();
  }
  size_t slotBytes() const override { return kSlotBytes; }
};

struct PeerKnownDeadSink final : RecordingSink {
  Status checkAlive() override {
    ++asked;
    return remoteError("rank 0 (host host0) died: its process is gone");
  }
  std::atomic<int> asked{0};
};

TEST(ProxiedSend, AnEndWaitingWithoutProgressEndsOnceTheCommunicatorKnowsThePeerDead) {
  PeerKnownDeadSink sink;
  std::unique_ptr<ProxySendConnection> send;
  ASSERT_TRUE(ProxySendConnection::create(std::make_unique<StuckSend>(), allocateHostStaging, paramsFor(kSendRank),
                                          "scripted", &send)
                  .isOk());
  const auto start = Clock::now();
  send->deviceEnd()->proxy->expect(1, &sink);
  ASSERT_TRUE(kernelSends(*send->deviceEnd(), 1, Clock::now() + kDeadline));
  ASSERT_TRUE(waitFor([&] { return !sink.seen().empty(); }));
  EXPECT_GE(Clock::now() - start, ProxiedEnd::kAskEvery) << "asked before waiting kAskEvery";
  EXPECT_EQ(sink.asked.load(), 1);
  EXPECT_NE(sink.seen().front().find("rank 0 (host host0) died"), std::string::npos) << sink.seen().front();
  EXPECT_TRUE(send->deviceEnd()->proxy->drained()) << "a failed end holds nothing back";
}

// A ring in memory that an exit handler unmaps, as the CUDA runtime frees pinned memory when the
// process exits; the handler then waits long enough for a proxy still running to read it.
char* gRingFreedAtExit = nullptr;
size_t gRingFreedAtExitBytes = 0;
ProxySendConnection* gNeverDestroyed = nullptr;  // a global, so leak checkers see it reachable

Status allocateFreedAtExit(size_t bytes, int /*cudaDevice*/, StagedMemory* out) {
  void* memory = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (memory == MAP_FAILED) return systemError("mmap of %zu bytes failed", bytes);
  gRingFreedAtExit = static_cast<char*>(memory);
  gRingFreedAtExitBytes = bytes;
  *out = StagedMemory(gRingFreedAtExit, gRingFreedAtExit, nullptr);
  return Status::ok();
}

void freeRingAtExit() {
  munmap(gRingFreedAtExit, gRingFreedAtExitBytes);
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
}

// A program that exits mid-launch with a communicator it never destroyed.
[[noreturn]] void exitMidLaunch() {
  std::atexit(freeRingAtExit);  // before the proxy starts, so it runs after the proxy's own handler
  static RecordingSink sink;
  std::unique_ptr<ProxySendConnection> send;
  if (!ProxySendConnection::create(std::make_unique<StuckSend>(), allocateFreedAtExit, paramsFor(kSendRank),
                                   "scripted", &send)
           .isOk()) {
    std::_Exit(3);
  }
  send->deviceEnd()->proxy->expect(1, &sink);  // a piece the kernel never posts: the end stays needed
  gNeverDestroyed = send.release();
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  std::exit(0);
}

TEST(ProxyThreadDeathTest, StopsAtExitBeforeTheRingsItReadsAreFreed) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");  // a fresh process, whose proxy starts after the handler above
  EXPECT_EXIT(exitMidLaunch(), ::testing::ExitedWithCode(0), "");
}

// After the exit handler, an end that owed pieces and one asked for pieces later fail to their
// sink saying why, and count as drained, so that no finalize or launch waits on them forever.
[[noreturn]] void stopForExitThenLaunch() {
  static RecordingSink sink;
  std::unique_ptr<ProxySendConnection> owing;
  std::unique_ptr<ProxySendConnection> later;
  for (auto* end : {&owing, &later}) {
    if (!ProxySendConnection::create(std::make_unique<StuckSend>(), allocateHostStaging, paramsFor(kSendRank),
                                     "scripted", end)
             .isOk()) {
      std::_Exit(3);
    }
  }
  owing->deviceEnd()->proxy->expect(1, &sink);
  ProxyThread::instance().stopForExit();
  later->deviceEnd()->proxy->expect(1, &sink);
  const std::vector<std::string> seen = sink.seen();
  bool told = seen.size() == 2;
  for (const std::string& failure : seen) {
    std::fprintf(stderr, "%s\n", failure.c_str());
    told &= failure.find("the process is exiting") != std::string::npos;
  }
  const bool drained = owing->deviceEnd()->proxy->drained() && later->deviceEnd()->proxy->drained();
  std::_Exit(told && drained ? 0 : 1);
}

TEST(ProxyThreadDeathTest, EndsOwingPiecesAfterTheExitHandlerFailInsteadOfHanging) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(stopForExitThenLaunch(), ::testing::ExitedWithCode(0), "");
}

// A forked child's end of its own, carried by the child's proxy: the exit status says how far
// it got (0: every piece posted, and the child's thread joined with its last end).
int childCarriesAnEndOfItsOwn() {
  RecordingSink sink;
  ScriptedSend* recording = nullptr;
  std::unique_ptr<ProxySendConnection> send = makeRecordedSend(&recording);
  if (send == nullptr) return 3;
  constexpr uint64_t kPieces = 3 * kSlotCount;  // more than the ring holds: the proxy must free slots
  const auto deadline = Clock::now() + std::chrono::seconds(10);
  send->deviceEnd()->proxy->expect(kPieces, &sink);
  if (!kernelSends(*send->deviceEnd(), kPieces, deadline)) return 4;
  while (recording->posted().size() < kPieces) {
    if (Clock::now() > deadline) return 5;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  send.reset();  // the child's last end: its proxy thread is joined
  return sink.seen().empty() ? 0 : 6;
}

// fork() copies the proxy but not its thread: the child's own ends get a thread of their own (and
// the child's last end joins it, not the parent's), and the parent's proxy goes on.
TEST(ProxyThreadFork, AChildCarriesItsOwnEndsAndTheParentGoesOn) {
  RecordingSink sink;
  ScriptedSend* recording = nullptr;
  std::unique_ptr<ProxySendConnection> send = makeRecordedSend(&recording);
  ASSERT_NE(send, nullptr);
  send->deviceEnd()->proxy->expect(kSlotCount, &sink);  // the parent's proxy thread runs
  ASSERT_TRUE(kernelSends(*send->deviceEnd(), kSlotCount, Clock::now() + kDeadline));
  ASSERT_TRUE(waitFor([&] { return recording->posted().size() == kSlotCount; }));

  const pid_t child = fork();
  ASSERT_GE(child, 0) << "fork failed";
  if (child == 0) std::_Exit(childCarriesAnEndOfItsOwn());

  send->deviceEnd()->proxy->expect(kSlotCount, &sink);
  EXPECT_TRUE(kernelSends(*send->deviceEnd(), kSlotCount, Clock::now() + kDeadline, kSlotCount));
  EXPECT_TRUE(waitFor([&] { return recording->posted().size() == 2 * kSlotCount; }));
  int status = 0;
  const bool ended = waitFor([&] { return waitpid(child, &status, WNOHANG) == child; });
  if (!ended) {
    kill(child, SIGKILL);
    waitpid(child, &status, 0);
  }
  EXPECT_TRUE(ended) << "the child hung (its end never moved, or its last end joined the parent's thread)";
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0)
      << "the child's end did not get through: status " << status
      << " (exit 4: no proxy freed its slots; 5: not every piece was posted)";
  EXPECT_TRUE(sink.seen().empty());
}

TEST(ProxiedSend, ANetworkFailureReachesTheSinkWithWhatFailed) {
  RecordingSink sink;
  std::unique_ptr<ProxySendConnection> send;
  ASSERT_TRUE(ProxySendConnection::create(std::make_unique<ScriptedSend>(true), allocateHostStaging,
                                          paramsFor(kSendRank), "scripted", &send)
                  .isOk());
  send->deviceEnd()->proxy->expect(2, &sink);
  ASSERT_TRUE(kernelSends(*send->deviceEnd(), 1, Clock::now() + kDeadline));
  ASSERT_TRUE(waitFor([&] { return !sink.seen().empty(); }));
  const std::string failure = sink.seen().front();
  EXPECT_NE(failure.find("connection reset by peer"), std::string::npos) << failure;
  EXPECT_NE(failure.find("network proxy sending to rank 0 on channel 2 over scripted"), std::string::npos) << failure;
}

}  // namespace
}  // namespace weft::transport::proxy
