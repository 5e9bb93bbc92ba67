#pragma once
// The syntax NCCL_ALGO and NCCL_PROTO share: which names (algorithms, protocols) each collective
// may use.
//
//   a,b                      only these, for every collective
//   ^a                       every name but these
//   allreduce:a;broadcast:b  per collective (allreduce, allgather, reducescatter, broadcast,
//                            reduce); a collective not named keeps every name
//
// Names match in any case. The result is a bit mask of allowed names per collective.

#include <cstdint>
#include <span>
#include <string>

#include "algorithms/collective.h"
#include "src/base/status.h"

namespace weft::algorithms {

inline constexpr int kNumCollectives = static_cast<int>(Collective::kRecv) + 1;

/// Whether NCCL_ALGO and NCCL_PROTO govern `collective`: AllReduce, AllGather, ReduceScatter,
/// Broadcast and Reduce. The others (all-to-all, gather, scatter, send, recv) run point to point.
bool governedByAlgo(Collective collective);

/// A collective NCCL_ALGO governs, with the name NCCL's per-collective clauses give it.
struct NamedCollective {
  const char* name;  // "allreduce", "allgather", "reducescatter", "broadcast", "reduce"
  Collective collective;
};
/// The collectives governedByAlgo accepts, in that order (also the `weft` tool's --collective).
std::span<const NamedCollective> governedCollectives();

/// What one knob's filter is made of: the knob ("NCCL_ALGO"), what a name is ("algorithm"), and
/// the names in bit order.
struct FilterVocabulary {
  const char* knob;
  const char* nameKind;
  std::span<const char* const> names;
};

/// Parses `text` (empty: every name for every collective) into one mask per collective. A name
/// that is not in the vocabulary or not a collective, or a list that would allow nothing, is an
/// invalid argument that quotes the knob's value and lists the valid names.
Status parseCollectiveFilter(const std::string& text, const FilterVocabulary& vocabulary,
                             uint32_t (&allowed)[kNumCollectives]);

}  // namespace weft::algorithms
