#include "algorithms/collective.h"

namespace weft::algorithms {

const char* collectiveName(Collective collective) {
  switch (collective) {
    case Collective::kAllReduce:
      return "AllReduce";
    case Collective::kAllGather:
      return "AllGather";
    case Collective::kReduceScatter:
      return "ReduceScatter";
    case Collective::kBroadcast:
      return "Broadcast";
    case Collective::kReduce:
      return "Reduce";
    case Collective::kAllToAll:
      return "AllToAll";
    case Collective::kGather:
      return "Gather";
    case Collective::kScatter:
      return "Scatter";
    case Collective::kSend:
      return "Send";
    case Collective::kRecv:
      return "Recv";
  }
  return "Unknown";
}

}  // namespace weft::algorithms
