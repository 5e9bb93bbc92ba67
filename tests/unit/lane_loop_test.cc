// The step kernel's lane loop (src/device/lane_loop.h) and piece bodies (piece_bodies.h), the
// code the GPU runs, run on the CPU: each of a launch's thread blocks is a few host threads that
// share the block's memory and meet at a barrier for __syncthreads, every rank's blocks at once,
// with the connections' slots and counters in host memory. The tables are the real ones
// (launch_tables.h, from algorithms/schedule.h's programs), so a collective's results check the
// loop's offsets, waits, LL lines and hand-offs, and its cached and uncached steps, with no GPU.
// A launch that waits forever is ended by its abort flag after a deadline and fails the test.

#include "src/device/lane_loop.h"

#include <gtest/gtest.h>

#include <chrono>
#include <map>
#include <memory>
#include <string>
#include <tuple>
#include <vector>

#include "algorithms/schedule.h"
#include "algorithms/tuner.h"
#include "src/device/launch_tables.h"
#include "src/device/piece_bodies.h"
#include "tests/unit/exact_inputs.h"
#include "tests/unit/host_block.h"

namespace weft::device {
namespace {

using algorithms::Collective;

// The shape of the connections every rank shares.
struct LinkShape {
  uint64_t slotBytes = 64;
  uint64_t llSlotBytes = 0;  // 0: no LL slots
  uint64_t firstIndex = 0;   // where every posted and released counter starts
  bool sizes = false;        // a byte count per slot, as a proxied connection has
  uint64_t llFill = 0;       // what every half-line of the LL slots holds at first
};

// Connections between ranks in host memory: one per (channel, sender, receiver).
class HostFabric {
 public:
  explicit HostFabric(const LinkShape& shape) : shape_(shape) {}

  /// Rank `rank`'s end of its connection with `peer` on `channel`.
  KernelConnection end(int channel, int rank, int peer, bool send) {
    Link& link = this->link(send ? std::make_tuple(channel, rank, peer) : std::make_tuple(channel, peer, rank));
    KernelConnection end;
    end.slots = reinterpret_cast<char*>(link.slots.data());
    end.posted = &link.posted;
    end.released = &link.released;
    end.sizes = shape_.sizes ? link.sizes.data() : nullptr;
    end.slotBytes = shape_.slotBytes;
    end.slotCount = algorithms::kSlotsPerConnection;
    end.llSlots = shape_.llSlotBytes != 0 ? reinterpret_cast<char*>(link.llSlots.data()) : nullptr;
    end.llSlotBytes = shape_.llSlotBytes;
    end.peer = peer;
    end.channel = channel;
    return end;
  }

  /// Every link's LL slots, as 64-bit halves of lines (data and flag).
  std::vector<const std::vector<uint64_t>*> llSlots() const {
    std::vector<const std::vector<uint64_t>*> all;
    for (const auto& [key, link] : links_) all.push_back(&link->llSlots);
    return all;
  }

  /// The byte counts of the slots of the link from `sender` to `receiver` on `channel`.
  const std::vector<unsigned long long>& sizes(int channel, int sender, int receiver) {
    return link({channel, sender, receiver}).sizes;
  }

 private:
  struct Link {
    alignas(64) unsigned long long posted = 0;
    alignas(64) unsigned long long released = 0;
    std::vector<uint64_t> slots;  // 8-byte words, so that every slot is aligned
    std::vector<uint64_t> llSlots;
    std::vector<unsigned long long> sizes;
  };

  Link& link(const std::tuple<int, int, int>& key) {
    std::unique_ptr<Link>& link = links_[key];
    if (link == nullptr) {
      link = std::make_unique<Link>();
      link->posted = link->released = shape_.firstIndex;
      const uint64_t slots = algorithms::kSlotsPerConnection;
      link->slots.assign(slots * ((shape_.slotBytes + 7) / 8), 0);
      link->llSlots.assign(slots * shape_.llSlotBytes / 8, shape_.llFill);
      link->sizes.assign(slots, 0);
    }
    return *link;
  }

  LinkShape shape_;
  std::map<std::tuple<int, int, int>, std::unique_ptr<Link>> links_;  // (channel, sender, receiver)
};

// An operation of one rank: its shape and buffers.
struct RankOp {
  algorithms::OpShape shape;
  void* send = nullptr;
  void* recv = nullptr;
};

// How a launch runs.
struct LaunchShape {
  int channels = 1;
  int blockLimit = 64;
  uint32_t threads = 3;  // per block
  bool lowLatency = false;
  uint64_t unitBytes = 1;  // per unit of the tables and the ops' counts: the element size, or 1 for a copy
  LinkShape link;
  std::chrono::seconds deadline{20};
};

// One rank's launch: its tables, connections and work.
struct RankLaunch {
  KernelTables tables;
  std::vector<KernelConnection> connections;
  KernelWork work;
  std::vector<std::unique_ptr<HostBlockState>> blocks;
};

// Runs every rank's launch of `ops` (per rank, in call order) with `body` to its end, each block on
// `shape.threads` host threads. Returns "" or what went wrong; `fabric` keeps the connections.
template <class Body>
std::string runLaunches(int nranks, const std::vector<std::vector<RankOp>>& ops, const LaunchShape& shape,
                        const Body& body, HostFabric* fabric,
                        std::vector<std::unique_ptr<RankLaunch>>* kept = nullptr) {
  std::vector<algorithms::Ring> rings;
  for (int c = 0; c < shape.channels; ++c) {
    algorithms::Ring ring(static_cast<size_t>(nranks));
    for (int i = 0; i < nranks; ++i) ring[i] = (c % 2 == 0) ? i : nranks - 1 - i;
    rings.push_back(ring);
  }
  const uint64_t pieceBytes =
      shape.lowLatency ? shape.link.llSlotBytes / kLowLatencyLineBytes * kLowLatencyLineData : shape.link.slotBytes;
  int abortFlag = 0;
  std::vector<std::unique_ptr<RankLaunch>> launches;
  for (int r = 0; r < nranks; ++r) {
    auto launch = std::make_unique<RankLaunch>();
    RankLaunch* l = launch.get();
    LaunchTables tables(pieceBytes / shape.unitBytes, [l, fabric, r](int channel, int peer, bool send) {
      l->connections.push_back(fabric->end(channel, r, peer, send));
      return Status::ok();
    });
    for (const RankOp& op : ops[r]) {
      algorithms::Program program;
      algorithms::buildRingProgram(op.shape, rings, &program);
      Status added = tables.addOp(program, op.send, op.recv, 1);
      if (!added.isOk()) return added.message();
    }
    Status laidOut =
        tables.layOut(r, nranks, shape.blockLimit, algorithms::kSlotsPerConnection, &launch->tables);
    if (!laidOut.isOk()) return laidOut.message();
    KernelWork& work = launch->work;
    work.blocks = launch->tables.blocks.data();
    work.runs = launch->tables.runs.data();
    work.lanes = launch->tables.lanes.data();
    work.steps = launch->tables.steps.data();
    work.connections = launch->connections.data();
    work.unitBytes = shape.unitBytes;
    work.pieceUnits = tables.pieceUnits();
    work.lowLatency = shape.lowLatency ? 1 : 0;
    work.abortFlag = &abortFlag;
    for (size_t b = 0; b < launch->tables.blocks.size(); ++b) {
      launch->blocks.push_back(std::make_unique<HostBlockState>(shape.threads));
    }
    launches.push_back(std::move(launch));
  }
  HostBlockRunner runner;
  for (auto& launch : launches) {
    for (size_t b = 0; b < launch->blocks.size(); ++b) {
      runner.start(launch->blocks[b].get(), shape.threads, [l = launch.get(), b, &body](HostBlock& block) {
        runLanes(block, l->work, static_cast<uint32_t>(b), body);
      });
    }
  }
  const bool inTime = runner.finish(shape.deadline, &abortFlag);
  if (kept != nullptr) *kept = std::move(launches);
  return inTime ? "" : "the launch did not end within the deadline (ended by its abort flag)";
}

// Every rank's output of a sum ring allreduce of `count` elements of Math's type, written by
// Codec, against the exact sums.
template <class Math = FloatMath, class Codec = FloatCodec>
std::string checkAllReduce(int nranks, size_t count, const LaunchShape& shape, bool inPlace, int span = 23) {
  using Storage = typename Math::Storage;
  std::vector<std::vector<Storage>> send(nranks), recv(nranks);
  std::vector<std::vector<RankOp>> ops(nranks);
  for (int r = 0; r < nranks; ++r) {
    send[r].resize(count);
    for (size_t i = 0; i < count; ++i) send[r][i] = Codec::fromFloat(exactInput(0, r, i, span));
    recv[r].assign(count, Codec::fromFloat(-100.0f));
    Storage* out = inPlace ? send[r].data() : recv[r].data();
    ops[r].push_back({{Collective::kAllReduce, count, 0, nranks, r}, send[r].data(), out});
  }
  HostFabric fabric(shape.link);
  const std::string ran = runLaunches(nranks, ops, shape, ReduceBody<Math, RedOpKind::kSum>{}, &fabric);
  if (!ran.empty()) return ran;
  for (int r = 0; r < nranks; ++r) {
    const std::vector<Storage>& out = inPlace ? send[r] : recv[r];
    for (size_t i = 0; i < count; ++i) {
      float sum = 0;
      for (int p = 0; p < nranks; ++p) sum += exactInput(0, p, i, span);
      const Storage expected = Codec::fromFloat(sum);
      if (out[i] != expected) {
        return "rank " + std::to_string(r) + "'s element " + std::to_string(i) + " is " + std::to_string(out[i]) +
               ", not " + std::to_string(expected);
      }
    }
  }
  return "";
}

// Simple pieces of `slotBytes` over elements of `unitBytes`.
LaunchShape simpleShape(uint64_t slotBytes, uint64_t unitBytes = sizeof(float)) {
  LaunchShape shape;
  shape.unitBytes = unitBytes;
  shape.link.slotBytes = slotBytes;
  return shape;
}

// LL pieces through slots of `llSlotBytes` (half of it data) over elements of `unitBytes`.
LaunchShape lowLatencyShape(uint64_t llSlotBytes, uint64_t unitBytes = sizeof(float)) {
  LaunchShape shape = simpleShape(64, unitBytes);
  shape.lowLatency = true;
  shape.link.llSlotBytes = llSlotBytes;
  return shape;
}

TEST(LaneLoop, RingAllReduceSumsExactlyWithSimplePieces) {
  for (int nranks : {1, 2, 3, 4}) {
    for (size_t count : {0, 1, 5, 37, 300}) {
      for (int channels : {1, 2}) {
        for (uint32_t threads : {1u, 4u}) {
          LaunchShape shape = simpleShape(24);  // 6 floats a piece: many pieces, some short
          shape.channels = channels;
          shape.threads = threads;
          for (bool inPlace : {false, true}) {
            ASSERT_EQ(checkAllReduce(nranks, count, shape, inPlace), "")
                << nranks << " ranks, " << count << " elements, " << channels << " channels, " << threads
                << " threads" << (inPlace ? ", in place" : "");
          }
        }
      }
    }
  }
}

TEST(LaneLoop, RingAllReduceSumsExactlyWithLowLatencyPieces) {
  for (int nranks : {2, 3, 4}) {
    for (size_t count : {1, 2, 7, 100, 257}) {
      for (uint32_t threads : {1u, 3u}) {
        LaunchShape shape = lowLatencyShape(64);  // 4 lines: 32 bytes, 8 floats a piece
        shape.threads = threads;
        ASSERT_EQ(checkAllReduce(nranks, count, shape, false), "")
            << nranks << " ranks, " << count << " elements, " << threads << " threads";
      }
    }
  }
}

// Half, bfloat16 and fp8: 2 or 1 bytes an element, so 8 or 16 to a Simple piece's 16-byte word
// and 4 or 8 to an LL line.
template <class Math, class Codec>
void expectNarrowSums(const char* type) {
  for (int nranks : {2, 4}) {
    for (size_t count : {1, 9, 33, 200}) {
      for (bool lowLatency : {false, true}) {
        const uint64_t bytes = sizeof(typename Math::Storage);
        const LaunchShape shape = lowLatency ? lowLatencyShape(64, bytes) : simpleShape(64, bytes);
        ASSERT_EQ((checkAllReduce<Math, Codec>(nranks, count, shape, false, 5)), "")
            << type << ", " << nranks << " ranks, " << count << " elements" << (lowLatency ? ", LL" : "");
      }
    }
  }
}

TEST(LaneLoop, NarrowFloatsSumExactlyInWordsAndLines) {
  expectNarrowSums<NarrowMath<HalfCodec>, HalfCodec>("half");
  expectNarrowSums<NarrowMath<Bfloat16Codec>, Bfloat16Codec>("bfloat16");
  expectNarrowSums<NarrowMath<Fp8Codec<__NV_E4M3>>, Fp8Codec<__NV_E4M3>>("fp8 e4m3");
  expectNarrowSums<NarrowMath<Fp8Codec<__NV_E5M2>>, Fp8Codec<__NV_E5M2>>("fp8 e5m2");
}

TEST(LaneLoop, LanesLongerThanTheCachedStepsReadTheirStepsAsTheyGo) {
  // A ring allreduce's lanes have 2n - 1 steps: at 33 ranks, 65, one more than a block caches.
  const int nranks = 33;
  static_assert(2 * 33 - 1 > kCachedSteps);
  LaunchShape shape = simpleShape(16);
  shape.threads = 2;
  ASSERT_EQ(checkAllReduce(nranks, 200, shape, false), "");
  LaunchShape lowLatency = lowLatencyShape(32);
  lowLatency.threads = 2;
  ASSERT_EQ(checkAllReduce(nranks, 70, lowLatency, false), "");
}

// Bytes of rank `rank`'s buffer for copy collectives.
char pattern(int rank, size_t index) { return static_cast<char>(rank * 37 + index * 11 + 5); }

TEST(LaneLoop, AllToAllFoldedIntoFewBlocksMovesEveryByte) {
  for (int nranks : {2, 3, 5}) {
    for (int blockLimit : {1, 2, 64}) {
      for (bool lowLatency : {false, true}) {
        // Bytes per peer: pieces of 16, the last short; 300 take 19, over three windows of 8.
        for (size_t count : {45, 300}) {
          std::vector<std::vector<char>> send(nranks), recv(nranks);
          std::vector<std::vector<RankOp>> ops(nranks);
          for (int r = 0; r < nranks; ++r) {
            send[r].resize(count * nranks);
            for (size_t i = 0; i < send[r].size(); ++i) send[r][i] = pattern(r, i);
            recv[r].assign(count * nranks, 0);
            ops[r].push_back({{Collective::kAllToAll, count, 0, nranks, r}, send[r].data(), recv[r].data()});
          }
          LaunchShape shape;
          shape.blockLimit = blockLimit;
          shape.lowLatency = lowLatency;
          shape.link.slotBytes = 16;
          shape.link.llSlotBytes = lowLatency ? 32 : 0;
          HostFabric fabric(shape.link);
          ASSERT_EQ(runLaunches(nranks, ops, shape, CopyBody{}, &fabric), "")
              << nranks << " ranks, " << blockLimit << " blocks, " << count << " bytes a peer";
          for (int r = 0; r < nranks; ++r) {
            for (int from = 0; from < nranks; ++from) {
              for (size_t i = 0; i < count; ++i) {
                ASSERT_EQ(recv[r][from * count + i], pattern(from, r * count + i))
                    << nranks << " ranks, " << blockLimit << " blocks" << (lowLatency ? ", LL" : "") << ", "
                    << count << " bytes a peer: rank " << r << " from " << from << ", byte " << i;
              }
            }
          }
        }
      }
    }
  }
}

TEST(LaneLoop, SendsToOnePeerFoldedIntoOneBlockAreWindowedAsOneStream) {
  // Each of 2 ranks sends the other messages of 70, 20 and 150 bytes (5, 2 and 10 pieces of 16)
  // and receives the other's, in one block: windows of 8 pieces end inside a message and the next
  // takes up where it left, sends and receives taking turns.
  const std::vector<size_t> sizes = {70, 20, 150};
  for (bool lowLatency : {false, true}) {
    std::vector<std::vector<std::vector<char>>> sent(2), received(2);
    std::vector<std::vector<RankOp>> ops(2);
    for (int r = 0; r < 2; ++r) {
      for (size_t m = 0; m < sizes.size(); ++m) {
        sent[r].emplace_back(sizes[m]);
        for (size_t i = 0; i < sizes[m]; ++i) sent[r][m][i] = pattern(r * 3 + static_cast<int>(m), i);
        received[r].emplace_back(sizes[m], 0);
      }
    }
    for (int r = 0; r < 2; ++r) {
      for (size_t m = 0; m < sizes.size(); ++m) {
        // Rank 0 calls its sends first, rank 1 its receives: the order across peers is free.
        const bool sendFirst = r == 0;
        for (bool sending : {sendFirst, !sendFirst}) {
          std::vector<char>& buffer = sending ? sent[r][m] : received[r][m];
          ops[r].push_back({{sending ? Collective::kSend : Collective::kRecv, sizes[m], 1 - r, 2, r}, buffer.data(),
                            buffer.data()});
        }
      }
    }
    LaunchShape shape;
    shape.blockLimit = 1;
    shape.lowLatency = lowLatency;
    shape.link.slotBytes = 16;
    shape.link.llSlotBytes = lowLatency ? 32 : 0;
    HostFabric fabric(shape.link);
    ASSERT_EQ(runLaunches(2, ops, shape, CopyBody{}, &fabric), "") << (lowLatency ? "LL" : "Simple");
    for (int r = 0; r < 2; ++r) {
      for (size_t m = 0; m < sizes.size(); ++m) {
        EXPECT_EQ(received[r][m], sent[1 - r][m]) << (lowLatency ? "LL" : "Simple") << ": rank " << r << ", message " << m;
      }
    }
  }
}

TEST(LaneLoop, AProxiedConnectionGetsEachSlotsByteCount) {
  // 2 ranks, one Send of 100 bytes in pieces of 16: its last piece, 4 bytes, goes into slot 6.
  std::vector<char> sent(100), received(100, 0);
  for (size_t i = 0; i < sent.size(); ++i) sent[i] = pattern(0, i);
  std::vector<std::vector<RankOp>> ops(2);
  ops[0].push_back({{Collective::kSend, sent.size(), 1, 2, 0}, sent.data(), sent.data()});
  ops[1].push_back({{Collective::kRecv, received.size(), 0, 2, 1}, received.data(), received.data()});
  LaunchShape shape;
  shape.link.slotBytes = 16;
  shape.link.sizes = true;
  HostFabric fabric(shape.link);
  ASSERT_EQ(runLaunches(2, ops, shape, CopyBody{}, &fabric), "");
  EXPECT_EQ(received, sent);
  const std::vector<unsigned long long> expected = {16, 16, 16, 16, 16, 16, 4, 0};
  EXPECT_EQ(fabric.sizes(1, 0, 1), expected);  // Send/Recv take the channel after the one ring's
}

TEST(LaneLoop, LowLatencySlotsKeepNoLineOfAPieceLongGone) {
  // Counters start just below the clean-up's indices (kLowLatencyCleanMask). Every LL line holds
  // a flag that a later piece will carry, as a line left 2^32 pieces before it would; 24 short
  // messages (one line each) pass the eight indices that clean every slot, after which no line
  // may keep that flag. Simple pieces leave every line of the LL slot, and clean them all.
  const uint64_t first = kLowLatencyCleanMask - 8;
  const uint32_t stale = static_cast<uint32_t>(first + 100 + 1);  // the flag of piece first + 100
  for (bool lowLatency : {true, false}) {
    LaunchShape shape;
    shape.lowLatency = lowLatency;
    shape.link.slotBytes = 64;
    shape.link.llSlotBytes = 64;  // 4 lines
    shape.link.firstIndex = first;
    shape.link.llFill = static_cast<uint64_t>(stale) << 32 | 0xdeadbeefu;
    std::vector<std::vector<char>> sent(24), received(24);
    std::vector<std::vector<RankOp>> ops(2);
    for (size_t m = 0; m < sent.size(); ++m) {
      sent[m].assign(5, static_cast<char>(m + 1));
      received[m].assign(5, 0);
      ops[0].push_back({{Collective::kSend, 5, 1, 2, 0}, sent[m].data(), sent[m].data()});
      ops[1].push_back({{Collective::kRecv, 5, 0, 2, 1}, received[m].data(), received[m].data()});
    }
    HostFabric fabric(shape.link);
    ASSERT_EQ(runLaunches(2, ops, shape, CopyBody{}, &fabric), "") << (lowLatency ? "LL" : "Simple");
    EXPECT_EQ(received, sent) << (lowLatency ? "LL" : "Simple");
    for (const std::vector<uint64_t>* slots : fabric.llSlots()) {
      for (size_t half = 0; half < slots->size(); ++half) {
        ASSERT_NE(static_cast<uint32_t>((*slots)[half] >> 32), stale)
            << (lowLatency ? "LL" : "Simple") << ", half-line " << half;
      }
    }
  }
}

// Runs a launch of `ops` that must wait until the deadline ends it by the abort flag, and returns
// the last wait that rank `rank`'s one block recorded.
NotedWait lastWaitOfStuckLaunch(const std::vector<std::vector<RankOp>>& ops, const LaunchShape& shape, int rank) {
  HostFabric fabric(shape.link);
  std::vector<std::unique_ptr<RankLaunch>> launches;
  EXPECT_EQ(runLaunches(static_cast<int>(ops.size()), ops, shape, CopyBody{}, &fabric, &launches),
            "the launch did not end within the deadline (ended by its abort flag)");
  if (launches.size() != ops.size() || launches[rank]->blocks.size() != 1) {
    ADD_FAILURE() << "rank " << rank << " has no launch of one block";
    return {};
  }
  return launches[rank]->blocks[0]->noted();
}

// A rank whose peer never takes part: its block waits, says for what, and ends at the abort.
// `sending`: rank 0 sends 13 pieces (8 fill the slots); else rank 1 receives 3 (LL: one line's
// flag at a time).
void expectAbortEndsAWaitFor(bool sending, bool lowLatency, core::BlockActivity activity) {
  std::vector<char> buffer(sending ? 200 : 40, 0);
  const int rank = sending ? 0 : 1;
  std::vector<std::vector<RankOp>> ops(2);
  ops[rank].push_back({{sending ? Collective::kSend : Collective::kRecv, buffer.size(), 1 - rank, 2, rank},
                       buffer.data(), buffer.data()});
  LaunchShape shape;
  shape.lowLatency = lowLatency;
  shape.link.slotBytes = 16;
  shape.link.llSlotBytes = 32;
  shape.deadline = std::chrono::seconds(1);
  const NotedWait wait = lastWaitOfStuckLaunch(ops, shape, rank);
  EXPECT_EQ(wait.activity, activity);
  EXPECT_EQ(wait.peer, 1 - rank);
  EXPECT_EQ(wait.channel, 1);  // Send/Recv take the channel after the one ring's
  EXPECT_EQ(wait.seen, 0u);
  EXPECT_EQ(wait.wanted, 1u);  // the first piece posted (LL: its flag), or released
}

TEST(LaneLoop, AWaitInAFoldedLaneNamesTheLaneInItsBlockAndItsPieceInTheLane) {
  // Rank 0, in one block, sends rank 1 messages of 2 and 20 pieces and receives 3 from it; rank 1
  // only sends. Rank 0's first window of sends fills the 8 slots (2 + 6), its receives end, and
  // its second window waits for a free slot for the second message's piece 6: the block's lane
  // 1 (its lanes are its sends, then its receives), piece 6 of that lane, not of the window.
  std::vector<char> first(2 * 16), second(20 * 16), received(3 * 16), sent(3 * 16, 9);
  std::vector<std::vector<RankOp>> ops(2);
  ops[0].push_back({{Collective::kRecv, received.size(), 1, 2, 0}, received.data(), received.data()});
  ops[0].push_back({{Collective::kSend, first.size(), 1, 2, 0}, first.data(), first.data()});
  ops[0].push_back({{Collective::kSend, second.size(), 1, 2, 0}, second.data(), second.data()});
  ops[1].push_back({{Collective::kSend, sent.size(), 0, 2, 1}, sent.data(), sent.data()});
  LaunchShape shape;
  shape.blockLimit = 1;
  shape.link.slotBytes = 16;
  shape.deadline = std::chrono::seconds(1);
  const NotedWait wait = lastWaitOfStuckLaunch(ops, shape, 0);
  EXPECT_EQ(received, sent);
  EXPECT_EQ(wait.activity, core::BlockActivity::kSending);
  EXPECT_EQ(wait.peer, 1);
  EXPECT_EQ(wait.site.lane, 1u);
  EXPECT_EQ(wait.site.piece, 6u);
  EXPECT_EQ(wait.site.step, 0u);
  EXPECT_EQ(wait.site.steps, 1u);
  EXPECT_EQ(wait.seen, 0u);
  EXPECT_EQ(wait.wanted, 1u);  // the first piece released
}

TEST(LaneLoop, AnAbortEndsABlockWaitingForAPieceAndTheWaitIsRecorded) {
  expectAbortEndsAWaitFor(false, false, core::BlockActivity::kReceiving);
}

TEST(LaneLoop, AnAbortEndsABlockWaitingForAFreeSlotAndTheWaitIsRecorded) {
  expectAbortEndsAWaitFor(true, false, core::BlockActivity::kSending);
}

TEST(LaneLoop, AnAbortEndsEveryThreadWaitingForLowLatencyLines) {
  expectAbortEndsAWaitFor(false, true, core::BlockActivity::kReceivingLine);
}

}  // namespace
}  // namespace weft::device
