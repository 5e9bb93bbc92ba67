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
  const std::vector<int> gpus = options.gpus.empty() ? system.nodesOfType(NodeType::kGpu) : options.gpus;
  if (gpus.empty() || options.maxRings <= 0) return set;
  if (gpus.size() == 1) {
    const Path& local = paths.between(gpus[0], gpus[0]);
    set.rings.push_back({0});
    set.bandwidthPerRing = local.bandwidth;
    set.worstHop = local.type;
    return set;
  }
  RingLinks links(system, paths, gpus);
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

RankRings orderGpuRanks(const System& system, const Paths& paths, const std::vector<std::string>& busIdOfRank,
                        RingSearchOptions options) {
  RankRings result;
  if (busIdOfRank.empty()) {
    result.why = "no ranks to order";
    return result;
  }
  // The distinct GPUs, in order of their first rank; gpuOfRank[i] is rank i's position among them.
  options.gpus.clear();
  std::vector<int> gpuOfRank;
  for (const std::string& busId : busIdOfRank) {
    const int node = system.findByBusId(busId);
    if (node < 0 || system.node(node).type != NodeType::kGpu) {
      result.why = "GPU " + busId + " is not a GPU of the system (" + system.source() + ")";
      return result;
    }
    const auto known = std::find(options.gpus.begin(), options.gpus.end(), node);
    gpuOfRank.push_back(static_cast<int>(known - options.gpus.begin()));
    if (known == options.gpus.end()) options.gpus.push_back(node);
  }
  const RingSet set = searchRings(system, paths, options);
  if (set.rings.empty()) {
    result.why = "no ring connects the GPUs (some cannot reach each other)";
    return result;
  }
  for (const std::vector<int>& ring : set.rings) {
    std::vector<int>& order = result.orders.emplace_back();
    for (int gpu : ring) {
      for (size_t rank = 0; rank < gpuOfRank.size(); ++rank) {
        if (gpuOfRank[rank] == gpu) order.push_back(static_cast<int>(rank));
      }
    }
  }
  result.bandwidthPerRing = set.bandwidthPerRing;
  result.worstHop = set.worstHop;
  return result;
}

std::vector<int> orderHostRanks(const std::vector<int>& numaOfRank) {
  std::vector<int> order(numaOfRank.size());
  std::iota(order.begin(), order.end(), 0);
  auto numaKey = [&](int rank) { return numaOfRank[rank] >= 0 ? numaOfRank[rank] : INT_MAX; };
  std::stable_sort(order.begin(), order.end(), [&](int a, int b) { return numaKey(a) < numaKey(b); });
  return order;
}

}  // namespace weft::topology
