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

BufferElements bufferElements(const OpShape& shape) {
  const size_t n = static_cast<size_t>(shape.nranks);
  const size_t c = shape.count;
  const bool isRoot = shape.rank == shape.root;
  switch (shape.collective) {
    case Collective::kAllReduce: return {c, c};
    case Collective::kAllGather: return {c, c * n};
    case Collective::kReduceScatter: return {c * n, c};
    case Collective::kBroadcast: return {isRoot ? c : 0, c};
    case Collective::kReduce: return {c, isRoot ? c : 0};
    case Collective::kAllToAll: return {c * n, c * n};
    case Collective::kGather: return {c, isRoot ? c * n : 0};
    case Collective::kScatter: return {isRoot ? c * n : 0, c};
    case Collective::kSend: return {c, 0};
    case Collective::kRecv: return {0, c};
  }
  return {0, 0};
}

}  // namespace weft::algorithms
