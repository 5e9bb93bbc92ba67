#pragma once
// Which algorithms a communicator may use for each collective, as NCCL_ALGO says, in the syntax
// of algorithms/collective_filter.h (ring,tree; ^tree; allreduce:tree;broadcast:ring).
//
// Names are NCCL's (ring, tree, collnetdirect, collnetchain, nvls, nvlstree, pat) and Weft's own
// rhd (recursive halving-doubling), in any case. The filter only says what is allowed; which of
// the allowed algorithms Weft has, and picks, is the executors' and the tuner's business.

#include <cstdint>
#include <string>

#include "algorithms/collective.h"
#include "algorithms/collective_filter.h"
#include "src/base/status.h"

namespace weft::algorithms {

enum class Algorithm : int { kRing, kTree, kCollnetDirect, kCollnetChain, kNvls, kNvlsTree, kPat, kRhd };
inline constexpr int kNumAlgorithms = static_cast<int>(Algorithm::kRhd) + 1;

/// "ring", "tree", ... as NCCL_ALGO spells them.
const char* algorithmName(Algorithm algorithm);

/// A plain value (it travels between ranks as bytes): a bit per algorithm for each collective.
struct AlgorithmFilter {
  uint32_t allowed[kNumCollectives] = {};

  /// Every algorithm allowed for every collective (NCCL_ALGO unset).
  static AlgorithmFilter all();
  bool allows(Collective collective, Algorithm algorithm) const {
    return (allowed[static_cast<int>(collective)] >> static_cast<int>(algorithm) & 1u) != 0;
  }
};

/// Parses NCCL_ALGO's value (empty: everything allowed). A name that is not an algorithm or a
/// collective, or a list that would allow nothing, is an invalid argument that names it and lists
/// the valid names.
Status parseAlgorithmFilter(const std::string& text, AlgorithmFilter* filter);

}  // namespace weft::algorithms
