#pragma once
// Which protocols a communicator may use for each collective, as NCCL_PROTO says, in the syntax
// of algorithms/collective_filter.h (simple; ^ll128; allreduce:ll,simple). Names are NCCL's: ll,
// ll128, simple, in any case. Weft moves every collective with Simple (bulk slots, a flag after
// the data); a filter that leaves a collective without it fails the call, saying so.

#include <cstdint>
#include <string>

#include "algorithms/collective.h"
#include "algorithms/collective_filter.h"
#include "src/base/status.h"

namespace weft::algorithms {

enum class Protocol : int { kLL, kLL128, kSimple };
inline constexpr int kNumProtocols = static_cast<int>(Protocol::kSimple) + 1;

/// "LL", "LL128", "Simple" as NCCL writes them.
const char* protocolName(Protocol protocol);

/// A plain value (it travels between ranks as bytes): a bit per protocol for each collective.
struct ProtocolFilter {
  uint32_t allowed[kNumCollectives] = {};

  /// Every protocol allowed for every collective (NCCL_PROTO unset).
  static ProtocolFilter all();
  bool allows(Collective collective, Protocol protocol) const {
    return (allowed[static_cast<int>(collective)] >> static_cast<int>(protocol) & 1u) != 0;
  }
};

/// Parses NCCL_PROTO's value (empty: everything allowed); errors as parseCollectiveFilter's.
Status parseProtocolFilter(const std::string& text, ProtocolFilter* filter);

}  // namespace weft::algorithms
