#pragma once
// WEFT_CHECK=1: before a launch runs, its ranks compare what they were asked to do, so that a
// mismatch (a different count, type, operator, root or collective, a skipped call, a send without
// its receive) is reported as ncclInvalidUsage naming the ranks and the difference, instead of
// hanging or corrupting data.
//
// Each rank describes its part of the launch on one communicator as a fixed-size signature; the
// executor all-gathers the signatures over the communicator itself, and every rank runs the same
// comparison on the same bytes, so all of them report the same error.

#include <cstdint>
#include <span>
#include <vector>

#include "src/base/status.h"
#include "src/core/op.h"

namespace weft::exec {

/// What one rank exchanges with one peer through Send/Recv in a launch.
struct PeerTraffic {
  uint32_t sends = 0;
  uint32_t recvs = 0;
  uint64_t sendBytes = 0;
  uint64_t recvBytes = 0;
};

/// This rank's Send/Recv traffic with every peer in `ops` (indexed by peer rank).
std::vector<PeerTraffic> trafficByPeer(std::span<const core::Op* const> ops, int nranks);

/// Compares what rank `from` sends to rank `to` with what `to` receives from `from`.
Status compareTraffic(int from, int to, const PeerTraffic& fromToTo, const PeerTraffic& toFromFrom);

/// The bytes one rank contributes for one communicator of a launch (size callSignatureBytes).
/// `ops` are the launch's operations on that communicator, in call order; `firstSequence` the
/// number of the first one on the communicator.
std::vector<uint8_t> buildCallSignature(std::span<const core::Op* const> ops, uint64_t firstSequence, int nranks);

/// The size of one rank's signature for a communicator of `nranks`.
size_t callSignatureBytes(int nranks);

/// Compares every rank's signature (`gathered` holds nranks of them, in rank order). Returns
/// kInvalidUsage describing the first difference, or ok.
Status compareCallSignatures(std::span<const uint8_t> gathered, int nranks);

/// One launch's check: the operations through which the ranks of every communicator that checks
/// calls (WEFT_CHECK) exchange what they were asked to do, then the comparison. A launch with
/// collectives involves every rank, which all-gather signatures; a launch of only Send/Recv
/// involves only the peers, which exchange their PeerTraffic pairwise.
class LaunchCheck {
 public:
  /// Prepares the exchange for `ops` (which must outlive this object). Allocates nothing when no
  /// communicator of `ops` checks calls.
  explicit LaunchCheck(std::span<const core::Op> ops);

  /// The operations to run first; empty when there is nothing to check.
  std::span<const core::Op> exchangeOps() const { return exchangeOps_; }

  /// Once they have run: ok, or kInvalidUsage describing the first mismatch (the same on every rank).
  Status compare() const;

 private:
  struct Exchange {
    core::Communicator* comm = nullptr;
    bool everyRank = false;
    std::vector<uint8_t> signature, gathered;
    std::vector<PeerTraffic> mine, theirs;
  };

  void addOp(core::Communicator* comm, algorithms::Collective collective, const void* send, void* recv, size_t bytes,
             int peer);

  std::vector<Exchange> exchanges_;
  std::vector<core::Op> exchangeOps_;
};

}  // namespace weft::exec
