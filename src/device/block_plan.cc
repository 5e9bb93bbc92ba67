#include "src/device/block_plan.h"

#include <algorithm>
#include <numeric>
#include <unordered_map>

namespace weft::device {
namespace {

// Lanes that share an endpoint, joined: per lane, the index of its group's first lane.
std::vector<size_t> groupBySharedEndpoints(std::span<const PlannedLane> lanes) {
  std::vector<size_t> parent(lanes.size());
  std::iota(parent.begin(), parent.end(), 0);
  auto find = [&parent](size_t i) {
    while (parent[i] != i) i = parent[i] = parent[parent[i]];
    return i;
  };
  std::unordered_map<uint64_t, size_t> laneOfEndpoint;  // the first lane to use each endpoint
  for (size_t i = 0; i < lanes.size(); ++i) {
    for (uint64_t endpoint : lanes[i].endpoints) {
      auto [known, added] = laneOfEndpoint.emplace(endpoint, i);
      if (!added) parent[find(i)] = find(known->second);
    }
  }
  std::vector<size_t> first(lanes.size());
  std::vector<size_t> firstOfRoot(lanes.size(), lanes.size());
  for (size_t i = 0; i < lanes.size(); ++i) {
    const size_t root = find(i);
    if (firstOfRoot[root] == lanes.size()) firstOfRoot[root] = i;
    first[i] = firstOfRoot[root];
  }
  return first;
}

// Appends to `block` a run of the lanes `first`, then `second`, as its two streams.
void appendRun(const std::vector<uint32_t>& first, const std::vector<uint32_t>& second, uint64_t window,
               PlannedBlock* block) {
  KernelRun run;
  run.firstLane = static_cast<uint32_t>(block->lanes.size());
  run.streamLanes[0] = static_cast<uint32_t>(first.size());
  run.streamLanes[1] = static_cast<uint32_t>(second.size());
  run.window = window;
  block->lanes.insert(block->lanes.end(), first.begin(), first.end());
  block->lanes.insert(block->lanes.end(), second.begin(), second.end());
  block->runs.push_back(run);
}

// Lanes whole: one block per group, its lanes in call order, groups in order of their first lane.
BlockPlan planWhole(std::span<const PlannedLane> lanes, const std::vector<size_t>& groupOf) {
  std::vector<std::vector<uint32_t>> blockLanes;
  std::vector<size_t> blockOfGroup(lanes.size(), lanes.size());
  for (size_t i = 0; i < lanes.size(); ++i) {
    if (lanes[i].rounds == 0) continue;  // moves nothing, posts nothing
    size_t& block = blockOfGroup[groupOf[i]];
    if (block == lanes.size()) {
      block = blockLanes.size();
      blockLanes.emplace_back();
    }
    blockLanes[block].push_back(static_cast<uint32_t>(i));
  }
  BlockPlan plan(blockLanes.size());
  for (size_t b = 0; b < plan.size(); ++b) appendRun(blockLanes[b], {}, KernelRun{}.window, &plan[b]);
  return plan;
}

}  // namespace

Status planBlocks(std::span<const PlannedLane> lanes, int rank, int nranks, int blockLimit, uint64_t window,
                  BlockPlan* plan) {
  const std::vector<size_t> groupOf = groupBySharedEndpoints(lanes);
  std::vector<bool> counted(lanes.size(), false);
  size_t groups = 0;  // of lanes that move something
  for (size_t i = 0; i < lanes.size(); ++i) {
    if (lanes[i].rounds == 0 || counted[groupOf[i]]) continue;
    counted[groupOf[i]] = true;
    ++groups;
  }
  if (blockLimit >= 1 && groups <= static_cast<size_t>(blockLimit)) {
    *plan = planWhole(lanes, groupOf);
    return Status::ok();
  }
  if (blockLimit < 1 || window < 1 || nranks < 1) {
    return internalError("cannot fold %zu groups of lanes into %d blocks with windows of %llu pieces", groups,
                         blockLimit, static_cast<unsigned long long>(window));
  }
  // Per distance: its local copies, its sends and its receives, each in call order.
  struct Distance {
    std::vector<uint32_t> local, sends, recvs;
  };
  std::vector<Distance> distances(static_cast<size_t>(nranks));
  for (size_t i = 0; i < lanes.size(); ++i) {
    const PlannedLane& lane = lanes[i];
    if (lane.rounds == 0) continue;  // moves nothing, posts nothing
    const bool sends = lane.sendPeer >= 0;
    const bool receives = lane.recvPeer >= 0;
    if (lane.chained || (sends && receives)) {
      return internalError("a launch on rank %d needs %zu thread blocks, more than its %d, and lane %zu both sends and "
                           "receives, so it cannot be folded into fewer",
                           rank, groups, blockLimit, i);
    }
    const auto index = static_cast<uint32_t>(i);
    if (sends) {
      distances[static_cast<size_t>((lane.sendPeer - rank + nranks) % nranks)].sends.push_back(index);
    } else if (receives) {
      distances[static_cast<size_t>((rank - lane.recvPeer + nranks) % nranks)].recvs.push_back(index);
    } else {
      distances[0].local.push_back(index);
    }
  }
  BlockPlan folded(static_cast<size_t>(std::min(blockLimit, nranks)));
  for (size_t d = 0; d < distances.size(); ++d) {
    const Distance& distance = distances[d];
    PlannedBlock& block = folded[d % folded.size()];
    if (!distance.local.empty()) appendRun(distance.local, {}, KernelRun{}.window, &block);
    if (!distance.sends.empty() || !distance.recvs.empty()) appendRun(distance.sends, distance.recvs, window, &block);
  }
  std::erase_if(folded, [](const PlannedBlock& block) { return block.runs.empty(); });
  *plan = std::move(folded);
  return Status::ok();
}

}  // namespace weft::device
