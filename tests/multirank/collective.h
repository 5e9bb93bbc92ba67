#pragma once
// The operations under test and the shape of their buffers on one rank.

#include <cstddef>
#include <vector>

namespace weft::multirank {

enum class Collective {
  kAllReduce,
  kAllGather,
  kReduceScatter,
  kBroadcast,
  kBcast,  // ncclBcast: Broadcast with one buffer
  kReduce,
  kAlltoAll,
  kGather,
  kScatter,
  kSendRecvRing,      // one group: send to rank+1, receive from rank-1
  kSendRecvAllPairs,  // one group: send a chunk to and receive one from every rank, self included
};

/// Every Collective, in declaration order.
std::vector<Collective> allCollectives();

/// "AllReduce", "SendRecvRing", ...
const char* collectiveName(Collective collective);
bool reduces(Collective collective);
bool hasRoot(Collective collective);

enum class Placement { kOutOfPlace, kInPlace };
const char* placementName(Placement placement);

/// The placements NCCL defines for the collective: ncclBcast is in-place only; AlltoAll and
/// send/receive are out-of-place only.
std::vector<Placement> placementsOf(Collective collective);

/// One rank's buffers, in elements, for `count` (NCCL's count argument: per rank for AllGather,
/// ReduceScatter, AlltoAll, Gather and Scatter; per peer for the send/receive patterns).
struct BufferLayout {
  size_t sendCount;  // out-of-place send buffer
  size_t recvCount;  // out-of-place receive buffer
  // In place: one buffer of inPlaceCount elements; the send region (sendCount elements) starts
  // at inPlaceSendOffset and the receive region (recvCount elements) at inPlaceRecvOffset, as
  // NCCL defines in-place for the collective.
  size_t inPlaceCount;
  size_t inPlaceSendOffset;
  size_t inPlaceRecvOffset;
};

BufferLayout layoutOf(Collective collective, size_t count, int nranks, int rank);

}  // namespace weft::multirank
