#include "topology/search.h"

#include <algorithm>
#include <climits>
#include <numeric>

#include "topology/search_links.h"
#include "topology/search_ring.h"

namespace weft::topology {
namespace {

constexpr int kMostGpusSearched = 64;  // the search keeps sets of GPUs in 64-bit masks

// Whether a ring of `bandwidth` added to `rings` rings of `perRing` raises their total: the data is
// split evenly, so every ring moves what the slowest one can.
bool raisesTotal(size_t rings, double perRing, double bandwidth) {
  const double before = static_cast<double>(rings) * perRing;
  const double after = static_cast<double>(rings + 1) * std::min(perRing, bandwidth);
  return after > before * (1 + 1e-9);
}

}  // namespace

RingSet searchRings(const System& system, const Paths& paths, const RingSearchOptions& options) {
  RingSet set;
  const std::vector<int> gpus = system.nodesOfType(NodeType::kGpu);
  if (gpus.empty() || options.maxRings <= 0) return set;
  if (gpus.size() == 1) {
    const Path& local = paths.between(gpus[0], gpus[0]);
    set.rings.push_back({0});
    set.bandwidthPerRing = local.bandwidth;
    set.worstHop = local.type;
    return set;
  }
  RingLinks links(system, paths);
  std::vector<int> gpuOrder(gpus.size());
  std::iota(gpuOrder.begin(), gpuOrder.end(), 0);
  while (set.rings.size() < static_cast<size_t>(options.maxRings)) {
    const RingPlan ring = gpus.size() > kMostGpusSearched ? planRing(links, gpuOrder)
                                                           : findBestRing(links, options.stepsPerRing);
    if (ring.bandwidth <= 0) break;
    if (!set.rings.empty()) {
      if (ring.worstHop > set.worstHop || !raisesTotal(set.rings.size(), set.bandwidthPerRing, ring.bandwidth)) break;
    }
    takeRing(ring, &links);
    set.bandwidthPerRing = set.rings.empty() ? ring.bandwidth : std::min(set.bandwidthPerRing, ring.bandwidth);
    if (set.rings.empty()) set.worstHop = ring.worstHop;
    set.rings.push_back(ring.gpus);
  }
  return set;
}

std::vector<int> orderHostRanks(const std::vector<int>& numaOfRank) {
  std::vector<int> order(numaOfRank.size());
  std::iota(order.begin(), order.end(), 0);
  auto numaKey = [&](int rank) { return numaOfRank[rank] >= 0 ? numaOfRank[rank] : INT_MAX; };
  std::stable_sort(order.begin(), order.end(), [&](int a, int b) { return numaKey(a) < numaKey(b); });
  return order;
}

}  // namespace weft::topology
