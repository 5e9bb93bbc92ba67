#include "tests/multirank/collective.h"

namespace weft::multirank {

std::vector<Collective> allCollectives() {
  return {Collective::kAllReduce, Collective::kAllGather,    Collective::kReduceScatter,
          Collective::kBroadcast, Collective::kBcast,        Collective::kReduce,
          Collective::kAlltoAll,  Collective::kGather,       Collective::kScatter,
          Collective::kSendRecvRing, Collective::kSendRecvAllPairs};
}

const char* collectiveName(Collective collective) {
  switch (collective) {
    case Collective::kAllReduce: return "AllReduce";
    case Collective::kAllGather: return "AllGather";
    case Collective::kReduceScatter: return "ReduceScatter";
    case Collective::kBroadcast: return "Broadcast";
    case Collective::kBcast: return "Bcast";
    case Collective::kReduce: return "Reduce";
    case Collective::kAlltoAll: return "AlltoAll";
    case Collective::kGather: return "Gather";
    case Collective::kScatter: return "Scatter";
    case Collective::kSendRecvRing: return "SendRecvRing";
    case Collective::kSendRecvAllPairs: return "SendRecvAllPairs";
  }
  return "?";
}

bool reduces(Collective collective) {
  return collective == Collective::kAllReduce || collective == Collective::kReduceScatter ||
         collective == Collective::kReduce;
}

bool hasRoot(Collective collective) {
  return collective == Collective::kBroadcast || collective == Collective::kBcast ||
         collective == Collective::kReduce || collective == Collective::kGather ||
         collective == Collective::kScatter;
}

const char* placementName(Placement placement) {
  return placement == Placement::kInPlace ? "in-place" : "out-of-place";
}

std::vector<Placement> placementsOf(Collective collective) {
  switch (collective) {
    case Collective::kBcast: return {Placement::kInPlace};
    case Collective::kAlltoAll:
    case Collective::kSendRecvRing:
    case Collective::kSendRecvAllPairs: return {Placement::kOutOfPlace};
    default: return {Placement::kOutOfPlace, Placement::kInPlace};
  }
}

BufferLayout layoutOf(Collective collective, size_t count, int nranks, int rank) {
  const size_t all = count * static_cast<size_t>(nranks);
  const size_t mine = count * static_cast<size_t>(rank);
  switch (collective) {
    case Collective::kAllGather:
    case Collective::kGather:
      // In place: sendbuff == recvbuff + rank * count.
      return {count, all, all, mine, 0};
    case Collective::kReduceScatter:
    case Collective::kScatter:
      // In place: recvbuff == sendbuff + rank * count.
      return {all, count, all, 0, mine};
    case Collective::kAlltoAll:
    case Collective::kSendRecvAllPairs: return {all, all, all, 0, 0};
    default: return {count, count, count, 0, 0};
  }
}

}  // namespace weft::multirank
