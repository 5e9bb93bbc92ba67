#pragma once
// The search for rings over the GPUs of one node, and the ring order of ranks on host memory.
//
// A ring is an order of all GPUs; each GPU sends to the next, the last to the first. Its hops are
// the best paths between consecutive GPUs (paths.h), and its bandwidth is what every hop can carry
// at once. Several rings (channels) share the links: each ring found takes its bandwidth from the
// links its hops cross, and the next ring is searched on what is left.
//
// One ring is better than another when its worst hop has the better path type, then when its
// bandwidth is higher, then when it has fewer hops of the worst type, then of the next worse, and
// so on: so the GPUs of one socket stay consecutive (a ring crosses between two sockets exactly
// twice) and NVLink peers are neighbours where they can be.

#include <string>
#include <vector>

#include "topology/paths.h"
#include "topology/system.h"

namespace weft::topology {

struct RingSearchOptions {
  /// The most rings to return (as NCCL_MAX_NCHANNELS bounds NCCL's channels).
  int maxRings = 16;
  /// The most partial rings the search may extend when it looks for one ring; when it runs out, the
  /// best ring found so far is kept. The search finds the best ring long before this on real
  /// machines; the budget bounds the time on graphs that defeat its pruning.
  long stepsPerRing = 200000;
  /// The GPUs to ring over, as node indices of the system (a communicator's GPUs on one host);
  /// empty: every GPU of the system.
  std::vector<int> gpus;
};

struct RingSet {
  /// Each ring lists every GPU once, as positions in the GPUs searched (options.gpus, or
  /// system.nodesOfType(NodeType::kGpu)), starting with position 0. Empty when there is no GPU, or
  /// when some GPUs cannot reach each other.
  std::vector<std::vector<int>> rings;
  /// GB/s that each ring moves in each hop (data is split evenly, so the slowest ring sets it).
  double bandwidthPerRing = 0;
  /// The worst path type between consecutive GPUs of the rings (kDis when there is no ring).
  PathType worstHop = PathType::kDis;
};

/// Finds up to options.maxRings rings over the GPUs of `system`, whose best paths are `paths`
/// (computed from the same system).
///
/// Bandwidth model: one ring moves at most what one NVLink of the system carries (the GPUs' fastest
/// NVLink; no limit on a system without NVLinks), and every hop moves the ring's bandwidth over
/// each directed link of its path; a link crossed twice by one ring carries it twice. A hop through
/// NVSwitches may take any other way through as many NVSwitches (a DGX-2 baseboard has six). After
/// each ring its bandwidth is taken from the links it uses. A further ring is kept while it raises
/// the rings' total bandwidth (number of rings x the slowest ring's bandwidth) and its worst hop is
/// no worse than the first ring's.
///
/// One GPU gives one ring of that GPU alone (bandwidth: the local path's). Systems with more than
/// 64 GPUs get one ring in GPU order. Pure: no I/O, deterministic, safe to call from any thread.
RingSet searchRings(const System& system, const Paths& paths, const RingSearchOptions& options = {});

/// A host's ranks ordered along rings of their GPUs (orderGpuRanks).
struct RankRings {
  /// One order per ring: every rank once (indices into the ranks given), in the order of the ring's
  /// GPUs, the ranks of one GPU consecutive and ascending. Empty when the GPUs cannot be ringed.
  std::vector<std::vector<int>> orders;
  double bandwidthPerRing = 0;        // as RingSet's
  PathType worstHop = PathType::kDis;  // as RingSet's
  /// Why there is no order: a bus id that is not a GPU of the system, GPUs that cannot reach each
  /// other. Empty when there are orders.
  std::string why;
};

/// Orders the ranks of one host along rings over their GPUs: busIdOfRank[i] is the PCI bus id of
/// rank i's GPU (several ranks may share one). The distinct GPUs are ringed by searchRings with
/// `options` (whose `gpus` this sets), the first rank's GPU first. Pure, like searchRings.
RankRings orderGpuRanks(const System& system, const Paths& paths, const std::vector<std::string>& busIdOfRank,
                        RingSearchOptions options = {});

/// The ring order of ranks whose buffers are in host memory: ranks of one NUMA node consecutive,
/// NUMA nodes in ascending order, ranks ascending within each, ranks of unknown NUMA node (-1)
/// last; so the ring crosses between sockets as few times as it can. numaOfRank[r] is rank r's
/// NUMA node; the result lists every rank once.
std::vector<int> orderHostRanks(const std::vector<int>& numaOfRank);

}  // namespace weft::topology
