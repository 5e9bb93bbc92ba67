#include "algorithms/protocol_filter.h"

namespace weft::algorithms {
namespace {

constexpr const char* kProtocolNames[kNumProtocols] = {"LL", "LL128", "Simple"};

}  // namespace

const char* protocolName(Protocol protocol) {
  const int index = static_cast<int>(protocol);
  return index >= 0 && index < kNumProtocols ? kProtocolNames[index] : "unknown";
}

ProtocolFilter ProtocolFilter::all() {
  ProtocolFilter filter;
  for (uint32_t& mask : filter.allowed) mask = (1u << kNumProtocols) - 1;
  return filter;
}

Status parseProtocolFilter(const std::string& text, ProtocolFilter* filter) {
  *filter = ProtocolFilter::all();
  return parseCollectiveFilter(text, {"NCCL_PROTO", "protocol", kProtocolNames}, filter->allowed);
}

}  // namespace weft::algorithms
