#include "topology/search_ring.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <limits>

namespace weft::topology {
namespace {

constexpr int kPathTypes = static_cast<int>(PathType::kDis) + 1;

// How good a ring is, or at best can become: see isBetter.
struct RingScore {
  double bandwidth = 0;
  std::array<int, kPathTypes> hopsOfType{};

  PathType worst() const {
    for (int type = kPathTypes - 1; type >= 0; --type) {
      if (hopsOfType[type] > 0) return static_cast<PathType>(type);
    }
    return PathType::kLoc;
  }
};

bool sameBandwidth(double a, double b) {
  return a == b || std::abs(a - b) <= 1e-9 * std::max(std::abs(a), std::abs(b));
}

// The better worst hop, then the higher bandwidth, then fewer hops of the worst type, then of the
// next worse, and so on. Adding hops never makes a score better, which is what lets the search
// drop a partial ring whose bound is not better than the best ring.
bool isBetter(const RingScore& a, const RingScore& b) {
  if (a.worst() != b.worst()) return a.worst() < b.worst();
  if (!sameBandwidth(a.bandwidth, b.bandwidth)) return a.bandwidth > b.bandwidth;
  for (int type = kPathTypes - 1; type >= 0; --type) {
    if (a.hopsOfType[type] != b.hopsOfType[type]) return a.hopsOfType[type] < b.hopsOfType[type];
  }
  return false;
}

// A ring under construction: its hops so far, how often each link is crossed, and its score.
class PartialRing {
 public:
  explicit PartialRing(const RingLinks& links) : links_(links), uses_(links.linkCount(), 0) {
    score_.bandwidth = links.ringLimit();
  }

  // Adds the hop from -> to through the route with the most bandwidth left for this ring (beyond
  // the ring's limit too, so that rings use up the roomiest links first).
  void addHop(int from, int to) {
    const std::vector<Route>& routes = links_.routes(from, to);
    int chosen = -1;
    double chosenRoom = -1;
    for (size_t r = 0; r < routes.size(); ++r) {
      double room = std::numeric_limits<double>::infinity();
      for (int link : routes[r]) room = std::min(room, links_.left(link) / (uses_[link] + 1));
      if (room > chosenRoom && !sameBandwidth(room, chosenRoom)) {
        chosen = static_cast<int>(r);
        chosenRoom = room;
      }
    }
    hops_.push_back(Hop{from, to, chosen, score_.bandwidth});
    ++score_.hopsOfType[static_cast<int>(links_.hopType(from, to))];
    if (chosen < 0) {
      score_.bandwidth = 0;
      return;
    }
    for (int link : routes[chosen]) {
      ++uses_[link];
      score_.bandwidth = std::min(score_.bandwidth, links_.left(link) / uses_[link]);
    }
  }

  void removeLastHop() {
    const Hop hop = hops_.back();
    hops_.pop_back();
    --score_.hopsOfType[static_cast<int>(links_.hopType(hop.from, hop.to))];
    score_.bandwidth = hop.bandwidthBefore;
    if (hop.route < 0) return;
    for (int link : links_.routes(hop.from, hop.to)[hop.route]) --uses_[link];
  }

  const RingScore& score() const { return score_; }

  RingPlan plan() const {
    RingPlan plan;
    for (const Hop& hop : hops_) {
      plan.gpus.push_back(hop.from);
      plan.routeOfHop.push_back(hop.route);
    }
    plan.worstHop = score_.worst();
    plan.bandwidth = score_.bandwidth;
    return plan;
  }

 private:
  struct Hop {
    int from;
    int to;
    int route;               // index into links_.routes(from, to), -1 when disconnected
    double bandwidthBefore;  // the ring's bandwidth before this hop
  };

  const RingLinks& links_;
  std::vector<int> uses_;  // [link]
  std::vector<Hop> hops_;
  RingScore score_;
};

uint64_t bit(int gpu) { return uint64_t{1} << gpu; }

// Depth-first search from GPU 0 with branch and bound.
//
// The bound on what a partial ring (ending at GPU `at`, with `unvisited` GPUs left) can become
// rests on one fact: for a path type T, split the GPUs still to be joined ({at}, `unvisited`, 0)
// into groups joined by hops of type T or better. The rest of the ring, a path from `at` through
// every group to 0, crosses between groups at least (groups - 1) times, or (groups) times when
// `at` and 0 are in one group: so at least that many hops are worse than T, and one of them moves
// no more than the fastest hop between two groups. Two sockets with PCIe GPUs make two groups at
// PHB: the bound says "two SYS hops" from the start, and rings that cross more are dropped early.
class RingSearch {
 public:
  RingSearch(const RingLinks& links, long stepBudget)
      : gpus_(links.gpuCount()), stepBudget_(stepBudget), partial_(links) {
    for (int from = 0; from < gpus_; ++from) {
      for (int to = 0; to < gpus_; ++to) {
        if (from != to) thresholds_.push_back(links.hopType(from, to));
        room_.push_back(from != to ? links.hopRoom(from, to) : 0);
      }
    }
    std::sort(thresholds_.begin(), thresholds_.end());
    thresholds_.erase(std::unique(thresholds_.begin(), thresholds_.end()), thresholds_.end());
    joined_.assign(thresholds_.size(), std::vector<uint64_t>(gpus_, 0));
    for (size_t t = 0; t < thresholds_.size(); ++t) {
      for (int a = 0; a < gpus_; ++a) {
        for (int b = 0; b < gpus_; ++b) {
          if (a != b && std::min(links.hopType(a, b), links.hopType(b, a)) <= thresholds_[t]) joined_[t][a] |= bit(b);
        }
      }
    }
    neighbours_.resize(gpus_);
    for (int from = 0; from < gpus_; ++from) {
      for (int to = 0; to < gpus_; ++to) {
        if (to != from) neighbours_[from].push_back(to);
      }
      std::stable_sort(neighbours_[from].begin(), neighbours_[from].end(), [&](int a, int b) {
        if (links.hopType(from, a) != links.hopType(from, b)) return links.hopType(from, a) < links.hopType(from, b);
        // Rounded, so that sums of the same NVLinks in another order compare equal.
        return std::round(roomOf(from, a) * 1e6) > std::round(roomOf(from, b) * 1e6);
      });
    }
  }

  RingPlan run() {
    const uint64_t all = gpus_ == 64 ? ~uint64_t{0} : bit(gpus_) - 1;
    extend(0, all & ~bit(0));
    return best_;
  }

 private:
  double roomOf(int from, int to) const { return room_[static_cast<size_t>(from) * gpus_ + to]; }

  void extend(int at, uint64_t unvisited) {
    if (found_ && steps_ >= stepBudget_) return;
    ++steps_;
    if (unvisited == 0) {
      partial_.addHop(at, 0);
      if (!found_ || isBetter(partial_.score(), bestScore_)) {
        found_ = true;
        bestScore_ = partial_.score();
        best_ = partial_.plan();
      }
      partial_.removeLastHop();
      return;
    }
    if (found_ && !isBetter(bound(at, unvisited), bestScore_)) return;
    for (int next : neighbours_[at]) {
      if ((unvisited & bit(next)) == 0) continue;
      partial_.addHop(at, next);
      extend(next, unvisited & ~bit(next));
      partial_.removeLastHop();
    }
  }

  RingScore bound(int at, uint64_t unvisited) {
    const uint64_t toJoin = unvisited | bit(at) | bit(0);
    const int hopsLeft = __builtin_popcountll(unvisited) + 1;
    RingScore score = partial_.score();
    // worseThan[t]: hops of the rest of the ring that must be worse than thresholds_[t].
    std::array<int, kPathTypes> worseThan{};
    for (size_t t = 0; t + 1 < thresholds_.size(); ++t) {
      const int groups = groupGpus(t, toJoin);
      if (groups <= 1) continue;
      worseThan[t] = group_[at] == group_[0] ? groups : groups - 1;
      score.bandwidth = std::min(score.bandwidth, fastestHopBetweenGroups(at, unvisited));
    }
    // A hop worse than thresholds_[t] is of type thresholds_[t + 1] at best.
    int worse = 0;
    for (size_t t = thresholds_.size() - 1; t-- > 0;) {
      const int atLeast = std::max(worseThan[t], worse);
      score.hopsOfType[static_cast<int>(thresholds_[t + 1])] += atLeast - worse;
      worse = atLeast;
    }
    score.hopsOfType[static_cast<int>(thresholds_[0])] += hopsLeft - worse;
    return score;
  }

  // Sets group_ for the GPUs of `toJoin`, joined by hops of type thresholds_[t] or better;
  // returns the number of groups.
  int groupGpus(size_t t, uint64_t toJoin) {
    int groups = 0;
    for (uint64_t left = toJoin; left != 0; ++groups) {
      uint64_t group = left & (~left + 1);
      for (uint64_t frontier = group; frontier != 0;) {
        const int gpu = __builtin_ctzll(frontier);
        frontier &= frontier - 1;
        const uint64_t reached = joined_[t][gpu] & left & ~group;
        group |= reached;
        frontier |= reached;
      }
      left &= ~group;
      for (uint64_t members = group; members != 0; members &= members - 1) group_[__builtin_ctzll(members)] = groups;
    }
    return groups;
  }

  // The most a hop of the rest of the ring between two groups of group_ could move.
  double fastestHopBetweenGroups(int at, uint64_t unvisited) const {
    double fastest = 0;
    for (uint64_t from = unvisited | bit(at); from != 0; from &= from - 1) {
      const int a = __builtin_ctzll(from);
      for (uint64_t to = unvisited | bit(0); to != 0; to &= to - 1) {
        const int b = __builtin_ctzll(to);
        if (a != b && group_[a] != group_[b]) fastest = std::max(fastest, roomOf(a, b));
      }
    }
    return fastest;
  }

  const int gpus_;
  const long stepBudget_;
  std::vector<PathType> thresholds_;            // the hop types present, best first
  std::vector<std::vector<uint64_t>> joined_;   // [t][gpu]: GPUs one hop of thresholds_[t] or better away
  std::vector<double> room_;                    // [from * gpus + to]: links.hopRoom
  std::vector<std::vector<int>> neighbours_;    // [gpu]: the others, best hop first, then roomiest
  std::array<int, 64> group_{};                 // groupGpus's answer
  PartialRing partial_;
  long steps_ = 0;
  bool found_ = false;
  RingScore bestScore_;
  RingPlan best_;
};

}  // namespace

RingPlan findBestRing(const RingLinks& links, long stepBudget) { return RingSearch(links, stepBudget).run(); }

RingPlan planRing(const RingLinks& links, const std::vector<int>& order) {
  PartialRing ring(links);
  for (size_t i = 0; i < order.size(); ++i) ring.addHop(order[i], order[(i + 1) % order.size()]);
  return ring.plan();
}

void takeRing(const RingPlan& plan, RingLinks* links) {
  for (size_t i = 0; i < plan.gpus.size(); ++i) {
    if (plan.routeOfHop[i] < 0) continue;
    const int from = plan.gpus[i];
    const int to = plan.gpus[(i + 1) % plan.gpus.size()];
    links->take(links->routes(from, to)[plan.routeOfHop[i]], plan.bandwidth);
  }
}

}  // namespace weft::topology
