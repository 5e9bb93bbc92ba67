#pragma once
// One collective of one size, run with one algorithm over a modelled fabric: the real schedules
// (algorithms/schedule.h) of every rank, timed by program_timing.h with the bandwidth shares and
// latencies of fabric.h.
//
// Ring: buildRingProgram on every channel's ring, each channel an even part of the data (every
// collective). Tree (AllReduce, Broadcast, Reduce): NCCL's tree over nodes (algorithms/node_tree.h),
// channel c on tree c mod 2 with its own chains, each channel an even part; for Broadcast and
// Reduce the tree turned to the root, which stands above its chain (rootedNodeTreePlace's
// kAboveChain: the chains' first ranks, nearest their channel's NIC, talk between nodes), its data
// moving one way. Channels do not interact once the fabric has shared the links out, so each is
// timed alone, and channels whose connections all time alike are timed once. Pat (Bruck's
// AllGather and ReduceScatter) and rhd (recursive halving-doubling AllReduce) run as Weft runs
// them: all the data on channel 0 (its NIC between nodes), between ranks in rank order; their
// exchanges do not all move at once, so the links are shared out among the connections that are
// each rank's k-th peer, for every k apart. The
// operation ends with its slowest channel, plus a launch latency (NCCL's base latency for the
// Simple protocol, 8.4 us).

#include <cstddef>
#include <string>

#include "algorithms/collective.h"
#include "sim/fabric.h"
#include "sim/program_timing.h"

namespace weft::sim {

enum class SimAlgorithm { kRing, kTree, kPat, kRhd };
inline constexpr SimAlgorithm kSimAlgorithms[] = {SimAlgorithm::kRing, SimAlgorithm::kTree, SimAlgorithm::kPat,
                                                  SimAlgorithm::kRhd};

/// NCCL_ALGO's names: "ring", "tree", "pat", "rhd".
const char* simAlgorithmName(SimAlgorithm algorithm);
/// Whether `weft sim` models `algorithm` for `collective` (tree: AllReduce, Broadcast and Reduce;
/// rhd: AllReduce only; pat: AllGather and ReduceScatter).
bool simulates(algorithms::Collective collective, SimAlgorithm algorithm);

struct CollectiveTiming {
  double microseconds = 0;
  double algBandwidth = 0;  // GB/s: bytes / time
  double busBandwidth = 0;  // GB/s: nccl-tests' bus bandwidth of the collective
  std::string error;
  bool ok() const { return error.empty(); }
};

constexpr double kLaunchMicroseconds = 8.4;

/// nccl-tests' bus bandwidth factor: 2(n-1)/n for AllReduce, (n-1)/n for AllGather and
/// ReduceScatter, 1 for Broadcast and Reduce.
double busBandwidthFactor(algorithms::Collective collective, int nranks);

/// Times `collective` of `bytes` (as nccl-tests sizes it: the whole buffer, float elements; root
/// 0) with `algorithm` over `fabric`. `options.elementSize` is set to 4.
CollectiveTiming timeCollective(const Fabric& fabric, algorithms::Collective collective, SimAlgorithm algorithm,
                                size_t bytes, TimingOptions options);

}  // namespace weft::sim
