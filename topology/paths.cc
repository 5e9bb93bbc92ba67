#include "topology/paths.h"

#include <strings.h>

#include <algorithm>
#include <limits>
#include <queue>
#include <tuple>
#include <utility>

namespace weft::topology {
namespace {

constexpr double kLocalBandwidth = 5000.0;  // GB/s within one node, as NCCL's model has it

// How the search reached a node: what it needs to know to type the next hop.
enum class Arrival : int { kStart = 0, kNvLink = 1, kC2c = 2, kOther = 3 };
constexpr int kArrivals = 4;
constexpr int kSwitchCounts = 3;  // 0, 1, or 2 and more PCIe switches passed

struct State {
  int node;
  int switches;      // PCIe switches passed, capped at 2
  Arrival arrival;
  bool relayedByGpu;  // an intermediate GPU forwarded to PCIe: only a NIC may be reached so (PXN)
};

struct Label {
  PathType type = PathType::kDis;
  double bandwidth = 0;
  int hops = std::numeric_limits<int>::max();
  bool reached = false;
  int previous = -1;  // state index of the previous hop
};

bool better(PathType type, double bandwidth, int hops, const Label& than) {
  if (!than.reached) return true;
  if (type != than.type) return type < than.type;
  if (bandwidth != than.bandwidth) return bandwidth > than.bandwidth;
  return hops < than.hops;
}

PathType worse(PathType a, PathType b) { return std::max(a, b); }

PathType linkContribution(LinkType type) {
  switch (type) {
    case LinkType::kNvLink: return PathType::kNvl;
    case LinkType::kC2C: return PathType::kC2c;
    case LinkType::kPci: return PathType::kPix;
    case LinkType::kSys: return PathType::kSys;
    case LinkType::kNet: return PathType::kNet;
  }
  return PathType::kDis;
}

}  // namespace

const char* pathTypeName(PathType type) {
  static const char* const kNames[] = {"LOC", "NVL", "NVB", "C2C", "PIX", "PXB",
                                       "P2C", "PXN", "PHB", "SYS", "NET", "DIS"};
  return kNames[static_cast<int>(type)];
}

bool parsePathType(const std::string& name, PathType* type) {
  for (int i = 0; i <= static_cast<int>(PathType::kDis); ++i) {
    if (strcasecmp(name.c_str(), pathTypeName(static_cast<PathType>(i))) == 0) {
      *type = static_cast<PathType>(i);
      return true;
    }
  }
  return false;
}

bool parseLevel(const std::string& text, PathType* level) {
  static constexpr PathType kLegacy[] = {PathType::kLoc, PathType::kPix, PathType::kPxb, PathType::kPhb,
                                         PathType::kSys};
  if (text.size() == 1 && text[0] >= '0' && text[0] <= '4') {
    *level = kLegacy[text[0] - '0'];
    return true;
  }
  return parsePathType(text, level);
}

bool withinLevel(PathType type, PathType level) { return level != PathType::kLoc && type <= level; }

Paths::Paths(const System& system) : count_(system.nodes().size()), paths_(count_ * count_) {
  for (size_t source = 0; source < count_; ++source) computeFrom(system, static_cast<int>(source));
}

void Paths::computeFrom(const System& system, int source) {
  const size_t perNode = static_cast<size_t>(kSwitchCounts) * kArrivals * 2;
  auto indexOf = [perNode](const State& s) {
    return static_cast<size_t>(s.node) * perNode + static_cast<size_t>(s.switches) * kArrivals * 2 +
           static_cast<size_t>(s.arrival) * 2 + (s.relayedByGpu ? 1 : 0);
  };
  auto stateOf = [perNode](size_t index) {
    State s;
    s.node = static_cast<int>(index / perNode);
    size_t rest = index % perNode;
    s.switches = static_cast<int>(rest / (kArrivals * 2));
    rest %= kArrivals * 2;
    s.arrival = static_cast<Arrival>(rest / 2);
    s.relayedByGpu = (rest % 2) != 0;
    return s;
  };
  std::vector<Label> labels(count_ * perNode);
  std::vector<bool> settled(labels.size(), false);
  // Ordered by (type, -bandwidth, hops): the best label first.
  using Entry = std::pair<std::tuple<int, double, int>, size_t>;
  std::priority_queue<Entry, std::vector<Entry>, std::greater<>> queue;
  const State start{source, 0, Arrival::kStart, false};
  Label& first = labels[indexOf(start)];
  first = Label{PathType::kLoc, kLocalBandwidth, 0, true, -1};
  queue.push({{0, -kLocalBandwidth, 0}, indexOf(start)});

  while (!queue.empty()) {
    const size_t current = queue.top().second;
    queue.pop();
    if (settled[current]) continue;
    settled[current] = true;
    const State from = stateOf(current);
    const Label here = labels[current];
    const Node& node = system.node(from.node);
    const bool intermediate = from.node != source;
    if (intermediate && node.type == NodeType::kNic) continue;  // NICs relay nothing
    if (intermediate && node.type == NodeType::kGpu && from.arrival != Arrival::kNvLink) continue;
    for (int linkIndex : system.linksFrom(from.node)) {
      const Link& link = system.links()[linkIndex];
      if (link.to == source) continue;
      PathType type = worse(here.type, linkContribution(link.type));
      State to{link.to, from.switches, Arrival::kOther, from.relayedByGpu};
      if (link.type == LinkType::kNvLink) to.arrival = Arrival::kNvLink;
      if (link.type == LinkType::kC2C) to.arrival = Arrival::kC2c;
      if (intermediate && node.type == NodeType::kGpu) {
        // A GPU forwards NVLink traffic: onwards over NVLink (NVB) or to PCIe towards a NIC (PXN).
        if (link.type == LinkType::kNvLink) {
          type = worse(type, PathType::kNvb);
        } else if (link.type == LinkType::kPci) {
          type = worse(type, PathType::kPxn);
          to.relayedByGpu = true;
        } else {
          continue;
        }
      }
      if (intermediate && node.type == NodeType::kCpu) {
        // A GPU relays to a NIC behind its own PCIe switches only (NCCL: the relay's path is PXB at
        // worst); never through a CPU.
        if (from.relayedByGpu) continue;
        // Through the CPU's host bridge; between a GPU's C2C link and PCIe (either way) that is P2C.
        const bool c2cToPci = from.arrival == Arrival::kC2c && link.type == LinkType::kPci;
        const bool pciToC2c = from.arrival == Arrival::kOther && link.type == LinkType::kC2C;
        type = worse(type, c2cToPci || pciToC2c ? PathType::kP2c : PathType::kPhb);
      }
      if (system.node(link.to).type == NodeType::kPciSwitch) {
        to.switches = std::min(from.switches + 1, kSwitchCounts - 1);
      }
      if (to.switches >= 2 && link.type == LinkType::kPci) type = worse(type, PathType::kPxb);
      const double bandwidth = std::min(here.bandwidth, link.bandwidth);
      const size_t next = indexOf(to);
      if (settled[next] || !better(type, bandwidth, here.hops + 1, labels[next])) continue;
      labels[next] = Label{type, bandwidth, here.hops + 1, true, static_cast<int>(current)};
      queue.push({{static_cast<int>(type), -bandwidth, here.hops + 1}, next});
    }
  }

  // The best arrival at each destination; a route relayed by a GPU into PCIe counts for NICs only.
  for (size_t destination = 0; destination < count_; ++destination) {
    const bool isNic = system.node(static_cast<int>(destination)).type == NodeType::kNic;
    size_t best = labels.size();
    for (size_t k = 0; k < perNode; ++k) {
      const size_t index = destination * perNode + k;
      if (!labels[index].reached || (stateOf(index).relayedByGpu && !isNic)) continue;
      if (best == labels.size() ||
          better(labels[index].type, labels[index].bandwidth, labels[index].hops, labels[best])) {
        best = index;
      }
    }
    Path& path = paths_[static_cast<size_t>(source) * count_ + destination];
    if (best == labels.size()) continue;  // DIS
    path.type = labels[best].type;
    path.bandwidth = labels[best].bandwidth;
    for (int at = static_cast<int>(best); at >= 0; at = labels[at].previous) {
      path.nodes.push_back(stateOf(static_cast<size_t>(at)).node);
    }
    std::reverse(path.nodes.begin(), path.nodes.end());
  }
}

}  // namespace weft::topology
