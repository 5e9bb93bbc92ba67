#pragma once
// The operations Weft runs, described by what a schedule needs to know about them.

#include <cstddef>

namespace weft::algorithms {

enum class Collective : int {
  kAllReduce,
  kAllGather,
  kReduceScatter,
  kBroadcast,
  kReduce,
  kAllToAll,
  kGather,
  kScatter,
  kSend,
  kRecv,
};

/// "AllReduce", "AllGather", ... for logs and messages.
const char* collectiveName(Collective collective);

/// Send or Recv: a point-to-point call rather than a collective.
constexpr bool isPointToPoint(Collective collective) {
  return collective == Collective::kSend || collective == Collective::kRecv;
}

/// Broadcast, Reduce, Gather or Scatter: the collectives with a root rank.
constexpr bool hasRoot(Collective collective) {
  return collective == Collective::kBroadcast || collective == Collective::kReduce ||
         collective == Collective::kGather || collective == Collective::kScatter;
}

/// AllReduce, ReduceScatter or Reduce: the collectives that combine data with an operator.
constexpr bool reduces(Collective collective) {
  return collective == Collective::kAllReduce || collective == Collective::kReduceScatter ||
         collective == Collective::kReduce;
}

/// One rank's view of one operation. Counts follow the API: `count` is per rank for AllGather
/// (send count), ReduceScatter (receive count), AllToAll, Gather and Scatter; the whole buffer for
/// AllReduce, Broadcast and Reduce; the message for Send and Recv.
struct OpShape {
  Collective collective = Collective::kAllReduce;
  size_t count = 0;
  int root = 0;  // root for rooted collectives; the peer for Send and Recv
  int nranks = 1;
  int rank = 0;
  /// Elements per unit that schedules cut the data in (channel parts, a ring allreduce's chunks;
  /// evenPartInUnits): each part that holds data starts on a multiple of it. 1 cuts anywhere;
  /// executors pass chunkGranule(type).
  size_t granule = 1;
};

/// Elements of the operation's count that this rank's send and receive buffers hold (0 where the
/// rank does not use that buffer: a non-root's Reduce output, a Recv's input).
struct BufferElements {
  size_t send = 0;
  size_t recv = 0;
};

BufferElements bufferElements(const OpShape& shape);

}  // namespace weft::algorithms
