#pragma once
// The tables one launch of the step kernel reads (kernel_work.h), built from its operations' step
// programs (algorithms/step.h): their lanes and steps in the kernel's units, and the blocks that
// run them, as src/device/block_plan.h plans them. Every build has this: the GPU executor fills
// pinned memory with the tables, and unit tests run them on a model of the kernel anywhere.

#include <cstdint>
#include <functional>
#include <unordered_map>
#include <vector>

#include "algorithms/step.h"
#include "src/base/status.h"
#include "src/device/block_plan.h"
#include "src/device/kernel_work.h"

namespace weft::device {

/// What the kernel reads besides KernelWork's scalars and connections.
struct KernelTables {
  std::vector<KernelBlock> blocks;
  std::vector<KernelRun> runs;
  std::vector<KernelLane> lanes;
  std::vector<KernelStep> steps;
};

/// The lanes of one launch, added operation by operation.
class LaunchTables {
 public:
  /// Called once for each connection end (channel, peer, send) the steps use, in order of first
  /// use: it appends the end to the launch's connection table, so that its index is the number of
  /// ends added before it.
  using AddConnection = std::function<Status(int channel, int peer, bool send)>;

  /// `pieceUnits`: the units (elements, or bytes in a copy launch) of one piece.
  LaunchTables(uint64_t pieceUnits, AddConnection addConnection)
      : pieceUnits_(pieceUnits), addConnection_(std::move(addConnection)) {}

  /// Adds the lanes of `program`, an operation's on `sendbuff` and `recvbuff`; `scale`: units per
  /// element of the program's counts and offsets. Programs whose steps combine partial results
  /// (trees) or use scratch memory have no GPU kernel: an internal error.
  Status addOp(const algorithms::Program& program, const void* sendbuff, void* recvbuff, uint64_t scale);

  bool empty() const { return lanes_.empty(); }
  uint64_t pieceUnits() const { return pieceUnits_; }
  /// Pieces the launch moves through each connection end, by index.
  const std::vector<uint64_t>& connectionPieces() const { return connectionPieces_; }

  /// The blocks, runs, lanes and steps for rank `rank` of `nranks`, within `blockLimit` blocks,
  /// folding with windows of `window` pieces (block_plan.h; the connections' slot count). Each
  /// lane that moves something is in the tables once, with its steps, whatever its length.
  Status layOut(int rank, int nranks, int blockLimit, uint64_t window, KernelTables* out) const;

 private:
  Status connectionIndex(int channel, int peer, bool send, int32_t* index);

  uint64_t pieceUnits_;
  AddConnection addConnection_;
  std::vector<KernelLane> lanes_;
  std::vector<PlannedLane> planned_;  // per lane, what the block plan needs
  std::vector<KernelStep> steps_;
  std::unordered_map<uint64_t, int32_t> connectionIndices_;  // by endpoint key
  std::vector<uint64_t> connectionPieces_;
};

}  // namespace weft::device
