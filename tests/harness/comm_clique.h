#pragma once
// Ranks of one process driven from ONE thread, as nccl-tests does with several devices per
// process: the communicators come from ncclCommInitAll (or ncclCommInitRank inside a group) and
// every collective step calls all of them between ncclGroupStart and ncclGroupEnd.
// GoogleTest assertions work as usual here (everything runs on the test's thread); wrap the test
// body in a DeadlineGuard, since a hang cannot be interrupted.

#include <functional>
#include <vector>

#include <gtest/gtest.h>

#include "nccl.h"

namespace weft::harness {

/// Owns the communicators of ranks that live in this process.
class CommClique {
 public:
  CommClique() = default;
  /// ncclCommDestroy on each communicator still owned, in rank order.
  ~CommClique();
  CommClique(CommClique&& other) noexcept;
  CommClique& operator=(CommClique&& other) noexcept;
  CommClique(const CommClique&) = delete;
  CommClique& operator=(const CommClique&) = delete;

  /// ncclCommInitAll(nranks, devlist = NULL): ranks 0..nranks-1.
  ncclResult_t initAll(int nranks);
  /// ncclGetUniqueId; ncclGroupStart; ncclCommInitRank for ranks 0..nranks-1; ncclGroupEnd.
  ncclResult_t initRanksInGroup(int nranks);
  /// Takes ownership of `comms`; null entries (ranks left out of a split) are kept as null.
  void adopt(std::vector<ncclComm_t> comms);
  /// Gives up ownership without destroying.
  std::vector<ncclComm_t> release();

  int size() const { return static_cast<int>(comms_.size()); }
  ncclComm_t operator[](int rank) const { return comms_[rank]; }
  const std::vector<ncclComm_t>& comms() const { return comms_; }

 private:
  void destroyAll();

  std::vector<ncclComm_t> comms_;
};

/// ncclGroupStart; body(i, comms[i]) for every non-null communicator; ncclGroupEnd. Returns the
/// first failure: of ncclGroupStart, of a call in `body` (the group is still ended), or of
/// ncclGroupEnd.
ncclResult_t runGrouped(const std::vector<ncclComm_t>& comms,
                        const std::function<ncclResult_t(int index, ncclComm_t comm)>& body);

/// For GoogleTest assertions on the test's thread: ASSERT_TRUE(ncclSucceeded(ncclGroupEnd()))
/// prints the result's name, its string and ncclGetLastError on failure.
::testing::AssertionResult ncclSucceeded(ncclResult_t result);

}  // namespace weft::harness
