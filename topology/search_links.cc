#include "topology/search_links.h"

#include <algorithm>
#include <limits>

namespace weft::topology {
namespace {

constexpr size_t kMostRoutesPerHop = 64;  // bounds the work on large switch fabrics

// The fastest directed link from `from` to `to`, or -1.
int linkBetween(const System& system, int from, int to) {
  int best = -1;
  for (int index : system.linksFrom(from)) {
    const Link& link = system.links()[index];
    if (link.to == to && (best < 0 || link.bandwidth > system.links()[best].bandwidth)) best = index;
  }
  return best;
}

// The links along `nodes`; empty if two consecutive nodes have no link between them.
Route routeAlong(const System& system, const std::vector<int>& nodes) {
  Route route;
  for (size_t i = 1; i < nodes.size(); ++i) {
    const int link = linkBetween(system, nodes[i - 1], nodes[i]);
    if (link < 0) return {};
    route.push_back(link);
  }
  return route;
}

// Appends to `routes` every way (up to kMostRoutesPerHop) from `at` to `target` over NVLinks
// through exactly `switchesLeft` more NVSwitches; `nodes` is the way so far.
void addNvSwitchRoutes(const System& system, int at, int target, int switchesLeft, std::vector<int>* nodes,
                       std::vector<Route>* routes) {
  if (switchesLeft == 0) {
    nodes->push_back(target);
    Route route = routeAlong(system, *nodes);
    nodes->pop_back();
    if (!route.empty()) routes->push_back(std::move(route));
    return;
  }
  for (int index : system.linksFrom(at)) {
    if (routes->size() >= kMostRoutesPerHop) return;
    const Link& link = system.links()[index];
    if (link.type != LinkType::kNvLink || system.node(link.to).type != NodeType::kNvSwitch) continue;
    if (std::find(nodes->begin(), nodes->end(), link.to) != nodes->end()) continue;
    nodes->push_back(link.to);
    addNvSwitchRoutes(system, link.to, target, switchesLeft - 1, nodes, routes);
    nodes->pop_back();
  }
}

// The best path first; when it goes through NVSwitches only (GPU, NVSwitch..., GPU), also every
// other way through as many NVSwitches: a DGX-2 baseboard has six switches, each a route of its own.
std::vector<Route> routesOf(const System& system, const Path& path) {
  std::vector<Route> routes;
  Route best = routeAlong(system, path.nodes);
  if (best.empty()) return routes;
  routes.push_back(best);
  const bool throughSwitchesOnly =
      path.nodes.size() >= 3 && std::all_of(path.nodes.begin() + 1, path.nodes.end() - 1, [&](int node) {
        return system.node(node).type == NodeType::kNvSwitch;
      });
  if (!throughSwitchesOnly) return routes;
  std::vector<int> nodes{path.nodes.front()};
  std::vector<Route> others;
  addNvSwitchRoutes(system, path.nodes.front(), path.nodes.back(), static_cast<int>(path.nodes.size()) - 2, &nodes,
                    &others);
  for (Route& other : others) {
    if (other != best) routes.push_back(std::move(other));
  }
  return routes;
}

double fastestGpuNvlink(const System& system) {
  double fastest = 0;
  for (const Link& link : system.links()) {
    if (link.type == LinkType::kNvLink && system.node(link.from).type == NodeType::kGpu) {
      fastest = std::max(fastest, link.bandwidth / std::max(1, link.count));
    }
  }
  return fastest > 0 ? fastest : std::numeric_limits<double>::infinity();
}

}  // namespace

RingLinks::RingLinks(const System& system, const Paths& paths, const std::vector<int>& gpus)
    : ringLimit_(fastestGpuNvlink(system)) {
  gpuCount_ = static_cast<int>(gpus.size());
  hopTypes_.resize(gpus.size() * gpus.size(), PathType::kLoc);
  routes_.resize(gpus.size() * gpus.size());
  for (int from = 0; from < gpuCount_; ++from) {
    for (int to = 0; to < gpuCount_; ++to) {
      if (from == to) continue;
      const Path& path = paths.between(gpus[from], gpus[to]);
      hopTypes_[pairIndex(from, to)] = path.type;
      routes_[pairIndex(from, to)] = routesOf(system, path);
      if (routes_[pairIndex(from, to)].empty()) hopTypes_[pairIndex(from, to)] = PathType::kDis;
    }
  }
  for (const Link& link : system.links()) left_.push_back(link.bandwidth);
}

double RingLinks::hopRoom(int from, int to) const {
  double best = 0;
  for (const Route& route : routes(from, to)) {
    double slowest = std::numeric_limits<double>::infinity();
    for (int link : route) slowest = std::min(slowest, left_[link]);
    best = std::max(best, slowest);
  }
  return best;
}

void RingLinks::take(const Route& route, double bandwidth) {
  for (int link : route) left_[link] = std::max(0.0, left_[link] - bandwidth);
}

}  // namespace weft::topology
