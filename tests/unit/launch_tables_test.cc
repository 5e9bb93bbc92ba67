// A launch's kernel tables (src/device/launch_tables.h), run on a model of the step kernel's copy
// launch (src/device/lane_loop.h with Simple pieces) on host memory: every rank's blocks walk
// their runs of lanes as the kernel does (run_walk.h), each stretch of a lane's steps in rounds of
// one piece; a step waits for a posted piece
// to receive and a free slot to send into, moves the piece, then posts and releases. The programs
// are the real schedules' (algorithms/schedule.h), so the tables, the block plan's folding and the
// pieces' offsets are checked byte for byte, with no GPU. The model moves one piece at a time, so
// a launch that would wait forever is found as such, at once; lane_loop_test.cc runs the kernel's
// own loop on threads.

#include "src/device/launch_tables.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <map>
#include <random>
#include <string>
#include <tuple>
#include <vector>

#include "algorithms/schedule.h"
#include "src/device/run_walk.h"

namespace weft::device {
namespace {

using algorithms::Collective;

// One connection end of a rank's launch.
struct End {
  int channel = 0;
  int peer = 0;
  bool send = false;
};

// One rank's launch: its operations' programs on their buffers, laid out as tables.
struct RankLaunch {
  KernelTables tables;
  std::vector<End> ends;  // by connection index
};

class KernelModel {
 public:
  KernelModel(uint64_t slots, uint64_t pieceBytes) : slots_(slots), pieceBytes_(pieceBytes) {}

  /// Pieces that rank `rank`'s launch moved through its connection end `index` (posted or released).
  uint64_t piecesThrough(int rank, int32_t index) const {
    auto found = pieces_.find({rank, index});
    return found == pieces_.end() ? 0 : found->second;
  }

  /// Runs every rank's launch to its end; false, saying where, if some block waits forever.
  bool run(const std::vector<RankLaunch>& launches, std::string* why) {
    std::vector<std::vector<Cursor>> cursors(launches.size());
    for (size_t r = 0; r < launches.size(); ++r) {
      for (const KernelBlock& block : launches[r].tables.blocks) {
        cursors[r].emplace_back();
        cursors[r].back().stretches = stretchesOf(launches[r].tables, block);
      }
    }
    for (bool moved = true; moved;) {
      moved = false;
      for (size_t r = 0; r < launches.size(); ++r) {
        for (size_t b = 0; b < cursors[r].size(); ++b) {
          moved |= advance(static_cast<int>(r), launches[r], &cursors[r][b]);
        }
      }
    }
    for (size_t r = 0; r < launches.size(); ++r) {
      for (size_t b = 0; b < cursors[r].size(); ++b) {
        const Cursor& at = cursors[r][b];
        if (at.stretch < at.stretches.size()) {
          *why = "rank " + std::to_string(r) + "'s block " + std::to_string(b) + " waits forever in its lane " +
                 std::to_string(at.stretches[at.stretch].lane);
          return false;
        }
      }
    }
    return true;
  }

 private:
  // Rounds [from, to) of lane `lane` (an index into the tables' lanes).
  struct Stretch {
    uint32_t lane = 0;
    uint64_t from = 0;
    uint64_t to = 0;
  };
  struct Cursor {
    std::vector<Stretch> stretches;  // the block's, in order
    size_t stretch = 0;
    uint64_t round = 0;  // of the stretch's lane
    uint32_t step = 0;   // within the lane
  };

  // The stretches `block` runs, its runs walked as the kernel walks them.
  static std::vector<Stretch> stretchesOf(const KernelTables& t, const KernelBlock& block) {
    std::vector<Stretch> stretches;
    for (uint32_t r = block.firstRun; r < block.firstRun + block.runCount; ++r) {
      RunWalk walk(t.runs[r]);
      while (walk.more()) {
        Stretch stretch{walk.lane(), 0, 0};
        walk.take(t.lanes[stretch.lane].rounds, &stretch.from, &stretch.to);
        stretches.push_back(stretch);
      }
    }
    return stretches;
  }
  struct Connection {
    uint64_t posted = 0;
    uint64_t released = 0;
    std::vector<std::vector<char>> slots;
  };

  Connection& connection(int rank, const End& end) {
    const auto key =
        end.send ? std::make_tuple(end.channel, rank, end.peer) : std::make_tuple(end.channel, end.peer, rank);
    Connection& c = connections_[key];
    if (c.slots.empty()) c.slots.assign(slots_, std::vector<char>(pieceBytes_));
    return c;
  }

  // Runs the block's pieces until one must wait; true if any moved.
  bool advance(int rank, const RankLaunch& launch, Cursor* at) {
    const KernelTables& t = launch.tables;
    bool moved = false;
    while (at->stretch < at->stretches.size()) {
      const Stretch& stretch = at->stretches[at->stretch];
      const KernelLane& lane = t.lanes[stretch.lane];
      if (at->round < stretch.from) at->round = stretch.from;  // the stretch starts
      if (at->round == stretch.to) {
        ++at->stretch;
        at->round = at->step = 0;
        continue;
      }
      if (at->step == lane.stepCount) {
        ++at->round;
        at->step = 0;
        continue;
      }
      const KernelStep& step = t.steps[lane.firstStep + at->step];
      const uint64_t begin = at->round * pieceBytes_;
      if (begin >= step.count) {
        ++at->step;
        continue;
      }
      Connection* recv = step.recvConnection >= 0 ? &connection(rank, launch.ends[step.recvConnection]) : nullptr;
      Connection* send = step.sendConnection >= 0 ? &connection(rank, launch.ends[step.sendConnection]) : nullptr;
      if (recv != nullptr && recv->posted == recv->released) return moved;
      if (send != nullptr && send->posted - send->released >= slots_) return moved;
      const uint64_t bytes = std::min(step.count - begin, pieceBytes_);
      const char* from = recv != nullptr ? recv->slots[recv->released % slots_].data()
                                         : base(lane, step.srcBuffer) + step.srcOffset + begin;
      if (step.dstBuffer != kNoBuffer) std::memmove(base(lane, step.dstBuffer) + step.dstOffset + begin, from, bytes);
      if (send != nullptr) std::memcpy(send->slots[send->posted % slots_].data(), from, bytes);
      if (send != nullptr) {
        ++send->posted;
        ++pieces_[{rank, step.sendConnection}];
      }
      if (recv != nullptr) {
        ++recv->released;
        ++pieces_[{rank, step.recvConnection}];
      }
      ++at->step;
      moved = true;
    }
    return moved;
  }

  static char* base(const KernelLane& lane, uint8_t buffer) {
    return buffer == kSendBuffer ? lane.sendbuff : buffer == kRecvBuffer ? lane.recvbuff : nullptr;
  }

  uint64_t slots_;
  uint64_t pieceBytes_;
  std::map<std::tuple<int, int, int>, Connection> connections_;  // (channel, sender, receiver)
  std::map<std::pair<int, int32_t>, uint64_t> pieces_;            // per (rank, connection index)
};

// An operation of one rank: its shape and buffers.
struct RankOp {
  algorithms::OpShape shape;
  std::vector<char>* send = nullptr;
  std::vector<char>* recv = nullptr;
};

// What each rank's launch of `ops` (per rank, in call order) came to on the model; `elementBytes`
// per element of the shapes' counts.
std::string runOnModel(int nranks, const std::vector<std::vector<RankOp>>& ops, int channels, int blockLimit,
                       uint64_t slots, uint64_t pieceBytes, uint64_t elementBytes) {
  std::vector<algorithms::Ring> rings;
  for (int c = 0; c < channels; ++c) {
    algorithms::Ring ring(static_cast<size_t>(nranks));
    for (int i = 0; i < nranks; ++i) ring[i] = (c % 2 == 0) ? i : nranks - 1 - i;
    rings.push_back(ring);
  }
  std::vector<RankLaunch> launches(static_cast<size_t>(nranks));
  std::vector<std::vector<uint64_t>> expectedPieces(static_cast<size_t>(nranks));
  for (int r = 0; r < nranks; ++r) {
    RankLaunch& launch = launches[r];
    LaunchTables tables(pieceBytes, [&launch](int channel, int peer, bool send) {
      launch.ends.push_back({channel, peer, send});
      return Status::ok();
    });
    for (const RankOp& op : ops[r]) {
      algorithms::Program program;
      algorithms::buildRingProgram(op.shape, rings, &program);
      Status added = tables.addOp(program, op.send->data(), op.recv->data(), elementBytes);
      if (!added.isOk()) return added.message();
    }
    Status laidOut = tables.layOut(r, nranks, blockLimit, slots, &launch.tables);
    if (!laidOut.isOk()) return laidOut.message();
    if (static_cast<int>(launch.tables.blocks.size()) > blockLimit) {
      return "rank " + std::to_string(r) + " has too many blocks";
    }
    // Each connection end in one block: the GPU's blocks would race for its counters, where the
    // model moves a piece at a time.
    std::map<int32_t, size_t> blockOfEnd;
    for (size_t b = 0; b < launch.tables.blocks.size(); ++b) {
      const KernelBlock& block = launch.tables.blocks[b];
      std::vector<uint32_t> lanes;
      for (uint32_t k = block.firstRun; k < block.firstRun + block.runCount; ++k) {
        const KernelRun& run = launch.tables.runs[k];
        for (uint32_t l = 0; l < run.streamLanes[0] + run.streamLanes[1]; ++l) lanes.push_back(run.firstLane + l);
      }
      for (uint32_t l : lanes) {
        const KernelLane& lane = launch.tables.lanes[l];
        for (uint32_t s = lane.firstStep; s < lane.firstStep + lane.stepCount; ++s) {
          for (int32_t end : {launch.tables.steps[s].recvConnection, launch.tables.steps[s].sendConnection}) {
            if (end >= 0 && blockOfEnd.emplace(end, b).first->second != b) {
              return "rank " + std::to_string(r) + " uses connection end " + std::to_string(end) + " in two blocks";
            }
          }
        }
      }
    }
    expectedPieces[r] = tables.connectionPieces();
  }
  std::string why;
  KernelModel model(slots, pieceBytes);
  if (!model.run(launches, &why)) return why;
  // What the proxies would be told to expect is what the kernel moves.
  for (int r = 0; r < nranks; ++r) {
    for (size_t end = 0; end < expectedPieces[r].size(); ++end) {
      const uint64_t moved = model.piecesThrough(r, static_cast<int32_t>(end));
      if (moved != expectedPieces[r][end]) {
        return "rank " + std::to_string(r) + "'s connection end " + std::to_string(end) + " moved " +
               std::to_string(moved) + " pieces, not the " + std::to_string(expectedPieces[r][end]) + " counted";
      }
    }
  }
  return "";
}

char pattern(int rank, size_t index) { return static_cast<char>(rank * 37 + index * 11 + 5); }

std::vector<char> filled(int rank, size_t bytes) {
  std::vector<char> buffer(bytes);
  for (size_t i = 0; i < bytes; ++i) buffer[i] = pattern(rank, i);
  return buffer;
}

// Per-rank buffers of one collective, and its expected receive buffers.
struct CollectiveCase {
  std::vector<std::vector<char>> send, recv;
  std::vector<std::vector<RankOp>> ops;
};

CollectiveCase collectiveOn(Collective collective, int nranks, size_t count, int root, uint64_t elementBytes) {
  CollectiveCase c;
  const size_t bytes = count * elementBytes;
  const size_t whole = bytes * static_cast<size_t>(nranks);
  c.ops.resize(static_cast<size_t>(nranks));
  for (int r = 0; r < nranks; ++r) {
    const bool spread = collective == Collective::kAllToAll || (collective == Collective::kScatter && r == root);
    c.send.push_back(filled(r, spread ? whole : bytes));
    const bool gathered = collective == Collective::kAllToAll || collective == Collective::kAllGather ||
                          (collective == Collective::kGather && r == root);
    c.recv.push_back(std::vector<char>(gathered ? whole : bytes, 0));
  }
  for (int r = 0; r < nranks; ++r) c.ops[r].push_back({{collective, count, root, nranks, r}, &c.send[r], &c.recv[r]});
  return c;
}

// Whether rank r's receive buffer holds what `collective` must leave there.
std::string checkCollective(const CollectiveCase& c, Collective collective, int nranks, size_t count, int root,
                            uint64_t elementBytes) {
  const size_t bytes = count * elementBytes;
  for (int r = 0; r < nranks; ++r) {
    if (collective == Collective::kGather && r != root) continue;  // a sender's output is not written
    for (size_t i = 0; i < c.recv[r].size(); ++i) {
      const size_t part = bytes == 0 ? 0 : i / bytes;
      const size_t within = bytes == 0 ? 0 : i % bytes;
      char expected = 0;
      switch (collective) {
        case Collective::kAllToAll: expected = pattern(static_cast<int>(part), r * bytes + within); break;
        case Collective::kAllGather:
        case Collective::kGather: expected = pattern(static_cast<int>(part), within); break;
        case Collective::kScatter: expected = pattern(root, r * bytes + i); break;
        case Collective::kBroadcast: expected = pattern(root, i); break;
        default: return "no check for this collective";
      }
      if (c.recv[r][i] != expected) {
        return "rank " + std::to_string(r) + "'s byte " + std::to_string(i) + " is " + std::to_string(c.recv[r][i]) +
               ", not " + std::to_string(expected);
      }
    }
  }
  return "";
}

TEST(LaunchTables, EachConnectionEndIsAddedOnceAndCountsItsPieces) {
  std::vector<End> ends;
  LaunchTables tables(8, [&ends](int channel, int peer, bool send) {
    ends.push_back({channel, peer, send});
    return Status::ok();
  });
  algorithms::Program program;
  algorithms::buildRingProgram({Collective::kAllToAll, 20, 0, 3, 1}, std::vector<algorithms::Ring>{{0, 1, 2}},
                               &program);
  std::vector<char> send(60), recv(60);
  ASSERT_TRUE(tables.addOp(program, send.data(), recv.data(), 1).isOk());
  ASSERT_TRUE(tables.addOp(program, send.data(), recv.data(), 1).isOk());  // the same ends again
  ASSERT_EQ(ends.size(), 4u);                                              // to and from each of the two peers
  ASSERT_EQ(tables.connectionPieces().size(), 4u);
  for (uint64_t pieces : tables.connectionPieces()) EXPECT_EQ(pieces, 6u);  // 20 bytes in pieces of 8, twice
}

TEST(LaunchTables, ATreeStepHasNoGpuKernel) {
  LaunchTables tables(8, [](int, int, bool) { return Status::ok(); });
  algorithms::Program program;
  algorithms::Step step;
  step.src = {algorithms::BufferKind::kScratch, 0};
  step.count = 4;
  program.lanes.push_back({0, {step}});
  std::vector<char> buffer(4);
  EXPECT_EQ(tables.addOp(program, buffer.data(), buffer.data(), 1).code(), StatusCode::kInternalError);
}

TEST(LaunchTables, AStepCombiningPartialResultsHasNoGpuKernel) {
  LaunchTables tables(8, [](int, int, bool) { return Status::ok(); });
  algorithms::Program program;
  algorithms::Step step;
  step.recvPeer = 1;
  step.src = {algorithms::BufferKind::kRecv, 0};
  step.contribute = true;
  step.srcIsPartial = true;
  step.count = 4;
  program.lanes.push_back({0, {step}});
  std::vector<char> buffer(4);
  EXPECT_EQ(tables.addOp(program, buffer.data(), buffer.data(), 1).code(), StatusCode::kInternalError);
}

TEST(LaunchTables, CollectivesMoveEveryByteFoldedOrNot) {
  for (Collective collective : {Collective::kAllToAll, Collective::kGather, Collective::kScatter,
                                Collective::kAllGather, Collective::kBroadcast}) {
    for (int nranks : {1, 2, 3, 5}) {
      for (size_t count : {0, 1, 13, 64, 100}) {
        for (int limit : {2, 3, 64}) {  // ring collectives take at most the limit's channels
          for (uint64_t slots : {1, 2, 8}) {
            const bool ring = collective == Collective::kAllGather || collective == Collective::kBroadcast;
            if (ring && slots < 2) continue;  // a ring's step receives and sends: it needs two slots (the kernel has 8)
            const int root = nranks - 1;
            const uint64_t elementBytes = count % 2 == 0 ? 4 : 1;
            CollectiveCase c = collectiveOn(collective, nranks, count, root, elementBytes);
            const int channels = std::min(limit, 2);
            const uint64_t pieceBytes = slots == 2 ? 20 : 8;
            const std::string ran = runOnModel(nranks, c.ops, channels, limit, slots, pieceBytes, elementBytes);
            const std::string what = std::string(algorithms::collectiveName(collective)) + " of " +
                                     std::to_string(nranks) + " ranks, " + std::to_string(count) + " elements, " +
                                     std::to_string(limit) + " blocks, " + std::to_string(slots) + " slots: ";
            ASSERT_EQ(ran, "") << what;
            ASSERT_EQ(checkCollective(c, collective, nranks, count, root, elementBytes), "") << what;
          }
        }
      }
    }
  }
}

TEST(LaunchTables, AFoldedAllToAllsTablesDoNotGrowWithItsSize) {
  // 4 ranks in one block, windows of 2 pieces of 8 bytes: 10 bytes a peer take 1 window, 4000 take
  // 250. The kernel walks the windows itself, so the tables are the same; every byte still arrives.
  const int nranks = 4;
  std::vector<size_t> tableEntries;
  for (size_t count : {10, 4000}) {
    CollectiveCase c = collectiveOn(Collective::kAllToAll, nranks, count, 0, 1);
    ASSERT_EQ(runOnModel(nranks, c.ops, 1, 1, 2, 8, 1), "") << count << " bytes a peer";
    ASSERT_EQ(checkCollective(c, Collective::kAllToAll, nranks, count, 0, 1), "") << count << " bytes a peer";
    LaunchTables tables(8, [](int, int, bool) { return Status::ok(); });
    algorithms::Program program;
    algorithms::buildRingProgram(c.ops[1][0].shape, std::vector<algorithms::Ring>{{0, 1, 2, 3}}, &program);
    ASSERT_TRUE(tables.addOp(program, c.send[1].data(), c.recv[1].data(), 1).isOk());
    KernelTables laidOut;
    ASSERT_TRUE(tables.layOut(1, nranks, 1, 2, &laidOut).isOk());
    ASSERT_EQ(laidOut.blocks.size(), 1u);
    EXPECT_EQ(laidOut.lanes.size(), program.lanes.size()) << "each lane once";
    tableEntries.push_back(laidOut.blocks.size() + laidOut.runs.size() + laidOut.lanes.size() + laidOut.steps.size());
  }
  EXPECT_EQ(tableEntries[0], tableEntries[1]);
}

TEST(LaunchTables, SendRecvGroupsMoveEveryByteFoldedOrNot) {
  std::mt19937 random(4122026);
  for (int trial = 0; trial < 200; ++trial) {
    const int nranks = 1 + static_cast<int>(random() % 6);
    struct Message {
      int from, to;
      size_t bytes;
    };
    std::vector<Message> messages;
    const int count = static_cast<int>(random() % (2 * nranks * nranks + 1));
    for (int m = 0; m < count; ++m) {
      messages.push_back({static_cast<int>(random() % nranks), static_cast<int>(random() % nranks), random() % 90});
    }
    std::vector<std::vector<char>> sent(messages.size()), received(messages.size());
    std::vector<std::vector<RankOp>> ops(static_cast<size_t>(nranks));
    for (size_t m = 0; m < messages.size(); ++m) {
      const Message& message = messages[m];
      sent[m] = filled(static_cast<int>(m), message.bytes);
      received[m].assign(message.bytes, 0);
      ops[message.from].push_back(
          {{Collective::kSend, message.bytes, message.to, nranks, message.from}, &sent[m], &sent[m]});
      ops[message.to].push_back(
          {{Collective::kRecv, message.bytes, message.from, nranks, message.to}, &received[m], &received[m]});
    }
    const int limit = 1 + static_cast<int>(random() % 3);
    const uint64_t slots = 1 + random() % 8;
    const uint64_t pieceBytes = 1 + random() % 24;
    const std::string ran = runOnModel(nranks, ops, 1 + static_cast<int>(random() % 2), limit, slots, pieceBytes, 1);
    ASSERT_EQ(ran, "") << "trial " << trial;
    for (size_t m = 0; m < messages.size(); ++m)
      ASSERT_EQ(received[m], sent[m]) << "trial " << trial << ", message " << m;
  }
}

}  // namespace
}  // namespace weft::device
