#pragma once
// Paths between the nodes of a system, typed as NCCL types them, with their bandwidth.
//
// A path's type says the slowest kind of hop it takes, in NCCL's order (NCCL_P2P_LEVEL and
// NCCL_NET_GDR_LEVEL name these values):
//   LOC  the same node              NVL  NVLink, directly or through NVSwitches
//   NVB  NVLink through another GPU  C2C  a GPU's chip-to-chip link to its CPU
//   PIX  at most one PCIe switch     PXB  several PCIe switches, not through a CPU
//   P2C  C2C, then PCIe to a NIC     PXN  NVLink to another GPU, then PCIe to a NIC
//   PHB  through a CPU's PCIe host bridge (one NUMA node)
//   SYS  across CPUs (the SMP interconnect)
//   NET  through the network         DIS  no path
// Among the possible routes the best has the lowest type, then the highest bandwidth (the
// slowest link on it), then the fewest hops. GPUs relay only NVLink traffic (NVB, or PXN towards
// a NIC behind the relay's own PCIe switches, never through a CPU); NICs relay nothing.

#include <string>
#include <vector>

#include "topology/system.h"

namespace weft::topology {

enum class PathType { kLoc, kNvl, kNvb, kC2c, kPix, kPxb, kP2c, kPxn, kPhb, kSys, kNet, kDis };

/// "LOC", "NVL", ..., "DIS".
const char* pathTypeName(PathType type);
/// The type named `name` (any case), for NCCL_P2P_LEVEL and friends; false if none.
bool parsePathType(const std::string& name, PathType* type);

/// A level as NCCL_P2P_LEVEL and NCCL_NET_GDR_LEVEL take it: a path type's name (any case), or
/// NCCL's legacy numbers (0 LOC, 1 PIX, 2 PXB, 3 PHB, 4 SYS); false if neither.
bool parseLevel(const std::string& text, PathType* level);

/// Whether a path of `type` may be used under `level`: its type is no worse than the level, and
/// nothing is under LOC (NCCL's "never").
bool withinLevel(PathType type, PathType level);

struct Path {
  PathType type = PathType::kDis;
  double bandwidth = 0;     // GB/s: the slowest link on the path (0 when disconnected)
  std::vector<int> nodes;   // from the source to the destination, both included
};

/// The best path between every pair of nodes of one system. Computed once; read-only after.
class Paths {
 public:
  explicit Paths(const System& system);

  const Path& between(int from, int to) const { return paths_[static_cast<size_t>(from) * count_ + to]; }

 private:
  void computeFrom(const System& system, int source);

  size_t count_;
  std::vector<Path> paths_;
};

}  // namespace weft::topology
