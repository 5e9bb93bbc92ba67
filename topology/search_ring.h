#pragma once
// The search for one ring: the best order of all GPUs given the bandwidth the links have left
// (topology/search.h says what "best" means).

#include <vector>

#include "topology/paths.h"
#include "topology/search_links.h"

namespace weft::topology {

/// A ring and the route of each hop: hop i goes from gpus[i] to gpus[(i + 1) % size], through
/// links.routes(from, to)[routeOfHop[i]] (-1 when the GPUs are disconnected).
struct RingPlan {
  std::vector<int> gpus;
  std::vector<int> routeOfHop;
  PathType worstHop = PathType::kDis;
  double bandwidth = 0;  // GB/s every hop can move at once (0 when a hop is disconnected)
};

/// The best ring over links.gpuCount() GPUs (2 to 64), starting at GPU 0: depth first, the
/// neighbours of each GPU tried best hop first, partial rings dropped as soon as a lower bound on
/// what they can become is no better than the best ring found. Extends at most `stepBudget`
/// partial rings once a first ring is found, then keeps the best so far.
RingPlan findBestRing(const RingLinks& links, long stepBudget);

/// The ring that visits the GPUs in `order` (each once), with the best route for each hop.
RingPlan planRing(const RingLinks& links, const std::vector<int>& order);

/// Takes the plan's bandwidth from every link its hops use.
void takeRing(const RingPlan& plan, RingLinks* links);

}  // namespace weft::topology
