#pragma once
// What the ring search reads and uses up: the path type between every pair of GPUs, the routes a
// hop between two GPUs can take (as the directed links it crosses) and the bandwidth each link has
// left once earlier rings have taken theirs.

#include <vector>

#include "topology/paths.h"
#include "topology/system.h"

namespace weft::topology {

/// One way a hop between two GPUs can go: indices into System::links(), from source to target.
using Route = std::vector<int>;

/// Some GPUs of a system (referred to by their position in the list the search was given) and the
/// links between them, as the ring search sees them. Built once per search; only `take` changes it.
class RingLinks {
 public:
  /// `gpus`: the GPUs' node indices. Every link starts with its full bandwidth.
  RingLinks(const System& system, const Paths& paths, const std::vector<int>& gpus);

  int gpuCount() const { return gpuCount_; }
  int linkCount() const { return static_cast<int>(left_.size()); }

  /// The best path's type from GPU `from` to GPU `to`.
  PathType hopType(int from, int to) const { return hopTypes_[pairIndex(from, to)]; }
  /// The routes the hop from `from` to `to` can take: the best path's links first, then, when that
  /// path crosses one NVSwitch, the same hop through each other NVSwitch that links both GPUs.
  /// Empty when the GPUs are disconnected.
  const std::vector<Route>& routes(int from, int to) const { return routes_[pairIndex(from, to)]; }

  /// The most one ring can move: the bandwidth of the GPUs' fastest single NVLink, or infinity on a
  /// system without NVLinks between GPUs (a ring then takes what its slowest link has).
  double ringLimit() const { return ringLimit_; }
  /// GB/s that `link` has left.
  double left(int link) const { return left_[link]; }
  /// What the hop from `from` to `to` has left: the bandwidth left on the slowest link of its
  /// roomiest route (not limited by ringLimit()); 0 when disconnected.
  double hopRoom(int from, int to) const;

  /// Takes `bandwidth` from every link of `route` (a ring's hop now uses it).
  void take(const Route& route, double bandwidth);

 private:
  size_t pairIndex(int from, int to) const { return static_cast<size_t>(from) * gpuCount_ + to; }

  int gpuCount_;
  std::vector<PathType> hopTypes_;        // [from * gpuCount + to]
  std::vector<std::vector<Route>> routes_;  // [from * gpuCount + to]
  std::vector<double> left_;              // [link]
  double ringLimit_;
};

}  // namespace weft::topology
