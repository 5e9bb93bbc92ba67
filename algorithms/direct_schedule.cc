#include "algorithms/direct_schedule.h"

#include <cassert>

namespace weft::algorithms {
namespace {

class DirectLanes {
 public:
  DirectLanes(const OpShape& shape, int nChannels, int firstChannel, ProgramBuilder& builder)
      : shape_(shape), nChannels_(nChannels), firstChannel_(firstChannel), builder_(builder) {}

  int peerAfter(int distance) const { return (shape_.rank + distance) % shape_.nranks; }
  int peerBefore(int distance) const { return (shape_.rank - distance + shape_.nranks) % shape_.nranks; }
  size_t blockOffset(int rank) const { return static_cast<size_t>(rank) * shape_.count; }

  void send(int peer, size_t sendOffset) {
    Step step;
    step.sendPeer = peer;
    step.src = {BufferKind::kSend, sendOffset};
    step.count = shape_.count;
    builder_.startLane(firstChannel_ + directChannel(shape_.rank, peer, shape_.nranks, nChannels_)).push_back(step);
  }

  void recv(int peer, size_t recvOffset) {
    Step step;
    step.recvPeer = peer;
    step.dst = {BufferKind::kRecv, recvOffset};
    step.count = shape_.count;
    builder_.startLane(firstChannel_ + directChannel(peer, shape_.rank, shape_.nranks, nChannels_)).push_back(step);
  }

  void copy(size_t sendOffset, size_t recvOffset) {
    Step step;
    step.src = {BufferKind::kSend, sendOffset};
    step.dst = {BufferKind::kRecv, recvOffset};
    step.count = shape_.count;
    builder_.startLane(0).push_back(step);
  }

 private:
  const OpShape& shape_;
  int nChannels_;
  int firstChannel_;
  ProgramBuilder& builder_;
};

}  // namespace

int directChannel(int src, int dst, int nranks, int nChannels) {
  int distance = ((dst - src - 1) % nranks + nranks) % nranks;
  return distance % nChannels;
}

void addDirectLanes(const OpShape& shape, int nChannels, ProgramBuilder& builder) {
  // Send and Recv use the point-to-point channels, numbered after the rings', so that their order
  // relative to collectives inside a group may differ between ranks, as NCCL allows.
  const bool pointToPoint = isPointToPoint(shape.collective);
  DirectLanes lanes(shape, nChannels, pointToPoint ? nChannels : 0, builder);
  const int n = shape.nranks;
  const int rank = shape.rank;
  switch (shape.collective) {
    case Collective::kAllToAll:
      for (int distance = 1; distance < n; ++distance) {
        int to = lanes.peerAfter(distance);
        int from = lanes.peerBefore(distance);
        lanes.send(to, lanes.blockOffset(to));
        lanes.recv(from, lanes.blockOffset(from));
      }
      lanes.copy(lanes.blockOffset(rank), lanes.blockOffset(rank));
      return;
    case Collective::kGather:
      if (rank != shape.root) {
        lanes.send(shape.root, 0);
        return;
      }
      for (int distance = 1; distance < n; ++distance) {
        int from = lanes.peerAfter(distance);
        lanes.recv(from, lanes.blockOffset(from));
      }
      lanes.copy(0, lanes.blockOffset(rank));
      return;
    case Collective::kScatter:
      if (rank != shape.root) {
        lanes.recv(shape.root, 0);
        return;
      }
      for (int distance = 1; distance < n; ++distance) {
        int to = lanes.peerAfter(distance);
        lanes.send(to, lanes.blockOffset(to));
      }
      lanes.copy(lanes.blockOffset(rank), 0);
      return;
    case Collective::kSend:
      lanes.send(shape.root, 0);
      return;
    case Collective::kRecv:
      lanes.recv(shape.root, 0);
      return;
    default:
      assert(false && "not a direct collective");
  }
}

}  // namespace weft::algorithms
