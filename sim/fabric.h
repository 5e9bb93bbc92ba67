#pragma once
// The modelled fabric of `weft sim`: a job over N identical nodes, each the system of a topology
// file, and what each connection of an algorithm gets of the links it crosses.
//
// Ranks: one per GPU, node n's GPU g is rank n x G + g. Channels: on one node, the rings that
// topology::searchRings finds (each its own channel); across nodes, the rings cut into chains
// at each channel's NIC (topology::channelsAcrossNodes), first trimmed to a multiple of the NIC
// count so that every NIC carries as many channels as any other (as NCCL's rail-aligned search
// does). Channel c's ring runs through every node's chain in node order.
//
// Bandwidth: every connection an algorithm uses at once takes an equal share of each resource it
// crosses, and moves at its smallest share. The resources, per node: each directed link of the
// system's graph on the connection's path (PCIe, CPU interconnect, direct NVLinks); all of a GPU's
// NVLinks to NVSwitches together, once leaving and once entering the GPU; each NIC once sending
// and once receiving (its ports' speed, or FabricOptions::nicGbps). A connection between nodes
// crosses the path from its GPU to the channel's NIC, that NIC's sending side, the next node's NIC's
// receiving side and the path to the GPU there.
//
// Latency per hop, by the hop's slowest kind, from NCCL's own model (src/graph/tuning.cc, hwLat,
// ring): a step's first piece waits for the Simple protocol's per-step latency (NVLink 3.4 us,
// PCIe 5.7 us, network 14 us); every further piece of the step only for the hop itself, which
// NCCL's figures for its LL protocol give (a flag and its data in one store: 0.6, 1.0, 2.7 us).

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include "algorithms/schedule.h"
#include "sim/program_timing.h"
#include "src/base/status.h"
#include "topology/gdr.h"
#include "topology/paths.h"
#include "topology/system.h"

namespace weft::sim {

/// Microseconds per kind of hop.
struct HopKinds {
  double nvlink = 0;   // NVLink, NVLink through another GPU, or C2C
  double pci = 0;      // any path through PCIe or between CPUs
  double network = 0;  // between nodes
};

struct HopLatencies {
  HopKinds step{3.4, 5.7, 14.0};  // a step's first piece
  HopKinds piece{0.6, 1.0, 2.7};  // every further piece
};

struct FabricOptions {
  int nodes = 1;
  int maxChannels = 32;  // rings searched on one node (NCCL's MAXCHANNELS)
  double nicGbps = 0;    // each NIC's rate in Gb/s; 0: the sum of its ports' speeds in the file
  topology::NetGdrPolicy gdr;  // NCCL_NET_GDR_LEVEL, NCCL_NET_GDR_C2C
  HopLatencies latency;
};

/// One direction of one connection of an algorithm.
struct Connection {
  int channel = 0;
  int from = 0;
  int to = 0;
};

class Fabric {
 public:
  /// Lays the job out over `options.nodes` copies of `system` (which must outlive the fabric); fails
  /// when the system has no GPU, when its GPUs cannot be ringed, or when nodes > 1 and it has no NIC.
  static Status build(const topology::System& system, const FabricOptions& options, Fabric* out);

  int nodes() const { return nodes_; }
  int gpusPerNode() const { return gpusPerNode_; }
  int ranks() const { return nodes_ * gpusPerNode_; }
  int channels() const { return static_cast<int>(rings_.size()); }
  /// Channel c's ring over every rank.
  const algorithms::Ring& ring(int channel) const { return rings_[channel]; }
  /// Channel c's chain on every node (ranks), in the order the channel visits them.
  const std::vector<std::vector<int>>& chains(int channel) const { return chains_[channel]; }
  /// The rate of each NIC in GB/s (0 without NICs), and how it was set, for reports.
  double nicGBps() const { return nicGBps_; }
  const std::string& nicSource() const { return nicSource_; }
  const FabricOptions& options() const { return options_; }

  /// Each connection's timing when all of `connections` move data at once.
  std::unordered_map<uint64_t, LinkTiming> share(std::span<const Connection> connections) const;
  /// The key of a connection in share()'s result.
  static uint64_t key(int channel, int from, int to) {
    return (static_cast<uint64_t>(channel) << 48) | (static_cast<uint64_t>(from) << 24) | static_cast<uint64_t>(to);
  }

 private:
  struct Route {
    std::vector<int> here;   // node-local ids of the resources on the sending node
    std::vector<int> there;  // and on the receiving node (a connection between nodes)
    double HopKinds::*kind = &HopKinds::nvlink;
  };
  // The resources of the path from one node of the system to another (local ids), appended.
  void addPath(const topology::Path& path, std::vector<int>* resources) const;
  Route routeWithin(int fromGpu, int toGpu) const;
  Route routeAcross(int fromGpu, int toGpu, int nic) const;

  const topology::System* system_ = nullptr;
  std::unique_ptr<topology::Paths> paths_;
  FabricOptions options_;
  int nodes_ = 1;
  int gpusPerNode_ = 0;
  std::vector<int> gpus_;  // system node index of each local GPU
  std::vector<int> nics_;  // system node index of each NIC
  std::vector<algorithms::Ring> rings_;
  std::vector<std::vector<std::vector<int>>> chains_;
  std::vector<int> nicOfChannel_;  // index into nics_, -1 on one node
  std::vector<double> capacity_;   // GB/s of each node-local resource
  double nicGBps_ = 0;
  std::string nicSource_;
};

}  // namespace weft::sim
