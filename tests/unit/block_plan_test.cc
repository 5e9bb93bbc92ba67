// The block plan (src/device/block_plan.h), checked on a simulation of the step kernel: every
// rank's blocks walk their runs as the kernel does (src/device/run_walk.h) and run the stretches
// of rounds that come of it in order, a piece at a time, through connections of a few slots; a
// send waits for a free slot, a receive for a posted piece. Such a system ends the same
// way whatever order its blocks take turns in (a wait, once satisfied, stays so until its block
// moves), so one round-robin run tells whether a plan can deadlock.

#include "src/device/block_plan.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <deque>
#include <map>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "src/device/run_walk.h"

namespace weft::device {
namespace {

// A message of `pieces` pieces from rank `from` to rank `to`; on each side, one lane.
struct Message {
  int from = 0;
  int to = 0;
  uint64_t pieces = 0;
};

// One rank's lanes in call order, and for each the message it moves (-1: a local copy).
struct RankLanes {
  std::vector<PlannedLane> lanes;
  std::vector<int> message;
};

uint64_t endpoint(int peer, bool send) { return static_cast<uint64_t>(peer) * 2 + (send ? 1 : 0); }

// A lane of one step that sends `pieces` to `peer`, or receives them from it.
PlannedLane peerLane(int peer, uint64_t pieces, bool send) {
  PlannedLane lane;
  lane.endpoints = {endpoint(peer, send)};
  lane.rounds = pieces;
  (send ? lane.sendPeer : lane.recvPeer) = peer;
  return lane;
}

PlannedLane sendLane(int peer, uint64_t pieces) { return peerLane(peer, pieces, true); }
PlannedLane recvLane(int peer, uint64_t pieces) { return peerLane(peer, pieces, false); }

// Each rank's lanes for `messages`, in the order they are listed (so the sends on a connection are
// in the order of its receives, as NCCL requires).
std::vector<RankLanes> lanesOf(int nranks, const std::vector<Message>& messages) {
  std::vector<RankLanes> ranks(static_cast<size_t>(nranks));
  for (size_t m = 0; m < messages.size(); ++m) {
    const Message& message = messages[m];
    ranks[message.from].lanes.push_back(sendLane(message.to, message.pieces));
    ranks[message.from].message.push_back(static_cast<int>(m));
    ranks[message.to].lanes.push_back(recvLane(message.from, message.pieces));
    ranks[message.to].message.push_back(static_cast<int>(m));
  }
  return ranks;
}

// Shuffles each rank's call order, keeping the order of the lanes on each connection end.
void shuffleCallOrders(std::vector<RankLanes>* ranks, std::mt19937* random) {
  for (RankLanes& rank : *ranks) {
    std::vector<size_t> order(rank.lanes.size());
    for (size_t i = 0; i < order.size(); ++i) order[i] = i;
    std::shuffle(order.begin(), order.end(), *random);
    // Positions each end takes in the shuffled order, filled with that end's lanes in their order.
    std::map<uint64_t, std::vector<size_t>> positions, lanesOfEnd;
    for (size_t p = 0; p < order.size(); ++p) positions[rank.lanes[order[p]].endpoints[0]].push_back(p);
    for (size_t i = 0; i < rank.lanes.size(); ++i) lanesOfEnd[rank.lanes[i].endpoints[0]].push_back(i);
    RankLanes shuffled;
    shuffled.lanes.resize(rank.lanes.size());
    shuffled.message.resize(rank.lanes.size());
    for (const auto& [end, lanes] : lanesOfEnd) {
      for (size_t k = 0; k < lanes.size(); ++k) {
        shuffled.lanes[positions[end][k]] = rank.lanes[lanes[k]];
        shuffled.message[positions[end][k]] = rank.message[lanes[k]];
      }
    }
    rank = std::move(shuffled);
  }
}

// What a simulated launch of every rank's plan came to.
struct Outcome {
  bool finished = false;
  std::string problem;  // why not: a deadlock, a piece received out of order, a plan not whole
};

// Rounds [from, to) of lane `lane` (an index into the rank's lanes).
struct Stretch {
  uint32_t lane = 0;
  uint64_t from = 0;
  uint64_t to = 0;
};

// The stretches a block runs, in order: its runs walked as the kernel walks them. "" or why the
// runs do not take the block's lanes in order, each once.
std::string stretchesOf(const PlannedBlock& block, const std::vector<PlannedLane>& lanes, std::vector<Stretch>* out) {
  uint32_t next = 0;
  for (const KernelRun& run : block.runs) {
    if (run.firstLane != next) return "a run does not start where the one before it ended";
    next += run.streamLanes[0] + run.streamLanes[1];
  }
  if (next != block.lanes.size()) return "the runs do not take the block's lanes";
  for (const KernelRun& run : block.runs) {
    RunWalk walk(run);
    while (walk.more()) {
      const uint32_t lane = block.lanes[walk.lane()];
      if (lane >= lanes.size()) return "a block names lane " + std::to_string(lane) + ", which is not there";
      Stretch stretch{lane, 0, 0};
      walk.take(lanes[lane].rounds, &stretch.from, &stretch.to);
      out->push_back(stretch);
    }
  }
  return "";
}

class KernelSimulation {
 public:
  KernelSimulation(const std::vector<RankLanes>& ranks, const std::vector<BlockPlan>& plans, uint64_t slots)
      : ranks_(ranks), slots_(slots) {
    stretches_.resize(plans.size());
    for (size_t r = 0; r < plans.size(); ++r) {
      for (const PlannedBlock& block : plans[r]) {
        stretches_[r].emplace_back();
        const std::string malformed = stretchesOf(block, ranks_[r].lanes, &stretches_[r].back());
        if (!malformed.empty() && malformed_.empty()) malformed_ = "rank " + std::to_string(r) + ": " + malformed;
      }
    }
  }

  Outcome run() {
    Outcome outcome;
    outcome.problem = malformed_;
    if (!malformed_.empty() || !coversEveryRound(&outcome.problem)) return outcome;
    std::vector<std::vector<Cursor>> cursors(stretches_.size());
    for (size_t r = 0; r < stretches_.size(); ++r) cursors[r].resize(stretches_[r].size());
    for (bool moved = true; moved;) {
      moved = false;
      for (size_t r = 0; r < stretches_.size(); ++r) {
        for (size_t b = 0; b < stretches_[r].size(); ++b) {
          if (!advance(static_cast<int>(r), stretches_[r][b], &cursors[r][b], &outcome.problem, &moved)) {
            return outcome;
          }
        }
      }
    }
    for (size_t r = 0; r < stretches_.size(); ++r) {
      for (size_t b = 0; b < stretches_[r].size(); ++b) {
        if (cursors[r][b].stretch < stretches_[r][b].size()) {
          outcome.problem = "deadlock: rank " + std::to_string(r) + "'s block " + std::to_string(b) +
                            " waits at its stretch " + std::to_string(cursors[r][b].stretch);
          return outcome;
        }
      }
    }
    outcome.finished = true;
    return outcome;
  }

 private:
  struct Cursor {
    size_t stretch = 0;
    uint64_t round = 0;  // within the stretch
  };
  struct Connection {
    uint64_t posted = 0;
    uint64_t released = 0;
    std::deque<std::pair<int, uint64_t>> pieces;  // (message, piece) posted and not yet released
  };

  // Every round of every lane in exactly one stretch, each lane's stretches in order.
  bool coversEveryRound(std::string* problem) const {
    for (size_t r = 0; r < stretches_.size(); ++r) {
      std::vector<uint64_t> next(ranks_[r].lanes.size(), 0);
      for (const auto& block : stretches_[r]) {
        for (const Stretch& stretch : block) {
          if (stretch.from != next[stretch.lane] || stretch.to <= stretch.from) {
            *problem = "rank " + std::to_string(r) + "'s lane " + std::to_string(stretch.lane) +
                       " has a stretch out of order or empty";
            return false;
          }
          next[stretch.lane] = stretch.to;
        }
      }
      for (size_t lane = 0; lane < next.size(); ++lane) {
        if (next[lane] != ranks_[r].lanes[lane].rounds) {
          *problem = "rank " + std::to_string(r) + "'s lane " + std::to_string(lane) + " is not planned whole";
          return false;
        }
      }
    }
    return true;
  }

  // Moves the block on as far as it can go; false on a piece received out of order.
  bool advance(int rank, const std::vector<Stretch>& block, Cursor* cursor, std::string* problem, bool* moved) {
    while (cursor->stretch < block.size()) {
      const Stretch& stretch = block[cursor->stretch];
      const PlannedLane& lane = ranks_[rank].lanes[stretch.lane];
      const int message = ranks_[rank].message[stretch.lane];
      const uint64_t piece = stretch.from + cursor->round;
      if (lane.sendPeer >= 0) {
        Connection& connection = connections_[{rank, lane.sendPeer}];
        if (connection.posted - connection.released >= slots_) return true;
        ++connection.posted;
        connection.pieces.emplace_back(message, piece);
      } else if (lane.recvPeer >= 0) {
        Connection& connection = connections_[{lane.recvPeer, rank}];
        if (connection.posted == connection.released) return true;
        if (connection.pieces.front() != std::make_pair(message, piece)) {
          *problem = "rank " + std::to_string(rank) + " received piece " +
                     std::to_string(connection.pieces.front().second) + " of message " +
                     std::to_string(connection.pieces.front().first) + " where it expected piece " +
                     std::to_string(piece) + " of message " + std::to_string(message);
          return false;
        }
        connection.pieces.pop_front();
        ++connection.released;
      }
      *moved = true;
      if (stretch.from + ++cursor->round == stretch.to) {
        ++cursor->stretch;
        cursor->round = 0;
      }
    }
    return true;
  }

  const std::vector<RankLanes>& ranks_;
  std::vector<std::vector<std::vector<Stretch>>> stretches_;  // per rank, per block
  std::string malformed_;
  uint64_t slots_;
  std::map<std::pair<int, int>, Connection> connections_;  // (sender, receiver)
};

// Plans every rank's launch with `blockLimit` and windows of `slots`, and simulates it.
Outcome planAndRun(const std::vector<RankLanes>& ranks, int blockLimit, uint64_t slots) {
  const int nranks = static_cast<int>(ranks.size());
  std::vector<BlockPlan> plans(ranks.size());
  for (int r = 0; r < nranks; ++r) {
    Status status = planBlocks(ranks[r].lanes, r, nranks, blockLimit, slots, &plans[r]);
    if (!status.isOk()) return {false, status.message()};
    if (static_cast<int>(plans[r].size()) > blockLimit) {
      return {false, "rank " + std::to_string(r) + " plans " + std::to_string(plans[r].size()) + " blocks"};
    }
    // One block per connection end: else two blocks would race for its counters (and the
    // simulation's verdict would depend on their turns).
    std::map<uint64_t, size_t> blockOfEnd;
    for (size_t b = 0; b < plans[r].size(); ++b) {
      for (uint32_t lane : plans[r][b].lanes) {
        for (uint64_t end : ranks[r].lanes[lane].endpoints) {
          if (blockOfEnd.emplace(end, b).first->second != b) {
            return {false, "rank " + std::to_string(r) + " uses a connection end in two blocks"};
          }
        }
      }
    }
  }
  return KernelSimulation(ranks, plans, slots).run();
}

// The lanes of an all-to-all as algorithms/direct_schedule.cc lays them out: per distance a send
// and a receive, then the local copy; `pieces` per peer.
std::vector<RankLanes> allToAll(int nranks, uint64_t pieces) {
  std::vector<RankLanes> ranks(static_cast<size_t>(nranks));
  for (int r = 0; r < nranks; ++r) {
    for (int d = 1; d < nranks; ++d) {
      const int to = (r + d) % nranks;
      const int from = (r - d + nranks) % nranks;
      ranks[r].lanes.push_back(sendLane(to, pieces));
      ranks[r].message.push_back(r * nranks + to);
      ranks[r].lanes.push_back(recvLane(from, pieces));
      ranks[r].message.push_back(from * nranks + r);
    }
    PlannedLane copy;
    copy.rounds = pieces;
    ranks[r].lanes.push_back(copy);
    ranks[r].message.push_back(-1);
  }
  return ranks;
}

// The block's stretches as (lane, rounds), checked to be well formed.
std::vector<std::pair<uint32_t, uint64_t>> walked(const PlannedBlock& block, const std::vector<PlannedLane>& lanes) {
  std::vector<Stretch> stretches;
  EXPECT_EQ(stretchesOf(block, lanes, &stretches), "");
  std::vector<std::pair<uint32_t, uint64_t>> out;
  for (const Stretch& stretch : stretches) out.emplace_back(stretch.lane, stretch.to - stretch.from);
  return out;
}

using Walk = std::vector<std::pair<uint32_t, uint64_t>>;

TEST(BlockPlan, LanesThatFitRunWholeAndThoseSharingAnEndInOneBlockInCallOrder) {
  std::vector<PlannedLane> lanes = {sendLane(1, 5), recvLane(2, 3), sendLane(1, 7), recvLane(3, 2), sendLane(2, 0)};
  BlockPlan plan;
  ASSERT_TRUE(planBlocks(lanes, 0, 4, 3, 8, &plan).isOk());
  ASSERT_EQ(plan.size(), 3u);
  EXPECT_EQ(walked(plan[0], lanes), (Walk{{0, 5}, {2, 7}}));  // both sends to rank 1, in call order
  EXPECT_EQ(walked(plan[1], lanes), (Walk{{1, 3}}));
  EXPECT_EQ(walked(plan[2], lanes), (Walk{{3, 2}}));  // the lane of no pieces has no block: it moves nothing
  for (const PlannedBlock& block : plan) EXPECT_EQ(block.runs.size(), 1u);
}

TEST(BlockPlan, FoldedLanesAlternateWindowsOfTheirDistance) {
  // Rank 1 of 3 with one block: distance 1 sends to 2 and receives from 0; distance 2 sends to 0
  // and receives from 2. Windows of 4 pieces.
  std::vector<PlannedLane> lanes = {sendLane(2, 10), recvLane(0, 6), sendLane(0, 3), recvLane(2, 3)};
  BlockPlan plan;
  ASSERT_TRUE(planBlocks(lanes, 1, 3, 1, 4, &plan).isOk());
  ASSERT_EQ(plan.size(), 1u);
  EXPECT_EQ(walked(plan[0], lanes), (Walk{{0, 4}, {1, 4}, {0, 4}, {1, 2}, {0, 2},  // distance 1: 10 pieces out, 6 in
                                          {2, 3}, {3, 3}}));                       // distance 2
  // One run per distance, each lane once: the tables do not grow with the windows.
  EXPECT_EQ(plan[0].runs.size(), 2u);
  EXPECT_EQ(plan[0].lanes, (std::vector<uint32_t>{0, 1, 2, 3}));
}

TEST(BlockPlan, AStreamOfSeveralLanesIsWindowedAsOne) {
  // Rank 0 of 2, one block: three sends to rank 1 (5, 2 and 6 pieces) and two receives from it
  // (1 and 9), windows of 4. A window may end inside a lane and the next one take up where it left.
  std::vector<PlannedLane> lanes = {sendLane(1, 5), recvLane(1, 1), sendLane(1, 2), recvLane(1, 9), sendLane(1, 6)};
  BlockPlan plan;
  ASSERT_TRUE(planBlocks(lanes, 0, 2, 1, 4, &plan).isOk());
  ASSERT_EQ(plan.size(), 1u);
  EXPECT_EQ(walked(plan[0], lanes), (Walk{{0, 4},           // sends [0, 4)
                                          {1, 1}, {3, 3},   // receives [0, 4)
                                          {0, 1}, {2, 2}, {4, 1},  // sends [4, 8)
                                          {3, 4},           // receives [4, 8)
                                          {4, 4},           // sends [8, 12)
                                          {3, 2},           // receives [8, 10): its last
                                          {4, 1}}));        // sends [12, 13): the receives are done
}

TEST(BlockPlan, AChainedLaneIsNeverFolded) {
  PlannedLane ring;
  ring.endpoints = {endpoint(1, true), endpoint(3, false)};
  ring.rounds = 4;
  ring.chained = true;
  std::vector<PlannedLane> lanes = {ring, sendLane(2, 1)};
  BlockPlan plan;
  EXPECT_TRUE(planBlocks(lanes, 0, 4, 2, 8, &plan).isOk());
  const Status folded = planBlocks(lanes, 0, 4, 1, 8, &plan);
  EXPECT_EQ(folded.code(), StatusCode::kInternalError);
  EXPECT_NE(folded.message().find("cannot be folded"), std::string::npos) << folded.message();
}

TEST(BlockPlan, TheSimulationCatchesADeadlock) {
  // Both ranks of one block send 10 pieces whole through 8 slots before receiving: neither
  // receive ever starts. The simulation must say so, or its passes below would prove nothing.
  std::vector<RankLanes> ranks = lanesOf(2, {{0, 1, 10}, {1, 0, 10}});
  std::vector<BlockPlan> wholeInOneBlock(2);
  for (int r = 0; r < 2; ++r) {
    const uint32_t send = ranks[r].lanes[0].sendPeer >= 0 ? 0 : 1;
    PlannedBlock block;
    block.lanes = {send, 1 - send};
    block.runs.emplace_back();
    block.runs[0].streamLanes[0] = 2;  // one stream, window unbounded
    wholeInOneBlock[r] = {block};
  }
  const Outcome outcome = KernelSimulation(ranks, wholeInOneBlock, 8).run();
  EXPECT_FALSE(outcome.finished);
  EXPECT_NE(outcome.problem.find("deadlock"), std::string::npos) << outcome.problem;
  // Folded with windows of the slot count, the same lanes finish.
  const Outcome folded = planAndRun(ranks, 1, 8);
  EXPECT_TRUE(folded.finished) << folded.problem;
}

TEST(BlockPlan, AllToAllFoldsIntoAnyLimitWithoutDeadlock) {
  for (int nranks = 2; nranks <= 9; ++nranks) {
    for (int limit : {1, 2, 3, 5, 64}) {
      for (uint64_t pieces : {0, 1, 7, 8, 9, 30}) {
        for (uint64_t slots : {1, 2, 8}) {
          const Outcome outcome = planAndRun(allToAll(nranks, pieces), limit, slots);
          EXPECT_TRUE(outcome.finished) << nranks << " ranks, limit " << limit << ", " << pieces << " pieces, "
                                        << slots << " slots: " << outcome.problem;
        }
      }
    }
  }
}

TEST(BlockPlan, GatherAndScatterRootsFold) {
  for (int nranks = 2; nranks <= 8; ++nranks) {
    for (int root = 0; root < nranks; ++root) {
      std::vector<Message> gather, scatter;
      for (int r = 0; r < nranks; ++r) {
        gather.push_back({r, root, 5 + static_cast<uint64_t>(r)});  // the root's own through a connection to itself
        scatter.push_back({root, r, 20 - static_cast<uint64_t>(r)});
      }
      for (int limit : {1, 2}) {
        const Outcome gathered = planAndRun(lanesOf(nranks, gather), limit, 8);
        EXPECT_TRUE(gathered.finished) << nranks << " ranks, root " << root << ": " << gathered.problem;
        const Outcome scattered = planAndRun(lanesOf(nranks, scatter), limit, 8);
        EXPECT_TRUE(scattered.finished) << nranks << " ranks, root " << root << ": " << scattered.problem;
      }
    }
  }
}

TEST(BlockPlan, RandomSendRecvGroupsNeverDeadlock) {
  std::mt19937 random(20261204);
  for (int trial = 0; trial < 400; ++trial) {
    const int nranks = 1 + static_cast<int>(random() % 8);
    std::vector<Message> messages;
    const int count = static_cast<int>(random() % (3 * nranks * nranks + 1));
    for (int m = 0; m < count; ++m) {
      messages.push_back({static_cast<int>(random() % nranks), static_cast<int>(random() % nranks), random() % 25});
    }
    std::vector<RankLanes> ranks = lanesOf(nranks, messages);
    shuffleCallOrders(&ranks, &random);
    const int limit = 1 + static_cast<int>(random() % 4);
    const uint64_t slots = 1 + random() % 8;
    const Outcome outcome = planAndRun(ranks, limit, slots);
    EXPECT_TRUE(outcome.finished) << "trial " << trial << ": " << nranks << " ranks, " << count << " messages, limit "
                                  << limit << ", " << slots << " slots: " << outcome.problem;
  }
}

}  // namespace
}  // namespace weft::device
